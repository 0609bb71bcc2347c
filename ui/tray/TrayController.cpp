// SPDX-License-Identifier: Apache-2.0
#include "tray/TrayController.h"

#include "tray/ContributionActions.h"
#include "tray/TrayIcons.h"
#include "manager/NodeStatusText.h"

#include "manager/Manager.h"

#include <QMenu>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::NodeStatusText;

TrayController::TrayController(manager::Manager& manager, ContributionActions& actions, QObject* parent)
    : QObject(parent)
    , m_manager(manager)
    , m_menu(new QMenu) {
    // The first line says what is going on, like the tooltip, for panels that show no tooltips.
    m_stateLine = m_menu->addAction(QString());
    m_stateLine->setObjectName(u"stateLine"_s);
    m_stateLine->setEnabled(false);
    m_menu->addSeparator();
    m_menu->addAction(actions.contribute());
    m_menu->addAction(actions.pauseForHour());
    m_menu->addAction(actions.pauseUntilResumed());
    m_menu->addAction(actions.resume());
    m_menu->addSeparator();
    QAction* dashboard = m_menu->addAction(tr("Dashboard"), this, &TrayController::dashboardRequested);
    dashboard->setObjectName(u"dashboard"_s);
    QAction* settings = m_menu->addAction(tr("Settings…"), this, &TrayController::settingsRequested);
    settings->setObjectName(u"settings"_s);
    QAction* about = m_menu->addAction(tr("About Tessera…"), this, &TrayController::aboutRequested);
    about->setObjectName(u"about"_s);
    m_menu->addSeparator();
    QAction* quit = m_menu->addAction(tr("Quit Tessera"), this, &TrayController::quitRequested);
    quit->setObjectName(u"quit"_s);
    m_icon.setContextMenu(m_menu);

    connect(&m_icon, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason reason) {
        if (reason == QSystemTrayIcon::Trigger || reason == QSystemTrayIcon::DoubleClick)
            Q_EMIT dashboardRequested();
    });
    connect(&m_manager, &manager::Manager::stateChanged, this, &TrayController::update);
    connect(&m_manager, &manager::Manager::creditsChanged, this, &TrayController::update);
    // The Manager sends only what the Notifications setting allows.
    connect(&m_manager, &manager::Manager::notify, this,
            [this](const QString& title, const QString& message, bool error) {
                if (m_icon.isVisible())
                    m_icon.showMessage(title, message,
                                       error ? QSystemTrayIcon::Warning : QSystemTrayIcon::Information, 8000);
            });
    update();
}

TrayController::~TrayController() {
    m_icon.hide();
    delete m_menu; // a context menu is not owned by the tray icon
}

void TrayController::show() {
    m_icon.show();
}

void TrayController::hide() {
    m_icon.hide();
}

QString TrayController::toolTip() const {
    const double pending = m_manager.nodeStatus().value(u"credits_pending").toDouble();
    return tr("Tessera — %1\nToday: %2 credits (%3 pending)")
        .arg(m_manager.stateText(), NodeStatusText::credits(m_manager.creditsToday()),
             NodeStatusText::credits(pending));
}

void TrayController::update() {
    m_icon.setIcon(TrayIcons::icon(m_manager.state()));
    m_icon.setToolTip(toolTip());
    QString line = m_manager.stateText();
    if (line.size() > 60)
        line = line.left(59) + u'…';
    m_stateLine->setText(line.isEmpty() ? manager::appStateName(m_manager.state()) : line);
}

} // namespace tessera::ui
