// SPDX-License-Identifier: Apache-2.0
#include "coordinator/router/Router.h"

#include "common/MonotonicClock.h"
#include "engine/StageEngine.h"

#include <QDateTime>

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

TaskKind kindOf(const Microbatch& mb) {
    switch (mb.phase) {
    case Microbatch::Phase::ForwardBackward:
        return TaskKind::ForwardBackward;
    case Microbatch::Phase::Backward:
        return TaskKind::Backward;
    default:
        return TaskKind::Forward;
    }
}

} // namespace

Router::Router(int stages, std::vector<qint64> stageParameters, RouterSettings settings, Send send, Feed feed,
               QObject* parent)
    : QObject(parent)
    , m_stages(stages)
    , m_stageParameters(std::move(stageParameters))
    , m_settings(settings)
    , m_send(std::move(send))
    , m_feed(std::move(feed))
    // Deadlines and bans are durations: a wall clock stepping back must not stretch them.
    , m_clock([] { return MonotonicClock::nowMs(); }) {
    qRegisterMetaType<Microbatch>();
    m_stageParameters.resize(std::size_t(std::max(stages, 1)), 0);
    for (int s = 0; s < stages; ++s)
        m_schedulers.emplace_back(settings.scheduler);
    m_era.assign(std::size_t(std::max(stages, 1)), 0);
    connect(&m_timer, &QTimer::timeout, this, &Router::tick);
}

Router::~Router() = default;

void Router::start(std::chrono::milliseconds interval) {
    m_timer.start(interval);
}

void Router::setIssuing(bool on) {
    m_issuing = on;
    if (on)
        issueWhilePossible();
}

void Router::addNode(const QString& nodeId, int stage, std::optional<double> secondsPerToken) {
    if (stage < 0 || stage >= m_stages || m_nodes.contains(nodeId))
        return;
    m_nodes.insert(nodeId, NodeInfo{stage, 0, 0, m_era[std::size_t(stage)]});
    m_schedulers[std::size_t(stage)].addNode(nodeId, secondsPerToken);
    // Microbatches waiting for a node of this stage go now.
    std::vector<qint64> waiting;
    for (const auto& [id, mb] : m_microbatches)
        if (mb.taskId == 0 && mb.stage == stage)
            waiting.push_back(id);
    for (qint64 id : waiting)
        if (const auto it = m_microbatches.find(id); it != m_microbatches.end() && it->second.taskId == 0)
            dispatch(it->second);
    issueWhilePossible();
}

void Router::removeNode(const QString& nodeId, const QString& reason, CheckSilence silence) {
    const auto it = m_nodes.find(nodeId);
    if (it == m_nodes.end())
        return;
    const int stage = it->stage;
    m_nodes.erase(it);
    m_lastAnswerMs.remove(nodeId);
    m_refusedOnInputsFrom.remove(nodeId);
    m_schedulers[std::size_t(stage)].removeNode(nodeId);
    failChecksOf(nodeId, QStringLiteral("node %1 left (%2)").arg(shortId(nodeId), reason), silence);
    std::vector<qint64> affected;
    for (auto& [id, mb] : m_microbatches)
        if (mb.taskId != 0 && mb.taskNode == nodeId)
            affected.push_back(id);
    for (qint64 id : affected) {
        const auto mb = m_microbatches.find(id);
        if (mb != m_microbatches.end())
            failPhase(mb->second, QStringLiteral("node %1 left (%2)").arg(shortId(nodeId), reason), false);
    }
}

std::optional<int> Router::stageOf(const QString& nodeId) const {
    const auto it = m_nodes.constFind(nodeId);
    if (it == m_nodes.constEnd())
        return std::nullopt;
    return it->stage;
}

QStringList Router::nodesOf(int stage) const {
    if (stage < 0 || stage >= m_stages)
        return {};
    return m_schedulers[std::size_t(stage)].nodes();
}

bool Router::everyStageHasNodes() const {
    for (const StageScheduler& s : m_schedulers)
        if (s.nodes().isEmpty())
            return false;
    return true;
}

void Router::issueWhilePossible() {
    while (m_issuing && int(m_microbatches.size()) < m_settings.window && everyStageHasNodes()) {
        std::optional<MicrobatchInput> input = m_feed();
        if (!input)
            return;
        Microbatch mb;
        mb.id = m_nextMicrobatch++;
        mb.step = input->step;
        mb.batch = input->batch;
        mb.seq = input->seq;
        mb.tokens = qint64(input->batch) * input->seq;
        mb.issuedAtMs = now();
        mb.deadlineMs = mb.issuedAtMs + m_settings.microbatchTimeoutMs;
        mb.inputs.assign(std::size_t(m_stages), protocol::HeldFrame());
        mb.inputs[0] = protocol::holdPayload(std::move(input->inputs), protocol::TaskFrameType::ForwardInput);
        mb.targets = protocol::holdPayload(std::move(input->targets), protocol::TaskFrameType::Targets);
        mb.forwardNode.assign(std::size_t(m_stages), QString());
        mb.forwardEpoch.assign(std::size_t(m_stages), -1);
        mb.forwardVersion.assign(std::size_t(m_stages), -1);
        mb.stage = 0;
        mb.phase = m_stages == 1 ? Microbatch::Phase::ForwardBackward : Microbatch::Phase::Forward;
        ++m_counters.issued;
        const qint64 id = mb.id;
        const qint64 tokens = mb.tokens;
        auto [it, inserted] = m_microbatches.emplace(id, std::move(mb));
        Q_EMIT issued(id, tokens);
        dispatch(it->second);
    }
}

void Router::dispatch(Microbatch& mb) {
    StageScheduler& scheduler = m_schedulers[std::size_t(mb.stage)];
    const qint64 t = now();
    mb.taskId = 0;
    mb.taskNode.clear();
    if (mb.phase == Microbatch::Phase::Backward) {
        // The node that ran this stage's forward holds its graph until its next step.
        const QString& holder = mb.forwardNode[std::size_t(mb.stage)];
        const auto info = m_nodes.constFind(holder);
        if (!holder.isEmpty() && info != m_nodes.constEnd() &&
            info->epoch == mb.forwardEpoch[std::size_t(mb.stage)] && scheduler.assign(holder, mb.tokens, t)) {
            sendTask(mb, holder, false);
            return;
        }
    }
    const std::optional<QString> node = scheduler.pick(mb.tokens, t);
    if (!node)
        return; // waits for a node (addNode, a ban that lapses: tick)
    sendTask(mb, *node, true);
}

bool Router::sendTask(Microbatch& mb, const QString& node, bool withInput) {
    using protocol::TaskFrameType;
    const TaskKind kind = kindOf(mb);
    const qint64 taskId = m_nextTask++;
    const protocol::HeldFrame& input = mb.inputs[std::size_t(mb.stage)];
    withInput = withInput || kind != TaskKind::Backward;
    const qsizetype bytes =
        input.frame.payload.size() + mb.targets.frame.payload.size() + mb.gradient.frame.payload.size();
    protocol::TaskMessageBuilder message(
        protocol::toJson(protocol::Task{.taskId = taskId,
                                        .kind = kind,
                                        .microbatch = mb.id,
                                        .step = m_settings.pipelined ? mb.step : -1}),
        bytes);
    // Each frame is copied once, into this message, with the CRC it was checked against on arrival.
    if (kind == TaskKind::Backward)
        message.relay(TaskFrameType::BackwardInput, mb.gradient.frame);
    if (withInput)
        message.relay(TaskFrameType::ForwardInput, input.frame);
    if (kind == TaskKind::ForwardBackward)
        message.relay(TaskFrameType::Targets, mb.targets.frame);
    const qint64 t = now();
    mb.taskId = taskId;
    mb.taskNode = node;
    mb.taskHasInput = withInput;
    mb.taskEpoch = m_nodes.value(node).epoch;
    mb.taskVersion = m_nodes.value(node).version;
    mb.taskEra = m_era[std::size_t(mb.stage)];
    mb.taskDeadlineMs = m_schedulers[std::size_t(mb.stage)]
                            .deadlineMs(node, mb.tokens, t)
                            .value_or(t + m_settings.scheduler.minDeadlineMs);
    m_taskSentAtMs.insert(taskId, t);
    m_taskToMicrobatch.insert(taskId, mb.id);
    ++m_counters.tasksSent;
    ++mb.attempts;
    if (!m_send(node, message.take())) {
        // Not connected any more: the socket's close reaches removeNode soon; retry now.
        failPhase(mb, QStringLiteral("node %1 is not connected").arg(shortId(node)), false);
        return false;
    }
    return true;
}

void Router::failPhase(Microbatch& mb, const QString& why, bool ban) {
    releaseTask(mb, why, ban);
    if (mb.attempts >= m_settings.maxAttempts) {
        finish(mb.id, false,
               QStringLiteral("%1 of stage %2 failed %3 times (last: %4)")
                   .arg(protocol::taskKindName(kindOf(mb)))
                   .arg(mb.stage)
                   .arg(mb.attempts)
                   .arg(why));
        return;
    }
    ++m_counters.retries;
    dispatch(mb);
}

void Router::releaseTask(Microbatch& mb, const QString& why, bool ban) {
    const QString node = mb.taskNode;
    m_taskToMicrobatch.remove(mb.taskId);
    m_taskSentAtMs.remove(mb.taskId);
    mb.taskId = 0;
    mb.taskNode.clear();
    if (!node.isEmpty()) {
        if (ban) {
            // Its other work in flight goes elsewhere too (this phase's task is already cleared).
            this->ban(node, QStringLiteral("microbatch %1: %2").arg(mb.id).arg(why));
        } else if (const auto info = m_nodes.constFind(node); info != m_nodes.constEnd()) {
            // Not the node's fault (e.g. it paused): release its slot without a ban.
            m_schedulers[std::size_t(info->stage)].complete(node, mb.tokens, std::nan(""), now());
        }
    }
}

std::optional<std::pair<QString, int>> Router::inputSender(const Microbatch& mb) const {
    if (kindOf(mb) == TaskKind::Backward) { // the gradient the next stage sent back
        for (auto it = mb.accepted.rbegin(); it != mb.accepted.rend(); ++it)
            if (it->stage == mb.stage + 1)
                return std::pair(it->nodeId, it->stage);
        return std::nullopt;
    }
    if (mb.stage == 0) // tokens: the coordinator's own
        return std::nullopt;
    const QString& from = mb.forwardNode[std::size_t(mb.stage - 1)];
    return from.isEmpty() ? std::nullopt : std::optional(std::pair(from, mb.stage - 1));
}

void Router::onResult(const QString& nodeId, const protocol::TaskResult& result,
                      const protocol::TaskMessage& message) {
    if (m_checks.contains(result.taskId))
        return onCheckResult(nodeId, result, message);
    const auto link = m_taskToMicrobatch.constFind(result.taskId);
    const auto mbIt =
        link == m_taskToMicrobatch.constEnd() ? m_microbatches.end() : m_microbatches.find(*link);
    if (mbIt == m_microbatches.end() || mbIt->second.taskId != result.taskId ||
        mbIt->second.taskNode != nodeId) {
        // Late (its task went elsewhere), for a finished microbatch, or not this node's.
        ++m_counters.duplicates;
        return;
    }
    Microbatch& mb = mbIt->second;
    const qint64 t = now();
    // The node's busy time for this task as the coordinator sees it: from sending it, or from the
    // node's previous answer when it was still busy with that one then (tasks run one at a time).
    const qint64 startedAt =
        std::max(m_taskSentAtMs.value(result.taskId, t), m_lastAnswerMs.value(nodeId, 0));
    m_lastAnswerMs.insert(nodeId, t);
    if (!result.ok) {
        if (result.errorKind == ErrorKind::MissingGraph && !mb.taskHasInput) {
            // The node no longer holds the forward's graph: same node, now with the input.
            m_taskToMicrobatch.remove(result.taskId);
            m_taskSentAtMs.remove(result.taskId);
            --mb.attempts;
            mb.claimedMissingGraph = nodeId;
            sendTask(mb, nodeId, true);
            return;
        }
        failPhase(mb, QStringLiteral("node %1: %2").arg(shortId(nodeId), result.error.left(200)), true);
        return;
    }
    advance(mb, result, message, double(std::max<qint64>(1, t - startedAt)) / 1000.0);
}

void Router::advance(Microbatch& mb, const protocol::TaskResult& result, const protocol::TaskMessage& message,
                     double seconds) {
    using protocol::TaskFrameType;
    const TaskKind kind = kindOf(mb);
    const int s = mb.stage;
    const QString node = mb.taskNode;
    // Check what the result must carry before anything is counted. The frame is kept as it
    // arrived: a view into the message, relayed to the next stage from there.
    protocol::HeldFrame output;
    if (kind == TaskKind::Forward) {
        output = message.hold(TaskFrameType::ForwardOutput);
        if (output.frame.payload.isEmpty())
            return refuse(mb, QStringLiteral("forward result without its output frame"));
    } else if (s > 0) {
        output = message.hold(TaskFrameType::BackwardOutput);
        if (output.frame.payload.isEmpty())
            return refuse(mb, QStringLiteral("backward result without its gradient frame"));
    }
    if (kind == TaskKind::ForwardBackward && (!result.loss || !std::isfinite(*result.loss)))
        return refuse(mb, QStringLiteral("last stage's result without a finite loss"));
    if (m_check)
        if (std::optional<Refusal> refusal = m_check(node, mb, kind, output, result.loss))
            return refuse(mb, refusal->why, refusal->inputMayCause);
    if (kind == TaskKind::ForwardBackward)
        mb.loss = *result.loss;
    if (!mb.refusedNode.isEmpty()) {
        // Another replica's answer to the input the first one was refused on passed: the first one's
        // result was its own failure. Reported once this result has moved on (the report can end a session).
        const QString first = std::exchange(mb.refusedNode, QString());
        m_refusedOnInputsFrom.remove(first); // settled: its own
        const QString why = QStringLiteral("%1 (node %2's answer to the same input passed)")
                                .arg(mb.refusedWhy, shortId(node));
        QMetaObject::invokeMethod(
            this, [this, first, s, why] { Q_EMIT refused(first, s, why); }, Qt::QueuedConnection);
    }

    const qint64 t = now();
    m_schedulers[std::size_t(s)].complete(node, mb.tokens, seconds, t);
    m_taskToMicrobatch.remove(mb.taskId);
    m_taskSentAtMs.remove(mb.taskId);
    const bool recomputed = kind == TaskKind::Backward && mb.taskHasInput;
    // The forward run again is paid only where the coordinator sent the input of its own accord (the
    // graph's holder gone, or a step dropped it), not where the node said it lost its graph.
    const bool paidRecompute = recomputed && node != mb.claimedMissingGraph;
    mb.claimedMissingGraph.clear();
    mb.accepted.push_back(
        AcceptedTask{node, s, kind, recomputed, mb.tokens, flopOf(s, kind, paidRecompute, mb.tokens)});
    mb.taskId = 0;
    mb.taskNode.clear();
    mb.attempts = 0;

    if (kind == TaskKind::Forward) {
        mb.forwardNode[std::size_t(s)] = node;
        // Steps sent after the forward was (even before it ran) drop its graph on the node.
        mb.forwardEpoch[std::size_t(s)] = mb.taskEpoch;
        mb.forwardVersion[std::size_t(s)] = mb.taskVersion;
        mb.inputs[std::size_t(s + 1)] = std::move(output);
        mb.stage = s + 1;
        mb.phase = mb.stage == m_stages - 1 ? Microbatch::Phase::ForwardBackward : Microbatch::Phase::Forward;
        return dispatch(mb);
    }
    if (s == 0)
        return finish(mb.id, true);
    mb.gradient = std::move(output);
    mb.stage = s - 1;
    mb.phase = Microbatch::Phase::Backward;
    dispatch(mb);
}

void Router::refuse(Microbatch& mb, const QString& why, bool inputMayCause) {
    const QString node = mb.taskNode;
    const int stage = mb.stage;
    ++m_counters.refused;
    if (!mb.refusedNode.isEmpty() && mb.refusedNode != node) {
        // A second replica refused on the same input: the input is what fails, its sender the one to
        // blame — where the input is out of the ordinary for its stage (a frame just under a bound) or that
        // cannot be told; an ordinary input blames nobody (the stage's weights cross the bound on it). The
        // microbatch ends here, so the frame strikes no third replica; neither is banned.
        const QString sender = mb.inputFrom;
        const int senderStage = mb.inputStage;
        const bool activation = kindOf(mb) != TaskKind::Backward;
        const bool ordinary =
            m_inputJudge && m_inputJudge(senderStage, activation,
                                         activation ? mb.inputs[std::size_t(stage)] : mb.gradient) == false;
        const QString reason =
            QStringLiteral("its output made two replicas of stage %1 (%2, %3) fail their checks: %4")
                .arg(stage)
                .arg(shortId(mb.refusedNode), shortId(node), why);
        m_refusedOnInputsFrom.remove(mb.refusedNode); // settled: not theirs
        m_refusedOnInputsFrom.remove(node);
        const QString pair = QStringLiteral("%1, %2").arg(shortId(mb.refusedNode), shortId(node));
        mb.refusedNode.clear();
        releaseTask(mb, why, false);
        finish(mb.id, false,
               QStringLiteral("two replicas of stage %1 refused on the input node %2 sent")
                   .arg(stage)
                   .arg(shortId(sender)));
        if (ordinary) {
            ++m_counters.refusedOnOrdinaryInput;
            Q_EMIT stageRefusesOrdinaryInput(
                stage,
                QStringLiteral("two replicas (%1) refused on an input from node %2 no different from what "
                               "stage %3 returns: %4")
                    .arg(pair, shortId(sender))
                    .arg(senderStage)
                    .arg(why));
            return;
        }
        ++m_counters.framed;
        Q_EMIT refused(sender, senderStage, reason);
        return;
    }
    if (mb.refusedNode == node) // the same node on the same input says nothing new: still waiting
        return failPhase(
            mb,
            QStringLiteral("node %1's result refused again on the same input: %2").arg(shortId(node), why),
            true);
    if (const std::optional<std::pair<QString, int>> from = inputMayCause ? inputSender(mb) : std::nullopt) {
        // Whose fault it is waits for another replica's answer to the same input (the retry); with no
        // other replica, it stays unsettled (refusalUnresolved) unless the node is refused on inputs from
        // two senders: two neighbours framing one node is no frame.
        QSet<QString>& senders = m_refusedOnInputsFrom[node];
        senders.insert(from->first);
        if (senders.size() >= 2) {
            m_refusedOnInputsFrom.remove(node);
        } else {
            mb.refusedNode = node;
            mb.refusedWhy = why;
            mb.inputFrom = from->first;
            mb.inputStage = from->second;
            return failPhase(
                mb,
                QStringLiteral("node %1's result refused (the same input goes to another replica): %2")
                    .arg(shortId(node), why),
                true);
        }
    }
    failPhase(mb, QStringLiteral("node %1's result refused: %2").arg(shortId(node), why), true);
    Q_EMIT refused(node, stage, why);
}

void Router::finish(qint64 id, bool done, const QString& reason) {
    const auto it = m_microbatches.find(id);
    if (it == m_microbatches.end())
        return;
    Microbatch mb = std::move(it->second);
    m_microbatches.erase(it);
    if (mb.taskId != 0) {
        m_taskToMicrobatch.remove(mb.taskId);
        m_taskSentAtMs.remove(mb.taskId);
    }
    mb.phase = done ? Microbatch::Phase::Completed : Microbatch::Phase::Abandoned;
    mb.abandonReason = reason;
    if (!mb.refusedNode.isEmpty()) // ended before another replica answered the same input
        Q_EMIT refusalUnresolved(
            mb.refusedNode, mb.stage,
            QStringLiteral("%1 (microbatch %2 ended before another replica answered the same input)")
                .arg(mb.refusedWhy)
                .arg(mb.id));
    // Only the bookkeeping leaves with the signal, not the tensors.
    mb.inputs.clear();
    mb.targets = {};
    mb.gradient = {};
    if (done) {
        ++m_counters.completed;
        Q_EMIT completed(mb);
    } else {
        ++m_counters.abandoned;
        qWarning("router: microbatch %lld abandoned: %s", qlonglong(mb.id), qPrintable(reason));
        Q_EMIT abandoned(mb);
    }
    if (!m_inTick)
        issueWhilePossible();
}

void Router::kick() {
    if (m_issuing && !m_inTick)
        issueWhilePossible();
}

void Router::stepSent() {
    for (qint64& era : m_era)
        ++era;
    for (NodeInfo& n : m_nodes) {
        if (!m_settings.pipelined)
            ++n.epoch;
        ++n.version;
    }
}

void Router::weightsChanged(const QString& nodeId) {
    if (const auto it = m_nodes.find(nodeId); it != m_nodes.end()) {
        ++it->version;
        ++m_era[std::size_t(it->stage)];
    }
}

qint64 Router::weightsVersion(const QString& nodeId) const {
    const auto it = m_nodes.constFind(nodeId);
    return it == m_nodes.constEnd() ? -1 : it->version;
}

void Router::ban(const QString& nodeId, const QString& why) {
    const auto info = m_nodes.constFind(nodeId);
    if (info == m_nodes.constEnd())
        return;
    m_schedulers[std::size_t(info->stage)].fail(nodeId, now());
    qWarning("router: node %s banned for a while: %s", qPrintable(shortId(nodeId)), qPrintable(why));
    failChecksOf(nodeId, QStringLiteral("node %1 was banned").arg(shortId(nodeId)), CheckSilence::Hid);
    std::vector<qint64> affected;
    for (auto& [id, mb] : m_microbatches)
        if (mb.taskId != 0 && mb.taskNode == nodeId)
            affected.push_back(id);
    for (qint64 id : affected)
        if (const auto mb = m_microbatches.find(id); mb != m_microbatches.end())
            failPhase(mb->second, QStringLiteral("node %1 was banned").arg(shortId(nodeId)), false);
}

void Router::tick() {
    m_inTick = true;
    const qint64 t = now();
    std::vector<qint64> ids;
    ids.reserve(m_microbatches.size());
    for (const auto& [id, mb] : m_microbatches)
        ids.push_back(id);
    for (qint64 id : ids) {
        const auto it = m_microbatches.find(id);
        if (it == m_microbatches.end())
            continue;
        Microbatch& mb = it->second;
        if (t >= mb.deadlineMs) {
            if (mb.taskId != 0 && !mb.taskNode.isEmpty())
                if (const auto info = m_nodes.constFind(mb.taskNode); info != m_nodes.constEnd())
                    m_schedulers[std::size_t(info->stage)].complete(mb.taskNode, mb.tokens, std::nan(""), t);
            finish(id, false,
                   QStringLiteral("not completed within %1 s (at %2 of stage %3)")
                       .arg(m_settings.microbatchTimeoutMs / 1000)
                       .arg(protocol::taskKindName(kindOf(mb)))
                       .arg(mb.stage));
        } else if (mb.taskId != 0 && t >= mb.taskDeadlineMs) {
            failPhase(mb, QStringLiteral("node %1 missed its deadline").arg(shortId(mb.taskNode)), true);
        } else if (mb.taskId == 0) {
            dispatch(mb);
        }
    }
    std::vector<std::pair<qint64, QString>> late;
    for (auto it = m_checks.cbegin(); it != m_checks.cend(); ++it)
        if (t >= it->deadlineMs)
            late.emplace_back(it.key(), it->node);
    for (const auto& [taskId, node] : late)
        if (m_checks.contains(taskId)) // as a routed task's missed deadline: banned a while
            ban(node, QStringLiteral("a task missed its deadline"));
    m_inTick = false;
    issueWhilePossible();
}

void Router::abandonAll(const QString& reason) {
    const bool issuing = std::exchange(m_issuing, false);
    while (!m_microbatches.empty())
        finish(m_microbatches.begin()->first, false, reason);
    m_issuing = issuing;
}

std::optional<qint64> Router::sendCheck(const QString& node, const CheckTask& task) {
    using protocol::TaskFrameType;
    const auto info = m_nodes.constFind(node);
    const qint64 t = now();
    if (info == m_nodes.constEnd() || info->stage != task.stage || task.input.isNull() ||
        (task.kind == TaskKind::Backward && task.gradientIn.isNull()) ||
        (task.kind == TaskKind::ForwardBackward && task.targets.isNull()) ||
        !m_schedulers[std::size_t(task.stage)].assign(node, task.tokens, t))
        return std::nullopt;
    const qint64 taskId = m_nextTask++;
    protocol::TaskMessageBuilder message(
        protocol::toJson(protocol::Task{.taskId = taskId,
                                        .kind = task.kind,
                                        .microbatch = task.microbatch,
                                        .step = m_settings.pipelined ? task.step : -1,
                                        .sketchSeed = task.sketchSeed,
                                        .trace = task.trace}),
        task.input.frame.payload.size() + task.targets.frame.payload.size() +
            task.gradientIn.frame.payload.size());
    // In the order sendTask writes a routed task's frames.
    if (task.kind == TaskKind::Backward)
        message.relay(TaskFrameType::BackwardInput, task.gradientIn.frame);
    message.relay(TaskFrameType::ForwardInput, task.input.frame);
    if (task.kind == TaskKind::ForwardBackward)
        message.relay(TaskFrameType::Targets, task.targets.frame);
    const qint64 deadline = m_schedulers[std::size_t(task.stage)]
                                .deadlineMs(node, task.tokens, t)
                                .value_or(t + m_settings.scheduler.minDeadlineMs);
    m_checks.insert(taskId, PendingCheck{node, task.stage, task.kind, task.tokens, t, deadline,
                                         task.sketchSeed != 0 || task.trace});
    if (!m_send(node, message.take())) {
        m_checks.remove(taskId);
        m_schedulers[std::size_t(task.stage)].complete(node, task.tokens, std::nan(""), t);
        return std::nullopt;
    }
    ++m_counters.checksSent;
    m_counters.checkFlop += flopOf(task.stage, task.kind, task.kind == TaskKind::Backward, task.tokens);
    return taskId;
}

void Router::onCheckResult(const QString& nodeId, const protocol::TaskResult& result,
                           const protocol::TaskMessage& message) {
    using protocol::TaskFrameType;
    const PendingCheck check = m_checks.value(result.taskId);
    if (check.node != nodeId) {
        ++m_counters.duplicates;
        return;
    }
    m_checks.remove(result.taskId);
    const qint64 t = now();
    const qint64 startedAt = std::max(check.sentAtMs, m_lastAnswerMs.value(nodeId, 0));
    m_lastAnswerMs.insert(nodeId, t);
    if (!result.ok) {
        // As a routed task's error: banned a while (its other work goes elsewhere).
        Q_EMIT checkFailed(result.taskId, nodeId, QStringLiteral("it answered an error: %1").arg(result.error.left(200)),
                           CheckSilence::Hid);
        ban(nodeId, QStringLiteral("a task failed: %1").arg(result.error.left(200)));
        return;
    }
    m_schedulers[std::size_t(check.stage)].complete(nodeId, check.tokens,
                                                    double(std::max<qint64>(1, t - startedAt)) / 1000.0, t);
    ++m_counters.checksAnswered;
    protocol::HeldFrame output;
    if (check.sketch)
        output = message.hold(TaskFrameType::Partition);
    else if (check.kind == TaskKind::Forward)
        output = message.hold(TaskFrameType::ForwardOutput);
    else if (check.stage > 0)
        output = message.hold(TaskFrameType::BackwardOutput);
    Q_EMIT checkAnswered(result.taskId, nodeId, output, result.loss);
}

void Router::failChecksOf(const QString& nodeId, const QString& why, CheckSilence silence) {
    std::vector<qint64> ids;
    for (auto it = m_checks.cbegin(); it != m_checks.cend(); ++it)
        if (it->node == nodeId)
            ids.push_back(it.key());
    for (qint64 id : ids) {
        m_checks.remove(id);
        Q_EMIT checkFailed(id, nodeId, why, silence);
    }
}

qint64 Router::flopOf(int stage, TaskKind kind, bool recomputed, qint64 tokens) const {
    const qint64 n = m_stageParameters[std::size_t(stage)];
    const qint64 fwd = gpu::StageEngine::forwardFlop(n, tokens);
    const qint64 bwd = gpu::StageEngine::backwardFlop(n, tokens);
    switch (kind) {
    case TaskKind::Forward:
        return fwd;
    case TaskKind::ForwardBackward:
        return fwd + bwd;
    case TaskKind::Backward:
        return recomputed ? fwd + bwd : bwd;
    case TaskKind::Probe: // the coordinator's own measurement of the node: not credited
        break;
    }
    return 0;
}

std::vector<RouterStage> Router::stageSummaries() const {
    std::vector<RouterStage> out;
    for (int s = 0; s < m_stages; ++s) {
        const StageScheduler& sched = m_schedulers[std::size_t(s)];
        RouterStage r;
        r.stage = s;
        std::vector<double> speeds;
        for (const QString& n : sched.nodes()) {
            ++r.nodes;
            r.inFlight += sched.inFlight(n);
            if (auto v = sched.secondsPerToken(n))
                speeds.push_back(*v);
        }
        if (!speeds.empty()) {
            std::nth_element(speeds.begin(), speeds.begin() + std::ptrdiff_t(speeds.size() / 2),
                             speeds.end());
            r.medianSecondsPerToken = speeds[speeds.size() / 2];
        }
        out.push_back(r);
    }
    return out;
}

} // namespace tessera::coordinator
