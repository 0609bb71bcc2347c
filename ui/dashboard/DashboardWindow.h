// SPDX-License-Identifier: Apache-2.0
#pragma once
// DashboardWindow: what Tessera is doing and why (in big words, the technical side behind
// Details), the stage this computer holds, the credits it earned (today, in total, pending, its
// rate, day by day), its throughput, and the swarm's progress. It refreshes on the Manager's
// signals and every 10 s while shown, never by polling.
//
// It fits small screens: it opens no larger than the screen, everything scrolls, and below
// kNarrowWidth (a 1280-pixel screen at 150 %) the buttons go under the status and the charts
// under each other. Each chart can be shown as a table (screen readers, exact figures).

#include "manager/History.h"

#include <QTimer>
#include <QWidget>

#include <chrono>

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QPushButton;
class QScrollArea;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class ContributionActions;
class CreditsBox;
class CreditsDialog;
class ErrorNote;
class HistoryChart;
class HistoryView;
class SwarmPanel;

class DashboardWindow final : public QWidget {
    Q_OBJECT

public:
    static constexpr std::chrono::seconds kRefresh{10};
    static constexpr int kNarrowWidth = 860; // the window's width in logical pixels

    DashboardWindow(manager::Manager& manager, ContributionActions& actions, QWidget* parent = nullptr);
    ~DashboardWindow() override;

    // Without a tray the dashboard is the app's only presence: closing it asks whether to quit
    // (or keep running minimised), since a hidden app could not be found again.
    void setAskOnClose(bool ask) { m_askOnClose = ask; }

    void setRange(manager::HistoryRange range);
    manager::HistoryRange range() const;
    // Reads the ledger and the activity log again and redraws the charts and the credits.
    void refreshHistory();
    void showTables(bool tables);
    bool narrow() const { return m_narrow; }
    // The credits day by day (a dialog; created on first use).
    void showCreditsByDay();

    QString stateText() const;
    QString stageText() const;
    QString stateDetails() const;
    QString creditsTodayText() const;
    QString creditsTotalText() const;
    QString creditsPendingText() const;
    QString historyError() const;
    CreditsBox& credits() { return *m_credits; }
    HistoryChart& creditsChart();
    HistoryChart& throughputChart();
    HistoryView& creditsView() { return *m_creditsView; }
    HistoryView& throughputView() { return *m_throughputView; }
    SwarmPanel& swarm() { return *m_swarm; }
    QScrollArea& scrollArea() { return *m_scroll; }

Q_SIGNALS:
    void settingsRequested();
    void aboutRequested();
    void quitRequested();

protected:
    void showEvent(QShowEvent* event) override;
    void hideEvent(QHideEvent* event) override;
    void closeEvent(QCloseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    QWidget* makeHeader();
    QLayout* makeHistoryRow();
    void updateState();
    void updateButtons();
    void reflow();

    manager::Manager& m_manager;
    ContributionActions& m_actions;
    QScrollArea* m_scroll;
    QGridLayout* m_headerGrid;
    QWidget* m_buttons;
    QLabel* m_icon;
    QLabel* m_state;
    QLabel* m_stage;
    ErrorNote* m_stateNote;
    QPushButton* m_contribute;
    QPushButton* m_pause;
    QPushButton* m_resume;
    CreditsBox* m_credits;
    ErrorNote* m_historyError;
    QComboBox* m_range;
    QCheckBox* m_tables;
    QGridLayout* m_charts;
    HistoryView* m_creditsView;
    HistoryView* m_throughputView;
    SwarmPanel* m_swarm;
    CreditsDialog* m_creditsDialog = nullptr;
    QTimer m_refresh;
    bool m_askOnClose = false;
    bool m_narrow = false;
    bool m_laidOut = false;
};

} // namespace tessera::ui
