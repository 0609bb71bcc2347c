// SPDX-License-Identifier: Apache-2.0
#pragma once
// DesktopApp: the app's windows around one Manager — the tray (or, on a desktop without one, the
// dashboard as the app's only presence), the first-run wizard, the dashboard and the settings,
// each made when first shown — and a clean quit (the node stopped before the process ends).

#include <QObject>
#include <QPointer>
#include <QString>

#include <chrono>
#include <memory>

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class AboutBox;
class ContributionActions;
class DashboardWindow;
class FirstRunWizard;
class SettingsDialog;
class TrayController;

class DesktopApp final : public QObject {
    Q_OBJECT

public:
    struct Options {
        bool minimized = false; // started at login: no window (minimised dashboard without a tray)
        QString show;           // "wizard", "dashboard" or "settings": that window too (screenshots)
    };

    explicit DesktopApp(manager::Manager& manager, QObject* parent = nullptr);
    ~DesktopApp() override;

    // Shows the tray, then what a user expects: the wizard until Contribute succeeded once,
    // else nothing (the tray) or the dashboard (no tray). Starts the Manager.
    void start(const Options& options);
    // A second start of the app (or a click on the tray icon): the wizard or the dashboard.
    void showMain();
    void showDashboard();
    void showSettings();
    void showAbout();
    void showWizard();
    // Stops the node, then quits the event loop (at the latest after kQuitTimeoutMs).
    void quit();

    bool hasTray() const { return m_tray != nullptr; }
    AboutBox* about() const;
    // How long a start without a tray watches for one to appear (the panel may start after the
    // app at login) before a --minimized start falls back to a minimised dashboard.
    void setTrayWait(std::chrono::milliseconds wait) { m_trayWait = wait; }
    TrayController* tray() const { return m_tray.get(); }
    ContributionActions& actions() { return *m_actions; }
    // The windows while they exist (closing the wizard or the settings deletes them).
    DashboardWindow* dashboard() const;
    FirstRunWizard* wizard() const;
    SettingsDialog* settings() const;

    static constexpr int kQuitTimeoutMs = 15'000;

Q_SIGNALS:
    void quitting();

private:
    void adoptTray();
    void watchForTray(bool minimized);
    void raise(QWidget* window);

    manager::Manager& m_manager;
    std::unique_ptr<ContributionActions> m_actions;
    std::unique_ptr<TrayController> m_tray;
    QPointer<DashboardWindow> m_dashboard;
    QPointer<FirstRunWizard> m_wizard;
    QPointer<SettingsDialog> m_settings;
    QPointer<AboutBox> m_about;
    std::chrono::milliseconds m_trayWait{60'000};
    bool m_quitting = false;
};

} // namespace tessera::ui
