// SPDX-License-Identifier: Apache-2.0
#include "node/Node.h"

#include "common/MonotonicClock.h"
#include "common/Version.h"
#include "control/ControlServer.h"
#include "node/BenchmarkRun.h"
#include "node/StagePlan.h"
#include "node/engine/EngineHost.h"
#include "node/engine/EngineWorker.h"
#include "node/ledger/LocalLedger.h"
#include "node/session/Admission.h"
#include "node/session/CoordinatorClient.h"
#include "node/session/CreditsPoller.h"
#include "node/session/NodeInbox.h"
#include "node/session/NodeSession.h"
#include "node/session/TaskRunner.h"
#include "node/shard/ShardInstall.h"
#include "node/shard/ShardStore.h"
#include "protocol/TaskMessage.h"

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>

#include <cmath>

namespace tessera::node {

namespace {

qint64 nowMs() {
    return MonotonicClock::nowMs(); // a wall clock stepping back must not add an hour to "retry in"
}

} // namespace

Node::Node(NodeOptions options, QObject* parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_files(m_options.dataDir)
    , m_limit(m_options.computeLimit) {
    m_retry.setSingleShot(true);
    m_creditsTimer.setInterval(m_options.creditsPollInterval);
}

Node::~Node() = default;

Status Node::start() {
    if (Status s = CoordinatorClient::checkUrl(m_options.coordinator); !s)
        return s;
    if (Status s = m_files.ensureExists(); !s)
        return s;
    (void)m_files.remove(NodeFiles::refusalFile()); // an earlier run's: this one has not been refused
    Result<Identity> identity = Identity::loadOrCreate(m_files.keyPath());
    if (!identity)
        return makeError("node key " + m_files.keyPath().toStdString() + ": " + identity.message());
    m_identity = *identity;

    m_control = std::make_unique<ControlServer>(
        m_files.dir(), [this](const protocol::ControlRequest& request) { return onControl(request); });
    if (Status s = m_control->listen(); !s)
        return s;

    m_client = std::make_unique<CoordinatorClient>(m_options.coordinator, m_options.coordinatorCa, this);
    if (Status s = m_client->loadCa(); !s)
        return s;
    m_store = std::make_unique<ShardStore>(m_files.shardDir());
    if (Status s = m_store->ensureDir(); !s)
        return s;
    m_admission = std::make_unique<Admission>(m_files, *m_client, *m_identity, m_options.coordinator,
                                              m_options.coordinatorKey);
    m_admission->setProfile(m_options.profile);
    connect(m_admission.get(), &Admission::progress, this,
            [this](const QString& detail) { enter(NodeState::Admitting, detail); });
    connect(m_admission.get(), &Admission::granted, this, [this](const gpu::ShardManifest& manifest) {
        m_backoff.reset();
        // Before anything downloads: the stage must fit this device as the engine lays it out.
        const GrantedStage granted = planGrantedStage({m_admission->modelConfig(), m_admission->stage(),
                                                       m_admission->hardware(), m_admission->bench()});
        if (!granted.plan)
            return refuse(granted.refusal, granted.why);
        m_plan = *granted.plan;
        m_manifest = manifest;
        download();
    });
    connect(m_admission.get(), &Admission::waitlisted, this, &Node::waitlisted);
    connect(m_admission.get(), &Admission::retry, this,
            [this](const QString& why) { retryLater(why, NodeState::Admitting); });
    connect(m_admission.get(), &Admission::refused, this, &Node::refuse);
    connect(m_admission.get(), &Admission::failed, this,
            [this](const QString& why) { fail(why, ExitError); });
    m_credits = std::make_unique<CreditsPoller>(
        *m_client, m_identity->nodeId(), [this] { return m_stopping ? nullptr : m_ledger.get(); }, m_files);
    connect(&m_creditsTimer, &QTimer::timeout, m_credits.get(), &CreditsPoller::poll);

    qInfo("tessera-node %s: node %s, data dir %s, coordinator %s, device %s, limit %d%%",
          qPrintable(tesseraVersion()), qPrintable(m_identity->nodeId()), qPrintable(m_files.dir()),
          qPrintable(m_options.coordinator.toString()), qPrintable(m_options.device),
          int(std::lround(m_limit * 100)));
    runBenchmark();
    return {};
}

// --- lifecycle ---------------------------------------------------------------------------------

void Node::enter(NodeState next, const QString& detail) {
    if (m_state == next && m_stateDetail == detail)
        return;
    if (m_state != next && !transitionAllowed(m_state, next)) {
        qWarning("node: ignoring the transition %s -> %s", qPrintable(nodeStateName(m_state)),
                 qPrintable(nodeStateName(next)));
        return;
    }
    const bool changed = m_state != next;
    m_state = next;
    m_stateDetail = detail;
    qInfo("node: %s%s", qPrintable(nodeStateName(next)),
          detail.isEmpty() ? "" : qPrintable(u" — "_qs + detail));
    if (changed)
        Q_EMIT stateChanged(next);
}

void Node::fail(const QString& message, int exitCode) {
    m_lastError = message;
    qCritical("node: %s", qPrintable(message));
    m_exitCode = exitCode;
    stop(message);
}

void Node::refuse(protocol::RefusalKind kind, const QString& message) {
    if (Status s = m_files.writeRefusal({kind, message}); !s)
        qWarning("node: %s", s.message().c_str());
    fail(message, ExitRefused);
}

void Node::waitlisted(qint64 retryAfterSeconds, const QString& reason) {
    m_retryAtMs = nowMs() + retryAfterSeconds * 1000;
    enter(NodeState::Waitlisted, reason);
    qInfo("node: waitlisted (%s); asking again in %lld s", qPrintable(reason), qlonglong(retryAfterSeconds));
    m_retry.disconnect();
    connect(&m_retry, &QTimer::timeout, this, [this] {
        if (!m_stopping) {
            enter(NodeState::Admitting);
            m_admission->start();
        }
    });
    m_retry.start(std::chrono::seconds(retryAfterSeconds));
}

void Node::retryLater(const QString& why, NodeState from) {
    m_lastError = why;
    const std::chrono::milliseconds delay = m_backoff.next();
    m_retryAtMs = nowMs() + delay.count();
    qWarning("node: %s; trying again in %.1f s", qPrintable(why), double(delay.count()) / 1000);
    m_retry.disconnect();
    connect(&m_retry, &QTimer::timeout, this, [this, from] {
        if (m_stopping)
            return;
        switch (from) {
        case NodeState::Downloading:
            return download();
        case NodeState::Joining:
            return join();
        default:
            return m_admission->start();
        }
    });
    m_retry.start(delay);
}

void Node::runBenchmark() {
    enter(NodeState::Benchmarking);
    m_benchmark = std::make_unique<BenchmarkRun>(m_files, m_options.device, m_options.benchSeconds);
    connect(m_benchmark.get(), &BenchmarkRun::failed, this,
            [this](const QString& error) { fail(error, ExitError); });
    connect(m_benchmark.get(), &BenchmarkRun::finished, this, [this](const HardwareClaims& claims) {
        m_admission->setClaims(claims.hardware, claims.bench);
        enter(NodeState::Admitting);
        m_admission->start();
    });
    m_benchmark->start();
}

void Node::download() {
    enter(NodeState::Downloading, QString::fromStdString(m_manifest->file));
    ShardDownloadOptions options;
    options.maxBytesPerSecond = m_options.maxDownloadBytesPerSecond;
    m_install = std::make_unique<ShardInstall>(m_client->network(), m_client->ssl(), m_client->base(),
                                               *m_manifest, *m_store, options);
    connect(m_install.get(), &ShardInstall::finished, this, [this](const Status& result) {
        if (m_stopping)
            return;
        if (!result)
            return retryLater(QStringLiteral("download: ") + QString::fromStdString(result.message()),
                              NodeState::Downloading);
        m_backoff.reset();
        join();
    });
    m_install->start();
}

void Node::join() {
    enter(NodeState::Joining);
    if (!m_ledger && !openLedger())
        return;
    if (!m_engine)
        makeEngine();
    Result<gpu::ModelConfig> config = gpu::ModelConfig::fromJson(
        QJsonDocument(m_admission->modelConfig()).toJson(QJsonDocument::Compact).toStdString());
    if (!config)
        return refuse(protocol::RefusalKind::Other,
                      QStringLiteral("the coordinator's model: ") + QString::fromStdString(config.message()));
    if (!m_session)
        makeSession();
    makeRunner(*config);
    loadStage(*config);
    m_session->open(m_admission->sessionToken());
}

bool Node::openLedger() {
    Result<std::unique_ptr<LocalLedger>> ledger =
        LocalLedger::open(m_files.ledgerPath(), m_identity->nodeId(), m_admission->coordinatorKey());
    if (!ledger) {
        fail(QStringLiteral("ledger: ") + QString::fromStdString(ledger.message()), ExitError);
        return false;
    }
    m_ledger = std::move(*ledger);
    return true;
}

void Node::makeEngine() {
    m_engine = std::make_unique<EngineHost>(m_limit);
    connect(m_engine.get(), &EngineHost::stageLoaded, this, [this](const QString& error, qint64 parameters) {
        if (!error.isEmpty()) {
            // The loader checks the whole file against the manifest first: a shard that fails
            // (damaged on disk since it was downloaded) is removed and fetched again.
            QFile::remove(m_store->pathFor(*m_manifest));
            QFile::remove(m_store->manifestPathFor(*m_manifest));
            return retryLater(QStringLiteral("loading the stage: ") + error, NodeState::Downloading);
        }
        qInfo("node: stage %d loaded (%lld parameters)", m_admission->stage(), qlonglong(parameters));
        maybeWorking();
    });
    connect(m_engine.get(), &EngineHost::pausedChanged, this, [this](bool paused) {
        if (m_state == NodeState::Working && paused)
            enter(NodeState::Paused);
        else if (m_state == NodeState::Paused && !paused)
            enter(NodeState::Working);
    });
}

// The session, kept from the first join on (a reassign keeps it open), and its inbox: the
// coordinator's messages go straight to the parts they are for, the engine's probe answers
// straight back.
void Node::makeSession() {
    m_session =
        std::make_unique<NodeSession>(m_client->sessionUrl(), m_client->ssl(), m_options.heartbeatInterval);
    connect(m_session.get(), &NodeSession::opened, this, [this] {
        qInfo("node: session open");
        // A reconnect while working: the coordinator learns again that tasks may come here.
        if (m_state == NodeState::Working || m_state == NodeState::Paused)
            announceAvailability();
        maybeWorking();
        m_credits->poll();
    });
    connect(m_session.get(), &NodeSession::dropped, this, [](const QString& reason) {
        qWarning("node: session dropped (%s); reconnecting", qPrintable(reason));
    });
    connect(m_session.get(), &NodeSession::invalidated, this, [this](const QString& reason) {
        qWarning("node: the coordinator ended the session (%s); admitting again", qPrintable(reason));
        m_creditsTimer.stop();
        enter(NodeState::Admitting);
        m_admission->admitAgain();
    });
    m_inbox = std::make_unique<NodeInbox>();
    connect(m_session.get(), &NodeSession::message, m_inbox.get(), &NodeInbox::receive);
    connect(m_session.get(), &NodeSession::binaryMessage, m_inbox.get(), &NodeInbox::receiveBinary);
    connect(m_inbox.get(), &NodeInbox::reassigned, this, &Node::onReassign);
    connect(m_inbox.get(), &NodeInbox::probeAsked, m_engine.get(), &EngineHost::probe);
    connect(m_inbox.get(), &NodeInbox::creditsWaiting, m_credits.get(), &CreditsPoller::poll);
    connect(m_engine.get(), &EngineHost::probeAnswered, m_session.get(), &NodeSession::send);
}

void Node::makeRunner(const gpu::ModelConfig& config) {
    // A fresh runner for the stage being loaded: snapshots and tasks of an earlier one are void.
    m_runner = std::make_unique<TaskRunner>(m_engine->worker(), config, m_admission->stage(), *m_session);
    m_inbox->setRunner(m_runner.get());
}

void Node::loadStage(const gpu::ModelConfig& config) {
    EngineLoadOptions load;
    load.engine.config = config;
    load.engine.stage = m_admission->stage();
    load.engine.device = m_options.device.toStdString();
    applyPlan(m_plan, load.engine); // planned when the stage was granted
    // Room for the message's envelope in front of every output frame: results go out from where
    // the engine wrote them.
    load.engine.outputHeadroom = std::size_t(protocol::kTaskMessageHeadroom);
    load.shardPath = m_store->pathFor(*m_manifest);
    load.manifest = *m_manifest;
    m_engine->load(load);
}

void Node::maybeWorking() {
    if (m_state != NodeState::Joining || !m_engine->loaded() || !m_session || !m_session->isOpen())
        return;
    m_creditsTimer.start();
    if (m_pauseRequested && m_engine->paused()) {
        // Paused before a reassign: the engine stayed paused through the new stage's load.
        enter(NodeState::Paused);
    } else {
        enter(NodeState::Working);
        if (m_pauseRequested)
            setPaused(true);
    }
    announceAvailability();
}

void Node::announceAvailability() {
    if (!m_session || !m_session->isOpen())
        return;
    if (m_pauseRequested)
        m_session->send(protocol::Unavailable{QStringLiteral("paused")});
    else {
        protocol::Ready ready{m_admission->stage(), m_manifest ? qint64(m_manifest->version) : qint64(0)};
        if (m_runner) { // a ghost sync cut short: the coordinator can resume it
            ready.syncRound = m_runner->syncProgress().round();
            ready.syncReceived = m_runner->syncProgress().received();
        }
        m_session->send(ready);
    }
}

void Node::onReassign(const protocol::Reassign& message) {
    const int stage = message.stage;
    const QString reason = message.reason.isEmpty() ? QStringLiteral("no reason given") : message.reason;
    const int stageCount = m_admission->stageCount();
    if (stageCount > 0 && stage >= stageCount) {
        qWarning("node: ignoring a reassign to stage %d (%s): this run has stages 0 to %d", stage,
                 qPrintable(reason), stageCount - 1);
        return;
    }
    if (stage == m_admission->stage()) {
        qInfo("node: ignoring a reassign to stage %d: this node holds it already (%s)", stage,
              qPrintable(reason));
        return;
    }
    // The session (the only way a reassign comes) is open only from Joining on; a state before
    // that has no stage to switch from.
    if (m_state != NodeState::Downloading && m_state != NodeState::Joining && m_state != NodeState::Working &&
        m_state != NodeState::Paused) {
        qWarning("node: ignoring a reassign to stage %d while %s", stage, qPrintable(nodeStateName(m_state)));
        return;
    }
    qInfo("node: the coordinator moves this node from stage %d to stage %d (%s)", m_admission->stage(), stage,
          qPrintable(reason));

    // The coordinator stopped routing the old stage here before it asked: its queued work,
    // answers still to come and averaging snapshots are void.
    if (m_runner) {
        m_runner->abandon();
        m_runner.reset();
    }
    // A download or load of the old stage still under way is void too.
    if (m_install) {
        m_install->cancel();
        m_install.reset();
    }
    if (m_engine)
        m_engine->voidLoads();
    m_retry.stop();
    m_retryAtMs = 0;
    m_backoff.reset();
    m_manifest.reset();
    // Working/Paused → Downloading; the session and its heartbeats stay, a pause holds.
    enter(NodeState::Downloading, QStringLiteral("stage %1").arg(stage));
    m_admission->moveTo(stage);
}

// --- local commands ----------------------------------------------------------------------------

void Node::setPaused(bool paused) {
    const bool changed = m_pauseRequested != paused;
    m_pauseRequested = paused;
    if (m_engine)
        m_engine->worker()->setPaused(paused);
    if (!paused && m_state == NodeState::Paused)
        enter(NodeState::Working);
    // The router stops sending tasks (and re-routes those in flight) at once, before compute stops.
    if (changed && (m_state == NodeState::Working || m_state == NodeState::Paused))
        announceAvailability();
}

void Node::hardPause() {
    // Everything that matters is already on disk (session, shard, ledger): leaving the process
    // frees all GPU memory; the next start resumes the session without a new admission.
    qInfo("node: hard pause: exiting so that the GPU memory is freed; start again to resume");
    stop(QStringLiteral("hard pause"));
}

QJsonObject Node::onControl(const protocol::ControlRequest& request) {
    using protocol::ControlCommand;
    switch (request.command) {
    case ControlCommand::Status:
        return status();
    case ControlCommand::Pause:
        if (request.hard) {
            QTimer::singleShot(0, this, &Node::hardPause);
            return QJsonObject{{QStringLiteral("state"), nodeStateName(NodeState::Stopping)}};
        }
        setPaused(true);
        return status();
    case ControlCommand::Resume:
        setPaused(false);
        return status();
    case ControlCommand::Stop:
        QTimer::singleShot(0, this, [this] { stop(QStringLiteral("stop requested")); });
        return QJsonObject{{QStringLiteral("state"), nodeStateName(NodeState::Stopping)}};
    case ControlCommand::SetLimit:
        // For this run only: whoever launched the node keeps the limit (and sends it again).
        m_limit = request.percent / 100;
        if (m_engine)
            m_engine->worker()->setLimit(m_limit);
        return status();
    }
    return status();
}

void Node::stop(const QString& why) {
    if (m_stopping)
        return;
    m_stopping = true;
    enter(NodeState::Stopping, why);
    m_retry.stop();
    m_creditsTimer.stop();
    if (m_benchmark)
        m_benchmark->stop();
    if (m_admission)
        m_admission->stop();
    if (m_install)
        m_install->cancel();
    if (m_session)
        m_session->close();
    // Ends the worker (a running microbatch finishes first) and frees the stage's memory.
    m_runner.reset();
    m_engine.reset();
    m_ledger.reset();
    // A moment for the WebSocket close frame and the control socket's last reply (to `stop`
    // itself) to leave, so the coordinator marks us offline now and the caller hears back.
    QTimer::singleShot(200, this, [this] {
        if (m_control)
            m_control->close();
        Q_EMIT finished(m_exitCode);
    });
}

// --- status ------------------------------------------------------------------------------------

// What the node tells its control socket (the desktop app, `tessera-node status`).
QJsonObject Node::status() const {
    const EngineStats stats = m_engine ? m_engine->stats() : EngineStats{};
    const QJsonObject download =
        m_install ? m_install->status()
                  : QJsonObject{{QStringLiteral("bytes"), qint64(0)}, {QStringLiteral("total"), qint64(0)}};
    QJsonObject s{{QStringLiteral("state"), nodeStateName(m_state)},
                  {QStringLiteral("detail"), m_stateDetail},
                  {QStringLiteral("node_id"), m_identity ? m_identity->nodeId() : QString()},
                  {QStringLiteral("coordinator"), m_options.coordinator.toString()},
                  {QStringLiteral("device"), m_options.device},
                  {QStringLiteral("stage"), m_admission ? m_admission->stage() : -1},
                  {QStringLiteral("download"), download},
                  {QStringLiteral("compute_share"), stats.computeShareWindow},
                  {QStringLiteral("compute_share_total"), stats.computeShareTotal},
                  // What the engine runs at: the worker was given m_limit (at its start, then by set-limit).
                  {QStringLiteral("compute_limit"), m_limit},
                  {QStringLiteral("paused"), m_pauseRequested},
                  {QStringLiteral("tasks_done"), stats.tasksDone},
                  {QStringLiteral("version"), tesseraVersion()}};
    if (m_retryAtMs > MonotonicClock::nowMs())
        s.insert(QStringLiteral("retry_in_s"), double(m_retryAtMs - MonotonicClock::nowMs()) / 1000);
    if (!m_lastError.isEmpty())
        s.insert(QStringLiteral("last_error"), m_lastError);
    if (m_runner)
        s.insert(QStringLiteral("training"), m_runner->status());
    if (m_session)
        s.insert(QStringLiteral("session"), m_session->status());
    if (m_admission && m_admission->stageCount() > 0)
        s.insert(QStringLiteral("stages"), m_admission->stageCount());
    // The benchmark for the desktop app's first run: its progress, then its result.
    if (m_benchmark)
        s.insert(QStringLiteral("benchmark"), m_benchmark->status());
    LocalLedger::addTotalsTo(m_ledger.get(), s); // credits_total, ledger_receipts
    m_credits->addEscrowTo(s);                   // credits_pending, credits_forfeited, last_forfeit_reason
    return s;
}

} // namespace tessera::node
