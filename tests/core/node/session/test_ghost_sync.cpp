// SPDX-License-Identifier: Apache-2.0
// A ghost sync in chunks, end to end in one process: the coordinator's Averager sends the weights of
// the real tiny model's stage 0 in messages far smaller than the stage, straight into a node's
// TaskRunner on a real engine thread, whose sync_done answers go straight back. Shown: the stage
// arrives whole and each weight in its place (the order is the shard's, which the coordinator's
// checkpoint reads a range of at a time), no message exceeds the chunk, a sync cut short (the session
// dropped mid-way) resumes where the ghost's weights stop and sends only the rest, a ghost claiming a
// sync the coordinator did not cut starts afresh, a chunk that does not start where the ghost's
// weights stop (or lies beyond the stage, or is another stage's size) is refused and writes nothing,
// and an answer out of order ends the sync.
#include "TinyFrames.h"
#include "coordinator/training/Averager.h"
#include "engine/StageEngine.h"
#include "node/engine/EngineThread.h"
#include "node/engine/EngineWorker.h"
#include "node/session/NodeInbox.h"
#include "node/session/SessionSender.h"
#include "node/session/TaskRunner.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"
#include "train/StageCheckpointFile.h"

#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

using namespace tessera;
using namespace tessera::test;

namespace {

constexpr qint64 kChunk = 50'000; // weights per message: tiny's stage 0 needs ~10 of them

qint64 stageZeroWeights() {
    gpu::StageEngineOptions options;
    options.config = tinyTwoStages();
    options.stage = 0;
    auto engine = gpu::StageEngine::create(options);
    if (!engine)
        qFatal("%s", engine.message().c_str());
    return (*engine)->parameterCount();
}

// The value weight i of a sync gets: distinct and exact in fp32.
float weight(qint64 i, float scale) {
    return scale * float(i) / float(1 << 20);
}

std::vector<float> checkpointWeights(qint64 total, float scale) {
    std::vector<float> all(static_cast<std::size_t>(total));
    for (qint64 i = 0; i < total; ++i)
        all[std::size_t(i)] = weight(i, scale);
    return all;
}

// A coordinator's Averager and a node's TaskRunner (through the node's inbox), each message handed
// straight to the other.
struct Link : node::SessionSender {
    node::EngineThread thread;
    QObject context;
    std::unique_ptr<node::TaskRunner> runner;
    node::NodeInbox inbox;
    std::unique_ptr<coordinator::Averager> averager;
    float scale = 1; // of the checkpoint's weights
    qint64 total = 0;
    bool connected = true; // false: the session dropped, messages are lost
    qint64 dropAfter = -1; // the session drops once this many chunks arrived (-1: never)
    qint64 chunksArrived = 0;
    qint64 largestMessage = 0;
    qint64 firstOffsetArrived = -1;
    std::vector<std::pair<QString, bool>> synced;
    std::vector<QByteArray> gathered;                   // the node's answers to sync_request
    std::vector<protocol::SyncDone>* answers = nullptr; // set: sync_done recorded, not handed over

    void sendBinary(const QByteArray& m) override { gathered.push_back(QByteArray(m.constData(), m.size())); }
    void send(const protocol::SessionMessage& m) override {
        const auto* done = std::get_if<protocol::SyncDone>(&m);
        if (done && answers)
            answers->push_back(*done);
        else if (done && connected)
            averager->onSyncDone(u"ghost"_qs, *done);
    }

    bool load() {
        std::optional<QString> loaded;
        QObject::connect(thread.worker(), &node::EngineWorker::loaded, &context,
                         [&](const QString& error, qint64) { loaded = error; });
        node::EngineLoadOptions options;
        options.engine.config = tinyTwoStages();
        options.engine.stage = 0;
        options.engine.outputHeadroom = std::size_t(protocol::kTaskMessageHeadroom);
        thread.worker()->load(options);
        if (!QTest::qWaitFor([&] { return loaded.has_value(); }, 60'000) || !loaded->isEmpty())
            return false;
        runner = std::make_unique<node::TaskRunner>(thread.worker(), tinyTwoStages(), 0, *this);
        inbox.setRunner(runner.get());
        coordinator::AveragingSettings settings;
        settings.chunkValues = kChunk;
        averager = std::make_unique<coordinator::Averager>(
            1, [this](int, int) { return total; }, settings,
            [](const QString&, const protocol::SessionMessage&) { return true; },
            [this](const QString&, const QByteArray& bytes) {
                if (dropAfter >= 0 && chunksArrived >= dropAfter)
                    connected = false;
                if (!connected)
                    return true; // sent into a dropped session
                largestMessage = std::max(largestMessage, qint64(bytes.size()));
                Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(bytes);
                Result<protocol::SessionMessage> header =
                    m ? protocol::parseSessionMessage(m->header, protocol::Direction::ToNode,
                                                      protocol::Transport::Binary)
                      : m.error();
                if (!header)
                    qFatal("the averager sent a malformed sync: %s", header.message().c_str());
                if (firstOffsetArrived < 0)
                    firstOffsetArrived = std::get<protocol::Sync>(*header).offset;
                ++chunksArrived;
                inbox.receiveBinary(bytes);
                return true;
            });
        averager->setWeights([this](int, qint64 offset, qint64 count) {
            std::vector<float> v(static_cast<std::size_t>(count));
            for (qint64 i = 0; i < count; ++i)
                v[std::size_t(i)] = weight(offset + i, scale);
            return v;
        });
        QObject::connect(averager.get(), &coordinator::Averager::synced, &context,
                         [this](const QString& ghost, int, bool ok) { synced.emplace_back(ghost, ok); });
        return true;
    }

    // The node's weights as the engine gathers them for a sync_request (SPARTA's order).
    std::vector<float> gatheredWeights() {
        const std::size_t before = gathered.size();
        inbox.receive(protocol::SyncRequest{999, 20, 0});
        if (!QTest::qWaitFor([&] { return gathered.size() > before; }, 60'000))
            qFatal("no answer to the sync request");
        Result<protocol::TaskMessage> m = protocol::decodeTaskMessage(gathered.back());
        Result<std::vector<float>> v =
            protocol::partitionValues(*m->frame(protocol::TaskFrameType::Partition));
        if (!v)
            qFatal("%s", v.message().c_str());
        return *v;
    }
    // Whether the node holds the checkpoint's weights at `s`, each in its place: what a fresh engine
    // given them whole gathers, in the same order (and that order is the shard's:
    // theSyncsOrderIsTheShards).
    bool holds(float s) {
        gpu::StageEngineOptions options;
        options.config = tinyTwoStages();
        auto engine = gpu::StageEngine::create(options);
        if (!engine || !(*engine)->setWeightsRange(0, total, checkpointWeights(total, s)))
            qFatal("the reference engine did not take the weights");
        return gatheredWeights() == (*engine)->gatherPartition(-1, 20).value();
    }
    bool waitSynced(std::size_t count) {
        return QTest::qWaitFor([&] { return synced.size() >= count; }, 60'000);
    }
};

QByteArray syncChunk(qint64 round, qint64 offset, qint64 total) {
    const std::vector<float> v(std::size_t(kChunk), 0.5f);
    const QByteArrayView payload = protocol::partitionPayload(v);
    return protocol::TaskMessageBuilder(protocol::toJson(protocol::Sync{round, offset, total}),
                                        payload.size())
        .add(protocol::TaskFrameType::Partition, payload)
        .take();
}

} // namespace

class TestGhostSync : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theSyncsOrderIsTheShards() {
        // Weights set through the sync's ranges (three chunks, across parameter boundaries) are where
        // the stage's shard has them: the coordinator's checkpoint reads those ranges back unchanged.
        const qint64 total = stageZeroWeights();
        const std::vector<float> all = checkpointWeights(total, 1);
        gpu::StageEngineOptions options;
        options.config = tinyTwoStages();
        auto engine = gpu::StageEngine::create(options);
        QVERIFY(engine);
        const qint64 third = total / 3;
        for (qint64 at = 0; at < total; at += third) {
            const qint64 n = std::min(third, total - at);
            QVERIFY((*engine)->setWeightsRange(at, total,
                                               std::span(all).subspan(std::size_t(at), std::size_t(n))));
        }
        QTemporaryDir dir;
        const std::filesystem::path root(dir.path().toStdString());
        Result<gpu::ShardManifest> manifest = (*engine)->saveShard(root / "stage-0.safetensors", 1, 0);
        QVERIFY2(manifest, manifest ? "" : manifest.message().c_str());
        auto file =
            gpu::StageCheckpointFile::open(tinyTwoStages(), 0, root / "stage-0.safetensors", *manifest, root);
        QVERIFY2(file, file ? "" : file.message().c_str());
        QVERIFY((*file)->readRange(0, total).value() == all);
        const qint64 at = total / 2 - 12345, n = 2 * kChunk; // crosses at least one parameter's end
        QVERIFY((*file)->readRange(at, n).value() ==
                std::vector<float>(all.begin() + at, all.begin() + at + n));
        QVERIFY(!(*file)->readRange(total - 1, 2));
        // A range the stage does not have, another stage's size, or values not finite: refused.
        const std::vector<float> before = (*engine)->gatherPartition(-1, 20).value();
        QVERIFY(!(*engine)->setWeightsRange(total - 1, total, std::span(all).first(2)));
        QVERIFY(!(*engine)->setWeightsRange(0, total + 1, std::span(all).first(2)));
        const std::vector<float> poisoned{1.f, std::nanf(""), 2.f};
        QVERIFY(!(*engine)->setWeightsRange(0, total, poisoned));
        QVERIFY((*engine)->gatherPartition(-1, 20).value() == before);
    }

    void aStageLargerThanAMessageArrivesWholeInChunks() {
        Link link;
        QVERIFY(link.load());
        link.total = stageZeroWeights();
        QVERIFY(link.total > 8 * kChunk);

        link.averager->startSync(u"ghost"_qs, 0);
        QVERIFY(link.waitSynced(1));
        QCOMPARE(link.synced.back().second, true);
        const qint64 chunks = (link.total + kChunk - 1) / kChunk;
        QCOMPARE(link.chunksArrived, chunks);
        QCOMPARE(link.averager->syncChunksSent(), chunks);
        // Every message: one chunk of fp32 and its envelope, nothing like the stage.
        QVERIFY(link.largestMessage <= kChunk * 4 + 4096);
        QVERIFY(link.holds(1));
        // Done: nothing partial is reported any more.
        QCOMPARE(link.runner->syncProgress().round(), qint64(0));
    }

    void aSyncCutShortResumesWhereTheGhostsWeightsStop() {
        Link link;
        QVERIFY(link.load());
        link.total = stageZeroWeights();
        link.scale = 2;
        // The session drops once three chunks arrived (two answered, two more sent, one of them lost).
        link.dropAfter = 3;
        link.averager->startSync(u"ghost"_qs, 0);
        QVERIFY(
            QTest::qWaitFor([&] { return link.runner->syncProgress().received() == 3 * kChunk; }, 60'000));
        link.averager->nodeGone(u"ghost"_qs);
        QVERIFY(link.waitSynced(1));
        QCOMPARE(link.synced.back().second, false);
        const qint64 round = link.runner->syncProgress().round();
        const qint64 held = link.runner->syncProgress().received();
        QVERIFY(round > 0);
        QCOMPARE(held, 3 * kChunk);

        // Back (its ready message says what it holds): only the rest is sent, in the same round.
        link.dropAfter = -1;
        link.connected = true;
        link.chunksArrived = 0;
        link.firstOffsetArrived = -1;
        link.averager->startSync(u"ghost"_qs, 0, round, held);
        QVERIFY(link.waitSynced(2));
        QCOMPARE(link.synced.back().second, true);
        QCOMPARE(link.averager->syncsResumed(), qint64(1));
        QCOMPARE(link.firstOffsetArrived, held);
        QCOMPARE(link.chunksArrived, (link.total - held + kChunk - 1) / kChunk);
        QVERIFY(link.holds(2));

        // A claim of a sync the coordinator did not cut (a lie, or a restart) starts from the start.
        link.scale = 3;
        link.firstOffsetArrived = -1;
        link.averager->startSync(u"ghost"_qs, 0, round, held);
        QVERIFY(link.waitSynced(3));
        QCOMPARE(link.synced.back().second, true);
        QCOMPARE(link.averager->syncsResumed(), qint64(1));
        QCOMPARE(link.firstOffsetArrived, qint64(0));
        QVERIFY(link.holds(3));
    }

    void aChunkThatDoesNotStartWhereTheWeightsStopIsRefused() {
        Link link;
        QVERIFY(link.load());
        link.total = stageZeroWeights();
        const std::vector<float> before = link.gatheredWeights();
        std::vector<protocol::SyncDone> answers;
        link.answers = &answers;
        link.runner = std::make_unique<node::TaskRunner>(link.thread.worker(), tinyTwoStages(), 0, link);
        link.inbox.setRunner(link.runner.get());
        // A new round that does not start at 0: the node holds none of it.
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(u"refusing a chunk.*round 7"_qs));
        link.inbox.receiveBinary(syncChunk(7, kChunk, link.total));
        QCOMPARE(answers.size(), std::size_t(1));
        QCOMPARE(answers.back().ok, false);
        QCOMPARE(answers.back().received, qint64(0));
        // A chunk beyond the stage: refused by the node; another stage's size: by the engine.
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(u"refusing a chunk.*not within"_qs));
        link.inbox.receiveBinary(syncChunk(8, link.total - 1, link.total));
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(u"sync of round 9.*this stage has"_qs));
        link.inbox.receiveBinary(syncChunk(9, 0, link.total + 1));
        QVERIFY(QTest::qWaitFor([&] { return answers.size() == 3; }, 30'000));
        QCOMPARE(answers.back().ok, false);
        QVERIFY(link.gatheredWeights() == before); // nothing was written

        // On the coordinator's side, an answer claiming more than was sent ends the sync.
        Link other;
        QVERIFY(other.load());
        other.total = link.total;
        other.connected = false; // chunks are lost: the test answers for the ghost
        other.averager->startSync(u"ghost"_qs, 0);
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(u"sync of ghost.*out of order"_qs));
        other.averager->onSyncDone(u"ghost"_qs, protocol::SyncDone{1, true, {}, 3 * kChunk});
        QVERIFY(other.waitSynced(1));
        QCOMPARE(other.synced.back().second, false);
    }
};

QTEST_GUILESS_MAIN(TestGhostSync)
#include "test_ghost_sync.moc"
