#include "coordinator/router/Trainer.h"

#include "common/Identity.h"
#include "coordinator/Database.h"
#include "coordinator/NodeRegistry.h"
#include "coordinator/StageCheckpoints.h"
#include "coordinator/admission/AssignmentLog.h"
#include "coordinator/api/SessionApi.h"
#include "train/TrainingData.h"

#include <QDateTime>
#include <QJsonArray>

#include <cmath>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

QByteArray bytes(const gpu::Bytes& b) {
    return QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size()));
}

constexpr qint64 kRateWindowMs = 30'000;
constexpr std::size_t kLossCurvePoints = 500;
constexpr qint64 kReassignGraceMs = 120'000;

} // namespace

Trainer::Trainer(Database& db, const Identity& key, const gpu::ModelConfig& config, TrainerSettings settings,
                 SessionApi& sessions)
    : m_db(db)
    , m_key(key)
    , m_config(config)
    , m_settings(settings)
    , m_sessions(sessions)
    , m_store(db) {}

Trainer::~Trainer() {
    m_sessions.setListener(nullptr);
}

qint64 Trainer::now() const {
    return QDateTime::currentMSecsSinceEpoch();
}

Result<std::unique_ptr<Trainer>> Trainer::create(Database& db, const Identity& key,
                                                 const gpu::ModelConfig& config, const QString& dataset,
                                                 const QString& shardDir, TrainerSettings settings,
                                                 SessionApi& sessions) {
    if (settings.batch < 1 || settings.seq < 1 || settings.seq > config.maxSeqLen ||
        settings.microbatchesPerStep < 1)
        return makeError("training: batch and microbatches per step must be ≥ 1 and seq within 1.." +
                         std::to_string(config.maxSeqLen));
    if (settings.averaging.interval < 1 || settings.averaging.partitions < 1 ||
        settings.averaging.partitions > 1000)
        return makeError("training: the averaging interval must be ≥ 1 and the partitions within 1..1000");
    std::unique_ptr<Trainer> t(new Trainer(db, key, config, settings, sessions));
    Result<TrainingState> state = t->m_store.resume(t->now());
    if (!state)
        return state.error();
    t->m_state = *state;
    if (state->abandonedAtStart > 0)
        qInfo("trainer: %lld microbatches left in flight by the previous run are counted abandoned",
              qlonglong(state->abandonedAtStart));
    t->m_creditedFlop = state->creditedFlop;
    t->m_savedJoins = state->joins;
    t->m_savedLeaves = state->leaves;
    // Read before the session sweep marks them offline: nodes a recent previous process had.
    if (Result<std::vector<NodeRecord>> online = NodeRegistry(db).list(NodeState::Online); online)
        for (const NodeRecord& n : *online)
            if (n.lastSeenMs > t->now() - 10 * 60'000)
                t->m_rejoining.insert(n.nodeId);

    // The data order goes on from a new seed after a restart instead of replaying the start.
    const std::uint64_t seed = config.seed ^ (std::uint64_t(state->step) * 0x9E3779B97F4A7C15ull);
    Result<std::unique_ptr<gpu::TrainingData>> data =
        gpu::TrainingData::open(dataset.toStdString(), config.vocabSize, seed);
    if (!data)
        return makeError("the training data: " + data.message());
    t->m_data = std::move(*data);

    Result<std::unique_ptr<StageCheckpoints>> checkpoints = StageCheckpoints::open(db, key, config, shardDir);
    if (!checkpoints)
        return checkpoints.error();
    t->m_checkpoints = std::move(*checkpoints);

    std::vector<qint64> parameters;
    for (int s = 0; s < config.stages; ++s)
        parameters.push_back(t->m_checkpoints->parameters(s));
    Trainer* self = t.get();
    settings.router.codecId = int(config.codec);
    settings.router.width = config.dModel;
    t->m_router = std::make_unique<Router>(
        config.stages, parameters, settings.router,
        [self](const QString& node, const QByteArray& m) { return self->m_sessions.sendBinary(node, m); },
        [self] { return self->feed(); });
    t->m_router->setNextMicrobatchId(state->nextMicrobatch);
    connect(t->m_router.get(), &Router::issued, self, [self](qint64 id, qint64 tokens) {
        self->m_store.issued(id, self->m_state.step, tokens, self->now());
        ++self->m_state.issued;
    });
    connect(t->m_router.get(), &Router::completed, self, &Trainer::onCompleted);
    connect(t->m_router.get(), &Router::abandoned, self, &Trainer::onAbandoned);

    StageCheckpoints* cp = t->m_checkpoints.get();
    const int partitions = settings.averaging.partitions;
    t->m_averager = std::make_unique<Averager>(
        config.stages,
        [cp, partitions](int stage, int partition) {
            return cp->partitionSize(stage, partition, partitions);
        },
        settings.averaging,
        [self](const QString& node, const QJsonObject& m) { return self->m_sessions.sendText(node, m); },
        [self](const QString& node, const QByteArray& m) { return self->m_sessions.sendBinary(node, m); });
    connect(t->m_averager.get(), &Averager::averaged, self,
            [self, partitions](int stage, int partition, const std::vector<float>& values, int) {
                if (Status s = self->m_checkpoints->take(stage, partition, partitions, values); !s)
                    qWarning("trainer: the checkpoint of stage %d did not take partition %d: %s", stage,
                             partition, s.message().c_str());
            });
    connect(t->m_averager.get(), &Averager::synced, self, [self](const QString& ghost, int stage, bool ok) {
        if (!self->m_ghosts.remove(ghost))
            return;
        if (!ok)
            qWarning("trainer: node %s starts from the checkpoint (no replica could sync it)",
                     qPrintable(shortId(ghost)));
        if (self->m_sessions.isConnected(ghost))
            self->route(ghost, stage);
    });

    t->m_flushTimer.setInterval(settings.flushInterval);
    connect(&t->m_flushTimer, &QTimer::timeout, self, &Trainer::flush);
    t->m_flushTimer.start();
    t->m_creditTimer.setInterval(settings.creditInterval);
    connect(&t->m_creditTimer, &QTimer::timeout, self, &Trainer::grantCredits);
    t->m_creditTimer.start();
    t->m_tickTimer.setInterval(std::chrono::milliseconds(500));
    connect(&t->m_tickTimer, &QTimer::timeout, self, [self] { self->m_averager->tick(); });
    t->m_tickTimer.start();
    t->m_balanceTimer.setInterval(std::chrono::seconds(2));
    connect(&t->m_balanceTimer, &QTimer::timeout, self, &Trainer::rebalance);
    t->m_balanceTimer.start();
    if (settings.maxSteps > 0 && state->step >= settings.maxSteps)
        t->m_router->setIssuing(false);
    t->m_router->start();
    sessions.setListener(self);
    return t;
}

std::optional<MicrobatchInput> Trainer::feed() {
    // Without overlap, no microbatch of the next step starts before this step's update.
    if (!m_settings.overlapSteps && m_stepCompleted + m_router->inFlight() >= m_settings.microbatchesPerStep)
        return std::nullopt;
    Result<gpu::TrainingMicrobatch> mb = m_data->next(m_settings.batch, m_settings.seq);
    if (!mb) {
        qWarning("trainer: the training data failed: %s", mb.message().c_str());
        return std::nullopt;
    }
    return MicrobatchInput{bytes(mb->inputs), bytes(mb->targets), m_settings.batch, m_settings.seq};
}

void Trainer::sessionText(const QString& nodeId, const QJsonObject& message) {
    if (m_stopped)
        return;
    const QString type = message.value(u"type").toString();
    if (type == u"ready") {
        Result<std::optional<NodeRecord>> node = NodeRegistry(m_db).find(nodeId);
        const int stage = message.value(u"stage").toInt(-1);
        if (!node || !*node || !(*node)->stage || *(*node)->stage != stage) {
            m_sessions.sendText(nodeId,
                                QJsonObject{{QStringLiteral("type"), QStringLiteral("error")},
                                            {QStringLiteral("error"),
                                             QStringLiteral("ready for stage %1, but this node is not "
                                                            "assigned to it")
                                                 .arg(stage)}});
            return;
        }
        if (m_router->hasNode(nodeId) || m_ghosts.contains(nodeId))
            return;
        m_reassigned.remove(nodeId);
        if (!m_rejoining.remove(nodeId))
            ++m_state.joins;
        const QStringList replicas = m_router->nodesOf(stage);
        if (m_settings.ghostSync && !replicas.isEmpty()) {
            // Ghost: take the weights of the replica with the least work in flight first.
            m_ghosts.insert(nodeId, stage);
            qInfo("trainer: node %s joins stage %d; syncing it from %s", qPrintable(shortId(nodeId)), stage,
                  qPrintable(shortId(replicas.first())));
            m_averager->startSync(nodeId, stage, replicas.first());
            return;
        }
        route(nodeId, stage);
        return;
    }
    if (type == u"unavailable") {
        m_ghosts.remove(nodeId);
        m_router->removeNode(nodeId, message.value(u"reason").toString(QStringLiteral("unavailable")));
        m_averager->nodeGone(nodeId);
        return;
    }
    if (type == u"sync_done") {
        m_averager->onSyncDone(nodeId, message.value(u"round").toInteger());
        return;
    }
    // step_done: nothing to do; the node's status shows it.
}

void Trainer::route(const QString& nodeId, int stage) {
    qInfo("trainer: node %s takes tasks of stage %d", qPrintable(shortId(nodeId)), stage);
    m_router->addNode(nodeId, stage, m_sessions.probedSecondsPerToken(nodeId));
}

void Trainer::sessionBinary(const QString& nodeId, const QByteArray& message) {
    if (m_stopped)
        return;
    Result<TaskMessage> decoded = decodeTaskMessage(message);
    if (!decoded) {
        qWarning("trainer: node %s sent a malformed binary message: %s", qPrintable(shortId(nodeId)),
                 decoded.message().c_str());
        m_sessions.sendText(nodeId, QJsonObject{{QStringLiteral("type"), QStringLiteral("error")},
                                                {QStringLiteral("error"),
                                                 QStringLiteral("malformed binary message: %1")
                                                     .arg(QString::fromStdString(decoded.message()))}});
        return;
    }
    const QString type = decoded->header.value(u"type").toString();
    if (type == u"task_result")
        m_router->onResult(nodeId, *decoded);
    else if (type == u"average_share")
        m_averager->onShare(nodeId, *decoded);
    else
        m_sessions.sendText(
            nodeId, QJsonObject{{QStringLiteral("type"), QStringLiteral("error")},
                                {QStringLiteral("error"),
                                 QStringLiteral("unknown binary message type '%1'").arg(type.left(64))}});
}

void Trainer::sessionClosed(const QString& nodeId) {
    m_reassigned.remove(nodeId);
    const bool wasIn = m_router->hasNode(nodeId) || m_ghosts.remove(nodeId) > 0;
    if (wasIn && !m_stopped)
        ++m_state.leaves;
    m_router->removeNode(nodeId, QStringLiteral("disconnected"));
    m_averager->nodeGone(nodeId);
}

void Trainer::onCompleted(const Microbatch& mb) {
    const qint64 t = now();
    m_store.completed(mb, t);
    ++m_state.completed;
    m_state.tokens += mb.tokens;
    for (const AcceptedTask& task : mb.accepted)
        m_creditedFlop += task.flop;
    m_recent.emplace_back(t, mb.tokens);
    while (!m_recent.empty() && m_recent.front().first < t - kRateWindowMs)
        m_recent.pop_front();
    if (std::isfinite(mb.loss)) {
        m_stepLossSum += mb.loss;
        ++m_stepLossCount;
    }
    if (++m_stepCompleted >= m_settings.microbatchesPerStep)
        endStep();
}

void Trainer::onAbandoned(const Microbatch& mb) {
    m_store.abandoned(mb, now());
    ++m_state.abandoned;
}

void Trainer::endStep() {
    const qint64 t = now();
    const qint64 step = ++m_state.step;
    const double loss = m_stepLossCount > 0 ? m_stepLossSum / m_stepLossCount : std::nan("");
    m_stepCompleted = 0;
    m_stepLossSum = 0;
    m_stepLossCount = 0;
    if (std::isfinite(loss))
        m_lastLoss = loss;
    const QJsonObject message{{QStringLiteral("type"), QStringLiteral("step")},
                              {QStringLiteral("step"), step}};
    for (int s = 0; s < m_config.stages; ++s)
        for (const QString& node : m_router->nodesOf(s))
            m_sessions.sendText(node, message);
    m_router->stepSent();
    m_store.stepped(step, loss, m_state, t);
    if (std::isfinite(loss)) {
        m_lossCurve.push_back({step, loss, m_state.tokens, t});
        if (m_lossCurve.size() > kLossCurvePoints)
            m_lossCurve.pop_front();
    }
    if (m_averager->isAveragingStep(step))
        for (int s = 0; s < m_config.stages; ++s)
            m_averager->startRound(s, step, m_router->nodesOf(s));
    if (m_settings.checkpointEvery > 0 && step % m_settings.checkpointEvery == 0)
        publishCheckpoints();
    if (m_settings.maxSteps > 0 && step >= m_settings.maxSteps) {
        qInfo("trainer: step %lld reached: no new microbatches", qlonglong(step));
        m_router->setIssuing(false);
    }
}

void Trainer::flush() {
    // Joins and leaves between steps are kept too (a crash loses at most a flush interval).
    if (m_state.joins != m_savedJoins || m_state.leaves != m_savedLeaves) {
        m_store.saveState(m_state.step, m_state, now());
        m_savedJoins = m_state.joins;
        m_savedLeaves = m_state.leaves;
    }
    if (Status s = m_store.flush(); !s)
        qWarning("trainer: writing the training state failed (kept for the next try): %s",
                 s.message().c_str());
}

void Trainer::grantCredits() {
    flush();
    if (m_store.hasPending())
        return; // the accounting must be in before credit is granted from it
    const Identity& key = m_key;
    Result<QStringList> granted = m_store.grantCredits(
        [&key](const QByteArray& payload) -> Result<QByteArray> { return key.sign(payload); }, now());
    if (!granted) {
        qWarning("trainer: %s", granted.message().c_str());
        return;
    }
    for (const QString& node : *granted)
        m_sessions.sendText(node, QJsonObject{{QStringLiteral("type"), QStringLiteral("credits")}});
}

void Trainer::publishCheckpoints() {
    flush();
    Result<int> n = m_checkpoints->publish(m_state.step, now());
    if (!n)
        qWarning("trainer: %s", n.message().c_str());
    else if (*n > 0)
        qInfo("trainer: step %lld: published new checkpoints of %d stages", qlonglong(m_state.step), *n);
}

void Trainer::rebalance() {
    if (m_stopped || m_config.stages < 2)
        return;
    const qint64 t = now();
    for (auto it = m_reassigned.begin(); it != m_reassigned.end();)
        it = t - it->sinceMs > kReassignGraceMs ? m_reassigned.erase(it) : std::next(it);
    for (int s = 0; s < m_config.stages; ++s) {
        bool moving = false;
        for (const Move& m : m_reassigned)
            moving = moving || m.stage == s;
        const bool held = !m_router->nodesOf(s).isEmpty() || m_ghosts.values().contains(s) || moving;
        if (held) {
            m_starvedSince.remove(s);
            continue;
        }
        const qint64 since = m_starvedSince.value(s, t);
        m_starvedSince.insert(s, since);
        if (t - since < m_settings.rebalanceAfterMs)
            continue; // a node of its own may come back (a restart, a resume)
        int donor = -1;
        qsizetype most = 1;
        for (int d = 0; d < m_config.stages; ++d)
            if (m_router->nodesOf(d).size() > most) {
                most = m_router->nodesOf(d).size();
                donor = d;
            }
        if (donor < 0)
            return; // no stage can spare a node: new nodes are admitted to the empty stage
        const QString node = m_router->nodesOf(donor).last();
        const Status moved = m_db.writeTransaction([&]() -> Status {
            if (Status set = NodeRegistry(m_db).setStage(node, s); !set)
                return set;
            return AssignmentLog(m_db).assign(node, s, t);
        });
        if (!moved) {
            qWarning("trainer: moving node %s to stage %d failed: %s", qPrintable(shortId(node)), s,
                     moved.message().c_str());
            return;
        }
        qInfo("trainer: stage %d has had no node for %lld s: node %s moves there from stage %d", s,
              qlonglong((t - since) / 1000), qPrintable(shortId(node)), donor);
        m_router->removeNode(node, QStringLiteral("moved to stage %1").arg(s));
        m_averager->nodeGone(node);
        m_reassigned.insert(node, Move{s, t});
        m_starvedSince.remove(s);
        m_sessions.sendText(
            node, QJsonObject{{QStringLiteral("type"), QStringLiteral("reassign")},
                              {QStringLiteral("stage"), s},
                              {QStringLiteral("reason"), QStringLiteral("stage %1 has no node").arg(s)}});
    }
}

void Trainer::stop() {
    if (m_stopped)
        return;
    m_router->setIssuing(false);
    m_router->abandonAll(QStringLiteral("the coordinator is stopping"));
    m_stopped = true;
    m_flushTimer.stop();
    m_creditTimer.stop();
    m_tickTimer.stop();
    m_balanceTimer.stop();
    grantCredits();
    publishCheckpoints();
}

QJsonObject Trainer::status() const {
    const qint64 t = now();
    qint64 recentTokens = 0;
    qint64 oldest = t;
    for (const auto& [at, tokens] : m_recent)
        if (at >= t - kRateWindowMs) {
            recentTokens += tokens;
            oldest = std::min(oldest, at);
        }
    const double span = std::max(1.0, double(t - std::min(oldest, t - 1000)) / 1000.0);
    QJsonArray stages;
    for (const RouterStage& r : m_router->stageSummaries()) {
        int ghosts = 0;
        for (int s : m_ghosts)
            ghosts += s == r.stage ? 1 : 0;
        stages.append(QJsonObject{{QStringLiteral("stage"), r.stage},
                                  {QStringLiteral("nodes"), r.nodes},
                                  {QStringLiteral("ghosts"), ghosts},
                                  {QStringLiteral("tasks_in_flight"), r.inFlight},
                                  {QStringLiteral("seconds_per_token"), r.medianSecondsPerToken},
                                  {QStringLiteral("parameters"), m_checkpoints->parameters(r.stage)},
                                  {QStringLiteral("checkpoint_version"), m_checkpoints->version(r.stage)},
                                  {QStringLiteral("checkpoint_step"), m_checkpoints->step(r.stage)}});
    }
    QJsonArray curve;
    for (const LossPoint& p : m_lossCurve)
        curve.append(QJsonArray{p.step, p.loss, p.tokens});
    const RouterCounters& c = m_router->counters();
    return QJsonObject{
        {QStringLiteral("step"), m_state.step},
        {QStringLiteral("loss"), std::isfinite(m_lastLoss) ? QJsonValue(m_lastLoss) : QJsonValue()},
        {QStringLiteral("tokens"), m_state.tokens},
        {QStringLiteral("tokens_per_second"), double(recentTokens) / span},
        {QStringLiteral("microbatches"), QJsonObject{{QStringLiteral("issued"), m_state.issued},
                                                     {QStringLiteral("completed"), m_state.completed},
                                                     {QStringLiteral("abandoned"), m_state.abandoned},
                                                     {QStringLiteral("in_flight"), m_router->inFlight()},
                                                     {QStringLiteral("retries"), c.retries},
                                                     {QStringLiteral("duplicates"), c.duplicates}}},
        {QStringLiteral("microbatches_per_step"), m_settings.microbatchesPerStep},
        {QStringLiteral("credits_granted_flop"), m_creditedFlop},
        {QStringLiteral("joins"), m_state.joins},
        {QStringLiteral("leaves"), m_state.leaves},
        {QStringLiteral("averaging"),
         QJsonObject{{QStringLiteral("interval"), m_settings.averaging.interval},
                     {QStringLiteral("partitions"), m_settings.averaging.partitions},
                     {QStringLiteral("rounds"), m_averager->roundsCompleted()}}},
        {QStringLiteral("training_stages"), stages},
        {QStringLiteral("loss_curve"), curve},
    };
}

} // namespace tessera::coordinator
