// SPDX-License-Identifier: Apache-2.0
// Router: microbatches through scripted nodes on a clock the test moves — the happy path and
// its credited FLOPs, backward to the forward's node (no input) or elsewhere (with input), a
// node leaving, erring, missing its deadline or answering late, the window, and that every
// microbatch ends completed or abandoned.

#include "coordinator/router/Router.h"
#include "protocol/SessionMessages.h"

#include "engine/StageEngine.h"

#include <QSignalSpy>
#include <QTest>

#include <deque>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

struct Sent {
    QString node;
    QByteArray bytes;
    QJsonObject header;
    QList<protocol::TaskFrameType> frames;
};

class Harness {
public:
    explicit Harness(int stages, RouterSettings settings = {}) {
        settings.scheduler.minDeadlineMs = 1000;
        settings.scheduler.banBaseMs = 5000;
        std::vector<qint64> params;
        for (int s = 0; s < stages; ++s)
            params.push_back(1000 * (s + 1));
        router = std::make_unique<Router>(
            stages, params, settings,
            [this](const QString& node, const QByteArray& m) {
                if (disconnected.contains(node))
                    return false;
                Result<protocol::TaskMessage> d = protocol::decodeTaskMessage(m);
                Sent s{node, m, d ? d->header : QJsonObject(), {}};
                if (d)
                    for (const protocol::TaskFrame& f : d->frames)
                        s.frames << f.type;
                sent.push_back(s);
                return true;
            },
            [this]() -> std::optional<MicrobatchInput> {
                if (!feeding)
                    return std::nullopt;
                return MicrobatchInput{QByteArray("tokens"), QByteArray("targets"), 2, 4};
            });
        router->setClock([this] { return clock; });
        QObject::connect(router.get(), &Router::completed,
                         [this](const Microbatch& mb) { completed.push_back(mb); });
        QObject::connect(router.get(), &Router::abandoned,
                         [this](const Microbatch& mb) { abandoned.push_back(mb); });
    }

    // Answers the oldest task sent to `node` (removing it), ok with the frames its kind needs.
    bool answer(const QString& node, bool ok = true, QJsonObject extra = {}) {
        for (auto it = sent.begin(); it != sent.end(); ++it) {
            if (it->node != node)
                continue;
            const Sent s = *it;
            sent.erase(it);
            reply(s, ok, extra);
            return true;
        }
        return false;
    }

    void reply(const Sent& s, bool ok, QJsonObject extra = {}) {
        QJsonObject header{{u"type"_qs, u"task_result"_qs},
                           {u"task_id"_qs, s.header.value(u"task_id"_qs)},
                           {u"ok"_qs, ok},
                           {u"compute_seconds"_qs, 0.01}};
        for (auto it = extra.begin(); it != extra.end(); ++it)
            header.insert(it.key(), it.value());
        const QString kind = s.header.value(u"kind"_qs).toString();
        header.insert(u"kind"_qs, kind);
        if (ok && kind == u"forward_backward"_qs && !header.contains(u"loss"_qs))
            header.insert(u"loss"_qs, 2.5);
        protocol::TaskMessageBuilder builder(header);
        if (ok && kind == u"forward"_qs)
            builder.add(protocol::TaskFrameType::ForwardOutput, QByteArrayView("activation"));
        else if (ok && (kind == u"backward"_qs || kind == u"forward_backward"_qs))
            builder.add(protocol::TaskFrameType::BackwardOutput, QByteArrayView("gradient"));
        deliver(s.node, builder.take());
    }

    // What the coordinator does with a node's binary message: decode it once, read its header.
    void deliver(const QString& node, const QByteArray& bytes) {
        Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(bytes);
        QVERIFY2(m, m ? "" : m.message().c_str());
        Result<protocol::SessionMessage> header = protocol::parseSessionMessage(
            m->header, protocol::Direction::ToCoordinator, protocol::Transport::Binary);
        QVERIFY2(header, header ? "" : header.message().c_str());
        router->onResult(node, std::get<protocol::TaskResult>(*header), *m);
    }

    qint64 clock = 1'000'000;
    bool feeding = true;
    QSet<QString> disconnected;
    std::deque<Sent> sent;
    std::vector<Microbatch> completed, abandoned;
    std::unique_ptr<Router> router;
};

qint64 accountedFor(const Harness& h) {
    return qint64(h.completed.size() + h.abandoned.size()) + h.router->inFlight();
}

} // namespace

class TestRouter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void microbatchGoesThroughEveryStageAndBack();
    void windowBoundsWorkInFlight();
    void nothingIssuedWhileAStageHasNoNode();
    void nodeLeavingMidForwardIsRoutedAround();
    void backwardGoesElsewhereWithItsInputWhenTheForwardNodeLeft();
    void stepMakesTheBackwardCarryItsInput();
    void stepSentBeforeTheForwardRanCountsToo();
    void needsInputIsResentToTheSameNodeWithoutBan();
    void theErrorsWordsDecideNothing();
    void errorBansTheNodeAndRetriesElsewhere();
    void missedDeadlineIsRetriedAndTheLateResultIgnored();
    void attemptsExhaustedAbandonsTheMicrobatch();
    void microbatchTimeoutAbandons();
    void resultWithoutItsFrameIsRefused();
    void abandonAllEndsEverything();
    void aRefusalIsBlamedOnWhatAnotherReplicaShows();
    void anOrdinaryInputBothReplicasRefusedBlamesNobody();
};

void TestRouter::microbatchGoesThroughEveryStageAndBack() {
    RouterSettings s;
    s.window = 1;
    Harness h(3, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QVERIFY(h.sent.empty()); // stage 2 has no node yet
    h.router->addNode(u"c"_qs, 2);
    QCOMPARE(h.sent.size(), std::size_t(1));
    QCOMPARE(h.sent.front().node, QString(u"a"_qs));
    QCOMPARE(h.sent.front().header.value(u"kind"_qs).toString(), QString(u"forward"_qs));
    QCOMPARE(h.sent.front().frames, QList<protocol::TaskFrameType>{protocol::TaskFrameType::ForwardInput});
    QVERIFY(h.answer(u"a"_qs));
    QCOMPARE(h.sent.front().node, QString(u"b"_qs));
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(h.sent.front().header.value(u"kind"_qs).toString(), QString(u"forward_backward"_qs));
    QCOMPARE(h.sent.front().frames, (QList<protocol::TaskFrameType>{protocol::TaskFrameType::ForwardInput,
                                                                    protocol::TaskFrameType::Targets}));
    QVERIFY(h.answer(u"c"_qs));
    // Backward to the nodes that ran the forwards: they hold the graphs, so no input is sent.
    QCOMPARE(h.sent.front().node, QString(u"b"_qs));
    QCOMPARE(h.sent.front().header.value(u"kind"_qs).toString(), QString(u"backward"_qs));
    QCOMPARE(h.sent.front().frames, QList<protocol::TaskFrameType>{protocol::TaskFrameType::BackwardInput});
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(h.sent.front().node, QString(u"a"_qs));
    QVERIFY(h.answer(u"a"_qs));
    QCOMPARE(h.completed.size(), std::size_t(1));
    const Microbatch& mb = h.completed.front();
    QCOMPARE(mb.loss, 2.5);
    QCOMPARE(mb.tokens, qint64(8));
    // FLOPs: forward 2NT, backward 4NT; N = 1000, 2000, 3000; T = 8.
    qint64 flop = 0;
    for (const AcceptedTask& t : mb.accepted)
        flop += t.flop;
    const qint64 expected = (2 + 4) * 1000 * 8 + (2 + 4) * 2000 * 8 + (2 + 4) * 3000 * 8;
    QCOMPARE(flop, expected);
    QCOMPARE(mb.accepted.size(), std::size_t(5));
    // The next one was issued at once.
    QCOMPARE(h.router->counters().issued, qint64(2));
    QCOMPARE(accountedFor(h), h.router->counters().issued);
}

void TestRouter::windowBoundsWorkInFlight() {
    RouterSettings s;
    s.window = 3;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QCOMPARE(h.router->inFlight(), 3);
    QCOMPARE(h.sent.size(), std::size_t(3));
    for (int i = 0; i < 40; ++i)
        QVERIFY(h.answer(h.sent.front().node));
    QVERIFY(h.router->inFlight() <= 3);
    QVERIFY(h.completed.size() >= 10);
    QCOMPARE(accountedFor(h), h.router->counters().issued);
}

void TestRouter::nothingIssuedWhileAStageHasNoNode() {
    Harness h(2);
    h.router->addNode(u"a"_qs, 0);
    h.router->tick();
    QCOMPARE(h.router->counters().issued, qint64(0));
    QVERIFY(h.sent.empty());
}

void TestRouter::nodeLeavingMidForwardIsRoutedAround() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a1"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QCOMPARE(h.sent.front().node, QString(u"a1"_qs));
    h.router->addNode(u"a2"_qs, 0);
    h.sent.clear();
    h.router->removeNode(u"a1"_qs, u"killed"_qs);
    QCOMPARE(h.sent.size(), std::size_t(1));
    QCOMPARE(h.sent.front().node, QString(u"a2"_qs));
    QCOMPARE(h.sent.front().header.value(u"kind"_qs).toString(), QString(u"forward"_qs));
    QVERIFY(h.answer(u"a2"_qs));
    QVERIFY(h.answer(u"b"_qs));
    QVERIFY(h.answer(u"a2"_qs));
    QCOMPARE(h.completed.size(), std::size_t(1));
    QCOMPARE(h.router->counters().retries, qint64(1));
}

void TestRouter::backwardGoesElsewhereWithItsInputWhenTheForwardNodeLeft() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a1"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QVERIFY(h.answer(u"a1"_qs));
    h.router->addNode(u"a2"_qs, 0);
    h.router->removeNode(u"a1"_qs, u"killed"_qs); // it held the forward's graph
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(h.sent.front().node, QString(u"a2"_qs));
    QCOMPARE(h.sent.front().frames, (QList<protocol::TaskFrameType>{protocol::TaskFrameType::BackwardInput,
                                                                    protocol::TaskFrameType::ForwardInput}));
    QVERIFY(h.answer(u"a2"_qs));
    QCOMPARE(h.completed.size(), std::size_t(1));
    // The recomputing backward earns forward + backward.
    const AcceptedTask& last = h.completed.front().accepted.back();
    QVERIFY(last.recomputed);
    QCOMPARE(last.flop, qint64(6 * 1000 * 8));
}

void TestRouter::stepMakesTheBackwardCarryItsInput() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QVERIFY(h.answer(u"a"_qs));
    h.router->stepSent(); // a's graph of this microbatch is gone after its step
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(h.sent.front().node, QString(u"a"_qs));
    QCOMPARE(h.sent.front().frames.size(), 2);
    // The coordinator's own step dropped the graph: the forward run again is paid (6NT).
    QVERIFY(h.answer(u"a"_qs));
    QCOMPARE(h.completed.size(), std::size_t(1));
    QCOMPARE(h.completed.front().accepted.back().flop, qint64(6 * 1000 * 8));
}

void TestRouter::stepSentBeforeTheForwardRanCountsToo() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    h.router->stepSent(); // queued on the node behind the forward: it drops the forward's graph
    QVERIFY(h.answer(u"a"_qs));
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(h.sent.front().node, u"a"_qs);
    QCOMPARE(h.sent.front().frames.size(), 2);
}

void TestRouter::needsInputIsResentToTheSameNodeWithoutBan() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QVERIFY(h.answer(u"a"_qs));
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(h.sent.front().frames.size(), 1);
    // The kind decides, whatever the words: any text at all, with the kind "missing_graph".
    QVERIFY(h.answer(u"a"_qs, false, {{u"error"_qs, u"xyzzy"_qs}, {u"error_kind"_qs, u"missing_graph"_qs}}));
    QCOMPARE(h.sent.front().node, QString(u"a"_qs));
    QCOMPARE(h.sent.front().frames.size(), 2);
    QVERIFY(h.answer(u"a"_qs));
    QCOMPARE(h.completed.size(), std::size_t(1));
    QCOMPARE(h.router->counters().retries, qint64(0));
    // Paid as a backward alone (4NT): its forward was paid, and a node that kept its graph could claim
    // it lost it to be paid 6NT for 4NT of work. (Where the coordinator sends the input of its own
    // accord, the recompute is paid: backwardGoesElsewhereWithItsInputWhenTheForwardNodeLeft, below.)
    const AcceptedTask& last = h.completed.front().accepted.back();
    QVERIFY(last.recomputed);
    QCOMPARE(last.flop, qint64(4 * 1000 * 8));
}

// The words of the old recompute path, without the kind, are a failure like any other: nothing
// reads the error's text.
void TestRouter::theErrorsWordsDecideNothing() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QVERIFY(h.answer(u"a"_qs));
    QVERIFY(h.answer(u"b"_qs));
    QVERIFY(h.answer(u"a"_qs, false,
                     {{u"error"_qs, u"no kept graph for microbatch 1: send its forward input"_qs}}));
    QCOMPARE(h.router->counters().retries, qint64(1)); // failed: retried elsewhere, and a is banned
    QVERIFY(h.sent.empty());                           // no other node of stage 0 to take it
}

void TestRouter::errorBansTheNodeAndRetriesElsewhere() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a1"_qs, 0);
    h.router->addNode(u"a2"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    const QString first = h.sent.front().node;
    const QString other = first == u"a1"_qs ? u"a2"_qs : u"a1"_qs;
    QVERIFY(h.answer(first, false, {{u"error"_qs, u"CUDA out of memory"_qs}}));
    QCOMPARE(h.sent.front().node, other);
    QVERIFY(h.answer(other));
    QVERIFY(h.answer(u"b"_qs));
    QVERIFY(h.answer(other));
    QCOMPARE(h.completed.size(), std::size_t(1));
    // The banned node gets nothing while banned, even when it would be free.
    for (int i = 0; i < 6; ++i)
        QVERIFY(h.answer(h.sent.front().node));
    for (const Sent& x : h.sent)
        QVERIFY(x.node != first);
}

void TestRouter::missedDeadlineIsRetriedAndTheLateResultIgnored() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a1"_qs, 0);
    h.router->addNode(u"a2"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    const Sent slow = h.sent.front();
    h.sent.pop_front();
    h.clock += 5000; // past the 1 s minimum deadline
    h.router->tick();
    QCOMPARE(h.sent.size(), std::size_t(1));
    QVERIFY(h.sent.front().node != slow.node);
    h.reply(slow, true); // the slow node answers after all: too late
    QCOMPARE(h.router->counters().duplicates, qint64(1));
    QVERIFY(h.answer(h.sent.front().node));
    QVERIFY(h.answer(u"b"_qs));
    QVERIFY(h.answer(h.sent.front().node));
    QCOMPARE(h.completed.size(), std::size_t(1));
    for (const AcceptedTask& t : h.completed.front().accepted)
        QVERIFY(t.nodeId != slow.node); // the duplicate earned nothing
}

void TestRouter::attemptsExhaustedAbandonsTheMicrobatch() {
    RouterSettings s;
    s.window = 1;
    s.maxAttempts = 2;
    Harness h(2, s);
    h.router->addNode(u"a1"_qs, 0);
    h.router->addNode(u"a2"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    h.feeding = false;
    QVERIFY(h.answer(h.sent.front().node, false, {{u"error"_qs, u"boom"_qs}}));
    QVERIFY(h.answer(h.sent.front().node, false, {{u"error"_qs, u"boom again"_qs}}));
    QCOMPARE(h.abandoned.size(), std::size_t(1));
    QVERIFY(h.abandoned.front().abandonReason.contains(u"boom again"_qs));
    QCOMPARE(h.router->inFlight(), 0);
    QCOMPARE(accountedFor(h), h.router->counters().issued);
}

void TestRouter::microbatchTimeoutAbandons() {
    RouterSettings s;
    s.window = 2;
    s.microbatchTimeoutMs = 10'000;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    h.feeding = false;
    h.router->removeNode(u"b"_qs, u"gone"_qs); // the microbatches wait for a stage-1 node that never comes
    QVERIFY(h.answer(u"a"_qs));
    QVERIFY(h.answer(u"a"_qs));
    h.clock += 11'000;
    h.router->tick();
    QCOMPARE(h.abandoned.size(), std::size_t(2));
    QCOMPARE(h.router->inFlight(), 0);
    QCOMPARE(accountedFor(h), h.router->counters().issued);
}

void TestRouter::resultWithoutItsFrameIsRefused() {
    RouterSettings s;
    s.window = 1;
    Harness h(2, s);
    h.router->addNode(u"a1"_qs, 0);
    h.router->addNode(u"a2"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    const Sent task = h.sent.front();
    h.sent.pop_front();
    h.deliver(task.node,
              protocol::TaskMessageBuilder(QJsonObject{{u"type"_qs, u"task_result"_qs},
                                                       {u"task_id"_qs, task.header.value(u"task_id"_qs)},
                                                       {u"kind"_qs, u"forward"_qs},
                                                       {u"ok"_qs, true}})
                  .take());
    QCOMPARE(h.router->counters().retries, qint64(1));
    QVERIFY(h.sent.front().node != task.node);
}

void TestRouter::abandonAllEndsEverything() {
    RouterSettings s;
    s.window = 4;
    Harness h(2, s);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QCOMPARE(h.router->inFlight(), 4);
    h.router->abandonAll(u"stopping"_qs);
    QCOMPARE(h.router->inFlight(), 0);
    QCOMPARE(h.abandoned.size(), std::size_t(4));
    QCOMPARE(accountedFor(h), h.router->counters().issued);
}

// Framing (issue 41): a result refused on an input another node sent is not blamed at once. The same
// input goes to another replica: refused there too, the input's sender is reported and the microbatch
// ends (one frame strikes no replica); accepted there, the first node is. With one replica, or on the
// coordinator's own tokens, the producer is reported at once, as before.
void TestRouter::aRefusalIsBlamedOnWhatAnotherReplicaShows() {
    RouterSettings s;
    s.window = 1;
    for (const bool framed : {true, false}) {
        Harness h(2, s);
        QString first; // the stage 1 node the first forward_backward went to
        h.router->setCheck([&](const QString& node, const Microbatch& mb, TaskKind,
                               const protocol::HeldFrame&,
                               std::optional<double>) -> std::optional<Router::Refusal> {
            if (mb.stage != 1)
                return std::nullopt;
            if (first.isEmpty())
                first = node;
            if (framed || node == first)
                return Router::Refusal{QStringLiteral("token RMS above 10000"), true};
            return std::nullopt;
        });
        QSignalSpy refused(h.router.get(), &Router::refused);
        h.router->addNode(u"a"_qs, 0);
        h.router->addNode(u"b1"_qs, 1);
        h.router->addNode(u"b2"_qs, 1);
        QVERIFY(h.answer(u"a"_qs));
        QVERIFY(h.answer(h.sent.front().node)); // refused: the same input goes to the other replica
        QVERIFY(!first.isEmpty());
        QCOMPARE(refused.count(), 0); // nobody blamed yet
        QCOMPARE(h.sent.front().node, first == u"b1"_qs ? u"b2"_qs : u"b1"_qs);
        QCOMPARE(h.sent.front().header.value(u"microbatch"_qs).toInteger(), qint64(1));
        QVERIFY(h.answer(h.sent.front().node));
        QTRY_COMPARE(refused.count(), 1); // (an acceptance reports once the result has moved on)
        if (framed) {
            QCOMPARE(refused.at(0).at(0).toString(), u"a"_qs); // the sender of the input both refused on
            QCOMPARE(refused.at(0).at(1).toInt(), 0);
            QVERIFY2(refused.at(0).at(2).toString().contains(u"two replicas of stage 1"),
                     qPrintable(refused.at(0).at(2).toString()));
            QCOMPARE(h.router->counters().framed, qint64(1));
            QCOMPARE(h.abandoned.size(), std::size_t(1)); // not sent to a third replica
            QCOMPARE(h.abandoned.front().id, qint64(1));
        } else {
            QCOMPARE(refused.at(0).at(0).toString(), first); // the other's answer to the same input passed
            QCOMPARE(refused.at(0).at(1).toInt(), 1);
            QCOMPARE(h.router->counters().framed, qint64(0));
            QVERIFY(h.abandoned.empty());
        }
    }
    // One replica: nobody else can show whether the input is at fault. Nobody is reported; when the
    // microbatch ends the refusal is left unsettled (the Trainer puts the node on probation).
    Harness h(2, s);
    h.router->setCheck([](const QString&, const Microbatch& mb, TaskKind, const protocol::HeldFrame&,
                          std::optional<double>) -> std::optional<Router::Refusal> {
        return mb.stage == 1 ? std::optional(Router::Refusal{QStringLiteral("loss above 50"), true})
                             : std::nullopt;
    });
    QSignalSpy refused(h.router.get(), &Router::refused);
    QSignalSpy unresolved(h.router.get(), &Router::refusalUnresolved);
    h.router->addNode(u"a"_qs, 0);
    h.router->addNode(u"b"_qs, 1);
    QVERIFY(h.answer(u"a"_qs));
    QVERIFY(h.answer(u"b"_qs));
    QCOMPARE(refused.count(), 0);
    h.router->abandonAll(QStringLiteral("the test ends it"));
    QCOMPARE(unresolved.count(), 1);
    QCOMPARE(unresolved.at(0).at(0).toString(), u"b"_qs);
    QCOMPARE(refused.count(), 0);
    // What no input explains (an echo, zeros, NaN) is the producer's, reported at once.
    Harness e(2, s);
    e.router->setCheck([](const QString&, const Microbatch& mb, TaskKind, const protocol::HeldFrame&,
                          std::optional<double>) -> std::optional<Router::Refusal> {
        return mb.stage == 1
                   ? std::optional(Router::Refusal{QStringLiteral("the task's own input sent back"), false})
                   : std::nullopt;
    });
    QSignalSpy echoed(e.router.get(), &Router::refused);
    e.router->addNode(u"a"_qs, 0);
    e.router->addNode(u"b1"_qs, 1);
    e.router->addNode(u"b2"_qs, 1);
    QVERIFY(e.answer(u"a"_qs));
    const QString echoer = e.sent.front().node;
    QVERIFY(e.answer(echoer));
    QCOMPARE(echoed.count(), 1);
    QCOMPARE(echoed.at(0).at(0).toString(), echoer);
}

// Both replicas refused on an input no different from what its sender's stage returns (the input judge says
// so): the stage's own weights cross the bound, so nobody is reported; the microbatch ends. Where the judge
// cannot tell (none), the sender is blamed as in aRefusalIsBlamedOnWhatAnotherReplicaShows.
void TestRouter::anOrdinaryInputBothReplicasRefusedBlamesNobody() {
    RouterSettings s;
    s.window = 1;
    for (const std::optional<bool> unusual : {std::optional<bool>(false), std::optional<bool>()}) {
        Harness o(2, s);
        o.router->setCheck([](const QString&, const Microbatch& mb, TaskKind, const protocol::HeldFrame&,
                              std::optional<double>) -> std::optional<Router::Refusal> {
            return mb.stage == 1
                       ? std::optional(Router::Refusal{QStringLiteral("token RMS above 10000"), true})
                       : std::nullopt;
        });
        int judged = 0;
        o.router->setInputJudge([&](int senderStage, bool activation, const protocol::HeldFrame& input) {
            ++judged;
            [&] {
                QCOMPARE(senderStage, 0);
                QVERIFY(activation);
                QVERIFY(!input.isNull());
            }();
            return unusual;
        });
        QSignalSpy blamed(o.router.get(), &Router::refused);
        QSignalSpy nobody(o.router.get(), &Router::stageRefusesOrdinaryInput);
        o.router->addNode(u"a"_qs, 0);
        o.router->addNode(u"b1"_qs, 1);
        o.router->addNode(u"b2"_qs, 1);
        QVERIFY(o.answer(u"a"_qs));
        QVERIFY(o.answer(o.sent.front().node));
        QVERIFY(o.answer(o.sent.front().node)); // the other replica, refused on the same input
        QCOMPARE(judged, 1);
        QCOMPARE(o.abandoned.size(), std::size_t(1));
        if (unusual.has_value()) {
            QCOMPARE(blamed.count(), 0);
            QCOMPARE(nobody.count(), 1);
            QCOMPARE(nobody.at(0).at(0).toInt(), 1);
            QCOMPARE(o.router->counters().refusedOnOrdinaryInput, qint64(1));
            QCOMPARE(o.router->counters().framed, qint64(0));
        } else {
            QCOMPARE(blamed.count(), 1);
            QCOMPARE(blamed.at(0).at(0).toString(), u"a"_qs);
            QCOMPARE(nobody.count(), 0);
        }
    }
}

QTEST_GUILESS_MAIN(TestRouter)
#include "test_router.moc"
