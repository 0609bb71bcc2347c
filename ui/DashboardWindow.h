#pragma once
// DashboardWindow: what Tessera is doing and why (in big words), the stage this computer holds,
// the credits it earned (today, in total, per hour/day/month), its throughput, and the swarm's
// progress. It refreshes on the Manager's signals and every 10 s while shown, never by polling.

#include "manager/History.h"

#include <QTimer>
#include <QWidget>

#include <chrono>

class QComboBox;
class QLabel;
class QPushButton;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class ContributionActions;
class HistoryChart;
class SwarmPanel;

class DashboardWindow final : public QWidget {
    Q_OBJECT

public:
    static constexpr std::chrono::seconds kRefresh{10};

    DashboardWindow(manager::Manager& manager, ContributionActions& actions, QWidget* parent = nullptr);
    ~DashboardWindow() override;

    // Without a tray the dashboard is the app's only presence: closing it asks whether to quit
    // (or keep running minimised), since a hidden app could not be found again.
    void setAskOnClose(bool ask) { m_askOnClose = ask; }

    void setRange(manager::HistoryRange range);
    manager::HistoryRange range() const;
    // Reads the ledger and the activity log again and redraws the charts and the credits.
    void refreshHistory();

    QString stateText() const;
    QString stageText() const;
    QString creditsTodayText() const;
    QString creditsTotalText() const;
    QString creditsPendingText() const;
    QString historyError() const;
    HistoryChart& creditsChart() { return *m_creditsChart; }
    HistoryChart& throughputChart() { return *m_throughputChart; }
    SwarmPanel& swarm() { return *m_swarm; }

Q_SIGNALS:
    void settingsRequested();
    void aboutRequested();
    void quitRequested();

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    QWidget* makeHeader();
    QWidget* makeCredits();
    void updateState();
    void updateButtons();

    manager::Manager& m_manager;
    ContributionActions& m_actions;
    QLabel* m_icon;
    QLabel* m_state;
    QLabel* m_stage;
    QPushButton* m_contribute;
    QPushButton* m_pause;
    QPushButton* m_resume;
    QLabel* m_today;
    QLabel* m_total;
    QLabel* m_pending;
    QLabel* m_historyError;
    QComboBox* m_range;
    HistoryChart* m_creditsChart;
    HistoryChart* m_throughputChart;
    SwarmPanel* m_swarm;
    QTimer m_refresh;
    bool m_askOnClose = false;
};

} // namespace tessera::ui
