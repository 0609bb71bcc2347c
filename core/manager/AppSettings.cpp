#include "manager/AppSettings.h"

#include <QSettings>

#include <array>

namespace tessera::manager {

namespace {

using Key = AppSettings::Key;

// The one table: every key, its name in the file and its default.
const std::array<AppSettings::Definition, std::size_t(Key::KeyCount)>& table() {
    static const std::array<AppSettings::Definition, std::size_t(Key::KeyCount)> definitions{{
        {Key::CoordinatorUrl, "contribute/coordinator", QStringLiteral("https://127.0.0.1:7443")},
        {Key::CoordinatorCaFile, "contribute/coordinator_ca", QString()},
        {Key::DataDir, "contribute/data_dir", QString()},
        {Key::DiskLimitGb, "contribute/disk_limit_gb", 20.0},
        {Key::GpuLimitPercent, "contribute/gpu_limit_percent", 70},
        {Key::Device, "contribute/device", QString()},
        {Key::NodeProgram, "contribute/node_program", QString()},
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

AppSettings::AppSettings(QObject* parent)
    : QObject(parent)
    , m_settings(std::make_unique<QSettings>(QSettings::IniFormat, QSettings::UserScope,
                                             QStringLiteral("Tessera"), QStringLiteral("tessera"))) {}

AppSettings::AppSettings(const QString& path, QObject* parent)
    : QObject(parent)
    , m_settings(std::make_unique<QSettings>(path, QSettings::IniFormat)) {}

AppSettings::~AppSettings() {
    m_settings->sync();
}

QVariant AppSettings::value(Key key) const {
    const Definition& d = definition(key);
    const QVariant stored = m_settings->value(QLatin1StringView(d.name));
    if (!stored.isValid())
        return d.defaultValue;
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
    if (before != d.defaultValue)
        Q_EMIT changed(key);
}

QString AppSettings::fileName() const {
    return m_settings->fileName();
}

void AppSettings::sync() {
    m_settings->sync();
}

} // namespace tessera::manager
