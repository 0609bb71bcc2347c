// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrayController: Tessera's presence in the system tray — the state's icon, a tooltip with the
// state and today's credits, the menu (Contribute, pauses, Resume, Dashboard, Settings, About, Quit) and
// the Manager's notifications as balloon messages.

#include <QObject>
#include <QSystemTrayIcon>

class QAction;
class QMenu;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class ContributionActions;

class TrayController final : public QObject {
    Q_OBJECT

public:
    TrayController(manager::Manager& manager, ContributionActions& actions, QObject* parent = nullptr);
    ~TrayController() override;

    // Whether this desktop has a tray at all (many Wayland and GNOME sessions do not).
    static bool available() { return QSystemTrayIcon::isSystemTrayAvailable(); }

    void show();
    void hide();
    QMenu& menu() { return *m_menu; }
    QSystemTrayIcon& icon() { return m_icon; }
    // "Tessera — Contributing to stage 2 of 7\nToday: 0.42 credits"
    QString toolTip() const;

Q_SIGNALS:
    void dashboardRequested();
    void settingsRequested();
    void aboutRequested();
    void quitRequested();

private:
    void update();

    manager::Manager& m_manager;
    QSystemTrayIcon m_icon;
    QMenu* m_menu;
    QAction* m_stateLine;
};

} // namespace tessera::ui
