// SPDX-License-Identifier: Apache-2.0
#include "manager/AppSettings.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QSettings>

#include <algorithm>
#include <array>

namespace tessera::manager {

namespace {

using Key = AppSettings::Key;

// The one table: every key, its name in the file and its default.
const std::array<AppSettings::Definition, std::size_t(Key::KeyCount)>& table() {
    static const std::array<AppSettings::Definition, std::size_t(Key::KeyCount)> definitions{{
        {Key::CoordinatorUrl, "contribute/coordinator", QStringLiteral(TESSERA_DEFAULT_COORDINATOR)},
        {Key::CoordinatorCaFile, "contribute/coordinator_ca", QString()},
        {Key::CoordinatorKey, "contribute/coordinator_key", QString()},
        {Key::DataDir, "contribute/data_dir", QString()},
        {Key::DiskLimitGb, "contribute/disk_limit_gb", 20.0},
        {Key::GpuLimitPercent, "contribute/gpu_limit_percent", 70},
        {Key::Device, "contribute/device", QString()},
        {Key::NodeProgram, "contribute/node_program", QString()},
        {Key::DisplayName, "contribute/display_name", QString()},
        {Key::Team, "contribute/team", QString()},
        {Key::PauseExclusiveApps, "pause/exclusive_apps", AppSettings::defaultExclusiveApps()},
        {Key::PauseOnFullscreen, "pause/fullscreen", true},
        {Key::PauseOnGpuGraphics, "pause/gpu_graphics", true},
        {Key::OnlyWhenIdle, "pause/only_when_idle", false},
        {Key::IdleMinutes, "pause/idle_minutes", 3},
        {Key::PauseOnBattery, "pause/on_battery", true},
        {Key::TemperatureLimitC, "pause/temperature_limit_c", 83},
        {Key::TimeWindows, "pause/time_windows", QString()},
        {Key::GraceSeconds, "pause/grace_seconds", 15},
        {Key::StartAtLogin, "app/start_at_login", false},
        {Key::Notifications, "app/notifications", true},
        {Key::FirstRunDone, "app/first_run_done", false},
        {Key::Contributing, "app/contributing", false},
        {Key::ManualPauseUntilMs, "app/manual_pause_until_ms", qint64(0)},
    }};
    return definitions;
}

} // namespace

const AppSettings::Definition& AppSettings::definition(Key key) {
    const auto& definitions = table();
    const auto& d = definitions.at(std::size_t(key));
    Q_ASSERT(d.key == key); // the table is in the enum's order
    return d;
}

QStringList AppSettings::defaultExclusiveApps() {
    // Launchers are left out on purpose: Steam and its peers idle in the tray all day, and a
    // rule that pauses whenever they run would pause forever. These are games that only run while
    // someone plays (gameoverlayui runs beside every game Steam starts), and apps that want the
    // whole GPU.
    const char* names[] = {"gameoverlayui",
                           "cs2",
                           "dota2",
                           "witcher3",
                           "Cyberpunk2077",
                           "eldenring",
                           "FortniteClient-Win64-Shipping",
                           "VALORANT-Win64-Shipping",
                           "RocketLeague",
                           "GTA5",
                           "r5apex",
                           "Overwatch",
                           "obs",
                           "blender"};
    QStringList list;
    for (const char* name : names)
        list.append(QString::fromLatin1(name));
    return list;
}

namespace {

std::unique_ptr<QSettings> packaged(const QString& path) {
    if (path.isEmpty() || !QFileInfo(path).isReadable())
        return nullptr;
    return std::make_unique<QSettings>(path, QSettings::IniFormat);
}

} // namespace

AppSettings::AppSettings(QObject* parent)
    : QObject(parent)
    , m_settings(std::make_unique<QSettings>(QSettings::IniFormat, QSettings::UserScope,
                                             QStringLiteral("Tessera"), QStringLiteral("tessera")))
    , m_packaged(packaged(packagedDefaultsPath())) {
    // Only our own packaged defaults: not Qt's system-wide fallback files as well.
    m_settings->setFallbacksEnabled(false);
}

AppSettings::AppSettings(const QString& path, QObject* parent, const QString& packagedDefaults)
    : QObject(parent)
    , m_settings(std::make_unique<QSettings>(path, QSettings::IniFormat))
    , m_packaged(packaged(packagedDefaults)) {}

AppSettings::~AppSettings() {
    m_settings->sync();
}

QString AppSettings::packagedDefaultsPath() {
    const QString fromEnvironment = qEnvironmentVariable("TESSERA_APP_DEFAULTS");
    if (!fromEnvironment.isEmpty())
        return fromEnvironment;
    // Beside the installed program, by GNUInstallDirs' rule: /usr/bin's configuration is in /etc
    // (the .deb), any other prefix's in PREFIX/etc (/usr/local/etc after `cmake --install`).
    const QString prefix = QFileInfo(QCoreApplication::applicationDirPath()).absolutePath();
    const QString sysconf = prefix == u"/usr" ? QStringLiteral("/etc") : prefix + QStringLiteral("/etc");
    return sysconf + QStringLiteral("/tessera/tessera.ini");
}

QVariant AppSettings::typed(Key key, const QVariant& stored) const {
    const Definition& d = definition(key);
    // INI files keep no types: give back the default's type, so toStringList() of a one-item
    // list and toInt() of "70" behave.
    QVariant converted = stored;
    if (d.defaultValue.metaType() == QMetaType::fromType<QStringList>() &&
        stored.typeId() == QMetaType::QString)
        return QStringList{stored.toString()};
    if (converted.convert(d.defaultValue.metaType()))
        return converted;
    return d.defaultValue;
}

QVariant AppSettings::defaultValue(Key key) const {
    const Definition& d = definition(key);
    if (m_packaged) {
        const QVariant packagedValue = m_packaged->value(QLatin1StringView(d.name));
        if (packagedValue.isValid())
            return typed(key, packagedValue);
    }
    return d.defaultValue;
}

QVariant AppSettings::value(Key key) const {
    const QVariant stored = m_settings->value(QLatin1StringView(definition(key).name));
    return stored.isValid() ? typed(key, stored) : defaultValue(key);
}

void AppSettings::setValue(Key key, const QVariant& value) {
    if (value == this->value(key))
        return;
    m_settings->setValue(QLatin1StringView(definition(key).name), value);
    Q_EMIT changed(key);
}

void AppSettings::reset(Key key) {
    const Definition& d = definition(key);
    if (!m_settings->contains(QLatin1StringView(d.name)))
        return;
    const QVariant before = value(key);
    m_settings->remove(QLatin1StringView(d.name));
    if (before != defaultValue(key))
        Q_EMIT changed(key);
}

QString AppSettings::fileName() const {
    return m_settings->fileName();
}

void AppSettings::sync() {
    m_settings->sync();
}

int AppSettings::gpuLimitPercent() const {
    return std::clamp(integer(Key::GpuLimitPercent), 1, 100);
}

} // namespace tessera::manager
