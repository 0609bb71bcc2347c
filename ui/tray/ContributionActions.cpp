// SPDX-License-Identifier: Apache-2.0
#include "tray/ContributionActions.h"

#include "manager/Manager.h"

#include <QAction>

#include <chrono>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::AppState;

ContributionActions::ContributionActions(manager::Manager& manager, QObject* parent)
    : QObject(parent)
    , m_manager(manager) {
    m_contribute = new QAction(tr("&Contribute"), this);
    m_contribute->setObjectName(u"contribute"_s);
    m_pauseHour = new QAction(tr("Pause for &1 hour"), this);
    m_pauseHour->setObjectName(u"pauseHour"_s);
    m_pauseUntilResumed = new QAction(tr("Pause &until I resume"), this);
    m_pauseUntilResumed->setObjectName(u"pauseUntilResumed"_s);
    m_resume = new QAction(tr("&Resume"), this);
    m_resume->setObjectName(u"resume"_s);

    connect(m_contribute, &QAction::triggered, &m_manager, &manager::Manager::contribute);
    connect(m_pauseHour, &QAction::triggered, this, [this] { m_manager.pauseFor(std::chrono::hours(1)); });
    connect(m_pauseUntilResumed, &QAction::triggered, &m_manager, &manager::Manager::pauseUntilResumed);
    connect(m_resume, &QAction::triggered, &m_manager, &manager::Manager::resume);
    // After the Manager has acted (connected first, so called first).
    for (QAction* action : {m_contribute, m_pauseHour, m_pauseUntilResumed, m_resume})
        connect(action, &QAction::triggered, this, &ContributionActions::update);
    // The user's own pause shows in the decision first, the state follows on the next tick.
    connect(&m_manager, &manager::Manager::stateChanged, this, &ContributionActions::update);
    connect(&m_manager.policy(), &manager::PausePolicy::decisionChanged, this, &ContributionActions::update);
    update();
}

void ContributionActions::update() {
    const AppState state = m_manager.state();
    const bool contributing = state != AppState::NotStarted && state != AppState::Error;
    const bool ownPause =
        m_manager.pauseDecision().snoozeUntilMs != 0 || m_manager.policy().snoozeUntilMs() != 0;
    m_contribute->setVisible(!contributing);
    m_contribute->setText(state == AppState::Error ? tr("&Try again") : tr("&Contribute"));
    m_pauseHour->setVisible(contributing && !ownPause);
    m_pauseUntilResumed->setVisible(contributing && !ownPause);
    m_resume->setVisible(contributing && ownPause);
    Q_EMIT changed();
}

} // namespace tessera::ui
