// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/ShareCheck.h"

#include "coordinator/trust/Verifiers.h"

#include "protocol/TaskMessage.h"


#include <algorithm>
#include <cmath>

namespace tessera::coordinator {

using protocol::TaskKind;

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

QString ShareCheck::numbers(const Case::Answer& a) {
    return QStringLiteral("alignment %1, norm %2× the microbatch's gradient")
        .arg(a.alignment, 0, 'g', 3)
        .arg(a.normRatio, 0, 'g', 3);
}

ShareCheck::ShareCheck(ShareCheckSettings settings, Router& router, NetworkOf networkOf, Draw draw, Seed seed,
                       QObject* parent)
    : QObject(parent)
    , m_settings(settings)
    , m_router(router)
    , m_networkOf(std::move(networkOf))
    , m_draw(std::move(draw))
    , m_seed(std::move(seed)) {
    qRegisterMetaType<tessera::coordinator::ShareVerdict>();
    connect(&m_router, &Router::checkAnswered, this,
            [this](qint64 taskId, const QString& node, const protocol::HeldFrame& output, std::optional<double>) {
                onAnswered(taskId, node, output);
            });
    connect(&m_router, &Router::checkFailed, this, &ShareCheck::onFailed);
}

ShareCheck::~ShareCheck() = default;

void ShareCheck::offer(const QString& node, const Microbatch& mb, TaskKind kind,
                       const protocol::HeldFrame& output, std::optional<double> loss) {
    if (kind != TaskKind::Backward && kind != TaskKind::ForwardBackward)
        return;
    // A backward through a kept graph whose weights changed after its forward ran on a mix of both.
    if (kind == TaskKind::Backward && !mb.taskHasInput &&
        mb.forwardVersion[std::size_t(mb.stage)] != mb.taskVersion)
        return;
    Route& route = m_routes[node];
    if (route.step != mb.step)
        route = Route{mb.step, {}};
    for (const QString& other : mb.forwardNode)
        if (!other.isEmpty() && other != node)
            route.nodes.insert(other);
    for (const AcceptedTask& task : mb.accepted)
        if (task.nodeId != node)
            route.nodes.insert(task.nodeId);
    Kept& kept = m_kept[node];
    if (kept.seen == 0 || kept.step != mb.step || kept.era != mb.taskEra)
        kept = Kept{};
    kept.step = mb.step;
    kept.era = mb.taskEra;
    ++kept.seen;
    // Reservoir sampling of two: every pair of the step's microbatches is the one kept with the same
    // chance, so the node cannot know which of its microbatches its share will be judged on.
    std::size_t slot = std::size_t(kept.seen - 1);
    if (kept.seen > 2) {
        slot = std::size_t(m_draw() * kept.seen);
        if (slot >= 2)
            return;
    }
    const KeptTask task{CheckTask::of(mb, kind), output, loss};
    if (slot < kept.tasks.size())
        kept.tasks[slot] = task;
    else
        kept.tasks.push_back(task);
}

bool ShareCheck::begin(qint64 step, int stage, const std::vector<ShareView>& shares) {
    // Drawn — or a suspect's share is among them: checked at every step for a while.
    bool drawn = m_draw() * 100.0 < m_settings.percent;
    for (const ShareView& view : shares)
        drawn = drawn || m_suspects.value(view.node, -1) >= step;
    const qint64 era = m_router.era(stage);
    const std::pair<qint64, int> key{step, stage};
    for (const ShareView& view : shares) {
        const Kept kept = m_kept.take(view.node);
        const Route route = m_routes.take(view.node);
        if (!drawn || !view.values || view.microbatches <= 0)
            continue;
        // Its microbatch must have run on the weights the stage holds now (no update since).
        if (kept.tasks.empty() || kept.step != step || kept.era != era ||
            kept.tasks.front().task.stage != stage) {
            ++m_unchecked;
            continue;
        }
        Case c;
        c.step = step;
        c.stage = stage;
        c.node = view.node;
        c.tasks = kept.tasks;
        c.seed = m_seed();
        for (KeptTask& task : c.tasks)
            task.task.sketchSeed = qint64(c.seed);
        c.era = era;
        c.microbatches = view.microbatches;
        c.offered = kept.seen;
        c.claimed = view.claimed;
        if (route.step == step)
            c.route = route.nodes;
        c.share = gpu::CountSketch(c.seed, m_settings.buckets);
        c.share.add(*view.values);
        c.tried << view.node;
        const qint64 id = m_nextCase++;
        Case& placed = m_cases.emplace(id, std::move(c)).first->second;
        // No replica can sketch it: one segment of the share is kept, for looks by the node's own trace.
        if (m_drawSegment && m_traceLook &&
            verifierCandidates(m_router, stage, era, placed.tried, m_networkOf).isEmpty())
            if (const std::optional<ShareSegment> segment = m_drawSegment(stage);
                segment && segment->offset + segment->count <= qint64(view.values->size())) {
                placed.byTrace = true;
                placed.segment = *segment;
                placed.segmentValues = std::make_shared<const std::vector<float>>(
                    view.values->begin() + segment->offset,
                    view.values->begin() + segment->offset + segment->count);
            }
        if (!sendNext(id, placed)) {
            m_cases.erase(id);
            ++m_unchecked;
            continue;
        }
        ++m_open[key];
    }
    return m_open.count(key) > 0;
}

bool ShareCheck::sendNext(qint64 caseId, Case& c) {
    if (c.sends >= m_settings.maxVerifiers || m_router.era(c.stage) != c.era)
        return false;
    if (c.byTrace)
        return traceNext(caseId, c);
    const QStringList candidates = verifierCandidates(m_router, c.stage, c.era, c.tried, m_networkOf);
    // The referee sketches the node's other kept microbatch where there is one: a second, independent
    // look (an honest share that fails the first by chance — its other microbatches' gradients opposing
    // the drawn one's — passes the second; a lie fails both).
    const CheckTask& task = c.answers.empty() ? c.tasks.front().task : c.tasks.back().task;
    for (const QString& node : candidates) {
        c.tried << node;
        if (const std::optional<qint64> sent = m_router.sendCheck(node, task)) {
            ++c.sends;
            c.sent.insert(*sent, task.microbatch);
            m_taskToCase.insert(*sent, caseId);
            return true;
        }
    }
    // No third replica: the verifier itself takes the second look, at the other microbatch (against a
    // fluke; not against a lying verifier — so nobody is struck on it).
    if (c.answers.size() == 1 && c.tasks.size() > 1 && !c.secondLookByVerifier) {
        c.secondLookByVerifier = true;
        if (const std::optional<qint64> sent = m_router.sendCheck(c.answers.front().node, task)) {
            ++c.sends;
            c.sent.insert(*sent, task.microbatch);
            m_taskToCase.insert(*sent, caseId);
            return true;
        }
    }
    return false;
}

bool ShareCheck::traceNext(qint64 caseId, Case& c) {
    const std::size_t look = c.answers.size();
    if (look >= std::min<std::size_t>(2, c.tasks.size()))
        return false;
    const KeptTask& kept = c.tasks[look];
    CheckTask task = kept.task;
    task.sketchSeed = 0;
    ++c.sends;
    if (!m_traceLook(task, c.era, c.node, kept.output, kept.loss, c.segment, c.segmentValues, c.microbatches,
                     [this, caseId](const ShareLook& l) { onTraced(caseId, l); }))
        return false;
    ++m_traceLooks;
    return true;
}

bool ShareCheck::refereeByTrace(qint64 caseId, Case& c) {
    if (c.byTrace || c.claimed > c.microbatches || !m_drawSegment || !m_traceLook || !m_heldShare || m_router.era(c.stage) != c.era)
        return false;
    const std::vector<float>* values = m_heldShare(c.step, c.stage, c.node);
    const std::optional<ShareSegment> segment = values ? m_drawSegment(c.stage) : std::nullopt;
    if (!segment || segment->offset + segment->count > qint64(values->size()))
        return false;
    c.byTrace = true;
    c.segment = *segment;
    c.segmentValues = std::make_shared<const std::vector<float>>(
        values->begin() + segment->offset, values->begin() + segment->offset + segment->count);
    c.replicaLooks = std::move(c.answers);
    c.answers.clear();
    c.sends = 0; // the coordinator's looks: two at most (traceNext)
    if (traceNext(caseId, c))
        return true;
    c.answers = std::move(c.replicaLooks); // not traceable (a first stage's backward): unsettled as before
    c.replicaLooks.clear();
    c.byTrace = false;
    return false;
}

void ShareCheck::onTraced(qint64 caseId, const ShareLook& look) {
    const auto it = m_cases.find(caseId);
    if (it == m_cases.end())
        return;
    Case& c = it->second;
    const qint64 microbatch = c.tasks[std::min(c.answers.size(), c.tasks.size() - 1)].task.microbatch;
    ShareVerdict v;
    if (look.outcome == ShareLook::TraceFailed) { // convicted or struck by its trace (Bisection's verdict)
        ++m_checked;
        v.reason = QStringLiteral("its trace of microbatch %1 did not hold (or never came)").arg(microbatch);
        return close(caseId, v);
    }
    if (look.outcome == ShareLook::Unjudged) {
        c.sends = m_settings.maxVerifiers;              // no further look
        if (!c.answers.empty() && decide(caseId, c, v)) // a second look that could not be judged
            return close(caseId, v);
        if (c.answers.empty()) {
            ++m_unchecked;
            v.passed = true;
            v.reason = QStringLiteral("its trace could not be recomputed");
            close(caseId, v);
        }
        return;
    }
    Case::Answer a;
    a.node = c.node; // its own trace, recomputed here
    a.microbatch = microbatch;
    a.alignment = look.alignment;
    a.normRatio = look.normRatio;
    a.passed = std::isfinite(a.alignment) && a.alignment >= m_settings.minAlignment &&
               a.normRatio <= m_settings.maxNormRatio;
    c.answers.push_back(a);
    if (decide(caseId, c, v))
        close(caseId, v);
}

void ShareCheck::onAnswered(qint64 taskId, const QString& node, const protocol::HeldFrame& output) {
    const auto found = m_taskToCase.constFind(taskId);
    if (found == m_taskToCase.constEnd())
        return; // not a sketch of ours
    const qint64 caseId = found.value();
    m_taskToCase.erase(found);
    Case& c = m_cases.at(caseId);
    Result<std::vector<float>> values = output.isNull() ? Result<std::vector<float>>(makeError("no sketch"))
                                                        : protocol::partitionValues(output.frame);
    gpu::CountSketch sketch(c.seed, m_settings.buckets);
    const double squared = values && sketch.assign(*values) ? sketch.squaredNorm() : 0.0;
    if (!(squared > 0) || !std::isfinite(squared)) // no gradient is all zeros: an answer unlike any
        return verifierFailed(caseId, node, QStringLiteral("its sketch is not one of a gradient"));
    Case::Answer a;
    a.node = node;
    a.microbatch = c.sent.value(taskId);
    a.alignment = double(c.microbatches) * sketch.dot(c.share) / squared;
    a.normRatio = std::sqrt(c.share.squaredNorm() / squared);
    a.passed = std::isfinite(a.alignment) && a.alignment >= m_settings.minAlignment &&
               a.normRatio <= m_settings.maxNormRatio;
    c.answers.push_back(a);
    ShareVerdict v;
    if (decide(caseId, c, v))
        close(caseId, v);
}

void ShareCheck::onFailed(qint64 taskId, const QString& node, const QString& why) {
    const auto found = m_taskToCase.constFind(taskId);
    if (found == m_taskToCase.constEnd())
        return;
    const qint64 caseId = found.value();
    m_taskToCase.erase(found);
    verifierFailed(caseId, node, why);
}

void ShareCheck::verifierFailed(qint64 caseId, const QString& node, const QString& why) {
    qInfo("trust: replica %s did not sketch the gradient a share check asked of it: %s", qPrintable(shortId(node)),
          qPrintable(why));
    Case& c = m_cases.at(caseId);
    if (sendNext(caseId, c))
        return;
    ShareVerdict v;
    if (c.answers.empty()) { // nobody could check it: it stands unchecked
        ++m_unchecked;
        v.passed = true;
        v.reason = QStringLiteral("no replica answered its check");
    } else if (!decide(caseId, c, v)) {
        return;
    }
    close(caseId, v);
}

bool ShareCheck::decide(qint64 caseId, Case& c, ShareVerdict& v) {
    const Case::Answer& first = c.answers.front();
    v.alignment = first.alignment;
    v.normRatio = first.normRatio;
    if (c.answers.size() == 1)
        return decideOneLook(caseId, c, v);
    return decideTwoLooks(caseId, c, v);
}

bool ShareCheck::decideOneLook(qint64 caseId, Case& c, ShareVerdict& v) {
    const Case::Answer& first = c.answers.front();
    if (first.passed) {
        v.passed = true;
        for (const Case::Answer& look : c.replicaLooks) // refereed: the verifier's failing look was wrong
            if (!v.contradicted.contains(look.node))
                v.contradicted << look.node;
        if (!c.replicaLooks.empty())
            v.reason =
                QStringLiteral("replica %1's sketch failed it (%2); the coordinator's recompute from its "
                               "own trace passes it (%3)")
                    .arg(shortId(c.replicaLooks.front().node),
                         numbers(c.replicaLooks.front()),
                         numbers(first));
        return true;
    }
    if (c.sends < m_settings.maxVerifiers && sendNext(caseId, c)) // the second look
        return false;
    if (refereeByTrace(caseId, c))
        return false;
    v.unsettled = true;
    v.disputed = QStringList{c.node, first.node};
    v.reason =
        QStringLiteral("its share does not hold its microbatch %1's gradient as %2 computes "
                       "it (%3), and no second look could be had (%4 of the %5 microbatches it divided by "
                       "were offered to the check, %6 kept)")
            .arg(first.microbatch)
            .arg(c.byTrace
                     ? QStringLiteral("the coordinator (from its trace, segment %1)").arg(c.segment.segment)
                     : QStringLiteral("replica ") + shortId(first.node),
                 numbers(first))
            .arg(c.offered)
            .arg(c.microbatches)
            .arg(c.tasks.size());
    return true;
}

bool ShareCheck::decideTwoLooks(qint64 caseId, Case& c, ShareVerdict& v) {
    const Case::Answer& first = c.answers[0];
    const Case::Answer& second = c.answers[1];
    if (second.passed) { // a fluke of the first microbatch, or a lying first verifier: it stands
        v.passed = true;
        v.reason = QStringLiteral("microbatch %1 failed it on %2 (%3), microbatch %4 passed it on %5 (%6)")
                       .arg(first.microbatch)
                       .arg(shortId(first.node), numbers(first))
                       .arg(second.microbatch)
                       .arg(shortId(second.node), numbers(second));
        return true;
    }
    const QString both = QStringLiteral("its gradient share does not hold its own microbatches' gradients "
                                        "(microbatch %1 on %2: %3; microbatch %4 on %5: %6)")
                             .arg(first.microbatch)
                             .arg(shortId(first.node), numbers(first))
                             .arg(second.microbatch)
                             .arg(shortId(second.node), numbers(second));
    // Struck only when both looks point it away from its work: a share too large alone is what an honest node
    // sends when a framer fed it inputs just under the result checks' bound (its gradients are that large) —
    // left out then, as GradientAverager leaves out a share far beyond any training, and nobody struck.
    const auto pointsAway = [&](const Case::Answer& a) {
        return !std::isfinite(a.alignment) || a.alignment < m_settings.minAlignment;
    };
    if (!pointsAway(first) || !pointsAway(second)) {
        v.unsettled = true;
        v.disputed = QStringList{c.node};
        v.reason = both + QStringLiteral(": far larger than its work's gradient, in its direction (a node fed inputs "
                                         "near the bounds sends such a share): left out, not struck");
        return true;
    }
    if (c.claimed > c.microbatches) { // refused work in it (a frame makes an honest share so): out, nobody struck
        v.unsettled = true;
        v.disputed = QStringList{c.node};
        v.reason = both + QStringLiteral(", but it holds work the coordinator refused (%1 microbatches divided by, "
                                         "%2 accepted): left out, not struck")
                              .arg(c.claimed)
                              .arg(c.microbatches);
        return true;
    }
    QStringList framers; // its work passed through a node whose word was found false: out, nobody struck
    if (m_distrusted)
        for (const QString& other : std::as_const(c.route))
            if (m_distrusted(other))
                framers << shortId(other);
    if (!framers.isEmpty()) {
        framers.sort();
        v.unsettled = true;
        v.disputed = QStringList{c.node};
        v.reason = both + QStringLiteral(", but its microbatches passed through %1, convicted or struck since: left "
                                         "out, not struck")
                              .arg(framers.join(QStringLiteral(", ")));
        return true;
    }
    if (c.byTrace) { // the coordinator's own recompute, from two traces the node gave: struck
        v.struck = true;
        v.reason = both + QStringLiteral(" (recomputed from its own traces: %1)").arg(c.segment.segment);
        return true;
    }
    if (second.node == first.node && refereeByTrace(caseId, c))
        return false;
    if (second.node == first.node) { // one verifier's word (two replicas): nobody struck
        v.unsettled = true;
        v.disputed = QStringList{c.node, first.node};
        v.reason = both + QStringLiteral(", and no third replica can referee");
        return true;
    }
    v.struck = true;
    v.reason = both;
    return true;
}

void ShareCheck::close(qint64 caseId, const ShareVerdict& decided) {
    const auto it = m_cases.find(caseId);
    if (it == m_cases.end())
        return;
    Case c = std::move(it->second);
    m_cases.erase(it);
    ShareVerdict v = decided;
    v.step = c.step;
    v.stage = c.stage;
    v.node = c.node;
    for (const Case::Answer& a : c.answers)
        v.verifiers << a.node;
    if (!c.answers.empty())
        ++m_checked;
    if (v.struck)
        ++m_struck;
    if (v.unsettled)
        ++m_unsettled;
    if (v.passed && !c.answers.empty()) { // what shares that stand show: the check's honest margin
        ++m_passed;
        m_secondLooksPassed += c.answers.size() > 1;
        for (const Case::Answer& a : c.answers) {
            m_lowestAlignment = m_passed == 1 ? a.alignment : std::min(m_lowestAlignment, a.alignment);
            m_highestRatio = std::max(m_highestRatio, a.normRatio);
        }
    }
    const std::pair<qint64, int> key{c.step, c.stage};
    if (!v.passed)
        m_dropped[key] << c.node;
    if (!v.passed || v.unsettled) {
        QStringList suspects = v.disputed;
        suspects << c.node;
        for (const QString& node : std::as_const(suspects))
            m_suspects.insert(node, c.step + m_settings.suspectSteps);
    }
    Q_EMIT verdict(v);
    if (--m_open[key] > 0)
        return;
    const QStringList dropped = m_dropped[key];
    m_open.erase(key);
    m_dropped.erase(key);
    Q_EMIT judged(c.step, c.stage, dropped);
}

} // namespace tessera::coordinator
