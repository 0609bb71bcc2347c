// SPDX-License-Identifier: Apache-2.0
#pragma once
// PauseRulesPage: when Tessera steps aside — listed programs, full-screen windows, another
// program on the GPU, only when idle, on battery, a temperature limit and the hours to contribute
// in — and, next to each rule, whether this computer can sense it at all.

#include <QHash>
#include <QString>
#include <QWidget>

class QGridLayout;
class QGroupBox;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class ErrorNote;
class SettingsBinder;

class PauseRulesPage final : public QWidget {
    Q_OBJECT

public:
    PauseRulesPage(SettingsBinder& binder, manager::Manager& manager, QWidget* parent = nullptr);

    // What is wrong with a time-window text (TimeWindows' own message), or an empty string.
    static QString checkTimeWindows(const QString& text);
    // Shows, under each rule, that this computer cannot sense it, in plain words, with the
    // detector's own reason (no X display, no NVML, …) behind Details.
    void refreshAvailability();
    // The note shown for a rule id ("fullscreen"); empty when the rule can be sensed.
    QString unavailableNote(const QString& rule) const;
    // Its technical reason (the Details text).
    QString unavailableDetails(const QString& rule) const;
    // The plain sentence for a rule this computer cannot sense.
    static QString cannotSense(const QString& rule);

private:
    // The page's three groups, top to bottom.
    QGroupBox* makeAppsGroup(SettingsBinder& binder);
    QGroupBox* makeRulesGroup(SettingsBinder& binder);
    QGroupBox* makeTimeGroup(SettingsBinder& binder);
    // A rule's row in the "Also pause" grid: its control (and what it takes, beside it), with its
    // note under it; row moves past both.
    void addRule(QGridLayout* grid, int& row, QWidget* control, const QString& rule,
                 QWidget* extra = nullptr);
    void addIdleRule(SettingsBinder& binder, QGridLayout* grid, int& row);
    void addTemperatureRule(SettingsBinder& binder, QGridLayout* grid, int& row);
    ErrorNote* noteFor(const QString& rule);

    manager::Manager& m_manager;
    QHash<QString, ErrorNote*> m_notes;
};

} // namespace tessera::ui
