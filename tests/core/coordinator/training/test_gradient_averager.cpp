// SPDX-License-Identifier: Apache-2.0
// GradientAverager: a step's exchange across the replicas of every stage, on real combiners and
// through the typed messages the nodes get — every replica receives the same result, a replica that
// leaves or misses the deadline does not block the step (nor count), the clip and the learning rate
// follow the settings, a share of the wrong size or not finite is refused and its sender named; at a
// low rank the step takes PowerSGD's two rounds (first shares → basis → second shares → result).
#include "coordinator/training/GradientAverager.h"

#include <QJsonArray>
#include <QTest>

#include <cmath>

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::protocol;

namespace {

struct Sent {
    QString node;
    GradientResult header;
    std::vector<float> values;
};
struct BasisSent {
    QString node;
    GradientBasis header;
    std::vector<float> values;
};

class Harness {
public:
    explicit Harness(GradientSettings settings,
                     std::vector<GradientAverager::Shapes> shapes = {{{4}, {3, 2}}}) {
        auto made = GradientAverager::create(
            shapes, settings, 7,
            [this](const QString& node, const SessionMessage& m) {
                if (const auto* step = std::get_if<Step>(&m))
                    requests.append({node, *step});
                return !offline.contains(node);
            },
            [this](const QString& node, const QByteArray& bytes) {
                Result<TaskMessage> message = decodeTaskMessage(bytes);
                Result<SessionMessage> header =
                    message ? parseSessionMessage(message->header, Direction::ToNode, Transport::Binary)
                            : message.error();
                if (!header)
                    qFatal("the averager sent a malformed message: %s", header.message().c_str());
                if (const auto* basis = std::get_if<GradientBasis>(&*header)) {
                    Result<std::vector<float>> values =
                        partitionValues(*message->frame(TaskFrameType::Partition));
                    if (!values)
                        qFatal("the averager sent a basis it cannot decode: %s", values.message().c_str());
                    bases.push_back({node, *basis, *values});
                    return !offline.contains(node);
                }
                const GradientResult& result = std::get<GradientResult>(*header);
                Result<std::vector<float>> values =
                    result.bits == 32 ? partitionValues(*message->frame(TaskFrameType::Partition))
                                      : gradientValues(*message->frame(TaskFrameType::Partition), result.bits,
                                                       result.values);
                if (!values)
                    qFatal("the averager sent values it cannot decode: %s", values.message().c_str());
                results.push_back({node, result, *values});
                return true;
            },
            [this] { return now; });
        if (!made)
            qFatal("%s", made.message().c_str());
        averager = std::move(*made);
        QObject::connect(averager.get(), &GradientAverager::shareRefused,
                         [this](const QString& node, int, const QString&) { refused << node; });
        QObject::connect(averager.get(), &GradientAverager::closed,
                         [this](qint64 step) { closedSteps << step; });
    }

    bool share(const QString& node, qint64 step, int microbatches, std::vector<float> values,
               qint64 basis = 0, int bits = 32, bool firstRound = false) {
        GradientShare header{step, microbatches, basis, true, {}, bits, firstRound};
        const QByteArray payload = gradientPayload(values, bits);
        const QByteArray bytes =
            TaskMessageBuilder(toJson(header), payload.size()).add(TaskFrameType::Partition, payload).take();
        Result<TaskMessage> message = decodeTaskMessage(bytes);
        return averager->onShare(node, header, *message);
    }
    // Rounds `from`..`to` of replicas a and b, one microbatch each, every value of a's share `a`, of b's `b`.
    bool rounds(qint64 from, qint64 to, float a, float b) {
        for (qint64 step = from; step <= to; ++step) {
            averager->start(step, {{u"a"_qs, u"b"_qs}});
            if (!share(u"a"_qs, step, 1, std::vector<float>(10, a)) ||
                !share(u"b"_qs, step, 1, std::vector<float>(10, b)))
                return false;
        }
        return true;
    }

    std::unique_ptr<GradientAverager> averager;
    QList<QPair<QString, Step>> requests;
    std::vector<Sent> results;
    std::vector<BasisSent> bases;
    QStringList refused, offline;
    QList<qint64> closedSteps;
    qint64 now = 1000;
};

GradientSettings dense() {
    GradientSettings s;
    s.rank = 0;
    s.bits = 32;    // exact: the tests compare values
    s.clipNorm = 0; // no clip unless a test wants one
    s.maxShareRms = 0; // values of any size, unless a test wants the bound
    s.schedule.peak = 1e-3;
    s.schedule.warmupSteps = 10;
    return s;
}

} // namespace

class TestGradientAverager final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyReplicaGetsTheWeightedMean() {
        Harness h(dense());
        h.averager->start(5, {{u"a"_qs, u"b"_qs}});
        QCOMPARE(h.requests.size(), 2);
        QCOMPARE(h.requests[0].second.basis, qint64(0)); // gradient averaging: a share is asked for
        QVERIFY(h.averager->collecting());
        // a processed 1 microbatch, b 3: the mean is weighted by them (10 values: 4 + 3×2).
        QVERIFY(h.share(u"a"_qs, 5, 1, std::vector<float>(10, 4.0f)));
        QVERIFY(h.results.empty()); // b has not answered
        QVERIFY(h.share(u"b"_qs, 5, 3, std::vector<float>(10, 0.0f)));
        QCOMPARE(int(h.results.size()), 2);
        for (const Sent& s : h.results) {
            QVERIFY(s.header.included);
            QCOMPARE(s.header.replicas, 2);
            QCOMPARE(s.values, std::vector<float>(10, 1.0f)); // (1·4 + 3·0) / 4
            QCOMPARE(s.header.learningRate, 5e-4);            // warm-up: step 5 of 10
            QCOMPARE(s.header.clipScale, 1.0);
        }
        QCOMPARE(h.closedSteps, QList<qint64>{5});
        QVERIFY(!h.averager->collecting());
    }

    void fewerBitsTravelBothWays() {
        GradientSettings s = dense();
        s.bits = 8;
        Harness h(s);
        h.averager->start(3, {{u"a"_qs, u"b"_qs}});
        QCOMPARE(h.requests[0].second.bits, 8); // the node is asked for an 8-bit share
        std::vector<float> a(10), b(10, 0.0f);
        for (int i = 0; i < 10; ++i)
            a[std::size_t(i)] = 0.1f * float(i + 1);
        QVERIFY(h.share(u"a"_qs, 3, 1, a, 0, 8));
        QVERIFY(h.share(u"b"_qs, 3, 1, b, 0, 32)); // a node may send more bits than asked: it pays
        QVERIFY(h.refused.isEmpty());
        QCOMPARE(int(h.results.size()), 2);
        for (const Sent& sent : h.results) {
            QCOMPARE(sent.header.bits, 8);
            QCOMPARE(sent.header.values, qint64(10));
            QCOMPARE(sent.values, h.results[0].values); // the same rounded mean for everyone
            for (int i = 0; i < 10; ++i) // (a + 0) / 2, to within half a step of 1/127 of the largest
                QVERIFY(std::abs(sent.values[std::size_t(i)] - a[std::size_t(i)] / 2) <=
                        0.5f / 127 * 0.5f + 1e-6f);
        }
        const QJsonObject bytes = h.averager->status().value(u"stages").toArray().at(0).toObject();
        QCOMPARE(bytes.value(u"share_bytes").toInteger(), qint64(16)); // 1 scale + 10 codes, padded
        // A share whose bytes are not 10 values at its bits is refused, its sender named.
        h.averager->start(4, {{u"a"_qs, u"b"_qs}});
        QVERIFY(h.share(u"a"_qs, 4, 1, std::vector<float>(11, 1.0f), 0, 8));
        QCOMPARE(h.refused, QStringList{u"a"_qs});
        // A low-rank exchange travels in fp32 whatever the bits asked (its basis must arrive exactly).
        s.rank = 4;
        Harness low(s, {{{64, 40}}});
        low.averager->start(1, {{u"a"_qs}});
        QCOMPARE(low.requests[0].second.bits, 32);
        QCOMPARE(low.averager->status().value(u"bits").toInt(), 32);
        s.bits = 6;
        QVERIFY(!GradientAverager::create({{{64, 40}}}, s, 7, {}, {}, {}));
    }

    void theGlobalClipSpansEveryStage() {
        GradientSettings s = dense();
        s.clipNorm = 1.0;
        Harness h(s, {{{4}}, {{4}}});
        h.averager->start(1, {{u"a"_qs}, {u"b"_qs}});
        QVERIFY(h.share(u"a"_qs, 1, 1, {3, 0, 0, 0}));
        QVERIFY(h.share(u"b"_qs, 1, 1, {0, 4, 0, 0}));
        // ‖(3, 0, 0, 0, 0, 4, 0, 0)‖ = 5 over both stages: every node scales by 1/5.
        QCOMPARE(int(h.results.size()), 2);
        for (const Sent& sent : h.results)
            QVERIFY(std::abs(sent.header.clipScale - 0.2) < 1e-12);
        QVERIFY(std::abs(h.averager->status().value(u"gradient_norm").toDouble() - 5.0) < 1e-9);
    }

    void aReplicaThatLeavesOrIsLateDoesNotBlockTheStep() {
        Harness h(dense());
        h.averager->start(2, {{u"a"_qs, u"b"_qs, u"c"_qs}});
        QVERIFY(h.share(u"a"_qs, 2, 2, std::vector<float>(10, 2.0f)));
        h.averager->nodeGone(u"b"_qs); // killed mid-exchange
        QVERIFY(h.results.empty());    // c still has time
        h.now += 31'000;               // past the 30 s deadline
        h.averager->tick();
        QCOMPARE(int(h.results.size()), 2); // a and c: b is gone
        for (const Sent& s : h.results) {
            QCOMPARE(s.values, std::vector<float>(10, 2.0f)); // a's alone
            QCOMPARE(s.header.replicas, 1);
            QCOMPARE(s.header.included, s.node == u"a"_qs); // c's gradient stays in its memory
        }
        // c's share comes late: no round wants it.
        QVERIFY(!h.share(u"c"_qs, 2, 2, std::vector<float>(10, 9.0f)));
        QCOMPARE(h.averager->status().value(u"shares_missed").toInteger(), 1);
    }

    void aShareOfTheWrongSizeOrNotFiniteIsRefusedAndItsSenderNamed() {
        Harness h(dense());
        h.averager->start(3, {{u"a"_qs, u"b"_qs, u"c"_qs}});
        QVERIFY(h.share(u"a"_qs, 3, 1, std::vector<float>(9, 1.0f)));
        std::vector<float> poisoned(10, 1.0f);
        poisoned[4] = std::nanf("");
        QVERIFY(h.share(u"b"_qs, 3, 1, poisoned));
        QVERIFY(h.share(u"c"_qs, 3, 1, std::vector<float>(10, 1.0f)));
        QCOMPARE(h.refused, (QStringList{u"a"_qs, u"b"_qs}));
        for (const Sent& s : h.results) {
            QCOMPARE(s.values, std::vector<float>(10, 1.0f));
            QCOMPARE(s.header.included, s.node == u"c"_qs);
        }
    }

    void aFarOffShareMovesTheMeanOnlyAsFarAsTheClipRadius() {
        Harness h(dense());
        h.averager->start(4, {{u"a"_qs, u"b"_qs, u"c"_qs}});
        QVERIFY(h.share(u"a"_qs, 4, 1, std::vector<float>(10, 1.0f)));
        QVERIFY(h.share(u"b"_qs, 4, 1, std::vector<float>(10, 1.1f)));
        QVERIFY(h.share(u"c"_qs, 4, 1, std::vector<float>(10, 1000.0f))); // a poisoned share
        const float v = h.results.front().values[0];
        QVERIFY2(v > 1.0f && v < 1.5f, qPrintable(QString::number(v)));
    }

    void aShareWeighsNoMoreThanTheWorkTheCoordinatorSaw() {
        Harness h(dense());
        // a claims 100 microbatches; the coordinator accepted one backward from each.
        h.averager->start(6, {{u"a"_qs, u"b"_qs}}, {{u"a"_qs, 1}, {u"b"_qs, 1}});
        QVERIFY(h.share(u"a"_qs, 6, 100, std::vector<float>(10, 4.0f)));
        QVERIFY(h.share(u"b"_qs, 6, 1, std::vector<float>(10, 0.0f)));
        QCOMPARE(h.results.front().values, std::vector<float>(10, 2.0f)); // 1:1, not 100:1
    }

    void aPoisonedShareOfTwoIsLeftOutByItsNorm() {
        Harness h(dense());
        // Two replicas: no majority; the median is their mean. Eight honest rounds teach the norms.
        QVERIFY(h.rounds(1, 8, 0.10f, 0.12f));
        h.results.clear();
        QVERIFY(h.rounds(9, 9, 0.11f, 9.9f)); // b: 10 − v, which sets the plain mean to 5
        QCOMPARE(int(h.results.size()), 2);
        for (const Sent& s : h.results) {
            QCOMPARE(s.values, std::vector<float>(10, 0.11f));
            QCOMPARE(s.header.included, s.node == u"a"_qs);
        }
        QCOMPARE(h.averager->status().value(u"shares_outvoted").toInteger(), 1);
    }

    // At the first step there is no history of norms and, of two replicas, no majority: a share far
    // beyond any training's (RMS 9.9 a weight, what `poison` sends) is left out (not struck: a frame
    // makes an honest share that large too), and the other replica's share is the stage's update.
    void aShareBeyondAnyTrainingIsRefusedFromTheFirstStep() {
        GradientSettings settings = dense();
        settings.maxShareRms = GradientSettings().maxShareRms;
        Harness h(settings);
        QVERIFY(h.rounds(1, 1, 0.11f, 9.9f));
        QVERIFY(h.refused.isEmpty());
        QCOMPARE(h.averager->status().value(u"shares_beyond_training").toInteger(), 1);
        QCOMPARE(int(h.results.size()), 2);
        for (const Sent& s : h.results) {
            QCOMPARE(s.values, std::vector<float>(10, 0.11f));
            QCOMPARE(s.header.included, s.node == u"a"_qs);
        }
        // An honest share at the bound's edge is not refused.
        Harness edge(settings);
        QVERIFY(edge.rounds(1, 1, 0.11f, 0.9f));
        QVERIFY(edge.refused.isEmpty());
    }

    void normsThatGrowTogetherAreNotOutliers() {
        // As a model learns, every replica's gradient norm can grow 50x within the norm window (seen in
        // the swarm: 0.02 at first, then 1): replicas that agree with each other are never left out,
        // and the history follows them. A lone replica has nothing to be outvoted by.
        Harness h(dense());
        QVERIFY(h.rounds(1, 8, 0.02f, 0.03f));
        h.results.clear();
        QVERIFY(h.rounds(9, 12, 1.0f, 1.2f));
        h.averager->start(13, {{u"a"_qs}});
        QVERIFY(h.share(u"a"_qs, 13, 1, std::vector<float>(10, 50.0f)));
        QCOMPARE(int(h.results.size()), 9);
        for (const Sent& s : h.results)
            QVERIFY(s.header.included);
        QCOMPARE(h.results.back().values, std::vector<float>(10, 50.0f));
        QCOMPARE(h.averager->status().value(u"shares_outvoted").toInteger(), 0);
    }

    void aLowRankStepTakesTwoRoundsAndOnlySharesOnTheCurrentWarmStartCount() {
        GradientSettings s = dense();
        s.rank = 1;
        Harness h(s, {{{16, 16}}}); // rank 1: P is 16 values, Q 16, the result [P̂ | Q̄] 32
        h.averager->start(1, {{u"a"_qs, u"b"_qs, u"c"_qs}});
        QCOMPARE(h.requests.back().second.rank, 1);
        // The first round: P_r. b holds another round's warm start: it sits out.
        QVERIFY(h.share(u"a"_qs, 1, 1, std::vector<float>(16, 0.5f), 0, 32, true));
        QVERIFY(h.share(u"b"_qs, 1, 1, std::vector<float>(16, 0.5f), 3, 32, true));
        QVERIFY(h.bases.empty()); // c has not answered
        QVERIFY(h.share(u"c"_qs, 1, 1, std::vector<float>(16, 0.5f), 0, 32, true));
        // The basis P̂ = orth(P̄) goes to a and c, whose first shares counted; no result yet.
        QCOMPARE(int(h.bases.size()), 2);
        QVERIFY(h.results.empty());
        for (const BasisSent& sent : h.bases) {
            QVERIFY(sent.node != u"b"_qs);
            QCOMPARE(sent.header.step, qint64(1));
            QCOMPARE(sent.values, std::vector<float>(16, 0.25f)); // a unit column
        }
        // A first share where the second is expected is refused; c is killed mid-exchange.
        QVERIFY(h.share(u"a"_qs, 1, 1, std::vector<float>(16, 1.0f), 0, 32, true));
        QCOMPARE(h.refused, QStringList{u"a"_qs});
        h.averager->start(1, {{u"a"_qs, u"b"_qs, u"c"_qs}}); // (restart the step: a has answered)
        h.refused.clear();
        h.bases.clear();
        h.results.clear();
        QVERIFY(h.share(u"a"_qs, 1, 1, std::vector<float>(16, 0.5f), 0, 32, true));
        QVERIFY(h.share(u"b"_qs, 1, 1, std::vector<float>(16, 0.5f), 3, 32, true));
        QVERIFY(h.share(u"c"_qs, 1, 1, std::vector<float>(16, 0.5f), 0, 32, true));
        QCOMPARE(int(h.bases.size()), 2);
        QVERIFY(h.share(u"a"_qs, 1, 1, std::vector<float>(16, 2.0f)));
        QVERIFY(h.results.empty()); // c still has the deadline
        h.now += 31'000;
        h.averager->tick();                 // c missed the second round: the step goes on without it
        QCOMPARE(int(h.results.size()), 3); // every replica asked gets the result
        for (const Sent& sent : h.results) {
            QCOMPARE(sent.header.round, qint64(1));
            QCOMPARE(sent.header.included, sent.node == u"a"_qs); // b and c keep their gradients
            std::vector<float> expected(16, 0.25f);               // [P̂ | Q̄]
            expected.insert(expected.end(), 16, 2.0f);
            QCOMPARE(sent.values, expected);
        }
        QCOMPARE(h.averager->status().value(u"shares_missed").toInteger(), 1);
        QCOMPARE(h.averager->status().value(u"bases_sent").toInteger(), 4);
        // Both rounds' bytes: 16 + 16 up, 16 + 32 down, in fp32.
        const QJsonObject bytes = h.averager->status().value(u"stages").toArray().at(0).toObject();
        QCOMPARE(bytes.value(u"share_bytes").toInteger(), qint64(4 * 32));
        QCOMPARE(bytes.value(u"result_bytes").toInteger(), qint64(4 * 48));
        // Next step the request names round 1's warm start.
        h.averager->start(2, {{u"a"_qs}});
        QCOMPARE(h.requests.back().second.basis, qint64(1));
    }

    void theScheduleDecaysToItsEnd() {
        GradientSettings s = dense();
        s.schedule.decay = gpu::LearningRateSchedule::Decay::Cosine;
        s.schedule.decaySteps = 110;
        Harness h(s);
        h.averager->start(110, {{u"a"_qs}});
        QVERIFY(h.share(u"a"_qs, 110, 1, std::vector<float>(10, 1.0f)));
        QVERIFY(std::abs(h.results.front().header.learningRate - 1e-4) < 1e-12);
        QCOMPARE(h.averager->status().value(u"schedule").toObject().value(u"decay").toString(), u"cosine"_qs);
    }
};

QTEST_GUILESS_MAIN(TestGradientAverager)
#include "test_gradient_averager.moc"
