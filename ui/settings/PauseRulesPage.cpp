// SPDX-License-Identifier: Apache-2.0
#include "settings/PauseRulesPage.h"

#include "settings/ExclusiveAppsEditor.h"
#include "settings/SettingsBinder.h"
#include "widgets/ErrorNote.h"

#include "manager/Manager.h"
#include "manager/detectors/TimeWindows.h"

#include <QCheckBox>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using Key = manager::AppSettings::Key;

PauseRulesPage::PauseRulesPage(SettingsBinder& binder, manager::Manager& manager, QWidget* parent)
    : QWidget(parent)
    , m_manager(manager) {
    auto* appsBox = makeAppsGroup(binder);
    auto* rulesBox = makeRulesGroup(binder);
    auto* timeBox = makeTimeGroup(binder);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(appsBox, 1);
    layout->addWidget(rulesBox);
    layout->addWidget(timeBox);

    // The Manager rebuilds its detectors when a rule changes; look again once it has.
    connect(&binder.settings(), &manager::AppSettings::changed, this,
            [this] { QTimer::singleShot(0, this, &PauseRulesPage::refreshAvailability); });
    refreshAvailability();
}

QGroupBox* PauseRulesPage::makeAppsGroup(SettingsBinder& binder) {
    auto* appsBox = new QGroupBox(tr("Pause while one of these programs runs"));
    auto* apps = new ExclusiveAppsEditor(binder);
    apps->setObjectName(u"exclusiveApps"_s);
    auto* appsLayout = new QVBoxLayout(appsBox);
    appsLayout->addWidget(apps);
    appsLayout->addWidget(noteFor(u"exclusive-app"_s));
    return appsBox;
}

QGroupBox* PauseRulesPage::makeRulesGroup(SettingsBinder& binder) {
    auto* rulesBox = new QGroupBox(tr("Also pause"));
    auto* grid = new QGridLayout(rulesBox);
    int row = 0;

    auto* fullscreen = new QCheckBox(tr("while a program fills the whole screen (games, videos)"));
    fullscreen->setObjectName(u"pauseOnFullscreen"_s);
    binder.bind(fullscreen, Key::PauseOnFullscreen);
    addRule(grid, row, fullscreen, u"fullscreen"_s);

    auto* graphics = new QCheckBox(tr("while another program draws on the graphics card"));
    graphics->setObjectName(u"pauseOnGpuGraphics"_s);
    binder.bind(graphics, Key::PauseOnGpuGraphics);
    addRule(grid, row, graphics, u"gpu-graphics"_s);

    addIdleRule(binder, grid, row);

    auto* battery = new QCheckBox(tr("while the computer runs on battery"));
    battery->setObjectName(u"pauseOnBattery"_s);
    binder.bind(battery, Key::PauseOnBattery);
    addRule(grid, row, battery, u"battery"_s);

    addTemperatureRule(binder, grid, row);
    return rulesBox;
}

void PauseRulesPage::addRule(QGridLayout* grid, int& row, QWidget* control, const QString& rule,
                             QWidget* extra) {
    grid->addWidget(control, row, 0);
    if (extra)
        grid->addWidget(extra, row, 1);
    grid->addWidget(noteFor(rule), ++row, 0, 1, 2);
    ++row;
}

void PauseRulesPage::addIdleRule(SettingsBinder& binder, QGridLayout* grid, int& row) {
    auto* idle = new QCheckBox(tr("while I use the computer; contribute only after I have been away for"));
    idle->setObjectName(u"onlyWhenIdle"_s);
    binder.bind(idle, Key::OnlyWhenIdle);
    auto* idleMinutes = new QSpinBox;
    idleMinutes->setObjectName(u"idleMinutes"_s);
    idleMinutes->setRange(1, 120);
    idleMinutes->setSuffix(tr(" min"));
    binder.bind(idleMinutes, Key::IdleMinutes);
    connect(idle, &QCheckBox::toggled, idleMinutes, &QWidget::setEnabled);
    binder.onChange(Key::OnlyWhenIdle, [idle, idleMinutes] { idleMinutes->setEnabled(idle->isChecked()); });
    addRule(grid, row, idle, u"user-active"_s, idleMinutes);
}

// The limit's 0 means off: a check box and the degrees, stored as one value.
void PauseRulesPage::addTemperatureRule(SettingsBinder& binder, QGridLayout* grid, int& row) {
    auto* hot = new QCheckBox(tr("while the graphics card is hotter than"));
    hot->setObjectName(u"temperatureRule"_s);
    auto* degrees = new QSpinBox;
    degrees->setObjectName(u"temperatureLimit"_s);
    degrees->setRange(50, 100);
    degrees->setSuffix(tr(" °C"));
    degrees->setValue(manager::AppSettings::definition(Key::TemperatureLimitC).defaultValue.toInt());
    binder.onChange(Key::TemperatureLimitC, [&binder, hot, degrees] {
        const int limit = binder.settings().integer(Key::TemperatureLimitC);
        const QSignalBlocker blockHot(hot);
        const QSignalBlocker blockDegrees(degrees);
        hot->setChecked(limit > 0);
        degrees->setEnabled(limit > 0);
        if (limit > 0) // off keeps the degrees last shown, for turning it on again
            degrees->setValue(limit);
    });
    connect(hot, &QCheckBox::toggled, this, [&binder, degrees](bool on) {
        degrees->setEnabled(on);
        binder.settings().setValue(Key::TemperatureLimitC, on ? degrees->value() : 0);
    });
    connect(degrees, &QSpinBox::valueChanged, this, [&binder, hot](int value) {
        if (hot->isChecked())
            binder.settings().setValue(Key::TemperatureLimitC, value);
    });
    addRule(grid, row, hot, u"temperature"_s, degrees);
}

QGroupBox* PauseRulesPage::makeTimeGroup(SettingsBinder& binder) {
    auto* timeBox = new QGroupBox(tr("Contribute only at these times"));
    auto* windows = new QLineEdit;
    windows->setObjectName(u"timeWindows"_s);
    windows->setPlaceholderText(tr("Any time. For example: Mon-Fri 18:00-08:00, Sat-Sun"));
    auto* windowsError = new QLabel;
    windowsError->setObjectName(u"timeWindowsError"_s);
    windowsError->setWordWrap(true);
    windowsError->setStyleSheet(u"color: #c0392b;"_s);
    windowsError->hide();
    binder.bind(windows, Key::TimeWindows, &PauseRulesPage::checkTimeWindows, windowsError);
    auto* timeLayout = new QVBoxLayout(timeBox);
    timeLayout->addWidget(windows);
    timeLayout->addWidget(windowsError);
    timeLayout->addWidget(noteFor(u"time-window"_s));
    return timeBox;
}

ErrorNote* PauseRulesPage::noteFor(const QString& rule) {
    auto* note = new ErrorNote;
    note->setObjectName(u"unavailable-"_s + rule);
    note->setContentsMargins(20, 0, 0, 0);
    m_notes.insert(rule, note);
    return note;
}

QString PauseRulesPage::cannotSense(const QString& rule) {
    if (rule == u"fullscreen")
        return tr("This computer cannot tell when a program fills the screen: that needs an X11 desktop "
                  "session.");
    if (rule == u"user-active")
        return tr("This computer cannot tell when you are using it: that needs an X11 desktop session that "
                  "reports idle time.");
    if (rule == u"gpu-graphics" || rule == u"temperature")
        return tr("This computer cannot tell: no NVIDIA graphics card with its driver was found.");
    if (rule == u"battery")
        return tr("This computer cannot tell: it has no battery, or its power service (UPower) is not "
                  "running.");
    return tr("This computer cannot tell, so this rule will not pause Tessera.");
}

QString PauseRulesPage::checkTimeWindows(const QString& text) {
    const Result<manager::TimeWindows> parsed = manager::TimeWindows::parse(text);
    return parsed ? QString() : QString::fromStdString(parsed.message());
}

void PauseRulesPage::refreshAvailability() {
    // Only the rules turned on have a detector; a rule that is off needs no warning. A note shown
    // again is updated in place (an open Details stays open while the reason is the same).
    QHash<QString, QString> reasons;
    for (const auto& detector : m_manager.policy().detectors())
        if (!detector->available())
            reasons.insert(detector->rule(), detector->unavailableReason());
    for (auto it = m_notes.cbegin(); it != m_notes.cend(); ++it) {
        if (reasons.contains(it.key()))
            it.value()->showWarning(cannotSense(it.key()), reasons.value(it.key()));
        else
            it.value()->clear();
    }
}

QString PauseRulesPage::unavailableNote(const QString& rule) const {
    const ErrorNote* note = m_notes.value(rule);
    return note ? note->message() : QString();
}

QString PauseRulesPage::unavailableDetails(const QString& rule) const {
    const ErrorNote* note = m_notes.value(rule);
    return note ? note->details() : QString();
}

} // namespace tessera::ui
