// SPDX-License-Identifier: Apache-2.0
#include "dashboard/DashboardWindow.h"

#include "tray/ContributionActions.h"
#include "dashboard/CreditsBox.h"
#include "dashboard/CreditsDialog.h"
#include "widgets/ErrorNote.h"
#include "dashboard/HistoryView.h"
#include "widgets/QuestionBox.h"
#include "dashboard/SwarmPanel.h"
#include "tray/TrayIcons.h"
#include "manager/NodeStatusText.h"

#include "manager/AppSettings.h"
#include "manager/Manager.h"

#include <QAction>
#include <QCheckBox>
#include <QCloseEvent>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QVBoxLayout>

#include <algorithm>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::AppSettings;
using manager::AppState;
using manager::HistoryRange;
using manager::NodeStatusText;

namespace {

QLabel* bigLabel(qreal scale) {
    auto* label = new QLabel;
    QFont f = label->font();
    f.setPointSizeF(f.pointSizeF() * scale);
    f.setBold(true);
    label->setFont(f);
    return label;
}

// Room for everything at 1280 × 720, and never more than the screen has.
QSize openingSize(const QScreen* screen) {
    const QRect available = screen ? screen->availableGeometry() : QRect(0, 0, 1280, 720);
    return {std::min(1040, available.width() * 19 / 20), std::min(820, available.height() * 19 / 20)};
}

} // namespace

DashboardWindow::DashboardWindow(manager::Manager& manager, ContributionActions& actions, QWidget* parent)
    : QWidget(parent)
    , m_manager(manager)
    , m_actions(actions) {
    setWindowTitle(tr("Tessera"));
    m_creditsView = new HistoryView(tr("Credits earned"));
    m_creditsView->addLine(tr("credits"), TrayIcons::colour(AppState::Contributing), true, u"%.2f"_s);
    m_throughputView = new HistoryView(tr("Work done by this computer"));
    m_throughputView->addLine(tr("tasks per minute"), TrayIcons::colour(AppState::Preparing), false,
                              u"%.0f"_s);
    m_throughputView->addLine(tr("time computing (%)"), TrayIcons::colour(AppState::Paused), false,
                              u"%.0f%%"_s, 100);
    m_historyError = new ErrorNote;
    m_historyError->setObjectName(u"historyError"_s);
    m_credits = new CreditsBox;
    connect(m_credits, &CreditsBox::dayByDayRequested, this, &DashboardWindow::showCreditsByDay);
    m_swarm = new SwarmPanel;

    m_charts = new QGridLayout;
    auto* content = new QWidget;
    content->setObjectName(u"content"_s);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(16, 14, 16, 14);
    layout->addWidget(makeHeader());
    layout->addWidget(m_credits);
    layout->addLayout(makeHistoryRow());
    layout->addLayout(m_charts, 1);
    layout->addWidget(m_historyError);
    layout->addWidget(m_swarm, 1);
    // Everything scrolls: a small screen, large text or 150 % scaling never cuts a button off.
    m_scroll = new QScrollArea;
    m_scroll->setWidget(content);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_scroll);
    resize(openingSize(screen()));
    reflow();

    connect(&m_manager, &manager::Manager::stateChanged, this, &DashboardWindow::updateState);
    connect(&m_manager, &manager::Manager::nodeStatusChanged, this, &DashboardWindow::updateState);
    connect(&m_manager, &manager::Manager::swarmStatusChanged, this, [this](const QJsonObject& status) {
        m_swarm->setStatus(status);
        updateState();
    });
    connect(&m_manager, &manager::Manager::swarmStatusFailed, m_swarm, &SwarmPanel::setError);
    connect(&m_manager, &manager::Manager::creditsChanged, this, &DashboardWindow::refreshHistory);
    connect(&m_actions, &ContributionActions::changed, this, &DashboardWindow::updateButtons);
    m_refresh.setInterval(std::chrono::milliseconds(kRefresh));
    connect(&m_refresh, &QTimer::timeout, this, &DashboardWindow::refreshHistory);

    m_swarm->setStatus(m_manager.swarmStatus());
    updateState();
    updateButtons();
    refreshHistory();
}

DashboardWindow::~DashboardWindow() = default;

QWidget* DashboardWindow::makeHeader() {
    auto* header = new QWidget;
    m_icon = new QLabel;
    m_icon->setAccessibleName(tr("Status icon"));
    m_state = bigLabel(1.5);
    m_state->setObjectName(u"state"_s);
    m_state->setWordWrap(true);
    m_state->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_state->setAccessibleName(tr("Status"));
    m_stage = new QLabel;
    m_stage->setObjectName(u"stage"_s);
    m_stage->setWordWrap(true);
    m_stateNote = new ErrorNote;
    m_stateNote->setObjectName(u"stateDetails"_s);

    m_contribute = new QPushButton;
    m_contribute->setObjectName(u"contribute"_s);
    connect(m_contribute, &QPushButton::clicked, m_actions.contribute(), &QAction::trigger);
    m_pause = new QPushButton(tr("&Pause"));
    m_pause->setObjectName(u"pause"_s);
    auto* pauseMenu = new QMenu(m_pause);
    pauseMenu->addAction(m_actions.pauseForHour());
    pauseMenu->addAction(m_actions.pauseUntilResumed());
    m_pause->setMenu(pauseMenu);
    m_resume = new QPushButton(tr("&Resume"));
    m_resume->setObjectName(u"resume"_s);
    connect(m_resume, &QPushButton::clicked, m_actions.resume(), &QAction::trigger);
    auto* settings = new QPushButton(tr("&Settings…"));
    settings->setObjectName(u"settings"_s);
    connect(settings, &QPushButton::clicked, this, &DashboardWindow::settingsRequested);
    auto* about = new QPushButton(tr("&About"));
    about->setObjectName(u"about"_s);
    connect(about, &QPushButton::clicked, this, &DashboardWindow::aboutRequested);

    auto* text = new QVBoxLayout;
    text->addWidget(m_state);
    text->addWidget(m_stage);
    text->addWidget(m_stateNote);
    m_buttons = new QWidget;
    auto* buttons = new QHBoxLayout(m_buttons);
    buttons->setContentsMargins(0, 0, 0, 0);
    for (QPushButton* b : {m_contribute, m_pause, m_resume, settings, about})
        buttons->addWidget(b);
    m_headerGrid = new QGridLayout(header);
    m_headerGrid->setContentsMargins(0, 0, 0, 0);
    m_headerGrid->addWidget(m_icon, 0, 0, 2, 1, Qt::AlignTop);
    m_headerGrid->addLayout(text, 0, 1);
    m_headerGrid->setColumnStretch(1, 1);
    return header;
}

QLayout* DashboardWindow::makeHistoryRow() {
    m_range = new QComboBox;
    m_range->setObjectName(u"range"_s);
    m_range->addItem(tr("Last hour"), int(HistoryRange::Hour));
    m_range->addItem(tr("Last day"), int(HistoryRange::Day));
    m_range->addItem(tr("Last month"), int(HistoryRange::Month));
    // The last hour: a newcomer sees their first minutes fill it, not one thin bar in a day.
    m_range->setCurrentIndex(0);
    connect(m_range, &QComboBox::currentIndexChanged, this, &DashboardWindow::refreshHistory);
    auto* label = new QLabel(tr("&History:"));
    label->setBuddy(m_range);
    m_tables = new QCheckBox(tr("Show as &tables"));
    m_tables->setObjectName(u"showTables"_s);
    m_tables->setToolTip(
        tr("The charts' figures as tables, for reading exact values or with a screen reader"));
    connect(m_tables, &QCheckBox::toggled, this, &DashboardWindow::showTables);
    auto* row = new QHBoxLayout;
    row->addWidget(label);
    row->addWidget(m_range);
    row->addSpacing(12);
    row->addWidget(m_tables);
    row->addStretch();
    return row;
}

void DashboardWindow::reflow() {
    const bool narrow = width() < kNarrowWidth;
    if (narrow == m_narrow && m_laidOut)
        return;
    m_narrow = narrow;
    m_laidOut = true;
    // Buttons beside the status when there is room, under it when not; charts likewise.
    m_headerGrid->removeWidget(m_buttons);
    if (narrow)
        m_headerGrid->addWidget(m_buttons, 1, 1, Qt::AlignLeft);
    else
        m_headerGrid->addWidget(m_buttons, 0, 2, Qt::AlignTop);
    m_charts->removeWidget(m_creditsView);
    m_charts->removeWidget(m_throughputView);
    m_charts->addWidget(m_creditsView, 0, 0);
    m_charts->addWidget(m_throughputView, narrow ? 1 : 0, narrow ? 0 : 1);
    m_credits->setNarrow(narrow);
}

void DashboardWindow::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    reflow();
}

void DashboardWindow::setRange(HistoryRange range) {
    m_range->setCurrentIndex(m_range->findData(int(range)));
}

HistoryRange DashboardWindow::range() const {
    return HistoryRange(m_range->currentData().toInt());
}

void DashboardWindow::showTables(bool tables) {
    m_tables->setChecked(tables);
    m_creditsView->showTable(tables);
    m_throughputView->showTable(tables);
}

void DashboardWindow::showCreditsByDay() {
    if (!m_creditsDialog) {
        m_creditsDialog = new CreditsDialog(
            m_manager.ledgerPath(), [this] { return m_manager.nowMs(); }, this);
        m_creditsDialog->setObjectName(u"creditsByDay"_s);
    }
    m_creditsDialog->refresh();
    m_creditsDialog->show();
    m_creditsDialog->raise();
    m_creditsDialog->activateWindow();
}

HistoryChart& DashboardWindow::creditsChart() {
    return m_creditsView->chart();
}

HistoryChart& DashboardWindow::throughputChart() {
    return m_throughputView->chart();
}

QString DashboardWindow::stateText() const {
    return m_state->text();
}

QString DashboardWindow::stageText() const {
    return m_stage->text();
}

QString DashboardWindow::stateDetails() const {
    return m_stateNote->isHidden() ? QString() : m_stateNote->details();
}

QString DashboardWindow::creditsTodayText() const {
    return m_credits->todayText();
}

QString DashboardWindow::creditsTotalText() const {
    return m_credits->totalText();
}

QString DashboardWindow::creditsPendingText() const {
    return m_credits->pendingText();
}

QString DashboardWindow::historyError() const {
    return m_historyError->message();
}

void DashboardWindow::refreshHistory() {
    const qint64 now = m_manager.nowMs();
    const HistoryRange r = range();
    QStringList problems;
    const auto show = [&](HistoryView& view, int line, const Result<manager::HistorySeries>& series) {
        if (!series)
            problems << QString::fromStdString(series.message());
        view.setData(line, series ? *series : manager::emptySeries(r, now), r);
    };
    show(*m_creditsView, 0, manager::CreditHistory::series(m_manager.ledgerPath(), r, now));
    show(*m_throughputView, 0, m_manager.activity().tasksPerMinute(r, now));
    show(*m_throughputView, 1, m_manager.activity().computeShare(r, now));
    m_credits->setLedger(m_manager.ledgerPath(), now);
    if (!m_credits->problem().isEmpty())
        problems << m_credits->problem();
    problems.removeDuplicates();
    if (problems.isEmpty())
        m_historyError->clear();
    else
        m_historyError->showError(tr("Part of the history could not be read; the figures shown may be "
                                     "incomplete."),
                                  problems.join(u"\n"_s));
}

void DashboardWindow::updateState() {
    const AppState state = m_manager.state();
    m_icon->setPixmap(TrayIcons::pixmap(state, 48));
    m_state->setText(m_manager.stateText());
    m_icon->setAccessibleDescription(m_manager.stateText());
    if (m_manager.stateDetails().isEmpty())
        m_stateNote->clear();
    else
        m_stateNote->showError(QString(), m_manager.stateDetails());
    QString stage = NodeStatusText::stage(m_manager.nodeStatus(), m_manager.swarmStatus());
    const QJsonObject& node = m_manager.nodeStatus();
    const bool cpu = NodeStatusText::onCpu(node);
    if (!stage.isEmpty() && (state == AppState::Contributing || state == AppState::Paused))
        stage +=
            (cpu ? tr(" · using up to %1% of the CPU's time") : tr(" · using up to %1% of the GPU's time"))
                .arg(m_manager.settings().gpuLimitPercent());
    if (const QString fallback =
            NodeStatusText::cpuFallback(node, m_manager.settings().string(AppSettings::Key::Device));
        !fallback.isEmpty())
        stage += (stage.isEmpty() ? QString() : u"\n"_s) + fallback;
    m_stage->setText(stage);
    m_stage->setVisible(!stage.isEmpty());
    m_credits->setNodeStatus(node);
}

void DashboardWindow::updateButtons() {
    m_contribute->setText(m_actions.contribute()->text());
    m_contribute->setVisible(m_actions.contribute()->isVisible());
    m_pause->setVisible(m_actions.pauseForHour()->isVisible());
    m_resume->setVisible(m_actions.resume()->isVisible());
}

void DashboardWindow::showEvent(QShowEvent* event) {
    refreshHistory();
    m_refresh.start();
    QWidget::showEvent(event);
    reflow();
}

void DashboardWindow::hideEvent(QHideEvent* event) {
    m_refresh.stop();
    QWidget::hideEvent(event);
}

void DashboardWindow::closeEvent(QCloseEvent* event) {
    if (!m_askOnClose) {
        QWidget::closeEvent(event);
        return;
    }
    const QuestionBox::Answer answer =
        QuestionBox::ask(this, tr("Quit Tessera?"),
                         tr("This desktop has no tray, so Tessera cannot keep working out of sight. Quit and "
                            "stop contributing "
                            "until you start Tessera again, or keep it running in a minimised window?"),
                         tr("Quit Tessera"), tr("Keep running"));
    event->ignore();
    if (answer == QuestionBox::Answer::Yes)
        Q_EMIT quitRequested();
    else if (answer == QuestionBox::Answer::No)
        showMinimized();
}

} // namespace tessera::ui
