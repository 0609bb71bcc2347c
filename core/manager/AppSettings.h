// SPDX-License-Identifier: Apache-2.0
#pragma once
// AppSettings: the desktop app's one settings registry — every key with its name, default and
// whether it is the user's or a machine fact, in one table; a changed(key) signal so that each
// change is applied live; an instance on a temporary file for tests (KeePassXC's pattern).

#include <QObject>
#include <QString>
#include <QStringList>
#include <QVariant>

#include <memory>

class QSettings;

namespace tessera::manager {

class AppSettings final : public QObject {
    Q_OBJECT

public:
    enum class Key {
        // contributing
        CoordinatorUrl,    // QString, "https://127.0.0.1:7443"
        CoordinatorCaFile, // QString, extra trusted certificate (PEM); empty: the system's
        CoordinatorKey,    // QString, the coordinator's public key; empty: the first one met is pinned
        DataDir,           // QString, the node's data folder; empty: NodeFiles::defaultDataDir()
        DiskLimitGb,       // double, the most the shard may take on disk [20]
        GpuLimitPercent,   // int 1..100, share of time computing [70]
        Device,            // QString, "cpu" or "cuda:N"; empty: the first CUDA GPU, else the CPU
        NodeProgram,       // QString, tessera-node's path; empty: next to this program, then $PATH
        DisplayName,       // QString, the name on the coordinator's public leaderboard; empty: anonymous
        Team,              // QString, the team credited on the leaderboard; empty: none
        // pause rules
        PauseExclusiveApps, // QStringList of process names [common games and launchers]
        PauseOnFullscreen,  // bool [true]
        PauseOnGpuGraphics, // bool [true]
        OnlyWhenIdle,       // bool [false]
        IdleMinutes,        // int [3]
        PauseOnBattery,     // bool [true]
        TemperatureLimitC,  // int [83]; resumes 5 °C lower; 0: off
        TimeWindows,        // QString, "Mon-Fri 18:00-08:00, Sat-Sun" — contribute only then; empty: always
        GraceSeconds,       // int, a cause must be gone this long before resuming [15]
        // the app
        StartAtLogin,       // bool [false]
        Notifications,      // bool [true]
        FirstRunDone,       // bool [false]: the wizard opens until Contribute succeeded once
        Contributing,       // bool [false]: the user said Contribute (and not Quit-and-stop)
        ManualPauseUntilMs, // qint64: a snooze or "until I resume" (-1) survives a restart [0]
        KeyCount
    };
    Q_ENUM(Key)

    struct Definition {
        Key key;
        const char* name; // the key in the file, "pause/fullscreen"
        QVariant defaultValue;
    };
    static const Definition& definition(Key key);

    // The user's settings file (QSettings' location for "Tessera/tessera", INI format), over the
    // packaged defaults (packagedDefaultsPath()).
    AppSettings(QObject* parent = nullptr);
    // A settings file at `path` (tests: a temporary file), over the packaged defaults in the INI
    // file `packagedDefaults` (empty: none).
    explicit AppSettings(const QString& path, QObject* parent = nullptr,
                         const QString& packagedDefaults = {});
    ~AppSettings() override;

    // Where a package or a distributor puts its defaults, in the settings file's own format (the
    // coordinator's address, certificate and key, so a user clicks Contribute and nothing else):
    // $TESSERA_APP_DEFAULTS when set, else SYSCONFDIR/tessera/tessera.ini beside the program
    // (/etc/tessera/tessera.ini for /usr/bin/tessera, the .deb's).
    static QString packagedDefaultsPath();

    // What the user set; else the packaged default; else the built-in one.
    QVariant value(Key key) const;
    // What value() gives when the user has set nothing (what reset() goes back to).
    QVariant defaultValue(Key key) const;
    QString string(Key key) const { return value(key).toString(); }
    int integer(Key key) const { return value(key).toInt(); }
    // The compute limit in percent, 1..100 (a hand-edited file's other value is brought into range):
    // the one value of it the app launches the node with, re-sends and shows.
    int gpuLimitPercent() const;
    bool flag(Key key) const { return value(key).toBool(); }
    QStringList list(Key key) const { return value(key).toStringList(); }
    // Stores the value (a value equal to the current one changes nothing) and emits changed().
    void setValue(Key key, const QVariant& value);
    void reset(Key key);
    QString fileName() const;
    // Writes to disk now (QSettings also does so by itself).
    void sync();

    // The default exclusive apps: launchers and games whose process names are well known.
    static QStringList defaultExclusiveApps();

Q_SIGNALS:
    void changed(tessera::manager::AppSettings::Key key);

private:
    QVariant typed(Key key, const QVariant& stored) const;

    std::unique_ptr<QSettings> m_settings;
    std::unique_ptr<QSettings> m_packaged; // read only; null: none
};

} // namespace tessera::manager
