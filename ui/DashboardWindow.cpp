#include "DashboardWindow.h"

#include "ContributionActions.h"
#include "HistoryChart.h"
#include "QuestionBox.h"
#include "SwarmPanel.h"
#include "TrayIcons.h"
#include "manager/NodeStatusText.h"

#include "manager/AppSettings.h"
#include "manager/Manager.h"

#include <QAction>
#include <QCloseEvent>
#include <QComboBox>
#include <QDateTime>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPushButton>
#include <QVBoxLayout>

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

} // namespace

DashboardWindow::DashboardWindow(manager::Manager& manager, ContributionActions& actions, QWidget* parent)
    : QWidget(parent)
    , m_manager(manager)
    , m_actions(actions) {
    setWindowTitle(tr("Tessera"));
    m_range = new QComboBox;
    m_range->setObjectName(u"range"_s);
    m_range->addItem(tr("Last hour"), int(HistoryRange::Hour));
    m_range->addItem(tr("Last day"), int(HistoryRange::Day));
    m_range->addItem(tr("Last month"), int(HistoryRange::Month));
    // The last hour: a newcomer sees their first minutes fill it, not one thin bar in a day.
    m_range->setCurrentIndex(0);
    connect(m_range, &QComboBox::currentIndexChanged, this, &DashboardWindow::refreshHistory);

    m_creditsChart = new HistoryChart(tr("Credits earned"));
    m_creditsChart->addLine(tr("credits"), TrayIcons::colour(AppState::Contributing), true, u"%.2f"_s);
    m_throughputChart = new HistoryChart(tr("Work done by this computer"));
    m_throughputChart->addLine(tr("tasks per minute"), TrayIcons::colour(AppState::Preparing), false,
                               u"%.0f"_s);
    m_throughputChart->addLine(tr("GPU time used (%)"), TrayIcons::colour(AppState::Paused), false,
                               u"%.0f%%"_s, 100);
    m_historyError = new QLabel;
    m_historyError->setObjectName(u"historyError"_s);
    m_historyError->setWordWrap(true);
    m_historyError->hide();
    m_swarm = new SwarmPanel;

    auto* rangeRow = new QHBoxLayout;
    rangeRow->addWidget(new QLabel(tr("History:")));
    rangeRow->addWidget(m_range);
    rangeRow->addStretch();
    auto* charts = new QGridLayout;
    charts->addWidget(m_creditsChart, 0, 0);
    charts->addWidget(m_throughputChart, 0, 1);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 14, 16, 14);
    layout->addWidget(makeHeader());
    layout->addWidget(makeCredits());
    layout->addLayout(rangeRow);
    layout->addLayout(charts, 1);
    layout->addWidget(m_historyError);
    layout->addWidget(m_swarm, 1);
    resize(980, 780);

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
    m_state = bigLabel(1.5);
    m_state->setObjectName(u"state"_s);
    m_state->setWordWrap(true);
    m_state->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stage = new QLabel;
    m_stage->setObjectName(u"stage"_s);
    m_stage->setWordWrap(true);

    m_contribute = new QPushButton;
    m_contribute->setObjectName(u"contribute"_s);
    connect(m_contribute, &QPushButton::clicked, m_actions.contribute(), &QAction::trigger);
    m_pause = new QPushButton(tr("Pause"));
    m_pause->setObjectName(u"pause"_s);
    auto* pauseMenu = new QMenu(m_pause);
    pauseMenu->addAction(m_actions.pauseForHour());
    pauseMenu->addAction(m_actions.pauseUntilResumed());
    m_pause->setMenu(pauseMenu);
    m_resume = new QPushButton(tr("Resume"));
    m_resume->setObjectName(u"resume"_s);
    connect(m_resume, &QPushButton::clicked, m_actions.resume(), &QAction::trigger);
    auto* settings = new QPushButton(tr("Settings…"));
    settings->setObjectName(u"settings"_s);
    connect(settings, &QPushButton::clicked, this, &DashboardWindow::settingsRequested);
    auto* about = new QPushButton(tr("&About"));
    about->setObjectName(u"about"_s);
    connect(about, &QPushButton::clicked, this, &DashboardWindow::aboutRequested);

    auto* text = new QVBoxLayout;
    text->addWidget(m_state);
    text->addWidget(m_stage);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_contribute);
    buttons->addWidget(m_pause);
    buttons->addWidget(m_resume);
    buttons->addWidget(settings);
    buttons->addWidget(about);
    auto* layout = new QHBoxLayout(header);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_icon, 0, Qt::AlignTop);
    layout->addLayout(text, 1);
    layout->addLayout(buttons);
    return header;
}

QWidget* DashboardWindow::makeCredits() {
    auto* box = new QGroupBox(tr("Your credits"));
    m_today = bigLabel(1.6);
    m_today->setObjectName(u"creditsToday"_s);
    m_total = bigLabel(1.6);
    m_total->setObjectName(u"creditsTotal"_s);
    m_pending = bigLabel(1.6);
    m_pending->setObjectName(u"creditsPending"_s);
    m_pending->setToolTip(tr("Work the swarm accepted that is not credit yet: it becomes a signed receipt "
                             "once the coordinator's checks of this computer's results have covered it "
                             "(usually within minutes)."));
    auto* what =
        new QLabel(tr("1 credit = 10<sup>15</sup> floating-point operations of work the swarm accepted. "
                      "Each credit arrives as a receipt signed by the coordinator and is kept on this "
                      "computer."));
    what->setWordWrap(true);
    what->setTextFormat(Qt::RichText);
    auto* layout = new QGridLayout(box);
    layout->addWidget(new QLabel(tr("Today")), 0, 0);
    layout->addWidget(new QLabel(tr("In total")), 0, 1);
    layout->addWidget(new QLabel(tr("Pending")), 0, 2);
    layout->addWidget(m_today, 1, 0);
    layout->addWidget(m_total, 1, 1);
    layout->addWidget(m_pending, 1, 2);
    layout->addWidget(what, 0, 3, 2, 1);
    layout->setColumnStretch(3, 1);
    layout->setColumnMinimumWidth(0, 130);
    layout->setColumnMinimumWidth(1, 130);
    return box;
}

void DashboardWindow::setRange(HistoryRange range) {
    m_range->setCurrentIndex(m_range->findData(int(range)));
}

HistoryRange DashboardWindow::range() const {
    return HistoryRange(m_range->currentData().toInt());
}

QString DashboardWindow::stateText() const {
    return m_state->text();
}

QString DashboardWindow::stageText() const {
    return m_stage->text();
}

QString DashboardWindow::creditsTodayText() const {
    return m_today->text();
}

QString DashboardWindow::creditsTotalText() const {
    return m_total->text();
}

QString DashboardWindow::creditsPendingText() const {
    return m_pending->text();
}

QString DashboardWindow::historyError() const {
    return m_historyError->isHidden() ? QString() : m_historyError->text();
}

void DashboardWindow::refreshHistory() {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const HistoryRange r = range();
    QStringList problems;
    const auto show = [&](HistoryChart& chart, int line, const Result<manager::HistorySeries>& series) {
        if (!series)
            problems << QString::fromStdString(series.message());
        chart.setData(line, series ? *series : manager::emptySeries(r, now), r);
    };
    show(*m_creditsChart, 0, manager::CreditHistory::series(m_manager.ledgerPath(), r, now));
    show(*m_throughputChart, 0, m_manager.activity().tasksPerMinute(r, now));
    show(*m_throughputChart, 1, m_manager.activity().computeShare(r, now));
    if (const Result<manager::CreditTotals> totals =
            manager::CreditHistory::totals(m_manager.ledgerPath(), now);
        totals) {
        m_today->setText(NodeStatusText::credits(totals->today));
        m_total->setText(NodeStatusText::credits(totals->total));
    } else {
        problems << QString::fromStdString(totals.message());
    }
    problems.removeDuplicates();
    m_historyError->setText(tr("Part of the history could not be read: %1").arg(problems.join(u"; "_s)));
    m_historyError->setVisible(!problems.isEmpty());
}

void DashboardWindow::updateState() {
    const AppState state = m_manager.state();
    m_icon->setPixmap(TrayIcons::pixmap(state, 48));
    m_state->setText(m_manager.stateText());
    QString stage = NodeStatusText::stage(m_manager.nodeStatus(), m_manager.swarmStatus());
    const QJsonObject& node = m_manager.nodeStatus();
    const bool cpu = NodeStatusText::onCpu(node);
    if (!stage.isEmpty() && (state == AppState::Contributing || state == AppState::Paused))
        stage +=
            (cpu ? tr(" · using up to %1% of the CPU's time") : tr(" · using up to %1% of the GPU's time"))
                .arg(m_manager.settings().integer(AppSettings::Key::GpuLimitPercent));
    if (const QString fallback =
            NodeStatusText::cpuFallback(node, m_manager.settings().string(AppSettings::Key::Device));
        !fallback.isEmpty())
        stage += (stage.isEmpty() ? QString() : u"\n"_s) + fallback;
    m_stage->setText(stage);
    m_stage->setVisible(!stage.isEmpty());
    // Pending and forfeited credit: the coordinator's word, from the node's status.
    const QJsonObject& s = m_manager.nodeStatus();
    m_pending->setText(NodeStatusText::credits(s.value(u"credits_pending").toDouble()));
    const double forfeited = s.value(u"credits_forfeited").toDouble();
    m_pending->setStyleSheet(forfeited > 0 ? u"color: #b00020;"_s : QString());
    if (forfeited > 0)
        m_pending->setToolTip(
            tr("%1 credits were forfeited: %2")
                .arg(NodeStatusText::credits(forfeited), s.value(u"last_forfeit_reason").toString()));
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
