// SPDX-License-Identifier: Apache-2.0
#include "DesktopApp.h"

#include "widgets/AboutBox.h"
#include "tray/ContributionActions.h"
#include "dashboard/DashboardWindow.h"
#include "wizard/FirstRunWizard.h"
#include "settings/SettingsDialog.h"
#include "tray/TrayController.h"
#include "tray/TrayIcons.h"

#include "manager/AppSettings.h"
#include "manager/Manager.h"

#include <QAction>
#include <QApplication>
#include <QElapsedTimer>
#include <QTimer>

namespace tessera::ui {

using manager::AppSettings;
using manager::AppState;

DesktopApp::DesktopApp(manager::Manager& manager, QObject* parent)
    : QObject(parent)
    , m_manager(manager)
    , m_actions(std::make_unique<ContributionActions>(manager)) {
    if (TrayController::available())
        adoptTray();
    // The window icon shows the state too (the taskbar, Alt+Tab).
    QApplication::setWindowIcon(TrayIcons::icon(m_manager.state()));
    connect(&m_manager, &manager::Manager::stateChanged, this,
            [](AppState state) { QApplication::setWindowIcon(TrayIcons::icon(state)); });
    // Contribute from the tray before the first run finished: the wizard shows how it goes.
    connect(m_actions->contribute(), &QAction::triggered, this, [this] {
        if (!m_manager.settings().flag(AppSettings::Key::FirstRunDone))
            showWizard();
    });
}

DesktopApp::~DesktopApp() {
    delete m_wizard;
    delete m_settings;
    delete m_dashboard;
}

DashboardWindow* DesktopApp::dashboard() const {
    return m_dashboard;
}

FirstRunWizard* DesktopApp::wizard() const {
    return m_wizard;
}

SettingsDialog* DesktopApp::settings() const {
    return m_settings;
}

void DesktopApp::start(const Options& options) {
    m_manager.start();
    if (options.show == u"wizard")
        showWizard();
    else if (options.show == u"dashboard")
        showDashboard();
    else if (options.show == u"settings")
        showSettings();
    else if (!options.minimized)
        showMain();
    if (!m_tray)
        watchForTray(options.minimized && options.show.isEmpty());
}

void DesktopApp::adoptTray() {
    m_tray = std::make_unique<TrayController>(m_manager, *m_actions);
    connect(m_tray.get(), &TrayController::dashboardRequested, this, &DesktopApp::showMain);
    connect(m_tray.get(), &TrayController::settingsRequested, this, &DesktopApp::showSettings);
    connect(m_tray.get(), &TrayController::aboutRequested, this, &DesktopApp::showAbout);
    connect(m_tray.get(), &TrayController::quitRequested, this, &DesktopApp::quit);
    m_tray->show();
    // The dashboard is no longer the app's only presence: closing it just closes it.
    if (m_dashboard) {
        m_dashboard->setAskOnClose(false);
        m_dashboard->setAttribute(Qt::WA_DeleteOnClose);
    }
}

void DesktopApp::watchForTray(bool minimized) {
    // At login the panel that hosts the tray often starts after the app. Watch for it a while;
    // a start that wanted no window falls back to a minimised dashboard (in the taskbar) if none
    // comes, so that the app is never running where nobody can find it.
    auto* timer = new QTimer(this);
    timer->setInterval(std::min<std::chrono::milliseconds>(m_trayWait, std::chrono::seconds(1)));
    QElapsedTimer waited;
    waited.start();
    connect(timer, &QTimer::timeout, this, [this, timer, waited, minimized] {
        if (m_quitting) {
            timer->deleteLater();
        } else if (TrayController::available()) {
            timer->deleteLater();
            adoptTray();
        } else if (waited.hasExpired(m_trayWait.count())) {
            timer->deleteLater();
            if (minimized && !m_dashboard && !m_wizard && !m_settings) {
                showDashboard();
                m_dashboard->showMinimized();
            }
        }
    });
    timer->start();
}

void DesktopApp::showMain() {
    if (!m_manager.settings().flag(AppSettings::Key::FirstRunDone))
        showWizard();
    else
        showDashboard();
}

void DesktopApp::raise(QWidget* window) {
    if (window->isMinimized())
        window->showNormal();
    window->show();
    window->raise();
    window->activateWindow();
}

void DesktopApp::showDashboard() {
    if (!m_dashboard) {
        m_dashboard = new DashboardWindow(m_manager, *m_actions);
        m_dashboard->setAttribute(Qt::WA_DeleteOnClose, m_tray != nullptr);
        m_dashboard->setAskOnClose(!m_tray);
        connect(m_dashboard, &DashboardWindow::settingsRequested, this, &DesktopApp::showSettings);
        connect(m_dashboard, &DashboardWindow::aboutRequested, this, &DesktopApp::showAbout);
        connect(m_dashboard, &DashboardWindow::quitRequested, this, &DesktopApp::quit);
    }
    raise(m_dashboard);
}

AboutBox* DesktopApp::about() const {
    return m_about;
}

void DesktopApp::showAbout() {
    if (!m_about) {
        m_about = new AboutBox;
        m_about->setAttribute(Qt::WA_DeleteOnClose);
    }
    raise(m_about);
}

void DesktopApp::showSettings() {
    if (!m_settings) {
        m_settings = new SettingsDialog(m_manager);
        m_settings->setAttribute(Qt::WA_DeleteOnClose);
    }
    raise(m_settings);
}

void DesktopApp::showWizard() {
    if (!m_wizard) {
        m_wizard = new FirstRunWizard(m_manager);
        m_wizard->setAttribute(Qt::WA_DeleteOnClose);
        connect(m_wizard, &FirstRunWizard::dashboardRequested, this, &DesktopApp::showDashboard);
        connect(m_wizard, &QObject::destroyed, this, [this] {
            if (m_tray || m_quitting || (m_dashboard && m_dashboard->isVisible()))
                return;
            // Without a tray nothing would be left on screen: the dashboard while Tessera
            // contributes, else (Not now) the app ends.
            if (m_manager.state() == AppState::NotStarted)
                quit();
            else
                showDashboard();
        });
    }
    raise(m_wizard);
}

void DesktopApp::quit() {
    if (m_quitting)
        return;
    m_quitting = true;
    Q_EMIT quitting();
    if (m_tray)
        m_tray->hide();
    for (QWidget* window : {static_cast<QWidget*>(m_wizard), static_cast<QWidget*>(m_settings),
                            static_cast<QWidget*>(m_dashboard)})
        if (window)
            window->hide();
    connect(&m_manager, &manager::Manager::finished, qApp, &QCoreApplication::quit);
    // A node that does not stop is killed by the supervisor after 5 s; never hang on quit.
    QTimer::singleShot(kQuitTimeoutMs, qApp, &QCoreApplication::quit);
    m_manager.shutdown();
}

} // namespace tessera::ui
