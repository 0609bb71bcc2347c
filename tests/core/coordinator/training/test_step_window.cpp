// SPDX-License-Identifier: Apache-2.0
// StepWindow: which step a microbatch counts toward and when a step ends, synchronous (depth 1) and
// asynchronous (depth 2) — the next step fills while a step finishes, the one after waits for an
// update, a step ends on its own microbatches only, an abandoned microbatch is replaced in its step,
// a restart's leftovers count toward the next step, and nothing is issued past --max-steps.
#include "coordinator/training/StepWindow.h"

#include <QTest>

using namespace tessera::coordinator;

namespace {

// Issues from the window until it holds back; returns the steps given out.
QList<qint64> fill(StepWindow& w) {
    QList<qint64> steps;
    while (const std::optional<qint64> step = w.next()) {
        w.issued(*step);
        steps << *step;
    }
    return steps;
}

} // namespace

class TestStepWindow final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void synchronousStepsWaitForTheUpdate() {
        StepWindow w(2, 1, 0);
        QCOMPARE(fill(w), (QList<qint64>{1, 1}));
        w.completed(1);
        QVERIFY(!w.complete());
        w.completed(1);
        QVERIFY(w.complete());
        QCOMPARE(w.end(), 1);
        QVERIFY(!w.next()); // step 1's update is not out yet
        w.updated(1);
        QCOMPARE(fill(w), (QList<qint64>{2, 2}));
    }

    void theAsynchronousPipelineFillsTheNextStepAndWaitsForTheOneBefore() {
        StepWindow w(2, 2, 0);
        // Steps 1 and 2 at once: step 2 runs on the initial weights, as step 1 does.
        QCOMPARE(fill(w), (QList<qint64>{1, 1, 2, 2}));
        // Step 2's microbatches finish first: they do not end step 1.
        QCOMPARE(w.completed(2), 2);
        QCOMPARE(w.completed(2), 2);
        QVERIFY(!w.complete());
        w.completed(1);
        w.completed(1);
        QCOMPARE(w.end(), 1);
        QVERIFY(w.complete()); // step 2 was complete already
        QCOMPARE(w.end(), 2);
        // Step 3 needs step 1's update, step 4 step 2's.
        QVERIFY(!w.next());
        w.updated(1);
        QCOMPARE(fill(w), (QList<qint64>{3, 3}));
        w.updated(2);
        QCOMPARE(fill(w), (QList<qint64>{4, 4}));
    }

    void anAbandonedMicrobatchIsReplacedInItsStep() {
        StepWindow w(2, 2, 0);
        QCOMPARE(fill(w), (QList<qint64>{1, 1, 2, 2}));
        w.abandoned(1);
        QCOMPARE(fill(w), (QList<qint64>{1}));
        QCOMPARE(w.alive(1), 2);
    }

    void aRestartsLeftoversCountTowardTheNextStep() {
        StepWindow w(2, 1, 10);
        QCOMPARE(w.completed(7), 11); // a microbatch of a step the restarted coordinator passed
        QCOMPARE(w.completedOf(11), 1);
        QCOMPARE(w.lastUpdated(), 10); // the step it resumes at counts as sent
        QCOMPARE(fill(w), (QList<qint64>{11, 11}));
    }

    void nothingIsIssuedPastTheLastStep() {
        StepWindow w(2, 2, 0, 1);
        QCOMPARE(fill(w), (QList<qint64>{1, 1}));
    }
};

QTEST_GUILESS_MAIN(TestStepWindow)
#include "test_step_window.moc"
