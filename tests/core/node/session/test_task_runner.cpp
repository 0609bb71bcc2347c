// SPDX-License-Identifier: Apache-2.0
// TaskRunner: the data plane's messages, through the node's inbox (NodeInbox), drive the real tiny
// model in two stages (CPU) — a microbatch goes forward through both stages and back, a step applies
// what accumulated, an averaging round moves the weights by the delta rule, a ghost syncs, damaged
// messages are refused without touching the engine, and probes and credits go to their parts.
#include "base/TokenFrame.h"
#include "engine/StageEngine.h"
#include "node/engine/EngineThread.h"
#include "node/engine/EngineWorker.h"
#include "node/session/NodeInbox.h"
#include "node/session/SessionSender.h"
#include "node/session/TaskRunner.h"
#include "protocol/PartitionChunks.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include "TinyFrames.h"
#include <QJsonObject>
#include <QRegularExpression>
#include <QSignalSpy>

#include <QTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

using namespace tessera;
using namespace tessera::node;
using namespace tessera::test;

namespace {

using protocol::TaskFrameType;

QJsonObject taskHeader(const char* kind, qint64 taskId, qint64 microbatch) {
    return QJsonObject{{QStringLiteral("type"), QStringLiteral("task")},
                       {QStringLiteral("kind"), QString::fromLatin1(kind)},
                       {QStringLiteral("task_id"), taskId},
                       {QStringLiteral("microbatch"), microbatch}};
}

QByteArray message(const QJsonObject& header,
                   const std::vector<std::pair<TaskFrameType, QByteArray>>& frames = {}) {
    protocol::TaskMessageBuilder builder(header);
    for (const auto& [type, payload] : frames)
        builder.add(type, payload);
    return builder.take();
}

QByteArray partitionMessage(const protocol::SessionMessage& header, const std::vector<float>& values) {
    return protocol::TaskMessageBuilder(protocol::toJson(header))
        .add(TaskFrameType::Partition, protocol::partitionPayload(values))
        .take();
}

// A decoded message (it keeps its bytes: the frames are views into them).
struct Sent {
    protocol::TaskMessage message;
    const QJsonObject& header() const { return message.header; }
};

// One stage: an engine thread with the stage loaded, a TaskRunner whose sends are recorded, and the
// inbox that hands it the messages as the node's does. The runner lives on the test's thread, so what
// it sends is appended here without locking.
struct Replica : SessionSender {
    EngineThread thread;
    QObject context;
    std::optional<QString> loaded;
    std::vector<QByteArray> binary;
    std::vector<QJsonObject> text;
    std::unique_ptr<TaskRunner> runner;
    NodeInbox inbox;

    // A binary message may be a view of the engine's buffer, valid during the call: kept as a copy.
    void sendBinary(const QByteArray& m) override { binary.push_back(QByteArray(m.constData(), m.size())); }
    void send(const protocol::SessionMessage& m) override { text.push_back(protocol::toJson(m)); }

    bool load(int stage) {
        QObject::connect(thread.worker(), &EngineWorker::loaded, &context,
                         [this](const QString& error, qint64) { loaded = error; });
        EngineLoadOptions options;
        options.engine.config = tinyTwoStages();
        options.engine.stage = stage;
        // As the node loads it: results are wrapped where the engine wrote them.
        options.engine.outputHeadroom = std::size_t(protocol::kTaskMessageHeadroom);
        thread.worker()->load(options);
        if (!QTest::qWaitFor([&] { return loaded.has_value(); }, 60'000) || !loaded->isEmpty())
            return false;
        runner = std::make_unique<TaskRunner>(thread.worker(), tinyTwoStages(), stage, *this);
        inbox.setRunner(runner.get());
        return true;
    }

    // Hands a binary message to the inbox and waits for the next binary answer.
    Sent ask(const QByteArray& bytes) {
        const std::size_t before = binary.size();
        inbox.receiveBinary(bytes);
        return nextBinary(before);
    }
    Sent nextBinary(std::size_t before) {
        if (!QTest::qWaitFor([&] { return binary.size() > before; }, 60'000))
            qFatal("no binary answer");
        Result<protocol::TaskMessage> decoded = protocol::decodeTaskMessage(binary.at(before));
        if (!decoded)
            qFatal("the runner sent an undecodable message: %s", decoded.message().c_str());
        return Sent{std::move(decoded).value()};
    }
    QJsonObject askText(const protocol::ToNodeMessage& m) {
        const std::size_t before = text.size();
        inbox.receive(m);
        if (!QTest::qWaitFor([&] { return text.size() > before; }, 60'000))
            qFatal("no text answer");
        return text.at(before);
    }

    Sent forward(qint64 taskId, qint64 mb, const QByteArray& tokens) {
        return ask(message(taskHeader("forward", taskId, mb), {{TaskFrameType::ForwardInput, tokens}}));
    }
    Sent average(qint64 round, int partition) {
        const std::size_t before = binary.size();
        inbox.receive(protocol::Average{round, partition, 20, 0, 0});
        return nextBinary(before);
    }
};

std::vector<float> values(const Sent& sent) {
    const protocol::TaskFrame* frame = sent.message.frame(protocol::TaskFrameType::Partition);
    if (!frame)
        qFatal("no Partition frame");
    Result<std::vector<float>> v = protocol::partitionValues(*frame);
    if (!v)
        qFatal("%s", v.message().c_str());
    return *v;
}

std::int64_t partitionSize(int stage, int partition, int partitions) {
    gpu::StageEngineOptions options;
    options.config = tinyTwoStages();
    options.stage = stage;
    auto engine = gpu::StageEngine::create(options);
    if (!engine)
        qFatal("%s", engine.message().c_str());
    Result<std::int64_t> size = (*engine)->partitionSize(partition, partitions);
    if (!size)
        qFatal("%s", size.message().c_str());
    return *size;
}

QRegularExpression pattern(const char* text) {
    return QRegularExpression(QString::fromLatin1(text));
}

} // namespace

class TestTaskRunner : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aMicrobatchGoesForwardAndBackThroughBothStages() {
        Replica n0, n1;
        QVERIFY(n0.load(0));
        QVERIFY(n1.load(1));

        const Sent f0 = n0.forward(101, 1, tokenFrame(0));
        const QJsonObject& r0 = f0.header();
        QCOMPARE(r0.value(u"type").toString(), u"task_result");
        QVERIFY2(r0.value(u"ok").toBool(), qPrintable(r0.value(u"error").toString()));
        QCOMPARE(r0.value(u"task_id").toInteger(), qint64(101));
        QCOMPARE(r0.value(u"kind").toString(), u"forward");
        QCOMPARE(r0.value(u"microbatch").toInteger(), qint64(1));
        QCOMPARE(r0.value(u"tokens").toInteger(), qint64(kBatch * kSeq));
        QVERIFY(r0.value(u"compute_seconds").toDouble() > 0);
        QVERIFY(!r0.contains(u"loss")); // not the last stage
        QCOMPARE(f0.message.frames.size(), qsizetype(1));
        const protocol::TaskFrame& out = f0.message.frames[0];
        QVERIFY(out.type == TaskFrameType::ForwardOutput);
        QVERIFY(out.payload.startsWith("TSC1")); // the codec frame, which carries its own shape

        // The last stage takes that frame as it came, with the targets, and answers the gradient.
        const Sent fb = n1.ask(message(taskHeader("forward_backward", 102, 1),
                                       {{TaskFrameType::ForwardInput, out.payload.toByteArray()},
                                        {TaskFrameType::Targets, tokenFrame(1)}}));
        const QJsonObject& r1 = fb.header();
        QVERIFY2(r1.value(u"ok").toBool(), qPrintable(r1.value(u"error").toString()));
        const double loss = r1.value(u"loss").toDouble(-1);
        QVERIFY2(loss > 3 && loss < 8, qPrintable(QString::number(loss)));
        const protocol::TaskFrame* grad = fb.message.frame(TaskFrameType::BackwardOutput);
        QVERIFY(grad);
        QCOMPARE(n1.runner->status().value(u"forward_backward").toInteger(), qint64(1));
        QCOMPARE(n1.runner->status().value(u"last_loss").toDouble(), loss);

        // Stage 0's backward through the graph its forward kept: ok, and no frame (stage 0).
        const Sent b0 = n0.ask(message(taskHeader("backward", 103, 1),
                                       {{TaskFrameType::BackwardInput, grad->payload.toByteArray()}}));
        QVERIFY2(b0.header().value(u"ok").toBool(), qPrintable(b0.header().value(u"error").toString()));
        QCOMPARE(b0.message.frames.size(), qsizetype(0));

        // A backward for a microbatch this node holds no graph of, without its input: the
        // coordinator is told, by the error's kind, to send it again with the input.
        const Sent missing = n0.ask(message(taskHeader("backward", 104, 55),
                                            {{TaskFrameType::BackwardInput, grad->payload.toByteArray()}}));
        QCOMPARE(missing.header().value(u"ok").toBool(true), false);
        QCOMPARE(missing.header().value(u"error_kind").toString(), u"missing_graph");
        QCOMPARE(missing.header().value(u"task_id").toInteger(), qint64(104));

        // The step applies the one microbatch that accumulated.
        const QJsonObject done = n0.askText(protocol::Step{1});
        QCOMPARE(done.value(u"type").toString(), u"step_done");
        QCOMPARE(done.value(u"step").toInteger(), qint64(1));
        QCOMPARE(done.value(u"microbatches").toInt(), 1);
        const QJsonObject status = n0.runner->status();
        QCOMPARE(status.value(u"step").toInteger(), qint64(1));
        QCOMPARE(status.value(u"forward").toInteger(), qint64(1));
        QCOMPARE(status.value(u"backward").toInteger(), qint64(1));
        QCOMPARE(status.value(u"failed").toInteger(), qint64(1));
    }

    // One copy per hop: the engine's output frame leaves in a message written around it, and a
    // task's frames reach the engine as views into the message they came in.
    void framesAreNotCopiedOnTheNode() {
        Replica n0;
        QVERIFY(n0.load(0));
        std::optional<EngineResult> seen;
        QObject::connect(n0.thread.worker(), &EngineWorker::taskFinished, &n0.context,
                         [&seen](const EngineResult& r) { seen = r; });
        const QByteArray task =
            message(taskHeader("forward", 301, 9), {{TaskFrameType::ForwardInput, tokenFrame(0)}});
        const Sent f = n0.ask(task);
        QVERIFY(seen && seen->ok);
        // The frame sent is the engine's bytes behind the headroom it left.
        QCOMPARE(seen->output.at, std::size_t(protocol::kTaskMessageHeadroom));
        QCOMPARE(f.message.frames[0].payload, seen->output.view());
    }

    // A coordinator that asks for shares of at most 1,000 values (8b's are 4 Mi a message): the share
    // goes in order, in chunks that together are the unchunked share; a result in chunks of 700 is
    // applied as the whole one would be; a result chunk that skips ahead is refused and applies nothing.
    void aRoundInChunksIsTheWholeRound() {
        Replica n0;
        QVERIFY(n0.load(0));
        const std::vector<float> whole = values(n0.average(20, 2));
        const qint64 size = qint64(whole.size());
        QVERIFY(size > 2'000);
        const std::size_t before = n0.binary.size();
        n0.inbox.receive(protocol::Average{21, 2, 20, 0, 1'000});
        const std::size_t count = std::size_t((size + 999) / 1'000);
        QVERIFY(QTest::qWaitFor([&] { return n0.binary.size() >= before + count; }, 60'000));
        std::vector<float> joined;
        for (std::size_t i = 0; i < count; ++i) {
            const Sent chunk = n0.nextBinary(before + i);
            QCOMPARE(chunk.message.header.value(u"offset").toInteger(), qint64(1'000 * i));
            QCOMPARE(chunk.message.header.value(u"total").toInteger(), size);
            const std::vector<float> part = values(chunk);
            joined.insert(joined.end(), part.begin(), part.end());
        }
        QVERIFY(joined == whole);

        std::vector<float> average = whole;
        for (float& v : average)
            v -= 0.25f;
        const std::vector<QByteArray> chunks =
            protocol::partitionMessages(protocol::AverageResult{21, 2, 2, 0, 0}, std::span(average), 700);
        const qint64 refused = n0.runner->status().value(u"refused").toInteger();
        n0.inbox.receiveBinary(chunks[0]);
        n0.inbox.receiveBinary(chunks[2]); // skips chunk 1: refused, the partial result dropped
        QCOMPARE(n0.runner->status().value(u"refused").toInteger(), refused + 1);
        for (const QByteArray& chunk : chunks)
            n0.inbox.receiveBinary(chunk);
        QTRY_COMPARE_WITH_TIMEOUT(n0.runner->averagingRounds(), qint64(1), 30'000);
        const std::vector<float> after = values(n0.average(22, 2));
        for (std::size_t i = 0; i < after.size(); ++i)
            QVERIFY2(std::abs(after[i] - average[i]) < 1e-5f, qPrintable(QString::number(i)));
    }

    void anAveragingRoundAppliesTheDeltaRule() {
        Replica n0;
        QVERIFY(n0.load(0));
        const Sent share = n0.average(7, 2);
        QCOMPARE(share.message.header.value(u"type").toString(), u"average_share");
        QCOMPARE(share.message.header.value(u"round").toInteger(), qint64(7));
        QCOMPARE(share.message.header.value(u"partition").toInt(), 2);
        const std::vector<float> snapshot = values(share);
        QCOMPARE(qint64(snapshot.size()), partitionSize(0, 2, 20));
        QCOMPARE(n0.runner->snapshotsHeld(), qint64(1));

        // The average differs from what was sent by 0.5 everywhere: the weights move by that.
        std::vector<float> average = snapshot;
        for (float& v : average)
            v += 0.5f;
        n0.inbox.receiveBinary(partitionMessage(protocol::AverageResult{7, 2, 3, 0, 0}, average));
        QTRY_COMPARE_WITH_TIMEOUT(n0.runner->averagingRounds(), qint64(1), 30'000);
        QCOMPARE(n0.runner->snapshotsHeld(), qint64(0));
        const std::vector<float> after = values(n0.average(8, 2));
        QCOMPARE(after.size(), snapshot.size());
        for (std::size_t i = 0; i < after.size(); ++i)
            QVERIFY2(std::abs(after[i] - average[i]) < 1e-5f, qPrintable(QString::number(i)));

        // A result for a round it kept no snapshot of is ignored: nothing moves, nothing is sent.
        const std::size_t sent = n0.binary.size();
        const std::vector<float> stray(after.size(), 100.f);
        n0.inbox.receiveBinary(partitionMessage(protocol::AverageResult{99, 2, 1, 0, 0}, stray));
        QTest::qWait(200);
        QCOMPARE(n0.runner->averagingRounds(), qint64(1));
        QCOMPARE(n0.binary.size(), sent);
        QVERIFY(values(n0.average(9, 2)) == after);
    }

    void aGhostSyncsAllItsWeights() {
        Replica n0;
        QVERIFY(n0.load(0));
        const std::size_t before = n0.binary.size();
        n0.inbox.receive(protocol::SyncRequest{4, 20, 0});
        const Sent all = n0.nextBinary(before);
        QCOMPARE(all.message.header.value(u"partition").toInt(), -1);
        const qint64 total = qint64(values(all).size());
        QCOMPARE(total, partitionSize(0, -1, 20));
        // The sync sends the weights in parameter order (one chunk here; test_ghost_sync: many):
        // distinct increasing values, so the weights sorted are that order back.
        std::vector<float> weights(static_cast<std::size_t>(total));
        for (qint64 i = 0; i < total; ++i)
            weights[std::size_t(i)] = -float(i) / float(1 << 20);
        const std::size_t texts = n0.text.size();
        n0.inbox.receiveBinary(partitionMessage(protocol::Sync{4, 0, total}, weights));
        QTRY_VERIFY_WITH_TIMEOUT(n0.text.size() > texts, 30'000);
        QCOMPARE(n0.text.back().value(u"type").toString(), u"sync_done");
        QCOMPARE(n0.text.back().value(u"round").toInteger(), qint64(4));
        QCOMPARE(n0.text.back().value(u"ok").toBool(), true);
        QCOMPARE(n0.text.back().value(u"received").toInteger(), total);
        const std::size_t again = n0.binary.size();
        n0.inbox.receive(protocol::SyncRequest{5, 20, 0});
        std::vector<float> held = values(n0.nextBinary(again));
        std::sort(held.begin(), held.end());
        std::sort(weights.begin(), weights.end());
        QVERIFY(held == weights);
    }

    void damagedMessagesAreRefusedAndTheEngineKeepsWorking() {
        Replica n0;
        QVERIFY(n0.load(0));
        // Garbage: logged, answered with nothing.
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing a binary message .*magic"));
        n0.inbox.receiveBinary(QByteArrayLiteral("garbage, not a task message"));
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing a binary message .*shorter"));
        n0.inbox.receiveBinary(QByteArray());

        // A task whose frame's payload was damaged: the id is readable, so it gets an error.
        QByteArray broken =
            message(taskHeader("forward", 201, 3), {{TaskFrameType::ForwardInput, tokenFrame(0)}});
        broken[broken.size() - 1] = char(broken.at(broken.size() - 1) ^ 0x01);
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing a binary message .*CRC32C"));
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing task 201"));
        const Sent refused = n0.ask(broken);
        QCOMPARE(refused.header().value(u"task_id").toInteger(), qint64(201));
        QCOMPARE(refused.header().value(u"ok").toBool(true), false);
        QCOMPARE(refused.header().value(u"error_kind").toString(), u"invalid_input");
        QVERIFY(refused.header().value(u"error").toString().contains(u"CRC32C"));
        QCOMPARE(n0.binary.size(), std::size_t(1)); // the garbage got no answer

        // A task without its input frame, and one of an unknown kind (answered by its id all the same).
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing task 202"));
        QCOMPARE(n0.ask(message(taskHeader("forward", 202, 3))).message.header.value(u"ok").toBool(true),
                 false);
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing a binary message .*task.kind"));
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing task 203"));
        QCOMPARE(n0.ask(message(taskHeader("dance", 203, 3))).message.header.value(u"ok").toBool(true),
                 false);

        // Nothing reached the engine, and a real task still runs.
        QCOMPARE(n0.runner->status().value(u"in_flight").toInteger(), qint64(0));
        const Sent good = n0.forward(204, 3, tokenFrame(0));
        QVERIFY2(good.message.header.value(u"ok").toBool(),
                 qPrintable(good.message.header.value(u"error").toString()));
        QCOMPARE(n0.runner->status().value(u"refused").toInteger(), qint64(5));
    }

    void probesAndCreditsGoToTheirPartsNotTheRunner() {
        Replica n0;
        QVERIFY(n0.load(0));
        QSignalSpy probes(&n0.inbox, &NodeInbox::probeAsked);
        QSignalSpy credits(&n0.inbox, &NodeInbox::creditsWaiting);
        protocol::Task probe;
        probe.kind = protocol::TaskKind::Probe;
        n0.inbox.receive(probe);
        n0.inbox.receive(protocol::Credits{});
        QCOMPARE(probes.size(), 1);
        QCOMPARE(credits.size(), 1);
        QCOMPARE(n0.runner->status().value(u"in_flight").toInteger(), qint64(0));
        // A forward as text cannot carry its frames: refused at once (binary, like every result).
        QTest::ignoreMessage(QtWarningMsg, pattern("refusing task 7"));
        protocol::Task forward;
        forward.taskId = 7;
        forward.microbatch = 1;
        n0.inbox.receive(forward);
        QCOMPARE(n0.binary.size(), std::size_t(1));
        QVERIFY(n0.text.empty());
        const Result<protocol::TaskMessage> refused = protocol::decodeTaskMessage(n0.binary.front());
        QVERIFY(refused);
        QCOMPARE(refused->header.value(u"ok").toBool(true), false);
    }

    void betweenStagesOnlyProbesRun() {
        Replica n0;
        QVERIFY(n0.load(0));
        QSignalSpy probes(&n0.inbox, &NodeInbox::probeAsked);
        n0.runner.reset(); // a reassign: the old stage's runner is gone, the new one not made yet
        n0.inbox.receiveBinary(
            message(taskHeader("forward", 301, 1), {{TaskFrameType::ForwardInput, tokenFrame(0)}}));
        QTest::ignoreMessage(QtInfoMsg, pattern("ignoring a forward task: this node is switching stage"));
        protocol::Task forward;
        forward.taskId = 302;
        n0.inbox.receive(forward);
        n0.inbox.receive(protocol::Step{1});
        protocol::Task probe;
        probe.kind = protocol::TaskKind::Probe;
        n0.inbox.receive(probe);
        QCOMPARE(probes.size(), 1);
        QVERIFY(n0.binary.empty());
        QVERIFY(n0.text.empty());
    }
};

QTEST_GUILESS_MAIN(TestTaskRunner)
#include "test_task_runner.moc"
