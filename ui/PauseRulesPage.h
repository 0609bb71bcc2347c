// SPDX-License-Identifier: Apache-2.0
#pragma once
// PauseRulesPage: when Tessera steps aside — listed programs, full-screen windows, another
// program on the GPU, only when idle, on battery, a temperature limit and the hours to contribute
// in — and, next to each rule, whether this computer can sense it at all.

#include <QHash>
#include <QString>
#include <QWidget>

class QLabel;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class SettingsBinder;

class PauseRulesPage final : public QWidget {
    Q_OBJECT

public:
    PauseRulesPage(SettingsBinder& binder, manager::Manager& manager, QWidget* parent = nullptr);

    // What is wrong with a time-window text (TimeWindows' own message), or an empty string.
    static QString checkTimeWindows(const QString& text);
    // Shows, under each rule, why this computer cannot sense it (no X display, no NVML, …).
    void refreshAvailability();
    // The note shown for a rule id ("fullscreen"); empty when the rule can be sensed.
    QString unavailableNote(const QString& rule) const;

private:
    QLabel* noteFor(const QString& rule);

    manager::Manager& m_manager;
    QHash<QString, QLabel*> m_notes;
};

} // namespace tessera::ui
