// SPDX-License-Identifier: Apache-2.0
// EngineQueue: the engine's waiting tasks are bounded in count (4,096) and in bytes (1 GiB), so a
// coordinator flooding a node — many tasks, or few of the largest size — is answered "full" instead
// of filling the volunteer's memory; what leaves the queue gives its room back.
#include "node/engine/EngineQueue.h"

#include <QTest>

using namespace tessera::node;

namespace {

EngineTask withMessage(qint64 id, const QByteArray& message) {
    EngineTask t;
    t.taskId = id;
    t.kind = EngineTask::SetWeights;
    t.message = message; // shared by copy-on-write: the test holds one buffer, the queue counts each
    return t;
}

} // namespace

class TestEngineQueue final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void countIsBounded() {
        EngineQueue queue;
        for (qint64 i = 0; i < qint64(EngineQueue::kMaxTasks); ++i)
            QVERIFY(queue.push(withMessage(i, QByteArray(16, 'x'))).isEmpty());
        QCOMPARE(queue.push(withMessage(-1, QByteArray(16, 'x'))),
                 QStringLiteral("the engine's queue is full (4096 tasks)"));
        QCOMPARE(queue.size(), EngineQueue::kMaxTasks);
        // Taking one makes room for one, in order.
        QCOMPARE(queue.take()->taskId, qint64(0));
        QVERIFY(queue.push(withMessage(4096, QByteArray(16, 'x'))).isEmpty());
    }

    void bytesAreBounded() {
        EngineQueue queue;
        const QByteArray largest(qsizetype(256) << 20, '\0');
        for (qint64 i = 0; i < 4; ++i)
            QVERIFY(queue.push(withMessage(i, largest)).isEmpty());
        QCOMPARE(queue.bytes(), EngineQueue::kMaxBytes);
        QCOMPARE(queue.push(withMessage(4, largest)),
                 QStringLiteral("the engine's queue is full (1024 MiB waiting, at most 1024 MiB)"));
        // Values vectors count too (a sync's or an average's weights).
        EngineTask values;
        values.kind = EngineTask::ApplyDelta;
        values.values.resize(16);
        QVERIFY(!queue.push(values).isEmpty());
        (void)queue.take();
        QCOMPARE(queue.bytes(), EngineQueue::kMaxBytes - largest.size());
        QVERIFY(queue.push(values).isEmpty());
        queue.clear();
        QCOMPARE(queue.bytes(), qint64(0));
        QVERIFY(queue.empty());
    }

    void sharesGoAheadOfQueuedMicrobatchesOnly() {
        EngineQueue queue;
        const auto task = [](qint64 id, EngineTask::Kind kind) {
            EngineTask t;
            t.taskId = id;
            t.kind = kind;
            return t;
        };
        QVERIFY(queue.push(task(1, EngineTask::Forward)).isEmpty());
        QVERIFY(queue.push(task(2, EngineTask::ShareGradients)).isEmpty());
        QVERIFY(queue.push(task(3, EngineTask::Backward)).isEmpty());
        QVERIFY(queue.push(task(4, EngineTask::ShareOnBasis)).isEmpty());
        QVERIFY(queue.push(task(5, EngineTask::ApplyGradients)).isEmpty());
        QVERIFY(queue.push(task(6, EngineTask::Forward)).isEmpty());
        QVERIFY(queue.push(task(7, EngineTask::ShareGradients)).isEmpty());
        // The shares need nothing the microbatches make: they run before the microbatches at the
        // queue's end, in the order they came; a result is applied in its place (after the
        // microbatches queued before it), and no share goes ahead of it.
        QList<qint64> order;
        while (std::optional<EngineTask> t = queue.take())
            order << t->taskId;
        QCOMPARE(order, (QList<qint64>{2, 4, 1, 3, 5, 7, 6}));
    }

    void aLargeTaskAloneIsTaken() {
        // One message larger than the room left is still served when nothing else waits.
        EngineQueue queue;
        EngineTask huge;
        huge.values.resize(std::size_t(EngineQueue::kMaxBytes / 4) + 1);
        QVERIFY(queue.push(std::move(huge)).isEmpty());
        QVERIFY(!queue.push(withMessage(1, QByteArray(1, 'x'))).isEmpty());
    }

    void discardingGivesTheRoomBack() {
        EngineQueue queue;
        const QByteArray largest(qsizetype(256) << 20, '\0');
        EngineTask probe;
        probe.kind = EngineTask::Probe;
        QVERIFY(queue.push(probe).isEmpty());
        for (qint64 i = 0; i < 4; ++i)
            QVERIFY(queue.push(withMessage(i, largest)).isEmpty());
        queue.eraseIf([](const EngineTask& t) { return t.kind != EngineTask::Probe; });
        QCOMPARE(queue.size(), std::size_t(1));
        QCOMPARE(queue.bytes(), qint64(0));
        for (qint64 i = 0; i < 4; ++i)
            QVERIFY(queue.push(withMessage(i, largest)).isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestEngineQueue)
#include "test_engine_queue.moc"
