#include "node/Node.h"

#include "common/Version.h"
#include "coordinator/admission/AdmissionClaims.h"
#include "node/BenchmarkCache.h"
#include "node/ControlServer.h"
#include "node/CoordinatorClient.h"
#include "node/CreditsPage.h"
#include "node/EngineThread.h"
#include "node/EngineWorker.h"
#include "node/LocalLedger.h"
#include "node/NodeSession.h"
#include "node/ShardDownload.h"
#include "node/ShardStore.h"
#include "node/TaskRunner.h"

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>
#include <QThread>

#include <cmath>

namespace tessera::node {

namespace {

const QString kSessionFile = QStringLiteral("session.json");
const QString kCoordinatorFile = QStringLiteral("coordinator.json");
const QString kSettingsFile = QStringLiteral("settings.json");

qint64 nowMs() {
    return QDateTime::currentMSecsSinceEpoch();
}

std::string str(const QString& s) {
    return s.toStdString();
}

} // namespace

Node::Node(NodeOptions options, QObject* parent)
    : QObject(parent)
    , m_options(std::move(options))
    , m_files(m_options.dataDir)
    , m_limit(m_options.computeLimit) {
    m_retry.setSingleShot(true);
    m_creditsTimer.setInterval(m_options.creditsPollInterval);
    connect(&m_creditsTimer, &QTimer::timeout, this, &Node::pollCredits);
}

Node::~Node() = default;

Status Node::start() {
    if (Status s = CoordinatorClient::checkUrl(m_options.coordinator); !s)
        return s;
    if (Status s = m_files.ensureExists(); !s)
        return s;
    Result<Identity> identity = Identity::loadOrCreate(m_files.keyPath());
    if (!identity)
        return makeError("node key " + str(m_files.keyPath()) + ": " + identity.message());
    m_identity = *identity;

    // The user's last choice of limit outlives restarts; the command line sets it when given.
    if (Result<QJsonObject> settings = m_files.read(kSettingsFile); settings && settings->contains(u"limit"))
        m_limit = settings->value(u"limit").toDouble(m_limit);
    if (m_options.computeLimit != NodeOptions{}.computeLimit)
        m_limit = m_options.computeLimit;

    m_control = std::make_unique<ControlServer>(
        m_files.dir(), [this](const QString& command, const QJsonObject& arguments) {
            return onControl(command, arguments);
        });
    if (Status s = m_control->listen(); !s)
        return s;

    m_client = std::make_unique<CoordinatorClient>(m_options.coordinator, m_options.coordinatorCa, this);
    if (Status s = m_client->loadCa(); !s)
        return s;
    m_store = std::make_unique<ShardStore>(m_files.shardDir());
    if (Status s = m_store->ensureDir(); !s)
        return s;

    qInfo("tessera-node %s: node %s, data dir %s, coordinator %s, device %s, limit %d%%",
          qPrintable(tesseraVersion()), qPrintable(m_identity->nodeId()), qPrintable(m_files.dir()),
          qPrintable(m_options.coordinator.toString()), qPrintable(m_options.device), int(std::lround(m_limit * 100)));
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
    qInfo("node: %s%s", qPrintable(nodeStateName(next)), detail.isEmpty() ? "" : qPrintable(u" — "_qs + detail));
    if (changed)
        Q_EMIT stateChanged(next);
}

void Node::fail(const QString& message, int exitCode) {
    m_lastError = message;
    qCritical("node: %s", qPrintable(message));
    m_exitCode = exitCode;
    stop(message);
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
        case NodeState::Downloading: return download();
        case NodeState::Joining: return join();
        default: return fetchInfo();
        }
    });
    m_retry.start(delay);
}

void Node::runBenchmark() {
    enter(NodeState::Benchmarking);
    m_benchClock.start();
    const QString device = m_options.device;
    const double seconds = m_options.benchSeconds;
    const NodeFiles files = m_files;
    QThread* thread = QThread::create([this, files, device, seconds] {
        Result<HardwareClaims> claims = benchmarkOrCached(files, device, seconds);
        QMetaObject::invokeMethod(this, [this, claims = std::move(claims)] {
            if (m_stopping)
                return;
            if (!claims)
                return fail(QString::fromStdString(claims.message()), ExitError);
            m_hardware = claims->hardware;
            m_bench = claims->bench;
            qInfo("node: %s %s: %.1f GFLOP/s %s%s", qPrintable(m_hardware.value(u"device").toString()),
                  qPrintable(m_hardware.value(u"name").toString()), m_bench.value(u"gflops").toDouble(),
                  qPrintable(m_bench.value(u"dtype").toString()), claims->fromCache ? " (cached benchmark)" : "");
            enter(NodeState::Admitting);
            fetchInfo();
        });
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
}

void Node::fetchInfo() {
    enter(NodeState::Admitting, QStringLiteral("contacting the coordinator"));
    m_client->get(QStringLiteral("/v1/info"), [this](const HttpReply& reply) {
        if (m_stopping)
            return;
        if (!reply.ok())
            return retryLater(QStringLiteral("the coordinator did not answer /v1/info: ") + reply.describe(),
                              NodeState::Admitting);
        const QJsonObject info = reply.json();
        if (!checkCoordinatorKey(info.value(u"coordinator_key").toString()))
            return;
        m_modelConfig = info.value(u"model").toObject();
        m_stageCount = info.value(u"stages").toInt(m_modelConfig.value(u"stages").toInt(0));
        // A token from an earlier run (a hard pause, a restart) is used again while it is valid.
        Result<QJsonObject> session = m_files.read(kSessionFile);
        if (session && session->value(u"coordinator_key").toString() == Identity::toBase64Url(m_coordinatorKey) &&
            !session->value(u"session_token").toString().isEmpty()) {
            m_sessionToken = session->value(u"session_token").toString();
            m_stage = session->value(u"stage").toInt(-1);
            qInfo("node: resuming the session from an earlier run (stage %d)", m_stage);
            m_backoff.reset();
            return fetchManifest();
        }
        admit();
    });
}

bool Node::checkCoordinatorKey(const QString& presented) {
    Result<QByteArray> key = Identity::fromBase64Url(presented, Identity::kPublicKeySize);
    if (!key) {
        fail(QStringLiteral("the coordinator's /v1/info has no valid coordinator_key"), ExitRefused);
        return false;
    }
    QString pinned = m_options.coordinatorKey;
    QString source = QStringLiteral("--coordinator-key");
    if (pinned.isEmpty()) {
        Result<QJsonObject> record = m_files.read(kCoordinatorFile);
        if (!record) {
            fail(QString::fromStdString(record.message()), ExitError);
            return false;
        }
        pinned = record->value(u"coordinator_key").toString();
        source = QStringLiteral("the key pinned on first use in %1").arg(m_files.path(kCoordinatorFile));
    }
    if (!pinned.isEmpty() && pinned != presented) {
        fail(QStringLiteral("refusing the coordinator at %1: it presents the key %2, but %3 is %4. If its "
                            "operator really changed keys, start with --coordinator-key %2 (or delete %5).")
                 .arg(m_options.coordinator.toString(), presented, source, pinned, m_files.path(kCoordinatorFile)),
             ExitRefused);
        return false;
    }
    if (pinned.isEmpty() || !m_options.coordinatorKey.isEmpty()) {
        const Status s = m_files.write(kCoordinatorFile, QJsonObject{{QStringLiteral("url"), m_options.coordinator.toString()},
                                                                     {QStringLiteral("coordinator_key"), presented}});
        if (!s) {
            fail(QString::fromStdString(s.message()), ExitError);
            return false;
        }
        if (pinned.isEmpty())
            qInfo("node: pinned the coordinator key %s (first use)", qPrintable(presented));
    }
    m_coordinatorKey = *key;
    return true;
}

void Node::admit() {
    enter(NodeState::Admitting, QStringLiteral("asking to join"));
    m_client->postJson(QStringLiteral("/v1/admission/challenge"),
                       QJsonObject{{QStringLiteral("node_key"), m_identity->publicKeyBase64()}},
                       [this](const HttpReply& challenge) {
                           if (m_stopping)
                               return;
                           if (!challenge.ok())
                               return retryLater(QStringLiteral("admission challenge: ") + challenge.describe(),
                                                 NodeState::Admitting);
                           const QJsonObject body = coordinator::makeAdmissionRequest(
                               *m_identity, challenge.json().value(u"nonce").toString(), m_hardware, m_bench,
                               tesseraVersion());
                           m_client->postJson(QStringLiteral("/v1/admission"), body,
                                              [this](const HttpReply& r) { onAdmission(r); });
                       });
}

void Node::onAdmission(const HttpReply& reply) {
    if (m_stopping)
        return;
    const QJsonObject json = reply.json();
    if (reply.status == 403 || reply.status == 426 || reply.status == 400)
        return fail(QStringLiteral("the coordinator refused this node: ") + reply.describe(), ExitRefused);
    if (reply.status == 503 || reply.status == 429) {
        const qint64 retryAfter = std::max<qint64>(1, json.value(u"retry_after").toInteger(60));
        m_retryAtMs = nowMs() + retryAfter * 1000;
        enter(NodeState::Waitlisted, json.value(u"error").toString());
        qInfo("node: waitlisted (%s); asking again in %lld s", qPrintable(json.value(u"error").toString()),
              qlonglong(retryAfter));
        m_retry.disconnect();
        connect(&m_retry, &QTimer::timeout, this, [this] {
            if (!m_stopping) {
                enter(NodeState::Admitting);
                fetchInfo();
            }
        });
        m_retry.start(std::chrono::seconds(retryAfter));
        return;
    }
    if (!reply.ok())
        return retryLater(QStringLiteral("admission: ") + reply.describe(), NodeState::Admitting);
    m_backoff.reset();
    m_sessionToken = json.value(u"session_token").toString();
    m_stage = json.value(u"stage").toInt(-1);
    if (json.value(u"node_id").toString() != m_identity->nodeId() || m_sessionToken.isEmpty() || m_stage < 0)
        return retryLater(QStringLiteral("admission: the coordinator's answer is incomplete"), NodeState::Admitting);
    const Status saved = m_files.write(kSessionFile,
                                       QJsonObject{{QStringLiteral("coordinator_key"), Identity::toBase64Url(m_coordinatorKey)},
                                                   {QStringLiteral("node_id"), m_identity->nodeId()},
                                                   {QStringLiteral("session_token"), m_sessionToken},
                                                   {QStringLiteral("stage"), m_stage},
                                                   {QStringLiteral("admitted_at_ms"), nowMs()}},
                                       true);
    if (!saved)
        qWarning("node: %s (the next start admits again)", saved.message().c_str());
    qInfo("node: admitted as %s for stage %d", qPrintable(m_identity->nodeId()), m_stage);
    useManifest(QJsonDocument(json.value(u"manifest").toObject()).toJson(QJsonDocument::Compact));
}

void Node::fetchManifest() {
    const int stage = m_stage;
    m_client->get(QStringLiteral("/v1/shards/%1/manifest").arg(stage), [this, stage](const HttpReply& reply) {
        // A reassign since it was asked: the answer is for a stage this node has left.
        if (m_stopping || stage != m_stage)
            return;
        if (reply.status == 404) {
            // The run has no such stage any more: the old session is of no use.
            (void)m_files.remove(kSessionFile);
            return admit();
        }
        if (!reply.ok())
            return retryLater(QStringLiteral("stage manifest: ") + reply.describe(), NodeState::Admitting);
        useManifest(reply.body);
    });
}

void Node::useManifest(const QByteArray& manifestJson) {
    Result<gpu::ShardManifest> manifest = parseSignedManifest(manifestJson, m_coordinatorKey);
    if (!manifest)
        return retryLater(QString::fromStdString(manifest.message()), NodeState::Admitting);
    if (manifest->stage != m_stage)
        return retryLater(
            QStringLiteral("the coordinator's manifest is for stage %1, not this node's stage %2")
                .arg(manifest->stage)
                .arg(m_stage),
            NodeState::Admitting);
    m_manifest = *manifest;
    download();
}

void Node::download() {
    enter(NodeState::Downloading, QString::fromStdString(m_manifest->file));
    const std::optional<gpu::ShardManifest> have = m_store->verifiedShard(m_stage);
    if (have && have->version == m_manifest->version && have->sha256 == m_manifest->sha256) {
        qInfo("node: stage %d version %lld is already here", m_stage, qlonglong(have->version));
        // What a reassign left half-fetched of another stage goes, as after a download.
        if (Status s = m_store->evictExcept(m_stage, have->version); !s)
            qWarning("node: %s", s.message().c_str());
        return join();
    }
    ShardDownloadOptions options;
    options.maxBytesPerSecond = m_options.maxDownloadBytesPerSecond;
    m_download = std::make_unique<ShardDownload>(m_client->network(), m_client->ssl(), m_client->base(), *m_manifest,
                                                 *m_store, options);
    connect(m_download.get(), &ShardDownload::finished, this, [this](const Status& result) {
        if (m_stopping)
            return;
        if (!result)
            return retryLater(QStringLiteral("download: ") + QString::fromStdString(result.message()),
                              NodeState::Downloading);
        m_backoff.reset();
        qInfo("node: %s downloaded and verified", m_manifest->file.c_str());
        if (Status s = m_store->evictExcept(m_stage, m_manifest->version); !s)
            qWarning("node: %s", s.message().c_str());
        join();
    });
    m_download->start();
    if (m_download->resumedFrom() > 0)
        qInfo("node: resuming %s at byte %lld of %llu", m_manifest->file.c_str(), qlonglong(m_download->resumedFrom()),
              qulonglong(m_manifest->fileSize));
}

void Node::join() {
    enter(NodeState::Joining);
    if (!m_ledger) {
        Result<std::unique_ptr<LocalLedger>> ledger =
            LocalLedger::open(m_files.ledgerPath(), m_identity->nodeId(), m_coordinatorKey);
        if (!ledger)
            return fail(QStringLiteral("ledger: ") + QString::fromStdString(ledger.message()), ExitError);
        m_ledger = std::move(*ledger);
    }
    if (!m_engine) {
        m_engine = std::make_unique<EngineThread>();
        EngineWorker* worker = m_engine->worker();
        connect(worker, &EngineWorker::loaded, this, [this](const QString& error, qint64 parameters) {
            ++m_loadsAnswered;
            if (m_loadsAnswered < m_loadsRequested || m_loadsAnswered <= m_loadsVoidThrough)
                return; // a stage left since (a reassign), or a load a later one replaces
            if (!error.isEmpty()) {
                // The loader checks the whole file against the manifest first: a shard that fails
                // (damaged on disk since it was downloaded) is removed and fetched again.
                QFile::remove(m_store->pathFor(*m_manifest));
                QFile::remove(m_store->manifestPathFor(*m_manifest));
                return retryLater(QStringLiteral("loading the stage: ") + error, NodeState::Downloading);
            }
            qInfo("node: stage %d loaded (%lld parameters)", m_stage, qlonglong(parameters));
            m_engineLoaded = true;
            maybeWorking();
        });
        connect(worker, &EngineWorker::taskFinished, this, &Node::onTaskFinished);
        connect(worker, &EngineWorker::pausedChanged, this, [this](bool paused) {
            m_enginePaused = paused;
            if (m_state == NodeState::Working && paused)
                enter(NodeState::Paused);
            else if (m_state == NodeState::Paused && !paused)
                enter(NodeState::Working);
        });
        connect(worker, &EngineWorker::statsChanged, this, [this](const EngineStats& stats) {
            m_computeShare = stats.computeShareWindow;
            m_computeShareTotal = stats.computeShareTotal;
            m_tasksDone = stats.tasksDone;
        });
        worker->setLimit(m_limit);
    }
    Result<gpu::ModelConfig> config =
        gpu::ModelConfig::fromJson(QJsonDocument(m_modelConfig).toJson(QJsonDocument::Compact).toStdString());
    if (!config)
        return fail(QStringLiteral("the coordinator's model: ") + QString::fromStdString(config.message()), ExitRefused);
    // A fresh runner for the stage being loaded: snapshots and tasks of an earlier one are void.
    m_runner = std::make_unique<TaskRunner>(
        m_engine->worker(), *config, m_stage,
        [this](const QByteArray& message) {
            if (m_session)
                m_session->sendBinary(message);
        },
        [this](const QJsonObject& message) {
            if (m_session)
                m_session->send(message);
        });
    EngineLoadOptions load;
    load.engine.config = *config;
    load.engine.stage = m_stage;
    load.engine.device = m_options.device.toStdString();
    load.shardPath = m_store->pathFor(*m_manifest);
    load.manifest = *m_manifest;
    m_engineLoaded = false;
    ++m_loadsRequested;
    m_engine->worker()->load(load);

    if (!m_session) {
        m_session = std::make_unique<NodeSession>(m_client->sessionUrl(), m_client->ssl(), m_options.heartbeatInterval);
        connect(m_session.get(), &NodeSession::opened, this, [this] {
            qInfo("node: session open");
            // A reconnect while working: the coordinator learns again that tasks may come here.
            if (m_state == NodeState::Working || m_state == NodeState::Paused)
                announceAvailability();
            maybeWorking();
            pollCredits();
        });
        connect(m_session.get(), &NodeSession::dropped, this,
                [](const QString& reason) { qWarning("node: session dropped (%s); reconnecting", qPrintable(reason)); });
        connect(m_session.get(), &NodeSession::invalidated, this, [this](const QString& reason) {
            qWarning("node: the coordinator ended the session (%s); admitting again", qPrintable(reason));
            (void)m_files.remove(kSessionFile);
            m_creditsTimer.stop();
            enter(NodeState::Admitting);
            admit();
        });
        connect(m_session.get(), &NodeSession::message, this, &Node::onSessionMessage);
        connect(m_session.get(), &NodeSession::binaryMessage, this, [this](const QByteArray& message) {
            if (m_runner)
                m_runner->handleBinary(message);
        });
    }
    m_session->open(m_sessionToken);
}

void Node::maybeWorking() {
    if (m_state != NodeState::Joining || !m_engineLoaded || !m_session || !m_session->isOpen())
        return;
    m_creditsTimer.start();
    if (m_pauseRequested && m_enginePaused) {
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
        m_session->send(QJsonObject{{QStringLiteral("type"), QStringLiteral("unavailable")},
                                    {QStringLiteral("reason"), QStringLiteral("paused")}});
    else
        m_session->send(
            QJsonObject{{QStringLiteral("type"), QStringLiteral("ready")},
                        {QStringLiteral("stage"), m_stage},
                        {QStringLiteral("version"), m_manifest ? qint64(m_manifest->version) : qint64(0)}});
}

void Node::onSessionMessage(const QJsonObject& message) {
    const QString type = message.value(u"type").toString();
    if (type == u"reassign")
        return onReassign(message);
    // The data plane (tasks with frames, steps, averaging) is the runner's; probes stay here.
    if (m_runner && m_runner->handleText(message))
        return;
    if (type == u"task") {
        // Between stages (a reassign) there is no runner: only probes run.
        if (const QString kind = message.value(u"kind").toString(); !kind.isEmpty() && kind != u"probe") {
            qInfo("node: ignoring a %s task: this node is switching stage", qPrintable(kind));
            return;
        }
        // A probe: synthetic microbatches that measure this node's speed.
        EngineTask task;
        task.taskId = message.value(u"task_id").toInteger();
        task.kind = EngineTask::Kind::Probe;
        task.batch = std::clamp(message.value(u"batch").toInt(1), 1, 64);
        task.seq = std::clamp(message.value(u"seq").toInt(16), 1, 4096);
        task.seed = quint64(message.value(u"seed").toInteger(1));
        m_engine->worker()->submit(task);
        return;
    }
    if (type == u"credits")
        return pollCredits();
    if (type == u"error")
        qWarning("node: the coordinator says: %s", qPrintable(message.value(u"error").toString()));
}

void Node::onReassign(const QJsonObject& message) {
    const QJsonValue stageValue = message.value(u"stage");
    const int stage = stageValue.toInt(-1);
    const QString reason = message.value(u"reason").toString(QStringLiteral("no reason given"));
    if (!stageValue.isDouble() || stage < 0 || (m_stageCount > 0 && stage >= m_stageCount)) {
        const QString given =
            stageValue.isDouble() ? QString::number(stageValue.toDouble()) : QStringLiteral("(none)");
        qWarning("node: ignoring a reassign to stage %s (%s): %s", qPrintable(given), qPrintable(reason),
                 m_stageCount > 0
                     ? qPrintable(QStringLiteral("this run has stages 0 to %1").arg(m_stageCount - 1))
                     : "not a stage number");
        return;
    }
    if (stage == m_stage) {
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
    qInfo("node: the coordinator moves this node from stage %d to stage %d (%s)", m_stage, stage,
          qPrintable(reason));

    // The coordinator stopped routing the old stage here before it asked: its queued work,
    // answers still to come and averaging snapshots are void.
    if (m_runner) {
        m_runner->abandon();
        m_runner.reset();
    }
    // A download or load of the old stage still under way is void too.
    if (m_download) {
        m_download->disconnect(this);
        m_download->cancel();
        m_download.reset();
    }
    m_loadsVoidThrough = m_loadsRequested;
    m_engineLoaded = false;
    m_retry.stop();
    m_retryAtMs = 0;
    m_backoff.reset();
    m_stage = stage;
    m_manifest.reset();

    // A restart from here on comes back on the new stage without a new admission (the
    // coordinator recorded the assignment before it asked).
    if (Result<QJsonObject> session = m_files.read(kSessionFile); session && !session->isEmpty()) {
        QJsonObject record = *session;
        record.insert(QStringLiteral("stage"), stage);
        record.insert(QStringLiteral("reassigned_at_ms"), nowMs());
        if (Status saved = m_files.write(kSessionFile, record, true); !saved)
            qWarning("node: %s (a restart would come back on stage %d)", saved.message().c_str(),
                     session->value(u"stage").toInt(-1));
    }
    // Working/Paused → Downloading; the session and its heartbeats stay, a pause holds.
    enter(NodeState::Downloading, QStringLiteral("stage %1").arg(stage));
    fetchManifest();
}

void Node::onTaskFinished(const EngineResult& result) {
    // Data-plane tasks are answered by the runner, which listens to the worker too.
    if (!m_session || result.kind != EngineTask::Probe)
        return;
    QJsonObject reply{{QStringLiteral("type"), QStringLiteral("task_result")},
                      {QStringLiteral("task_id"), qint64(result.taskId)},
                      {QStringLiteral("ok"), result.ok},
                      {QStringLiteral("compute_seconds"), result.computeSeconds},
                      {QStringLiteral("tokens"), result.tokens}};
    if (!result.ok)
        reply.insert(QStringLiteral("error"), result.error);
    m_session->send(reply);
}

void Node::pollCredits() {
    if (!m_ledger || m_stopping)
        return;
    Result<LedgerTotals> totals = m_ledger->totals();
    const qint64 after = totals ? totals->lastSeq : 0;
    m_client->get(QStringLiteral("/v1/nodes/%1/credits?after=%2").arg(m_identity->nodeId()).arg(after),
                  [this](const HttpReply& reply) {
                      if (m_stopping || !m_ledger)
                          return;
                      if (!reply.ok()) {
                          qWarning("node: credits: %s", qPrintable(reply.describe()));
                          return;
                      }
                      Result<std::vector<CreditReceipt>> receipts =
                          parseCreditsPage(reply.json(), m_identity->nodeId());
                      if (!receipts) {
                          qWarning("node: credits: %s", receipts.message().c_str());
                          return;
                      }
                      if (receipts->empty())
                          return;
                      Result<IngestResult> stored = m_ledger->ingest(*receipts);
                      if (!stored) {
                          qWarning("node: ledger: %s", stored.message().c_str());
                          return;
                      }
                      // Printed only after the commit: what is acknowledged here is on disk.
                      qInfo("ledger: stored receipts through #%lld", qlonglong(stored->lastSeq));
                      // A full page: there may be more.
                      if (receipts->size() >= 1000)
                          pollCredits();
                  });
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

QJsonObject Node::onControl(const QString& command, const QJsonObject& arguments) {
    if (command == u"status")
        return status();
    if (command == u"pause") {
        if (arguments.value(u"hard").toBool()) {
            QTimer::singleShot(0, this, &Node::hardPause);
            return QJsonObject{{QStringLiteral("state"), QStringLiteral("Stopping")}};
        }
        setPaused(true);
        return status();
    }
    if (command == u"resume") {
        setPaused(false);
        return status();
    }
    if (command == u"stop") {
        QTimer::singleShot(0, this, [this] { stop(QStringLiteral("stop requested")); });
        return QJsonObject{{QStringLiteral("state"), QStringLiteral("Stopping")}};
    }
    if (command == u"set-limit") {
        const double percent = arguments.value(u"percent").toDouble(-1);
        if (!(percent >= 1 && percent <= 100))
            return QJsonObject{{QStringLiteral("ok"), false},
                               {QStringLiteral("error"), QStringLiteral("percent: must be from 1 to 100")}};
        m_limit = percent / 100;
        (void)m_files.write(kSettingsFile, QJsonObject{{QStringLiteral("limit"), m_limit}});
        if (m_engine)
            m_engine->worker()->setLimit(m_limit);
        return status();
    }
    return QJsonObject{{QStringLiteral("ok"), false}, {QStringLiteral("error"), QStringLiteral("unknown command")}};
}

QJsonObject Node::status() const {
    QJsonObject download{{QStringLiteral("bytes"), qint64(0)}, {QStringLiteral("total"), qint64(0)}};
    if (m_manifest) {
        download.insert(QStringLiteral("total"), qint64(m_manifest->fileSize));
        download.insert(QStringLiteral("file"), QString::fromStdString(m_manifest->file));
        const bool done = m_state != NodeState::Downloading && m_state >= NodeState::Joining;
        if (m_download && m_state == NodeState::Downloading) {
            download.insert(QStringLiteral("bytes"), m_download->bytes());
            download.insert(QStringLiteral("bytes_per_second"), m_download->rate());
            download.insert(QStringLiteral("eta_s"), m_download->etaSeconds());
        } else if (done) {
            download.insert(QStringLiteral("bytes"), qint64(m_manifest->fileSize));
        }
    }
    QJsonObject s{{QStringLiteral("state"), nodeStateName(m_state)},
                  {QStringLiteral("detail"), m_stateDetail},
                  {QStringLiteral("node_id"), m_identity ? m_identity->nodeId() : QString()},
                  {QStringLiteral("coordinator"), m_options.coordinator.toString()},
                  {QStringLiteral("device"), m_options.device},
                  {QStringLiteral("stage"), m_stage},
                  {QStringLiteral("download"), download},
                  {QStringLiteral("compute_share"), m_computeShare},
                  {QStringLiteral("compute_share_total"), m_computeShareTotal},
                  {QStringLiteral("compute_limit"), m_limit},
                  {QStringLiteral("paused"), m_pauseRequested},
                  {QStringLiteral("tasks_done"), m_tasksDone},
                  {QStringLiteral("version"), tesseraVersion()}};
    if (m_retryAtMs > nowMs())
        s.insert(QStringLiteral("retry_in_s"), double(m_retryAtMs - nowMs()) / 1000);
    if (!m_lastError.isEmpty())
        s.insert(QStringLiteral("last_error"), m_lastError);
    qint64 micro = 0, receipts = 0;
    if (m_ledger) {
        if (Result<LedgerTotals> t = m_ledger->totals(); t) {
            micro = t->microCredits;
            receipts = t->receipts;
        }
    }
    if (m_runner)
        s.insert(QStringLiteral("training"), m_runner->status());
    if (m_stageCount > 0)
        s.insert(QStringLiteral("stages"), m_stageCount);
    // The benchmark for the desktop app's first run: its progress, then its result.
    QJsonObject benchmark{{QStringLiteral("budget_s"), m_options.benchSeconds},
                          {QStringLiteral("elapsed_s"), m_benchClock.isValid() ? double(m_benchClock.elapsed()) / 1000 : 0.0}};
    if (!m_bench.isEmpty()) {
        benchmark.insert(QStringLiteral("device"), m_hardware.value(u"device"));
        benchmark.insert(QStringLiteral("name"), m_hardware.value(u"name"));
        benchmark.insert(QStringLiteral("tflops"), m_bench.value(u"gflops").toDouble() / 1000);
        benchmark.insert(QStringLiteral("dtype"), m_bench.value(u"dtype"));
        benchmark.insert(QStringLiteral("elapsed_s"), m_options.benchSeconds);
    }
    s.insert(QStringLiteral("benchmark"), benchmark);
    s.insert(QStringLiteral("credits_total"), double(micro) / 1e6);
    s.insert(QStringLiteral("ledger_receipts"), receipts);
    return s;
}

void Node::stop(const QString& why) {
    if (m_stopping)
        return;
    m_stopping = true;
    enter(NodeState::Stopping, why);
    m_retry.stop();
    m_creditsTimer.stop();
    if (m_download)
        m_download->cancel();
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

} // namespace tessera::node
