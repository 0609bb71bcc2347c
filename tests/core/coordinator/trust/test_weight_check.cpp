// SPDX-License-Identifier: Apache-2.0
// WeightCheck: what each node shows of its weights after a step against the checkpoint's fingerprint.
// Tried: the same weights (agreed, nobody struck); weights one step behind, zeroed, or another
// stage's count (diverged, named, with why); an answer without a fingerprint, one that does not read,
// a fingerprint under another seed (the answer of an earlier step replayed), and silence past the
// deadline (diverged); a step the node says it could not apply (not judged: it is synced again); a
// node gone (forgotten); a step_done of a step nobody asked about (ignored); one divergence shown in
// two steps' answers, or two steps unanswered (one judgement).
#include "coordinator/trust/WeightCheck.h"

#include <QSignalSpy>
#include <QTest>

#include <vector>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

std::vector<float> weights(float scale) {
    std::vector<float> w(5000);
    for (std::size_t i = 0; i < w.size(); ++i)
        w[i] = scale * float((i * 37) % 101) / 101.0f - 0.5f * scale;
    return w;
}

gpu::WeightFingerprint fingerprint(std::uint64_t seed, const std::vector<float>& w) {
    gpu::WeightFingerprint f(seed);
    f.add(w);
    return f;
}

protocol::StepDone done(qint64 step, const gpu::WeightFingerprint& f) {
    return protocol::StepDone{step, true, 0, {}, QString::fromStdString(f.toText())};
}

} // namespace

class TestWeightCheck : public QObject {
    Q_OBJECT

    qint64 m_now = 1'000'000;

private Q_SLOTS:
    void theSameWeightsAgreeAndOthersAreNamed() {
        WeightCheck check([this] { return m_now; });
        QSignalSpy diverged(&check, &WeightCheck::weightsDiverged);
        QSignalSpy agreed(&check, &WeightCheck::weightsAgreed); // what makes a replica a verifier
        const std::vector<float> honest = weights(0.04f);
        const gpu::WeightFingerprint reference = fingerprint(11, honest);
        check.expect(1, 5, reference, {u"a"_qs, u"b"_qs, u"c"_qs, u"d"_qs, u"e"_qs}, 60'000);

        check.onStepDone(u"a"_qs, done(5, fingerprint(11, honest)));
        QCOMPARE(diverged.count(), 0);
        QCOMPARE(check.agreed(), qint64(1));
        QCOMPARE(agreed.count(), 1);
        QCOMPARE(agreed.last().at(0).toString(), u"a"_qs);

        std::vector<float> behind = honest; // one weight a step behind
        behind[4321] += 1e-4f;
        check.onStepDone(u"b"_qs, done(5, fingerprint(11, behind)));
        QCOMPARE(diverged.count(), 1);
        QCOMPARE(agreed.count(), 1); // b is no verifier
        QCOMPARE(diverged.last().at(0).toString(), u"b"_qs);
        QCOMPARE(diverged.last().at(1).toInt(), 1);
        QVERIFY(diverged.last().at(2).toString().contains(u"differ from its replicas'"));

        check.onStepDone(u"c"_qs, done(5, fingerprint(11, std::vector<float>(5000, 0.0f))));
        QCOMPARE(diverged.count(), 2);

        check.onStepDone(u"d"_qs, done(5, fingerprint(11, std::vector<float>(4000, 0.1f))));
        QCOMPARE(diverged.count(), 3);
        QVERIFY(diverged.last().at(2).toString().contains(u"covers 4000 weights"));

        // The honest weights' fingerprint of an earlier seed, replayed: not this step's answer.
        check.onStepDone(u"e"_qs, done(5, fingerprint(10, honest)));
        QCOMPARE(diverged.count(), 4);
        QCOMPARE(check.status().value(u"pending").toInteger(), qint64(0));
    }

    void silenceAndNonsenseDiverge() {
        WeightCheck check([this] { return m_now; });
        QSignalSpy diverged(&check, &WeightCheck::weightsDiverged);
        const gpu::WeightFingerprint reference = fingerprint(3, weights(1));
        check.expect(0, 9, reference, {u"quiet"_qs, u"blank"_qs, u"garbled"_qs, u"failed"_qs, u"gone"_qs},
                     60'000);

        check.onStepDone(u"blank"_qs, protocol::StepDone{9, true, 0, {}, {}});
        QCOMPARE(diverged.count(), 1);
        QVERIFY(diverged.last().at(2).toString().contains(u"no fingerprint"));
        check.onStepDone(u"garbled"_qs, protocol::StepDone{9, true, 0, {}, u"5000 1 2 x 4 5"_qs});
        QCOMPARE(diverged.count(), 2);
        QVERIFY(diverged.last().at(2).toString().contains(u"does not read"));
        // It could not apply the step: it says so, and is synced again — no judgement.
        check.onStepDone(u"failed"_qs, protocol::StepDone{9, false, 0, u"out of memory"_qs, {}});
        QCOMPARE(diverged.count(), 2);
        check.nodeGone(u"gone"_qs);
        // A step nobody asked about changes nothing.
        check.onStepDone(u"quiet"_qs, done(8, reference));
        QCOMPARE(diverged.count(), 2);

        m_now += 59'000;
        check.tick();
        QCOMPARE(diverged.count(), 2);
        m_now += 2'000;
        check.tick(); // past the deadline: only the quiet one still owed an answer
        QCOMPARE(diverged.count(), 3);
        QCOMPARE(diverged.last().at(0).toString(), u"quiet"_qs);
        QVERIFY(diverged.last().at(2).toString().contains(u"did not answer"));
        QCOMPARE(check.status().value(u"unanswered").toInteger(), qint64(1));
        QCOMPARE(check.status().value(u"pending").toInteger(), qint64(0));
        // Answering late changes nothing more.
        check.onStepDone(u"quiet"_qs, done(9, reference));
        QCOMPARE(diverged.count(), 3);
        QCOMPARE(check.agreed(), qint64(0));
    }

    void oneDivergenceIsJudgedOnce() {
        // Steps 5 and 6 were both asked of the node before its step 5 answer came: the answer of step 6
        // shows the same wrong weights (it is being synced again), and is not a second strike.
        WeightCheck check([this] { return m_now; });
        QSignalSpy diverged(&check, &WeightCheck::weightsDiverged);
        const std::vector<float> honest = weights(0.04f), wrong = weights(0.05f);
        check.expect(0, 5, fingerprint(5, honest), {u"n"_qs, u"quiet"_qs}, 60'000);
        check.expect(0, 6, fingerprint(6, honest), {u"n"_qs, u"quiet"_qs}, 60'000);
        check.onStepDone(u"n"_qs, done(5, fingerprint(5, wrong)));
        check.onStepDone(u"n"_qs, done(6, fingerprint(6, wrong)));
        QCOMPARE(diverged.count(), 1);
        m_now += 61'000;
        check.tick(); // two steps unanswered: one judgement
        QCOMPARE(diverged.count(), 2);
        QCOMPARE(diverged.last().at(0).toString(), u"quiet"_qs);
        QCOMPARE(check.status().value(u"pending").toInteger(), qint64(0));
    }
};

QTEST_GUILESS_MAIN(TestWeightCheck)
#include "test_weight_check.moc"
