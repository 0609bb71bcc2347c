// SPDX-License-Identifier: Apache-2.0
// Reclaim: after a restart the stage's current weights come back from the nodes that held them —
// and only weights that training could have reached from the published checkpoint. Tried: one
// honest replica (taken as it is), two equal replicas (both go on), two that disagree (the one nearer
// the checkpoint), three with one poisoner (outvoted), noise far beyond the steps since the
// checkpoint, a NaN, a short answer and a node that failed an audit before (refused: the checkpoint
// stands), a new node ready meanwhile (held, then synced), an expected node that never answers
// (the deadline closes the stage), and a stage nobody held (not held at all). Answers in chunks are
// written to disk as they come and judged a piece at a time (the checkpoint here in three partitions,
// pieces of 700 values); a chunk that skips or overlaps, or an answer of another size, is refused.
#include "coordinator/training/Reclaim.h"

#include <QFile>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <functional>
#include <random>

using namespace tessera;
using namespace tessera::coordinator;
using namespace tessera::protocol;

namespace {

constexpr qint64 kSteps = 30; // since the published checkpoint

std::vector<float> checkpoint() {
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0, 0.02f);
    std::vector<float> v(4096);
    for (float& x : v)
        x = d(rng);
    return v;
}

// Weights trained on from `base` for `steps` AdamW-like steps of at most lr each.
std::vector<float> trained(const std::vector<float>& base, int seed, qint64 steps = kSteps,
                           double lr = 3e-3) {
    std::mt19937 rng{std::uint32_t(seed)};
    std::uniform_real_distribution<double> d(-1, 1);
    std::vector<float> v = base;
    for (qint64 s = 0; s < steps; ++s)
        for (float& x : v)
            x = float(x + lr * d(rng) * 0.5);
    return v;
}

QByteArray shareMessage(qint64 round, const std::vector<float>& values) {
    const QByteArrayView payload = partitionPayload(values);
    return TaskMessageBuilder(toJson(SessionMessage{AverageShare{round, -1, 0, false, {}, 0, 0}}),
                              payload.size())
        .add(TaskFrameType::Partition, payload)
        .take();
}

struct Harness {
    qint64 t = 1000;
    QHash<QString, qint64> asked; // node → round
    QHash<QString, int> failedAudits;
    ReclaimSettings settings;
    std::unique_ptr<Reclaim> reclaim;
    std::vector<float> reference = checkpoint();
    // The checkpoint in three partitions of unequal sizes, as the answers travel; what it took.
    std::vector<qint64> partitions{1000, 1500, 1596};
    std::vector<float> taken;
    QTemporaryDir spill;

    // `tune`: settings a case changes from these.
    explicit Harness(const std::function<void(ReclaimSettings&)>& tune = {}) {
        settings.windowMs = 5'000;
        settings.deadlineMs = 20'000;
        settings.spillDir = spill.path();
        settings.pieceValues = 700; // pieces that straddle no partition, and one a partition ends early
        if (tune)
            tune(settings);
        ReclaimCheckpoint held{[](int) { return kSteps; }, [this](int) { return partitions; },
                               [this](int, int p) { return slice(reference, p); },
                               [this](int, int p, std::span<const float> values) {
                                   if (qint64(values.size()) != partitions[std::size_t(p)])
                                       return Status(makeError("a partition of the wrong size"));
                                   taken.insert(taken.end(), values.begin(), values.end());
                                   return Status{};
                               }};
        reclaim = std::make_unique<Reclaim>(
            settings, std::move(held), [this](const QString& node) { return failedAudits.value(node, 0); },
            [this](const QString& node, const SessionMessage& m) {
                if (const auto* request = std::get_if<SyncRequest>(&m))
                    asked.insert(node, request->round);
                return true;
            },
            [this] { return t; });
    }
    Result<std::vector<float>> slice(const std::vector<float>& v, int p) const {
        qint64 at = 0;
        for (int i = 0; i < p; ++i)
            at += partitions[std::size_t(i)];
        return std::vector<float>(v.begin() + at, v.begin() + at + partitions[std::size_t(p)]);
    }
    // The answer in chunks of `chunk` values, as a node sends a stage above one message; `from`: the
    // offset the second chunk claims (a gap or an overlap), or -1 for the right one.
    bool answerInChunks(const QString& node, const std::vector<float>& values, qint64 chunk, qint64 from = -1,
                        qint64 everyMs = 0) {
        const qint64 total = qint64(values.size());
        for (qint64 offset = 0, i = 0; offset < total; offset += chunk, ++i) {
            if (i > 0 && everyMs > 0) { // a slow link: time passes, and the coordinator's timer ticks
                t += everyMs;
                reclaim->tick();
            }
            const qint64 n = std::min(chunk, total - offset);
            const qint64 claimed = i == 1 && from >= 0 ? from : offset;
            AverageShare share{asked.value(node), -1, 0, false, {}, claimed, total};
            const QByteArrayView payload =
                partitionPayload(std::span<const float>(values.data() + offset, std::size_t(n)));
            Result<TaskMessage> message =
                decodeTaskMessage(TaskMessageBuilder(toJson(SessionMessage{share}), payload.size())
                                      .add(TaskFrameType::Partition, payload)
                                      .take());
            if (!message || !reclaim->onShare(node, share, *message))
                return false;
        }
        return true;
    }
    bool answer(const QString& node, const std::vector<float>& values) {
        Result<TaskMessage> message = decodeTaskMessage(shareMessage(asked.value(node), values));
        if (!message)
            return false;
        return reclaim->onShare(node, AverageShare{asked.value(node), -1, 0, false, {}, 0, 0}, *message);
    }
};

ReclaimOutcome only(const QSignalSpy& spy) {
    return spy.isEmpty() ? ReclaimOutcome{} : spy.first().first().value<ReclaimOutcome>();
}

} // namespace

Q_DECLARE_METATYPE(tessera::coordinator::ReclaimOutcome)

class TestReclaim final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { qRegisterMetaType<ReclaimOutcome>(); }

    void oneHonestReplicaIsTakenAsItIs() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 1);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 1));
        QVERIFY(h.asked.contains(u"a"_qs));
        QVERIFY(h.reclaim->holds(u"a"_qs));
        const std::vector<float> weights = trained(h.reference, 1);
        QVERIFY(h.answer(u"a"_qs, weights));
        QCOMPARE(settled.size(), 1);
        const ReclaimOutcome out = only(settled);
        QCOMPARE(out.stage, 1);
        QVERIFY(out.took);
        QVERIFY(h.taken == weights);
        QCOMPARE(out.keep, QStringList{u"a"_qs});
        QCOMPARE(out.held, QStringList{u"a"_qs});
        QVERIFY(!h.reclaim->holds(u"a"_qs));
        // Closed: a node ready on the stage later takes the usual path.
        QVERIFY(!h.reclaim->onReady(u"b"_qs, 1));
    }

    void twoEqualReplicasBothGoOn() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        h.reclaim->expect(u"b"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        QVERIFY(h.reclaim->onReady(u"b"_qs, 0));
        const std::vector<float> weights = trained(h.reference, 2);
        QVERIFY(h.answer(u"a"_qs, weights));
        QCOMPARE(settled.size(), 0); // b is expected and asked
        QVERIFY(h.answer(u"b"_qs, weights));
        QCOMPARE(settled.size(), 1);
        const ReclaimOutcome out = only(settled);
        QVERIFY(out.took);
        QVERIFY(h.taken == weights);
        QCOMPARE(out.keep.size(), 2);
    }

    void twoThatDisagreeGiveTheOneNearerTheCheckpoint() {
        Harness h;
        const std::vector<float> honest = trained(h.reference, 3, 5);
        const std::vector<float> further = trained(h.reference, 4, kSteps);
        std::map<QString, std::vector<float>> answers{{u"near"_qs, honest}, {u"far"_qs, further}};
        const ReclaimOutcome out = Reclaim::choose(0, answers, h.reference, kSteps, h.settings);
        QCOMPARE(out.candidates.size(), 2);
        QVERIFY(out.values == honest);
        QCOMPARE(out.keep, QStringList{u"near"_qs});
        // Two that agree within the tolerance: their mean, and both are synced to it.
        std::vector<float> close = honest;
        close[0] += 1e-5f;
        const ReclaimOutcome mean =
            Reclaim::choose(0, {{u"a"_qs, honest}, {u"b"_qs, close}}, h.reference, kSteps, h.settings);
        QCOMPARE(mean.values[0], float(0.5 * (double(honest[0]) + double(close[0]))));
        QVERIFY(mean.keep.isEmpty());
    }

    void aPoisonerAmongThreeIsOutvoted() {
        Harness h;
        const std::vector<float> honest = trained(h.reference, 5);
        std::vector<float> poison = h.reference;
        for (std::size_t i = 0; i < poison.size(); ++i) // as far as the bound lets it, every weight
            poison[i] += (i % 2 ? 1 : -1) * float(kSteps * 3e-3 * 1.9);
        const ReclaimOutcome out = Reclaim::choose(
            0, {{u"a"_qs, honest}, {u"b"_qs, honest}, {u"liar"_qs, poison}}, h.reference, kSteps, h.settings);
        QCOMPARE(out.candidates.size(), 3); // within the bound: only the majority tells
        QVERIFY(out.values == honest);
        QCOMPARE(out.keep, (QStringList{u"a"_qs, u"b"_qs}));
    }

    void weightsNoTrainingCouldReachAreRefused() {
        Harness h;
        std::vector<float> noise = h.reference;
        noise[100] += 1.0f; // 30 steps at lr 3e-3 move a weight ~0.2 at most
        std::vector<float> nan = trained(h.reference, 6);
        nan[7] = std::nanf("");
        std::vector<float> shorter(h.reference.begin(), h.reference.end() - 1);
        const ReclaimOutcome out =
            Reclaim::choose(0, {{u"noise"_qs, noise}, {u"nan"_qs, nan}, {u"short"_qs, shorter}}, h.reference,
                            kSteps, h.settings);
        QVERIFY(out.values.empty()); // the published checkpoint stands
        QCOMPARE(out.refused.size(), 3);
        // The same move is plausible after many more steps: the bound grows with them.
        QCOMPARE(Reclaim::choose(0, {{u"noise"_qs, noise}}, h.reference, 200, h.settings).candidates.size(),
                 1);
    }

    void aNodeThatFailedAnAuditIsNotTaken() {
        Harness h;
        h.failedAudits.insert(u"a"_qs, 1);
        h.reclaim->expect(u"a"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        QVERIFY(h.answer(u"a"_qs, trained(h.reference, 7)));
        const ReclaimOutcome out = only(settled);
        QVERIFY(!out.took);
        QVERIFY(h.taken.empty());
        QCOMPARE(out.refused, QStringList{u"a"_qs});
        QCOMPARE(out.held, QStringList{u"a"_qs}); // synced from the checkpoint by Membership
    }

    void aNewNodeIsHeldAndAnAbsentOneDoesNotBlock() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        h.reclaim->expect(u"gone"_qs, 0); // never comes back
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"new"_qs, 0)); // held, not asked: it holds nothing of the run
        QVERIFY(!h.asked.contains(u"new"_qs));
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        QCOMPARE(h.reclaim->waiting(0), 2);
        QVERIFY(h.answer(u"a"_qs, trained(h.reference, 8)));
        QCOMPARE(settled.size(), 0); // "gone" may still come within the window
        h.t += h.settings.windowMs;
        h.reclaim->tick();
        QCOMPARE(settled.size(), 1);
        const ReclaimOutcome out = only(settled);
        QCOMPARE(out.keep, QStringList{u"a"_qs});
        QCOMPARE(out.held, (QStringList{u"new"_qs, u"a"_qs}));
    }

    void anExpectedNodeThatNeverAnswersMeetsTheDeadline() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        h.t += h.settings.windowMs;
        h.reclaim->tick();
        QCOMPARE(settled.size(), 0); // asked and connected: it may still answer
        h.t += h.settings.deadlineMs;
        h.reclaim->tick();
        QCOMPARE(settled.size(), 1);
        QVERIFY(!only(settled).took);
        // Its late answer belongs to no reclaim.
        QVERIFY(!h.answer(u"a"_qs, trained(h.reference, 9)));
    }

    void aStageNobodyHeldIsNotHeld() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        QVERIFY(!h.reclaim->onReady(u"b"_qs, 1));
        QVERIFY(!h.reclaim->holds(u"b"_qs));
    }

    void anAnswerInChunksIsWrittenToDiskAndTakenInPieces() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        h.reclaim->expect(u"b"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        QVERIFY(h.reclaim->onReady(u"b"_qs, 0));
        const std::vector<float> weights = trained(h.reference, 11);
        QVERIFY(h.answerInChunks(u"a"_qs, weights, 1000));
        QCOMPARE(settled.size(), 0);
        QVERIFY(h.answerInChunks(u"b"_qs, weights, 1024));
        QCOMPARE(settled.size(), 1);
        const ReclaimOutcome out = only(settled);
        QVERIFY(out.took);
        QVERIFY(h.taken == weights); // partition by partition, in order
        QCOMPARE(out.keep, (QStringList{u"a"_qs, u"b"_qs}));
    }

    void aSlowAnswerIsWaitedForWhileItComesUpToTheLongest() {
        // Five chunks 15 s apart: 60 s in all, past the 20 s deadline, which each chunk restarts.
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        const std::vector<float> weights = trained(h.reference, 15);
        QVERIFY(h.answerInChunks(u"a"_qs, weights, 1000, -1, 15'000));
        QCOMPARE(settled.size(), 1);
        QVERIFY(only(settled).took);
        QVERIFY(h.taken == weights);
        // A trickle is not waited for past the longest: 50 s here, so the fifth chunk finds it closed.
        Harness slow([](ReclaimSettings& s) { s.longestMs = 50'000; });
        slow.reclaim->expect(u"a"_qs, 0);
        QSignalSpy closed(slow.reclaim.get(), &Reclaim::settled);
        QVERIFY(slow.reclaim->onReady(u"a"_qs, 0));
        QVERIFY(!slow.answerInChunks(u"a"_qs, weights, 1000, -1, 15'000));
        QCOMPARE(closed.size(), 1);
        QVERIFY(!only(closed).took);
        QVERIFY(slow.taken.empty());
    }

    void anAnswerThatCannotBeWrittenToDiskIsRefusedInWords() {
        // The answers go to files in the spill folder, not to memory: where no file can be made
        // (the folder's path runs through a file), the answer is refused, and the checkpoint stands.
        QTemporaryDir dir;
        QFile blocker(dir.filePath(u"file"_qs));
        QVERIFY(blocker.open(QIODevice::WriteOnly));
        blocker.close();
        Harness h([&dir](ReclaimSettings& s) { s.spillDir = dir.filePath(u"file/reclaim"_qs); });
        h.reclaim->expect(u"a"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        QTest::ignoreMessage(QtWarningMsg,
                             QRegularExpression(u"its answer cannot be written in .*file/reclaim"_qs));
        QVERIFY(!h.answerInChunks(u"a"_qs, trained(h.reference, 14), 1000));
        QCOMPARE(settled.size(), 1);
        QVERIFY(!only(settled).took);
        QCOMPARE(only(settled).refused, QStringList{u"a"_qs});
        QVERIFY(h.taken.empty());
    }

    void aChunkThatDoesNotContinueItsAnswerIsRefused() {
        for (const qint64 from : {qint64(2000), qint64(500)}) { // a gap, an overlap
            Harness h;
            h.reclaim->expect(u"a"_qs, 0);
            QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
            QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
            QVERIFY(!h.answerInChunks(u"a"_qs, trained(h.reference, 12), 1000, from)); // the rest is nobody's
            QCOMPARE(settled.size(), 1);
            const ReclaimOutcome out = only(settled);
            QVERIFY(!out.took);
            QCOMPARE(out.refused, QStringList{u"a"_qs});
            QVERIFY(h.taken.empty());
        }
        // An answer that claims another size than the stage's.
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        std::vector<float> longer = trained(h.reference, 13);
        longer.push_back(0.0f);
        QVERIFY(h.answerInChunks(u"a"_qs, longer, 1000) || settled.size() == 1);
        QCOMPARE(settled.size(), 1);
        QCOMPARE(only(settled).refused, QStringList{u"a"_qs});
    }

    void aNodeThatLeavesIsNotWaitedFor() {
        Harness h;
        h.reclaim->expect(u"a"_qs, 0);
        h.reclaim->expect(u"b"_qs, 0);
        QSignalSpy settled(h.reclaim.get(), &Reclaim::settled);
        QVERIFY(h.reclaim->onReady(u"a"_qs, 0));
        QVERIFY(h.reclaim->onReady(u"b"_qs, 0));
        QVERIFY(h.answer(u"a"_qs, trained(h.reference, 10)));
        h.t += h.settings.windowMs;
        h.reclaim->nodeGone(u"b"_qs);
        QCOMPARE(settled.size(), 1);
        QCOMPARE(only(settled).held, QStringList{u"a"_qs});
    }
};

QTEST_GUILESS_MAIN(TestReclaim)
#include "test_reclaim.moc"
