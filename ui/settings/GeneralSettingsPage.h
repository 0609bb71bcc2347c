// SPDX-License-Identifier: Apache-2.0
#pragma once
// GeneralSettingsPage: how much of the GPU Tessera may use, start at login, notifications, where
// the node keeps its data (with the disk space it may take), and the opt-in name and team shown on
// the coordinator's public leaderboard.

#include <QWidget>

class QFormLayout;
class QLabel;
class QLineEdit;

namespace tessera::ui {

class SettingsBinder;

class GeneralSettingsPage final : public QWidget {
    Q_OBJECT

public:
    explicit GeneralSettingsPage(SettingsBinder& binder, QWidget* parent = nullptr);

    // What is wrong with a display name or team, in the user's language; empty when it is fine.
    static QString checkProfileText(const QString& text);

private:
    // The form's sections, top to bottom, each adding its rows.
    void addGpuLimitRows(QFormLayout* form);
    void addStartupRows(QFormLayout* form);
    void addDataRows(QFormLayout* form);
    void addLeaderboardRows(QFormLayout* form);
    void chooseDataDir();

    SettingsBinder& m_binder;
    QLineEdit* m_dataDir;
};

} // namespace tessera::ui
