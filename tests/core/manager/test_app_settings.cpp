// SPDX-License-Identifier: Apache-2.0
// AppSettings: the one registry — defaults, types kept through the INI file, changed() once per
// real change, every key with a name of its own, and a package's defaults under the user's.
#include "manager/AppSettings.h"

#include <QFile>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera::manager;
using Key = AppSettings::Key;

class TestAppSettings final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void defaultsWithoutAFile() {
        QTemporaryDir dir;
        AppSettings settings(dir.filePath(QStringLiteral("tessera.ini")));
        QCOMPARE(settings.integer(Key::GpuLimitPercent), 70);
        QCOMPARE(settings.integer(Key::GraceSeconds), 15);
        QCOMPARE(settings.integer(Key::TemperatureLimitC), 83);
        QVERIFY(settings.flag(Key::PauseOnFullscreen));
        QVERIFY(!settings.flag(Key::OnlyWhenIdle));
        QVERIFY(settings.list(Key::PauseExclusiveApps).contains(QStringLiteral("witcher3")));
        QVERIFY(!settings.flag(Key::FirstRunDone));
        // Nothing public unless the user opts in.
        QCOMPARE(settings.string(Key::DisplayName), QString());
        QCOMPARE(settings.string(Key::Team), QString());
        QCOMPARE(AppSettings::definition(Key::DisplayName).name, "contribute/display_name");
        QCOMPARE(AppSettings::definition(Key::Team).name, "contribute/team");
    }

    void packagedDefaultsComeUnderTheUsersChoices() {
        // A distributor's /etc/tessera/tessera.ini: its coordinator, certificate and key.
        QTemporaryDir dir;
        const QString packaged = dir.filePath(QStringLiteral("packaged.ini"));
        QFile f(packaged);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("[contribute]\ncoordinator=https://swarm.example.org:7443\n"
                "coordinator_key=AAAAC3NzaC1lZDI1NTE5\ngpu_limit_percent=40\n");
        f.close();
        AppSettings settings(dir.filePath(QStringLiteral("tessera.ini")), nullptr, packaged);
        QCOMPARE(settings.string(Key::CoordinatorUrl), QStringLiteral("https://swarm.example.org:7443"));
        QCOMPARE(settings.string(Key::CoordinatorKey), QStringLiteral("AAAAC3NzaC1lZDI1NTE5"));
        QCOMPARE(settings.integer(Key::GpuLimitPercent), 40); // typed like the built-in default
        QCOMPARE(settings.integer(Key::GraceSeconds), 15);    // not packaged: built in

        // The user's choice wins, and a reset goes back to the package's, not the built-in one.
        settings.setValue(Key::CoordinatorUrl, QStringLiteral("https://other.example.org:7443"));
        QCOMPARE(settings.string(Key::CoordinatorUrl), QStringLiteral("https://other.example.org:7443"));
        QSignalSpy changed(&settings, &AppSettings::changed);
        settings.reset(Key::CoordinatorUrl);
        QCOMPARE(settings.string(Key::CoordinatorUrl), QStringLiteral("https://swarm.example.org:7443"));
        QCOMPARE(changed.size(), 1);

        // Nothing written into the package's file, and a missing file is no defaults at all.
        settings.sync();
        QFile written(packaged);
        QVERIFY(written.open(QIODevice::ReadOnly));
        QVERIFY(!written.readAll().contains("other.example.org"));
        AppSettings none(dir.filePath(QStringLiteral("b.ini")), nullptr,
                         dir.filePath(QStringLiteral("missing.ini")));
        QCOMPARE(none.string(Key::CoordinatorUrl), QStringLiteral("https://127.0.0.1:7443"));
    }

    void everyKeyHasItsOwnName() {
        QSet<QString> names;
        for (int k = 0; k < int(Key::KeyCount); ++k) {
            const AppSettings::Definition& d = AppSettings::definition(Key(k));
            QCOMPARE(int(d.key), k);
            names.insert(QString::fromLatin1(d.name));
        }
        QCOMPARE(names.size(), int(Key::KeyCount));
    }

    void valuesSurviveAReopenWithTheirTypes() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("tessera.ini"));
        {
            AppSettings settings(path);
            settings.setValue(Key::GpuLimitPercent, 35);
            settings.setValue(Key::PauseOnFullscreen, false);
            settings.setValue(Key::PauseExclusiveApps, QStringList{QStringLiteral("only-one.exe")});
            settings.setValue(Key::ManualPauseUntilMs, qint64(-1));
        }
        AppSettings again(path);
        QCOMPARE(again.integer(Key::GpuLimitPercent), 35);
        QVERIFY(!again.flag(Key::PauseOnFullscreen));
        // A one-item list is a plain string in an INI file: it comes back a list.
        QCOMPARE(again.list(Key::PauseExclusiveApps), QStringList{QStringLiteral("only-one.exe")});
        QCOMPARE(again.value(Key::ManualPauseUntilMs).toLongLong(), -1);
    }

    void changedOncePerRealChange() {
        QTemporaryDir dir;
        AppSettings settings(dir.filePath(QStringLiteral("tessera.ini")));
        QSignalSpy changed(&settings, &AppSettings::changed);
        settings.setValue(Key::IdleMinutes, 3); // the default: no change
        QCOMPARE(changed.count(), 0);
        settings.setValue(Key::IdleMinutes, 5);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.at(0).at(0).value<Key>(), Key::IdleMinutes);
        settings.reset(Key::IdleMinutes);
        QCOMPARE(changed.count(), 2);
        QCOMPARE(settings.integer(Key::IdleMinutes), 3);
    }

    void aMangledValueFallsBackToTheDefault() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("tessera.ini"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("[contribute]\ngpu_limit_percent=lots\n[pause\ngarbage\n");
        file.close();
        AppSettings settings(path);
        QCOMPARE(settings.integer(Key::GpuLimitPercent), 70);
    }
};

QTEST_GUILESS_MAIN(TestAppSettings)
#include "test_app_settings.moc"
