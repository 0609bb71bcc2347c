// SPDX-License-Identifier: Apache-2.0
#include "manager/Manager.h"

#include "manager/AppSettings.h"
#include "manager/Autostart.h"
#include "manager/History.h"
#include "manager/NodeStatusText.h"
#include "manager/SwarmStatusClient.h"
#include "manager/detectors/PauseDetectors.h"
#include "node/NodeFiles.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>

#include <algorithm>
#include <optional>

namespace tessera::manager {

namespace {

using Key = AppSettings::Key;

constexpr std::chrono::milliseconds kSlowTick{10'000};

qint64 wallClock() {
    return QDateTime::currentMSecsSinceEpoch();
}

bool isPauseRule(Key key) {
    switch (key) {
    case Key::PauseExclusiveApps:
    case Key::PauseOnFullscreen:
    case Key::PauseOnGpuGraphics:
    case Key::OnlyWhenIdle:
    case Key::IdleMinutes:
    case Key::PauseOnBattery:
    case Key::TemperatureLimitC:
    case Key::TimeWindows:
        return true;
    default:
        return false;
    }
}

bool isLaunchSetting(Key key) {
    return key == Key::CoordinatorUrl || key == Key::CoordinatorCaFile || key == Key::CoordinatorKey ||
           key == Key::DataDir || key == Key::Device || key == Key::NodeProgram || key == Key::DisplayName ||
           key == Key::Team;
}

} // namespace

QString appStateName(AppState state) {
    switch (state) {
    case AppState::NotStarted:
        return QStringLiteral("Not started");
    case AppState::Preparing:
        return QStringLiteral("Preparing");
    case AppState::Waiting:
        return QStringLiteral("Waiting");
    case AppState::Contributing:
        return QStringLiteral("Contributing");
    case AppState::Paused:
        return QStringLiteral("Paused");
    case AppState::Error:
        return QStringLiteral("Error");
    }
    return {};
}

Manager::Manager(AppSettings& settings, QObject* parent)
    : Manager(settings, DetectorContext{}, parent) {}

Manager::Manager(AppSettings& settings, const DetectorContext& context, QObject* parent)
    : QObject(parent)
    , m_settings(settings)
    , m_context(std::make_unique<DetectorContext>(context))
    , m_supervisor(std::make_unique<NodeSupervisor>())
    , m_policy(std::make_unique<PausePolicy>())
    , m_activity(std::make_unique<ActivityLog>())
    , m_swarm(std::make_unique<SwarmStatusClient>())
    , m_now(wallClock) {
    if (!m_context->nodePid)
        m_context->nodePid = [this] { return m_supervisor->nodePid(); };

    connect(&m_settings, &AppSettings::changed, this, [this](Key key) { applySetting(int(key)); });
    connect(m_policy.get(), &PausePolicy::decisionChanged, this, &Manager::applyDecision);
    connect(m_supervisor.get(), &NodeSupervisor::stateChanged, this, &Manager::updateState);
    connect(m_supervisor.get(), &NodeSupervisor::nodeStatusChanged, this, [this](const QJsonObject& status) {
        // A stage larger than the user's disk limit: the node stops (and stays stopped, see
        // applyDecision) until the limit is raised.
        if (m_contributing && overDiskLimit() && m_supervisor->nodePid() != 0)
            m_supervisor->stop();
        updateState();
        Q_EMIT nodeStatusChanged(status);
    });
    connect(m_supervisor.get(), &NodeSupervisor::nodeFailed, this, [this](const QString& message) {
        if (m_settings.flag(Key::Notifications))
            Q_EMIT notify(tr("Tessera's node stopped"), message, true);
        updateState();
    });
    connect(m_supervisor.get(), &NodeSupervisor::stopped, this, &Manager::updateState);
    connect(m_swarm.get(), &SwarmStatusClient::statusChanged, this, &Manager::swarmStatusChanged);
    connect(m_swarm.get(), &SwarmStatusClient::failed, this, &Manager::swarmStatusFailed);

    m_tick.setInterval(int(kPolicyTick.count()));
    connect(&m_tick, &QTimer::timeout, this, &Manager::tick);
    m_slowTick.setInterval(int(kSlowTick.count()));
    connect(&m_slowTick, &QTimer::timeout, this, &Manager::sampleHistory);
}

Manager::~Manager() = default;

void Manager::setExtraNodeArguments(const QStringList& arguments) {
    m_extraArguments = arguments;
}

void Manager::setClock(std::function<qint64()> nowMs) {
    m_now = std::move(nowMs);
    if (!m_context->nowMs)
        m_context->nowMs = [this] { return m_now(); };
}

const PauseDecision& Manager::pauseDecision() const {
    return m_policy->decision();
}

const QJsonObject& Manager::nodeStatus() const {
    return m_supervisor->nodeStatus();
}

const QJsonObject& Manager::swarmStatus() const {
    return m_swarm->lastStatus();
}

QString Manager::nodeDataDir() const {
    const QString dir = m_settings.string(Key::DataDir);
    return dir.isEmpty() ? node::NodeFiles::defaultDataDir() : dir;
}

QString Manager::ledgerPath() const {
    return node::NodeFiles(nodeDataDir()).ledgerPath();
}

NodeLaunch Manager::makeLaunch() const {
    NodeLaunch launch;
    launch.program = m_settings.string(Key::NodeProgram);
    if (launch.program.isEmpty()) {
        // Installed side by side; a build tree has them in one bin/ too.
        const QString beside =
            QDir(QCoreApplication::applicationDirPath()).filePath(QStringLiteral("tessera-node"));
        launch.program = QFileInfo(beside).isExecutable()
                             ? beside
                             : QStandardPaths::findExecutable(QStringLiteral("tessera-node"));
        if (launch.program.isEmpty())
            launch.program = QStringLiteral("tessera-node");
    }
    launch.coordinatorUrl = m_settings.string(Key::CoordinatorUrl);
    launch.coordinatorCaFile = m_settings.string(Key::CoordinatorCaFile);
    launch.coordinatorKey = m_settings.string(Key::CoordinatorKey);
    launch.dataDir = nodeDataDir();
    launch.device = m_settings.string(Key::Device);
    launch.gpuLimitPercent = m_settings.gpuLimitPercent();
    launch.displayName = m_settings.string(Key::DisplayName);
    launch.team = m_settings.string(Key::Team);
    launch.extraArguments = m_extraArguments;
    return launch;
}

void Manager::rebuildDetectors() {
    m_policy->setDetectors(makePauseDetectors(m_settings, *m_context));
}

void Manager::start() {
    rebuildDetectors();
    m_policy->setGracePeriod(std::chrono::seconds(std::max(0, m_settings.integer(Key::GraceSeconds))));
    m_swarm->setCoordinator(m_settings.string(Key::CoordinatorUrl),
                            m_settings.string(Key::CoordinatorCaFile));
    const QString activityPath =
        QFileInfo(m_settings.fileName()).dir().filePath(QStringLiteral("activity.sqlite"));
    if (QDir().mkpath(QFileInfo(activityPath).path())) {
        if (Status opened = m_activity->open(activityPath); !opened)
            qWarning("manager: activity history: %s", opened.message().c_str());
    }
    // A pause the user chose survives a restart of the app.
    const qint64 manual = m_settings.value(Key::ManualPauseUntilMs).toLongLong();
    if (manual == -1 || manual > m_now())
        m_policy->snoozeUntil(m_now(), manual);
    m_tick.start();
    m_slowTick.start();
    if (m_settings.flag(Key::Contributing))
        contribute();
    sampleHistory();
    updateState();
}

void Manager::contribute() {
    m_settings.setValue(Key::Contributing, true);
    m_contributing = true;
    m_supervisor->setLaunch(makeLaunch());
    if (!m_tick.isActive()) {
        rebuildDetectors();
        m_tick.start();
        m_slowTick.start();
    }
    const PauseDecision& decision = m_policy->evaluate(m_now());
    if (decision.kind != PauseKind::Hard) {
        m_supervisor->start();
        if (decision.kind == PauseKind::Soft)
            m_supervisor->softPause();
    }
    updateState();
}

void Manager::pauseFor(std::chrono::minutes duration) {
    const qint64 until = m_now() + std::chrono::milliseconds(duration).count();
    m_settings.setValue(Key::ManualPauseUntilMs, until);
    m_policy->snoozeUntil(m_now(), until);
}

void Manager::pauseUntilResumed() {
    m_settings.setValue(Key::ManualPauseUntilMs, qint64(-1));
    m_policy->snoozeUntil(m_now(), -1);
}

void Manager::resume() {
    m_settings.setValue(Key::ManualPauseUntilMs, qint64(0));
    m_policy->resume(m_now());
    // A node that was refused or stopped is tried again when the user says resume.
    if (m_contributing && !m_policy->decision().paused() &&
        (m_supervisor->state() == NodeSupervisor::State::Refused ||
         m_supervisor->state() == NodeSupervisor::State::Stopped))
        m_supervisor->start();
    updateState();
}

void Manager::stopContributing() {
    m_settings.setValue(Key::Contributing, false);
    m_contributing = false;
    m_supervisor->stop();
    updateState();
}

void Manager::shutdown() {
    m_tick.stop();
    m_slowTick.stop();
    if (m_supervisor->state() == NodeSupervisor::State::Stopped ||
        m_supervisor->state() == NodeSupervisor::State::Refused || m_supervisor->nodePid() == 0) {
        m_supervisor->stop();
        QTimer::singleShot(0, this, &Manager::finished);
        return;
    }
    connect(m_supervisor.get(), &NodeSupervisor::stopped, this, &Manager::finished, Qt::SingleShotConnection);
    m_supervisor->stop();
}

void Manager::tick() {
    m_policy->evaluate(m_now());
    // The grace period's countdown is in the state's text.
    if (m_policy->decision().resumeAtMs > 0)
        updateState();
}

bool Manager::overDiskLimit() const {
    const double limit = m_settings.value(Key::DiskLimitGb).toDouble() * 1e9;
    const double needed = m_supervisor->nodeStatus().value(u"download").toObject().value(u"total").toDouble();
    return limit > 0 && needed > limit;
}

void Manager::applyDecision(const PauseDecision& decision) {
    const bool wasPaused = m_state == AppState::Paused;
    // A node stopped for the disk limit stays stopped until the limit is raised.
    if (m_contributing && !overDiskLimit()) {
        switch (decision.kind) {
        case PauseKind::None:
            if (m_supervisor->state() == NodeSupervisor::State::Stopped)
                m_supervisor->start();
            else
                m_supervisor->resume();
            break;
        case PauseKind::Soft:
            if (m_supervisor->state() == NodeSupervisor::State::Stopped)
                m_supervisor->start();
            m_supervisor->softPause();
            break;
        case PauseKind::Hard:
            m_supervisor->hardPause();
            break;
        }
    }
    updateState();
    if (!m_contributing || !m_settings.flag(Key::Notifications))
        return;
    // Only what the user did not cause is told: not their own pauses, not a game or a full-screen
    // window (a balloon would be drawn over it), not their being at the keyboard. A battery, the
    // GPU's heat or their hours are. A resume is told only after a pause that was.
    const auto userCaused = [](const PauseCause& c) {
        return c.game || c.rule == u"manual" || c.rule == u"snooze" || c.rule == u"user-active";
    };
    if (!wasPaused && decision.paused() && !decision.causes.isEmpty()) {
        m_pauseTold = std::none_of(decision.causes.cbegin(), decision.causes.cend(), userCaused);
        if (m_pauseTold)
            Q_EMIT notify(tr("Tessera paused"), decision.reason, false);
    } else if (wasPaused && !decision.paused() && std::exchange(m_pauseTold, false)) {
        Q_EMIT notify(tr("Tessera resumed"), tr("Contributing again."), false);
    }
}

void Manager::applySetting(int keyValue) {
    const auto key = Key(keyValue);
    if (isPauseRule(key)) {
        rebuildDetectors();
    } else if (key == Key::GraceSeconds) {
        m_policy->setGracePeriod(std::chrono::seconds(std::max(0, m_settings.integer(Key::GraceSeconds))));
    } else if (key == Key::GpuLimitPercent) {
        m_supervisor->setGpuLimit(m_settings.gpuLimitPercent());
    } else if (key == Key::StartAtLogin) {
        if (Status s = Autostart::setEnabled(m_settings.flag(Key::StartAtLogin),
                                             QCoreApplication::applicationFilePath());
            !s)
            Q_EMIT notify(tr("Start at login"), QString::fromStdString(s.message()), true);
    } else if (key == Key::DiskLimitGb) {
        // A node stopped for the old limit starts again under a larger one.
        if (m_contributing && m_supervisor->state() == NodeSupervisor::State::Stopped &&
            !m_policy->decision().paused())
            m_supervisor->start();
        updateState();
    } else if (isLaunchSetting(key)) {
        m_swarm->setCoordinator(m_settings.string(Key::CoordinatorUrl),
                                m_settings.string(Key::CoordinatorCaFile));
        m_supervisor->setLaunch(makeLaunch());
        // A node already running is started again with the new settings.
        if (m_contributing && m_supervisor->nodePid() != 0) {
            m_supervisor->stop();
            m_supervisor->start();
        }
    }
}

void Manager::sampleHistory() {
    const qint64 now = m_now();
    const QJsonObject& status = m_supervisor->nodeStatus();
    if (m_supervisor->nodePid() != 0 && !status.isEmpty()) {
        const double share = m_supervisor->state() == NodeSupervisor::State::Running
                                 ? status.value(u"compute_share").toDouble()
                                 : 0;
        (void)m_activity->record(now, status.value(u"tasks_done").toInteger(), share);
    }
    if (Result<CreditTotals> totals = CreditHistory::totals(ledgerPath(), now); totals) {
        if (totals->today != m_creditsToday || totals->total != m_creditsTotal) {
            m_creditsToday = totals->today;
            m_creditsTotal = totals->total;
            Q_EMIT creditsChanged(m_creditsToday, m_creditsTotal);
        }
    }
    m_swarm->refresh();
}

void Manager::updateState() {
    const QJsonObject& status = m_supervisor->nodeStatus();
    std::optional<ShownState> shown = stateBeforeNode(status);
    if (!shown)
        shown = nodeReportedState(status);
    const auto& [state, text, details] = *shown;
    if (state == m_state && text == m_stateText && details == m_stateDetails)
        return;
    m_state = state;
    m_stateText = text;
    m_stateDetails = details;
    Q_EMIT stateChanged(state, text);
}

std::optional<Manager::ShownState> Manager::stateBeforeNode(const QJsonObject& status) const {
    using S = NodeSupervisor::State;
    const QString nodeState = status.value(u"state").toString();
    ShownState shown;
    if (!m_contributing) {
        shown.state = AppState::NotStarted;
        shown.text = tr("Not contributing — click Contribute to lend your GPU");
    } else if (overDiskLimit()) {
        const QJsonObject download = status.value(u"download").toObject();
        shown.state = AppState::Error;
        shown.text =
            tr("Stopped — this stage of the model needs %1 on disk; your limit is %2 (Settings → Data "
               "folder)")
                .arg(NodeStatusText::megabytes(download.value(u"total").toDouble()),
                     NodeStatusText::megabytes(m_settings.value(Key::DiskLimitGb).toDouble() * 1e9));
    } else if (m_policy->decision().paused()) {
        shown.state = AppState::Paused;
        shown.text = tr("Paused — %1").arg(m_policy->decision().reason);
    } else if (m_supervisor->state() == S::Refused) {
        shown.state = AppState::Error;
        shown.text = tr("Stopped — %1").arg(m_supervisor->lastError());
        shown.details = m_supervisor->lastErrorDetails();
    } else if (m_supervisor->state() == S::Restarting) {
        shown.state = AppState::Waiting;
        shown.text = tr("Waiting — %1; starting it again").arg(m_supervisor->lastError());
        shown.details = m_supervisor->lastErrorDetails();
    } else if (m_supervisor->state() == S::Starting || m_supervisor->state() == S::Stopped ||
               nodeState.isEmpty()) {
        shown.text = tr("Starting…");
    } else {
        return std::nullopt;
    }
    return shown;
}

Manager::ShownState Manager::nodeReportedState(const QJsonObject& status) const {
    const QString nodeState = status.value(u"state").toString();
    const int stage = status.value(u"stage").toInt(-1);
    const int stages = NodeStatusText::stageCount(status, m_swarm->lastStatus());
    const QString stageText =
        stages > 0 ? tr("stage %1 of %2").arg(stage + 1).arg(stages) : tr("stage %1").arg(stage + 1);
    ShownState shown;
    if (nodeState == u"Benchmarking") {
        shown.text = tr("Measuring your GPU…");
    } else if (nodeState == u"Admitting" || nodeState == u"Starting") {
        if (status.contains(u"retry_in_s") && status.contains(u"last_error")) {
            // The node's words name its protocol ("/v1/info", TLS): they go behind Details.
            shown.state = AppState::Waiting;
            shown.text =
                tr("Waiting — the coordinator could not be reached or did not let this computer join; "
                   "trying again in %1")
                    .arg(NodeStatusText::duration(status.value(u"retry_in_s").toDouble()));
            shown.details = status.value(u"last_error").toString();
        } else {
            shown.text = tr("Asking the coordinator for a place in the swarm…");
        }
    } else if (nodeState == u"Waitlisted") {
        shown.state = AppState::Waiting;
        const QString retry = NodeStatusText::duration(status.value(u"retry_in_s").toDouble());
        if (const int percent = NodeStatusText::preparingPercent(m_swarm->lastStatus()); percent >= 0)
            shown.text =
                tr("Waiting — the coordinator is preparing the model (%1% ready); trying again in %2")
                    .arg(QString::number(percent), retry);
        else
            shown.text = tr("Waiting — the swarm has no room right now; trying again in %1").arg(retry);
    } else if (nodeState == u"Downloading") {
        shown.text = tr("Downloading %1 of the model: %2").arg(stageText, NodeStatusText::download(status));
    } else if (nodeState == u"Joining") {
        shown.text = tr("Joining the swarm with %1 of the model…").arg(stageText);
    } else if (nodeState == u"Working") {
        shown = workingState(status, stage, stageText);
    } else if (nodeState == u"Paused") {
        shown.state = AppState::Paused;
        shown.text = tr("Paused");
    } else {
        shown.state = AppState::Waiting;
        shown.text = tr("Waiting — the node is stopping");
    }
    return shown;
}

// Contributing only while tasks flow: a node waits while its session is being reopened,
// or while no task comes (another stage has nobody, or the coordinator has none).
Manager::ShownState Manager::workingState(const QJsonObject& status, int stage,
                                          const QString& stageText) const {
    const double sinceTask = status.value(u"training").toObject().value(u"last_task_age_s").toDouble(-1);
    const int empty = NodeStatusText::emptyStage(m_swarm->lastStatus(), stage);
    ShownState shown;
    shown.state = AppState::Waiting;
    if (!status.value(u"session").toObject().value(u"open").toBool(true)) {
        shown.text = tr("Lost contact with the coordinator — reconnecting");
    } else if (sinceTask >= 0 && sinceTask < kTasksStopFlowingS) {
        shown.state = AppState::Contributing;
        shown.text = tr("Contributing to %1 of the model").arg(stageText);
    } else if (empty >= 0) {
        shown.text = tr("Waiting for other volunteers (stage %1 has nobody yet)").arg(empty + 1);
    } else {
        shown.text = tr("Waiting for work from the coordinator");
    }
    return shown;
}

} // namespace tessera::manager
