// SPDX-License-Identifier: Apache-2.0
#pragma once
// ContributionActions: what a user can tell the Manager — Contribute, Pause for 1 hour, Pause
// until I resume, Resume — as actions shown only when they make sense now. The tray's menu and
// the dashboard's buttons share them, so both always offer the same choices.

#include <QObject>

class QAction;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class ContributionActions final : public QObject {
    Q_OBJECT

public:
    explicit ContributionActions(manager::Manager& manager, QObject* parent = nullptr);

    QAction* contribute() const { return m_contribute; }
    QAction* pauseForHour() const { return m_pauseHour; }
    QAction* pauseUntilResumed() const { return m_pauseUntilResumed; }
    QAction* resume() const { return m_resume; }

    // Contribute when not contributing (or stopped by a refusal: it tries again); the pauses
    // while contributing; Resume while a pause of the user's own is on. A pause by a rule (a
    // game) offers no Resume: it ends by itself, and resume() would not override it.
    void update();

Q_SIGNALS:
    void changed();

private:
    manager::Manager& m_manager;
    QAction* m_contribute;
    QAction* m_pauseHour;
    QAction* m_pauseUntilResumed;
    QAction* m_resume;
};

} // namespace tessera::ui
