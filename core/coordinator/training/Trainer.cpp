// SPDX-License-Identifier: Apache-2.0
// Trainer: the training parts made, wired to each other and to the sessions.
#include "coordinator/training/Trainer.h"

#include "common/WallClock.h"
#include "coordinator/api/SessionApi.h"
#include "coordinator/store/ReputationStore.h"
#include "coordinator/training/Reclaim.h"
#include "coordinator/training/StageCheckpoints.h"
#include "coordinator/training/TrainerInbox.h"
#include "protocol/TaskMessage.h"
#include "train/TrainingData.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QRandomGenerator>

namespace tessera::coordinator {

namespace {
constexpr int kStrikesOut = 3;
}

Trainer::Trainer(Database& db, const gpu::ModelConfig& config, TrainerSettings settings, SessionApi& sessions)
    : m_db(db)
    , m_config(config)
    , m_settings(settings)
    , m_sessions(sessions)
    , m_store(db) {}

Trainer::~Trainer() {
    m_sessions.setListener(nullptr);
}

qint64 Trainer::now() const {
    return WallClock::nowMs();
}

Result<std::unique_ptr<Trainer>> Trainer::create(Database& db, const Identity& key,
                                                 const gpu::ModelConfig& config, const QString& shardDir,
                                                 TrainerSettings settings, SessionApi& sessions,
                                                 PreparedRun prepared) {
    if (Status s = checkSettings(config, settings, prepared); !s)
        return s.error();
    std::unique_ptr<Trainer> t(new Trainer(db, config, settings, sessions));
    if (Status s = t->resume(std::move(prepared)); !s)
        return s.error();
    if (Status s = t->makeChecks(key); !s)
        return s.error();
    t->makeAverager();
    t->makeLoop();
    if (t->m_settings.gradients.enabled)
        if (Status s = t->makeGradients(); !s)
            return s.error();
    t->makeRouter();
    if (Status s = t->makeReexecution(); !s)
        return s.error();
    t->makeStepChecks();
    t->makeMembership();
    t->makeReclaim(shardDir);
    t->wireMembership();
    t->makeInbox();
    t->start();
    return t;
}

Status Trainer::checkSettings(const gpu::ModelConfig& config, const TrainerSettings& settings,
                              const PreparedRun& prepared) {
    const LoopSettings& loop = settings.loop;
    if (loop.batch < 1 || loop.seq < 1 || loop.seq > config.maxSeqLen || loop.microbatchesPerStep < 1)
        return makeError("training: batch and microbatches per step must be ≥ 1 and seq within 1.." +
                         std::to_string(config.maxSeqLen));
    if (settings.averaging.interval < -1 || settings.averaging.partitions < 1 ||
        settings.averaging.partitions > protocol::kMaxPartitions)
        return makeError("training: the averaging interval must be ≥ -1 and the partitions within 1..1000");
    if (!prepared.data || !prepared.checkpoints)
        return makeError("training: the run's checkpoints and data are not prepared");
    return {};
}

Trainer::SendText Trainer::textSender() {
    return [this](const QString& node, const protocol::SessionMessage& m) {
        return m_sessions.sendText(node, m);
    };
}

Trainer::SendBinary Trainer::binarySender() {
    return [this](const QString& node, const QByteArray& m) { return m_sessions.sendBinary(node, m); };
}

Trainer::Clock Trainer::clock() {
    return [this] { return now(); };
}

Status Trainer::resume(PreparedRun prepared) {
    Result<TrainingState> state = m_store.resume(now());
    if (!state)
        return state.error();
    m_state = *state;
    if (state->abandonedAtStart > 0)
        qInfo("trainer: %lld microbatches left in flight by the previous run are counted abandoned",
              qlonglong(state->abandonedAtStart));

    // The data order goes on from a new seed after a restart instead of replaying the start; the
    // corpus is the run's (a synthetic one reseeded with the order was another task: the loss jumped
    // from 2.74 to 4.08 across a clean restart).
    const std::uint64_t order = m_config.seed ^ (std::uint64_t(state->step) * 0x9E3779B97F4A7C15ull);
    m_data = std::move(prepared.data);
    m_data->reorder(order);
    m_checkpoints = std::move(prepared.checkpoints);
    return {};
}

Status Trainer::makeChecks(const Identity& key) {
    Result<std::unique_ptr<ResultCheck>> checks = ResultCheck::create(m_config, m_settings.checks);
    if (!checks)
        return checks.error();
    m_checks = std::move(*checks);
    m_probes = std::make_unique<NodeProbes>(textSender());
    AuditSettings audits = m_settings.audits;
    audits.partitions = m_settings.averaging.partitions;
    audits.chunkValues = m_settings.averaging.chunkValues;
    m_auditor = std::make_unique<Auditor>(m_config, audits, textSender(), clock());
    connect(m_auditor.get(), &Auditor::audited, this, &Trainer::onAudited);
    m_credits =
        std::make_unique<CreditGranter>(m_store, key, qint64(m_settings.creditEscrow.count()), textSender());
    m_reputation = std::make_unique<Reputation>(m_db, m_settings.reputation);
    return {};
}

void Trainer::makeAverager() {
    // The default: SPARTA where replicas are not held equal — without gradient averaging, and after a
    // restart (the checkpoint's moments start afresh there while the replicas keep theirs).
    if (m_settings.averaging.interval == 0)
        m_settings.averaging.interval = m_settings.gradients.enabled && m_state.step == 0 ? -1 : 20;
    StageCheckpoints* cp = m_checkpoints.get();
    ResultCheck* resultChecks = m_checks.get();
    const int partitions = m_settings.averaging.partitions;
    m_averager = std::make_unique<Averager>(
        m_config.stages,
        [cp, partitions](int stage, int partition) {
            return cp->partitionSize(stage, partition, partitions);
        },
        m_settings.averaging, textSender(), binarySender());
    m_averager->setReference([cp, partitions](int stage, int partition) {
        Result<std::vector<float>> v = cp->values(stage, partition, partitions);
        return v ? std::move(*v) : std::vector<float>();
    });
    // With gradient averaging every replica takes the same AdamW step: a ghost gets AdamW's state
    // with the weights (and the steps' updates while it syncs), so it holds what they hold.
    const bool state = m_settings.gradients.enabled && cp->stateSync();
    // Replicas of a stage then hold equal weights: what a re-execution compares, and what an audit's
    // snapshot must equal (the checkpoint's, read when it is asked for: synchronous steps only, where
    // the weights a step's tasks ran on are the checkpoint's until the step's update).
    m_replicasAgree = state && m_settings.averaging.interval < 0 && m_state.step == 0;
    if (m_replicasAgree && m_settings.loop.pipelineDepth == 1) {
        const int auditPartitions = m_settings.averaging.partitions;
        m_auditor->setReference([cp, auditPartitions](int stage) -> std::shared_ptr<const std::vector<float>> {
            Result<std::vector<float>> v = cp->values(stage, -1, auditPartitions);
            return v ? std::make_shared<const std::vector<float>>(std::move(*v)) : nullptr;
        });
    }
    m_averager->setWeights([cp, state](int stage, qint64 offset, qint64 count) {
        Result<std::vector<float>> v = state ? cp->state(stage, offset, count) : cp->weights(stage, offset, count);
        return v ? std::move(*v) : std::vector<float>();
    });
    if (state)
        m_averager->setSyncShape([cp](int stage) {
            return Averager::SyncShape{3 * cp->parameters(stage), cp->optimizerSteps(stage)};
        });
    m_averager->setTrusted([resultChecks](const QString& node) { return resultChecks->trusted(node); });
    connect(m_averager.get(), &Averager::shareRefused, this, &Trainer::onRefused);
    connect(m_averager.get(), &Averager::averaged, this,
            [this, partitions](int stage, int partition, const std::vector<float>& values, int) {
                if (Status s = m_checkpoints->take(stage, partition, partitions, values); !s)
                    qWarning("trainer: the checkpoint of stage %d did not take partition %d: %s", stage,
                             partition, s.message().c_str());
            });
}

void Trainer::makeLoop() {
    m_loop = std::make_unique<TrainingLoop>(m_settings.loop, m_config.stages, m_store, m_state, *m_data,
                                            *m_checkpoints, *m_averager, textSender(), clock());
}

Status Trainer::makeGradients() {
    GradientSettings settings = m_settings.gradients;
    settings.chunkValues = m_settings.averaging.chunkValues;
    std::vector<GradientAverager::Shapes> shapes;
    for (int s = 0; s < m_config.stages; ++s)
        shapes.push_back(m_checkpoints->parameterShapes(s));
    Result<std::unique_ptr<GradientAverager>> gradients =
        GradientAverager::create(shapes, settings, m_config.seed, textSender(), binarySender(), clock());
    if (!gradients)
        return makeError("gradient averaging: " + gradients.message());
    m_gradients = std::move(*gradients);
    ResultCheck* resultChecks = m_checks.get();
    m_gradients->setTrusted([resultChecks](const QString& node) { return resultChecks->trusted(node); });
    connect(m_gradients.get(), &GradientAverager::shareRefused, this, &Trainer::onRefused);
    const int rank = m_gradients->settings().rank; // after a fallback, not the option's
    m_weightCheck = std::make_unique<WeightCheck>(clock());
    connect(m_gradients.get(), &GradientAverager::applied, this,
            [this, rank](const GradientAverager::Applied& a, const std::vector<float>& result) {
                // The checkpoint's fingerprint, in the pass that applies the update: what the nodes asked
                // must answer.
                gpu::WeightFingerprint reference(a.fingerprintSeed);
                const bool asked = a.fingerprintSeed != 0 && !a.fingerprinted.isEmpty();
                const Status s = m_checkpoints->applyGradients(a.stage, rank, result, a.learningRate,
                                                               a.clipScale, asked ? &reference : nullptr);
                if (!s)
                    qWarning("trainer: the checkpoint of stage %d did not take step's gradients: %s", a.stage,
                             s.message().c_str());
                else if (asked) // a minute, and 10 s per 10⁹ weights to fingerprint
                    m_weightCheck->expect(a.stage, a.step, reference, a.fingerprinted,
                                          60'000 + m_checkpoints->parameters(a.stage) / 100'000);
                m_averager->stepApplied(a.stage);
            });
    // Weights unlike the checkpoint's: struck (a liar must not diverge for free) and synced again
    // (an honest node's weights come back right) — not struck, once, where we routed it without its
    // weights (a sync that failed thrice): synced again. Once: a node that makes its syncs fail on purpose
    // gets one step routed with weights of its own, then strikes like any other.
    connect(m_weightCheck.get(), &WeightCheck::weightsDiverged, this,
            [this](const QString& node, int stage, const QString& why) {
                if (m_membership->excuseDivergence(node)) {
                    qWarning("trust: node %s (stage %d) was routed without the checkpoint's weights (its sync "
                             "failed): not struck for holding others",
                             qPrintable(node.left(12)), stage);
                } else {
                    strike(node, why);
                }
                if (m_sessions.isConnected(node))
                    m_membership->resync(node, why);
            });

    // Queued: a round can close inside the router's completion of the step's last microbatch.
    TrainingLoop* loopForGradients = m_loop.get();
    connect(
        m_gradients.get(), &GradientAverager::closed, this,
        [loopForGradients](qint64 step) { loopForGradients->exchangeClosed(step); }, Qt::QueuedConnection);
    m_loop->setGradients(m_gradients.get());
    return {};
}

void Trainer::makeRouter() {
    std::vector<qint64> parameters;
    for (int s = 0; s < m_config.stages; ++s)
        parameters.push_back(m_checkpoints->parameters(s));
    m_router = std::make_unique<Router>(m_config.stages, parameters, m_settings.router, binarySender(),
                                        [this] { return m_loop->feed(); });
    m_router->setNextMicrobatchId(m_state.nextMicrobatch);
    m_router->setCheck([this](const QString& node, const Microbatch& mb, protocol::TaskKind kind,
                              const protocol::HeldFrame& output, std::optional<double> loss) {
        return checkResult(node, mb, kind, output, loss);
    });
    // Answering faster wins more tasks only once the answers were verified (a re-execution or an audit
    // passed since the node's last strike): skipping the work is the fastest answer of all.
    m_router->setVerified(
        [this](const QString& node) { return !m_settings.checks.enabled || m_checks->vetted(node); });
    connect(m_router.get(), &Router::refused, this, &Trainer::onRefused);
    m_router->setInputJudge([this](int senderStage, bool activation, const protocol::HeldFrame& input) {
        return m_checks->unusualOutput(senderStage, activation,
                                       {reinterpret_cast<const std::uint8_t*>(input.frame.payload.data()),
                                        std::size_t(input.frame.payload.size())});
    });
    connect(m_router.get(), &Router::stageRefusesOrdinaryInput, this, [](int stage, const QString& why) {
        qWarning("trust: stage %d's replicas cross a bound on an ordinary input (nobody struck): %s", stage,
                 qPrintable(why));
    });
    connect(m_router.get(), &Router::refusalUnresolved, this,
            [this](const QString& node, int stage, const QString& why) {
                qWarning("trust: node %s (stage %d): result refused, whose fault unsettled: %s",
                         qPrintable(node.left(12)), stage, qPrintable(why));
                m_checks->probation(node);
            });
    Router* router = m_router.get();
    if (m_gradients) {
        // Every node of a stage takes every step's update from its sync's first chunk on: the ghosts
        // being synced, and nodes routed after the step asked its replicas for shares. Where replicas
        // agree, every one that holds the whole state shows it does after each step (WeightCheck).
        Averager* averager = m_averager.get();
        if (m_replicasAgree) {
            m_gradients->setFingerprinted(
                [averager](const QString& node, int) { return !averager->syncing(node); });
            // A replica re-executes others' work once its weights showed they are the checkpoint's.
            router->setVerifiersShowWeights(true);
            connect(m_weightCheck.get(), &WeightCheck::weightsAgreed, this,
                    [router](const QString& node, int) { router->weightsShown(node); });
        }
        m_gradients->setObservers([averager, router](int stage) {
            QStringList out = averager->syncingOf(stage);
            for (const QString& node : router->nodesOf(stage))
                if (!out.contains(node))
                    out << node;
            return out;
        });
    }
    connect(m_averager.get(), &Averager::weightsSent, this,
            [router](const QString& node) { router->weightsChanged(node); });
    if (m_gradients)
        connect(m_gradients.get(), &GradientAverager::weightsSent, this,
                [router](const QString& node) { router->weightsChanged(node); });
    m_loop->setBeforeStep([this, router] {
        m_auditor->requestSnapshots([router](const QString& node) { return router->weightsVersion(node); });
    });
    TrainingLoop* trainingLoop = m_loop.get();
    connect(m_router.get(), &Router::issued, this,
            [trainingLoop](qint64 id, qint64 tokens) { trainingLoop->onIssued(id, tokens); });
    connect(m_router.get(), &Router::completed, this,
            [trainingLoop](const Microbatch& mb) { trainingLoop->onCompleted(mb); });
    connect(m_router.get(), &Router::abandoned, this,
            [trainingLoop](const Microbatch& mb) { trainingLoop->onAbandoned(mb); });
    m_loop->attach(*m_router);
}

Status Trainer::makeReexecution() {
    Reputation* reputation = m_reputation.get();
    Result<std::unique_ptr<Reexecution>> r =
        Reexecution::create(m_config, m_settings.reexecution, *m_router, clock(),
                            [reputation](const QString& node) { return reputation->networkOfNode(node); });
    if (!r)
        return r.error();
    m_reexecution = std::move(*r);
    connect(m_reexecution.get(), &Reexecution::judged, this, &Trainer::onReexecuted);
    // Where replicas agree the checkpoint holds their weights: a forward two of them dispute with no
    // referee is bisected to one block the coordinator recomputes.
    if (!m_replicasAgree)
        return {};
    StageCheckpoints* cp = m_checkpoints.get();
    Result<std::unique_ptr<Bisection>> made = Bisection::create(
        m_config, m_settings.reexecution.tolerance, *m_router,
        [cp](int stage, qint64 offset, qint64 count) { return cp->weights(stage, offset, count); });
    if (!made)
        return made.error();
    m_bisection = std::move(*made);
    m_bisection->setDepartures(&m_departures);
    connect(m_bisection.get(), &Bisection::judged, this, &Trainer::onReexecuted);
    Bisection* bisection = m_bisection.get();
    m_reexecution->setSettle([bisection](const CheckTask& task, qint64 era, const ReexecutionVerdict& verdict,
                                         const QString& a, const protocol::HeldFrame& outputA,
                                         std::optional<double> lossA, const QString& b,
                                         const protocol::HeldFrame& outputB, std::optional<double> lossB) {
        return bisection->start(task, era, verdict, a, outputA, lossA, b, outputB, lossB);
    });
    return {};
}

void Trainer::makeStepChecks() {
    if (!m_gradients || !m_replicasAgree || !m_settings.checks.enabled)
        return;
    Reputation* reputation = m_reputation.get();
    if (m_settings.shareCheck.percent > 0) {
        m_shareCheck = std::make_unique<ShareCheck>(
            m_settings.shareCheck, *m_router,
            [reputation](const QString& node) { return reputation->networkOfNode(node); },
            [] { return QRandomGenerator::global()->generateDouble(); },
            // From the system's source, exact in JSON, never 0: drawn once the share came.
            [] { return QRandomGenerator::system()->generate64() % ((quint64(1) << 53) - 1) + 1; });
        connect(m_shareCheck.get(), &ShareCheck::judged, this,
                [this](qint64 step, int stage, const QStringList& dropped) {
                    releaseHold(step, stage, dropped, true);
                });
        connect(m_shareCheck.get(), &ShareCheck::verdict, this, &Trainer::onShareChecked);
        // A share that passed through a node found lying within the hour is left out, never struck.
        m_shareCheck->setDistrusted([this](const QString& node) {
            constexpr qint64 kDistrustMs = 3'600'000;
            const auto found = m_foundFalse.constFind(node);
            return found != m_foundFalse.constEnd() && now() - found.value() < kDistrustMs;
        });
        // A share no other replica can sketch (a lone replica's) is looked at by the node's own trace.
        if (Bisection* bisection = m_bisection.get())
            m_shareCheck->setTraceLooks(
                [bisection](int stage) { return bisection->drawShareSegment(stage); },
                [bisection](const CheckTask& task, qint64 era, const QString& node,
                            const protocol::HeldFrame& output, std::optional<double> loss,
                            const ShareSegment& segment, std::shared_ptr<const std::vector<float>> values,
                            int microbatches, std::function<void(const ShareLook&)> done) {
                    return bisection->traceShare(task, era, node, output, loss, segment, std::move(values),
                                                 microbatches, std::move(done));
                },
                [gradients = m_gradients.get()](qint64 step, int stage, const QString& node) {
                    return gradients->heldShare(step, stage, node);
                });
    }
    m_gradients->setShareGate(
        [this](qint64 step, int stage, const std::vector<GradientAverager::ShareView>& shares) {
            StepHold hold;
            hold.sharesInAtMs = now();
            if (m_shareCheck) {
                std::vector<ShareView> views;
                for (const GradientAverager::ShareView& share : shares)
                    views.push_back(ShareView{share.node, share.values, share.microbatches, share.claimed});
                hold.shares = m_shareCheck->begin(step, stage, views);
            }
            hold.bisecting = m_bisection && m_bisection->pendingOn(stage);
            if (!hold.shares && !hold.bisecting)
                return false;
            m_holds[{step, stage}] = hold;
            return true;
        });
    if (m_bisection)
        connect(m_bisection.get(), &Bisection::settled, this, [this](int stage) {
            std::vector<std::pair<qint64, int>> keys;
            for (const auto& [key, hold] : m_holds)
                if (key.second == stage && hold.bisecting)
                    keys.push_back(key);
            for (const auto& key : keys)
                releaseHold(key.first, key.second, {}, false);
        });
}

void Trainer::releaseHold(qint64 step, int stage, const QStringList& dropped, bool shares) {
    const auto it = m_holds.find({step, stage});
    if (it == m_holds.end())
        return;
    (shares ? it->second.shares : it->second.bisecting) = false;
    it->second.dropped << dropped;
    if (it->second.shares || it->second.bisecting)
        return;
    const QStringList all = it->second.dropped;
    m_holds.erase(it);
    m_gradients->sharesJudged(step, stage, all);
}

void Trainer::onShareChecked(const ShareVerdict& v) {
    for (const QString& node : v.contradicted) {
        qWarning(
            "trust: replica %s's sketch failed node %s's gradient share (stage %d, step %lld), which the "
            "coordinator's recompute from its trace passes: %s on probation",
            qPrintable(node.left(12)), qPrintable(v.node.left(12)), v.stage, qlonglong(v.step),
            qPrintable(node.left(12)));
        m_checks->probation(node);
    }
    if (v.struck) {
        qWarning("trust: node %s (stage %d) struck at step %lld: %s", qPrintable(v.node.left(12)), v.stage,
                 qlonglong(v.step), qPrintable(v.reason));
        return strike(v.node, QStringLiteral("gradient share: %1").arg(v.reason));
    }
    if (v.unsettled) {
        qWarning("trust: node %s's gradient share (stage %d, step %lld) %s: %s", qPrintable(v.node.left(12)),
                 v.stage, qlonglong(v.step), v.passed ? "stands" : "left out", qPrintable(v.reason));
        for (const QString& node : v.disputed)
            m_checks->probation(node);
        return;
    }
    if (v.passed && !v.verifiers.isEmpty() && v.stage == 0 && m_config.stages > 1) {
        // A first stage's backwards return no tensor: their work is the share, and the share holds what
        // another replica computed for one of them — verified work, the only check a stage 0 backward has
        // on the 8b path. (Elsewhere a backward's returned gradient is its own to check: a node honest in
        // its share and lying in what it returns was paid through its shares' checks.)
        m_checks->auditPassed(v.node);
        const auto hold = m_holds.find({v.step, v.stage});
        if (hold != m_holds.end())
            if (Status s = m_reputation->passedAudit(v.node, hold->second.sharesInAtMs, now(), false, true); !s)
                qWarning("trust: recording a share check failed: %s", s.message().c_str());
    }
    if (v.verifiers.size() > 1)
        qWarning("trust: node %s's gradient share (stage %d, step %lld) stands on a second look: %s",
                 qPrintable(v.node.left(12)), v.stage, qlonglong(v.step), qPrintable(v.reason));
    else if (!v.verifiers.isEmpty())
        qInfo("trust: node %s's gradient share (stage %d, step %lld) holds its work: alignment %.3g, norm "
              "%.3gx "
              "the microbatch's gradient (%s)",
              qPrintable(v.node.left(12)), v.stage, qlonglong(v.step), v.alignment, v.normRatio,
              qPrintable(v.verifiers.front() == v.node
                             ? QStringLiteral("recomputed here from its own trace: no other replica could")
                             : QStringLiteral("sketched by ") + v.verifiers.front().left(12)));
    else if (!v.passed)
        qWarning("trust: node %s's gradient share (stage %d, step %lld) left out: %s",
                 qPrintable(v.node.left(12)), v.stage, qlonglong(v.step), qPrintable(v.reason));
}

QJsonObject Trainer::shareCheckStatus() const {
    if (!m_shareCheck)
        return {};
    return QJsonObject{{QStringLiteral("percent"), m_shareCheck->settings().percent},
                       {QStringLiteral("checked"), m_shareCheck->checked()},
                       {QStringLiteral("passed"), m_shareCheck->passed()},
                       {QStringLiteral("struck"), m_shareCheck->struck()},
                       {QStringLiteral("unsettled"), m_shareCheck->unsettled()},
                       {QStringLiteral("unchecked"), m_shareCheck->unchecked()},
                       {QStringLiteral("second_looks_passed"), m_shareCheck->secondLooksPassed()},
                       {QStringLiteral("trace_looks"), m_shareCheck->traceLooks()},
                       {QStringLiteral("lowest_passed_alignment"), m_shareCheck->lowestPassedAlignment()},
                       {QStringLiteral("highest_passed_norm_ratio"), m_shareCheck->highestPassedNormRatio()}};
}

void Trainer::makeMembership() {
    m_membership = std::make_unique<Membership>(m_db, m_settings.membership, m_config.stages, m_state,
                                                *m_router, *m_averager, *m_probes, textSender(), clock());
}

void Trainer::makeReclaim(const QString& shardDir) {
    // After a restart the stages' current weights are the nodes', not the published checkpoint's.
    StageCheckpoints* cp = m_checkpoints.get();
    const int partitions = m_settings.averaging.partitions;
    ReclaimSettings reclaim;
    reclaim.partitions = partitions;
    reclaim.chunkValues = m_settings.averaging.chunkValues;
    reclaim.learningRate = m_settings.gradients.schedule.peak;
    reclaim.lookAhead = m_settings.gradients.lookAhead;
    reclaim.spillDir = QFileInfo(shardDir).dir().filePath(QStringLiteral("reclaim"));
    ReclaimCheckpoint held{
        [this](int stage) { return m_state.step - m_checkpoints->step(stage); },
        [cp, partitions](int stage) {
            std::vector<qint64> sizes;
            for (int p = 0; p < partitions; ++p)
                sizes.push_back(cp->partitionSize(stage, p, partitions));
            return sizes;
        },
        [cp, partitions](int stage, int partition) { return cp->values(stage, partition, partitions); },
        [cp, partitions](int stage, int partition, std::span<const float> values) {
            return cp->take(stage, partition, partitions, values);
        }};
    Database* database = &m_db;
    m_reclaim = std::make_unique<Reclaim>(
        reclaim, std::move(held),
        [database](const QString& node) {
            Result<ReputationRecord> r = ReputationStore(*database).get(ReputationStore::nodeSubject(node));
            return r ? r->auditsFailed : 1;
        },
        textSender(), clock());
    connect(m_reclaim.get(), &Reclaim::settled, this, [this](const ReclaimOutcome& outcome) {
        if (outcome.took)
            if (Result<int> published = m_checkpoints->publish(m_state.step, now()); !published)
                qWarning("trainer: %s", published.message().c_str());
        m_membership->onReclaimed(outcome,
                                  [this](const QString& node) { return m_sessions.isConnected(node); });
    });
}

void Trainer::wireMembership() {
    m_membership->setReclaim(m_reclaim.get());
    if (m_replicasAgree) {
        // A node joining a stage nobody holds (the first, or one moved to a starved stage) takes the
        // checkpoint's state too once it has taken a step: the published shard it downloaded is older.
        StageCheckpoints* cp = m_checkpoints.get();
        m_membership->setSyncAlone(
            [cp](int stage) { return cp->optimizerSteps(stage) > 0 || cp->changed(stage); });
    }
    // A moved node's pending audit would be answered with its new stage's weights: an honest node
    // failed the audit of its old stage that way. Its evidence there stays unjudged instead.
    m_membership->setOnMoved([this](const QString& node) {
        m_auditor->nodeGone(node);
        if (m_gradients)
            m_gradients->nodeGone(node);
        if (m_weightCheck) // the fingerprint it owed of its old stage: its weights now are the new one's
            m_weightCheck->nodeGone(node);
    });
    // Read before the session sweep marks them offline: nodes a recent previous process had.
    m_membership->rememberOnlineNodes();
    connect(m_averager.get(), &Averager::synced, this, [this](const QString& ghost, int stage, bool ok) {
        m_membership->onSynced(ghost, stage, ok, m_sessions.isConnected(ghost));
    });
}

void Trainer::makeInbox() {
    m_inbox = std::make_unique<TrainerInbox>(
        m_config, TrainerInbox::Parts{m_sessions, *m_membership, *m_probes, *m_router, *m_averager,
                                      *m_auditor, *m_reclaim, m_gradients.get(), m_weightCheck.get()});
}

void Trainer::start() {
    m_flushTimer.setInterval(m_settings.flushInterval);
    connect(&m_flushTimer, &QTimer::timeout, this, [this] { m_loop->flush(); });
    m_flushTimer.start();
    m_creditTimer.setInterval(m_settings.creditInterval);
    connect(&m_creditTimer, &QTimer::timeout, this, &Trainer::grantCredits);
    m_creditTimer.start();
    m_tickTimer.setInterval(std::chrono::milliseconds(500));
    connect(&m_tickTimer, &QTimer::timeout, this, [this] {
        m_averager->tick();
        if (m_gradients)
            m_gradients->tick();
        m_auditor->tick();
        m_reclaim->tick();
        if (m_weightCheck)
            m_weightCheck->tick();
    });
    m_tickTimer.start();
    m_balanceTimer.setInterval(std::chrono::seconds(2));
    connect(&m_balanceTimer, &QTimer::timeout, this, [this] { m_membership->rebalance(); });
    m_balanceTimer.start();
    m_router->start();
    m_sessions.setListener(this);
}

void Trainer::sessionOpened(const QString& nodeId) {
    if (!m_stopped)
        m_probes->start(nodeId);
}

void Trainer::sessionReceived(const QString& nodeId, const protocol::ToCoordinatorMessage& message,
                              const protocol::TaskMessage* frames) {
    if (!m_stopped)
        m_inbox->receive(nodeId, message, frames);
}

void Trainer::sessionClosed(const QString& nodeId) {
    m_inbox->nodeGone(nodeId);
    m_probes->forget(nodeId);
    if (m_stopped)
        m_auditor->nodeGone(nodeId);
    else
        m_auditor->nodeLeft(nodeId); // a snapshot it owed is an audit unanswered
    if (m_gradients)
        m_gradients->nodeGone(nodeId);
    if (m_weightCheck)
        m_weightCheck->nodeGone(nodeId);
    m_membership->onClosed(nodeId, m_stopped);
}

namespace {

std::span<const std::uint8_t> bytesOf(QByteArrayView v) {
    return {reinterpret_cast<const std::uint8_t*>(v.data()), std::size_t(v.size())};
}

std::span<const std::uint8_t> bytesOf(const protocol::HeldFrame& f) {
    return bytesOf(f.frame.payload);
}

} // namespace

std::optional<Router::Refusal> Trainer::checkResult(const QString& node, const Microbatch& mb,
                                                    protocol::TaskKind kind,
                                                    const protocol::HeldFrame& output,
                                                    std::optional<double> loss) {
    if (!m_settings.checks.enabled)
        return std::nullopt;
    const bool backward = kind == protocol::TaskKind::Backward;
    TaskEvidence task;
    task.node = node;
    task.stage = mb.stage;
    task.stages = m_config.stages;
    task.kind = kind;
    task.microbatch = mb.id;
    task.batch = mb.batch;
    task.seq = mb.seq;
    task.tokens = bytesOf(mb.inputs[0]);
    task.input = bytesOf(mb.inputs[std::size_t(mb.stage)]);
    task.targets = bytesOf(mb.targets);
    if (backward)
        task.gradientIn = bytesOf(mb.gradient);
    task.output = bytesOf(output);
    task.loss = loss;
    const CheckVerdict verdict = m_checks->check(task);
    if (verdict.refused)
        return Router::Refusal{*verdict.refused, verdict.inputMayCause};
    if (verdict.suspicious)
        qWarning("trust: node %s (stage %d): result suspected, audited at this step's end: %s",
                 qPrintable(node.left(12)), mb.stage, qPrintable(*verdict.suspicious));
    if (m_shareCheck)
        m_shareCheck->offer(node, mb, kind, output, loss);
    drawForCheck(node, mb, kind, output, loss, verdict.suspicious.has_value());
    return std::nullopt;
}

void Trainer::drawForCheck(const QString& node, const Microbatch& mb, protocol::TaskKind kind,
                           const protocol::HeldFrame& output, std::optional<double> loss, bool suspicious) {
    if (!suspicious && !m_checks->sampled(node))
        return;
    const bool backward = kind == protocol::TaskKind::Backward;
    // A stage 0 backward answers nothing a recomputation could compare; nor does a backward through a
    // kept graph whose weights changed (an averaging result) after its forward: it ran on a mix of both.
    const bool straddles =
        backward && !mb.taskHasInput && mb.forwardVersion[std::size_t(mb.stage)] != mb.taskVersion;
    const bool comparable = (!output.isNull() || kind == protocol::TaskKind::ForwardBackward) && !straddles;
    const bool auditable = comparable && m_auditor->audits(mb.stage, m_checkpoints->parameters(mb.stage));
    // Above the recompute limit re-execution is the check; below it, a share of the draws take it too.
    // Only where replicas hold equal weights: otherwise an honest replica's answer differs too.
    if (m_replicasAgree && !straddles &&
        (!auditable || QRandomGenerator::global()->generateDouble() < m_settings.reexecuteWhereAudited) &&
        m_reexecution->start(node, mb, kind, output, loss))
        return;
    // No other replica to run it where the coordinator cannot recompute the stage: a spot check of its trace.
    if (m_bisection && !auditable && !straddles &&
        m_bisection->spotCheck(CheckTask::of(mb, kind), mb.taskEra, node, output, loss, now()))
        return;
    if (auditable)
        m_auditor->keep(node,
                        Evidence{mb.taskVersion, mb.stage, kind, mb.id, mb.inputs[std::size_t(mb.stage)],
                                 kind == protocol::TaskKind::ForwardBackward ? mb.targets : protocol::HeldFrame(),
                                 backward ? mb.gradient : protocol::HeldFrame(), output, loss},
                        suspicious);
}

void Trainer::onRefused(const QString& node, int stage, const QString& reason) {
    qWarning("trust: node %s (stage %d): result refused: %s", qPrintable(node.left(12)), stage,
             qPrintable(reason));
    strike(node, reason);
}

void Trainer::strike(const QString& node, const QString& reason) {
    m_checks->probation(node);
    m_foundFalse.insert(node, now());
    // The router banned it for a while; the strike is remembered past `unavailable`, reconnects and
    // restarts, and what it had pending is forfeited (a liar mixing lies with work is not paid).
    const qint64 t = now();
    if (Result<qint64> until = m_reputation->strike(node, reason, t); !until)
        qWarning("trust: recording a strike failed: %s", until.message().c_str());
    m_loop->flush();
    m_credits->forfeit(node, QStringLiteral("struck: %1").arg(reason), t);
    // A third strike is no accident: out of the swarm like a failed audit (alone on a stage, a node
    // whose results are refused would otherwise stall it between its short bans).
    Result<ReputationRecord> standing = ReputationStore(m_db).get(ReputationStore::nodeSubject(node));
    if (standing && standing->strikes >= kStrikesOut) {
        const QString why = QStringLiteral("banned: %1 strikes (last: %2)")
                                .arg(standing->strikes)
                                .arg(reason.left(120));
        if (Result<qint64> out = m_reputation->struckOut(node, why, t); !out)
            qWarning("trust: recording a node struck out failed: %s", out.message().c_str());
        m_auditor->nodeGone(node); // a snapshot it owed counts no further
        m_sessions.closeNode(node, why);
    }
}

void Trainer::onAudited(const AuditOutcome& outcome) {
    if (outcome.passed) {
        m_checks->auditPassed(outcome.node);
        // A first stage's backward returns nothing an audit can compare: where shares are checked and
        // another replica can check them, the evidence for it is its share's check alone (else its
        // forwards' audits: a sole replica's share has no one to check it). TrainingStore pays a stage 0
        // backward on this column alone.
        const bool sharesJudge = m_shareCheck && outcome.stage == 0 && m_config.stages > 1 &&
                                 m_router->nodesOf(0).size() > 1;
        if (Status s = m_reputation->passedAudit(outcome.node, outcome.requestedAtMs, now(),
                                                 outcome.judgedForward, outcome.judgedBackward && !sharesJudge);
            !s)
            qWarning("trust: recording an audit failed: %s", s.message().c_str());
        return;
    }
    // Left or paused while it owed its weights (an honest node's process can end mid-audit: a game
    // started) and nothing to judge its answers on: excused once a day (Departures: unjudged, on probation,
    // its credit in escrow), struck the second time.
    if (outcome.unanswered && outcome.left) {
        if (m_departures.excuse(outcome.node, now())) {
            qWarning("trust: node %s (stage %d) left its audit unanswered, its first departure in a day: not "
                     "struck (on probation, its credit in escrow): %s",
                     qPrintable(outcome.node.left(12)), outcome.stage, qPrintable(outcome.reason));
            m_checks->probation(outcome.node);
            return;
        }
        qWarning("trust: node %s (stage %d) left its audit unanswered: %s", qPrintable(outcome.node.left(12)),
                 outcome.stage, qPrintable(outcome.reason));
        return strike(outcome.node, outcome.reason);
    }
    qWarning("trust: node %s (stage %d) failed an audit: %s", qPrintable(outcome.node.left(12)),
             outcome.stage, qPrintable(outcome.reason));
    convict(outcome.node, outcome.reason);
}

void Trainer::onReexecuted(const ReexecutionVerdict& verdict) {
    const bool forwards = verdict.kind == protocol::TaskKind::Forward;
    const qint64 t = now();
    for (const QString& node : verdict.verified) {
        m_checks->auditPassed(node);
        // The checked node's work up to its drawn result; a verifier's up to its answer (now).
        const qint64 through = node == verdict.checked ? verdict.acceptedAtMs : t;
        if (Status s = m_reputation->passedAudit(node, through, t, forwards, !forwards); !s)
            qWarning("trust: recording a re-execution failed: %s", s.message().c_str());
    }
    if (verdict.unsettled) {
        qWarning("trust: re-execution of microbatch %lld (stage %d) unsettled: %s", qlonglong(verdict.microbatch),
                 verdict.stage, qPrintable(verdict.reason));
        for (const QString& node : verdict.disputed)
            m_checks->probation(node);
    }
    for (const QString& node : verdict.convicted) {
        qWarning("trust: node %s (stage %d) convicted by re-execution: %s", qPrintable(node.left(12)),
                 verdict.stage, qPrintable(verdict.reason));
        convict(node, QStringLiteral("re-execution: %1").arg(verdict.reason));
    }
    for (const QString& node : verdict.struck) {
        qWarning("trust: node %s (stage %d) struck: %s", qPrintable(node.left(12)), verdict.stage,
                 qPrintable(verdict.reason));
        strike(node, verdict.reason);
    }
}

void Trainer::convict(const QString& node, const QString& reason) {
    m_checks->probation(node);
    m_foundFalse.insert(node, now());
    m_router->ban(node, QStringLiteral("failed an audit"));
    const qint64 t = now();
    if (Result<qint64> until = m_reputation->failedAudit(node, reason, t); !until)
        qWarning("trust: recording a failed audit failed: %s", until.message().c_str());
    m_loop->flush(); // its queued work is pending credit too
    m_credits->forfeit(node, QStringLiteral("failed an audit: %1").arg(reason), t);
    // Out of the swarm: its session ends, and its next admission is refused while the ban lasts.
    m_auditor->nodeGone(node); // a snapshot it owed counts no further
    m_sessions.closeNode(node,
                         QStringLiteral("banned: failed an audit of its results (%1)").arg(reason.left(200)));
}

void Trainer::grantCredits() {
    // Credit leaves escrow only for work a judged check covers (an audit, a re-execution) — never by
    // time alone — unless no check is drawn at all (the checks off, or both audit rates 0).
    const bool checking = m_settings.checks.enabled &&
                          (m_settings.checks.probationRate > 0 || m_settings.checks.trustedRate > 0);
    if (!checking)
        for (int s = 0; s < m_config.stages; ++s)
            for (const QString& node : m_router->nodesOf(s))
                (void)m_reputation->cover(node, now(), now());
    m_loop->flush();
    m_credits->grant(now());
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
    m_loop->publishCheckpoints();
}

QJsonObject Trainer::reexecutionStatus() const {
    const RouterCounters& c = m_router->counters();
    return QJsonObject{
        {QStringLiteral("started"), m_reexecution->started()},
        {QStringLiteral("agreed"), m_reexecution->agreed()},
        {QStringLiteral("convictions"), m_reexecution->convictions()},
        {QStringLiteral("unsettled"), m_reexecution->unsettled()},
        {QStringLiteral("dropped"), m_reexecution->dropped()},
        {QStringLiteral("pending"), m_reexecution->pending()},
        {QStringLiteral("worst_agreed_error"), m_reexecution->worstAgreedError()},
        {QStringLiteral("tasks_sent"), c.checksSent},
        {QStringLiteral("tasks_answered"), c.checksAnswered},
        {QStringLiteral("flop"), c.checkFlop},
        {QStringLiteral("bisections"),
         m_bisection ? QJsonObject{{QStringLiteral("started"), m_bisection->started()},
                                   {QStringLiteral("convictions"), m_bisection->convictions()},
                                   {QStringLiteral("unsettled"), m_bisection->unsettled()},
                                   {QStringLiteral("spot_checks"), m_bisection->spotChecks()},
                                   {QStringLiteral("spot_checks_passed"), m_bisection->spotChecksPassed()},
                                   {QStringLiteral("spot_convictions"), m_bisection->spotConvictions()}}
                     : QJsonObject()}};
}

QJsonObject Trainer::status() const {
    QJsonArray stages;
    for (const RouterStage& r : m_router->stageSummaries()) {
        stages.append(QJsonObject{{QStringLiteral("stage"), r.stage},
                                  {QStringLiteral("nodes"), r.nodes},
                                  {QStringLiteral("ghosts"), m_membership->ghosts(r.stage)},
                                  {QStringLiteral("tasks_in_flight"), r.inFlight},
                                  {QStringLiteral("seconds_per_token"), r.medianSecondsPerToken},
                                  {QStringLiteral("parameters"), m_checkpoints->parameters(r.stage)},
                                  {QStringLiteral("checkpoint_version"), m_checkpoints->version(r.stage)},
                                  {QStringLiteral("checkpoint_step"), m_checkpoints->step(r.stage)}});
    }
    QJsonObject s = m_loop->status();
    s.insert(QStringLiteral("averaging"),
             QJsonObject{{QStringLiteral("interval"), m_settings.averaging.interval},
                         {QStringLiteral("partitions"), m_settings.averaging.partitions},
                         {QStringLiteral("rounds"), m_averager->roundsCompleted()},
                         {QStringLiteral("chunk_values"), m_settings.averaging.chunkValues},
                         {QStringLiteral("share_chunks"), m_inbox->shareChunks()}});
    s.insert(QStringLiteral("training_stages"), stages);
    if (m_gradients) {
        QJsonObject gradients = m_gradients->status();
        gradients.insert(QStringLiteral("share_chunks"), m_inbox->gradientChunks());
        s.insert(QStringLiteral("gradients"), gradients);
    } else {
        s.insert(QStringLiteral("gradients"), QJsonObject{{QStringLiteral("enabled"), false}});
    }
    s.insert(QStringLiteral("trust"),
             QJsonObject{
                 {QStringLiteral("results_checked"), m_checks->checked()},
                 {QStringLiteral("results_refused"), m_checks->refused()},
                 {QStringLiteral("refusals_blamed_on_input"), m_router->counters().framed},
                 {QStringLiteral("refusals_on_ordinary_input"), m_router->counters().refusedOnOrdinaryInput},
                 {QStringLiteral("results_suspected"), m_checks->suspicious()},
                 {QStringLiteral("statistics"), m_checks->monitor().status()},
                 {QStringLiteral("audits"), m_auditor->audits()},
                 {QStringLiteral("audits_failed"), m_auditor->failed()},
                 {QStringLiteral("audits_unanswered"), m_auditor->unanswered()},
                 {QStringLiteral("audits_in_flight"), m_auditor->inFlight()},
                 {QStringLiteral("tasks_recomputed"), m_auditor->tasksRecomputed()},
                 {QStringLiteral("worst_passed_error"), m_auditor->worstPassedError()},
                 {QStringLiteral("recompute_limit"), m_auditor->settings().maxParameters},
                 {QStringLiteral("reexecution"), reexecutionStatus()},
                 {QStringLiteral("weights"), m_weightCheck ? m_weightCheck->status() : QJsonObject()},
                 {QStringLiteral("shares"), shareCheckStatus()}});
    return s;
}

} // namespace tessera::coordinator
