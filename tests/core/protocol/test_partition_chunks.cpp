// SPDX-License-Identifier: Apache-2.0
// PartitionChunks: weights larger than a chunk travel as in-order chunks (offset, total) that decode
// as ordinary average_share / average_result messages, and the receiver's PartitionAssembly gives
// back exactly the whole. Tried: a share that fits one chunk (whole, no offset or total), one of
// 10 values in chunks of 3, chunks out of order, a gap, a chunk past the total, a total above what
// the receiver allows, another round interleaved, a restart at offset 0, a chunk without its frame,
// an empty partition.
#include "protocol/PartitionChunks.h"

#include <QTest>

#include <numeric>
#include <vector>

using namespace tessera;
using namespace tessera::protocol;

namespace {

std::vector<float> ramp(int n) {
    std::vector<float> v(std::size_t(n), 0.f);
    std::iota(v.begin(), v.end(), 0.5f);
    return v;
}

struct Chunk {
    TaskMessage message;
    AverageShare share;
};

std::vector<Chunk> decodeAll(const std::vector<QByteArray>& messages) {
    std::vector<Chunk> out;
    for (const QByteArray& bytes : messages) {
        Result<TaskMessage> m = decodeTaskMessage(bytes);
        if (!m)
            qFatal("%s", m.message().c_str());
        Result<SessionMessage> h =
            parseSessionMessage(m->header, Direction::ToCoordinator, Transport::Binary);
        if (!h || !std::holds_alternative<AverageShare>(*h))
            qFatal("not an average_share");
        out.push_back({*m, std::get<AverageShare>(*h)});
    }
    return out;
}

Result<std::optional<TaskMessage>> feed(PartitionAssembly& a, const Chunk& c) {
    return a.add(c.message, c.share.round, c.share.partition, c.share.offset, c.share.total);
}

const AverageShare kShare{4, 2, 20, true, {}, 0, 0};

} // namespace

class TestPartitionChunks final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aShareThatFitsTravelsWhole() {
        const std::vector<Chunk> chunks =
            decodeAll(partitionMessages(kShare, std::span<const float>(ramp(3)), 3));
        QCOMPARE(chunks.size(), std::size_t(1));
        QCOMPARE(chunks[0].share.total, qint64(0));
        QVERIFY(!chunks[0].message.header.contains(u"offset") || chunks[0].share.offset == 0);
        QCOMPARE(partitionValues(chunks[0].message).value(), ramp(3));
    }

    void chunksPutTogetherGiveTheWhole() {
        const std::vector<float> values = ramp(10);
        const std::vector<Chunk> chunks = decodeAll(partitionMessages(kShare, std::span(values), 3));
        QCOMPARE(chunks.size(), std::size_t(4));
        PartitionAssembly assembly(100);
        for (std::size_t i = 0; i < chunks.size(); ++i) {
            QCOMPARE(chunks[i].share.offset, qint64(3 * i));
            QCOMPARE(chunks[i].share.total, qint64(10));
            Result<std::optional<TaskMessage>> r = feed(assembly, chunks[i]);
            QVERIFY2(r, r ? "" : r.message().c_str());
            QCOMPARE(r->has_value(), i + 1 == chunks.size());
            if (r->has_value()) {
                const TaskMessage& whole = **r;
                QCOMPARE(partitionValues(whole).value(), values);
                QVERIFY(!whole.header.contains(u"offset") && !whole.header.contains(u"total"));
                QCOMPARE(whole.header.value(u"round").toInteger(), qint64(4));
                // What a handler reads of it: the frame, held past the message.
                const HeldFrame held = whole.hold(TaskFrameType::Partition);
                QCOMPARE(held.frame.payload.size(), qsizetype(40));
            }
        }
        QVERIFY(!assembly.active());
        // A result goes the same way (its header type is the result's).
        const std::vector<QByteArray> results =
            partitionMessages(AverageResult{4, 2, 3, 0, 0}, std::span(values), 4);
        QCOMPARE(results.size(), std::size_t(3));
        const Result<TaskMessage> first = decodeTaskMessage(results[0]);
        QVERIFY(first && parseSessionMessage(first->header, Direction::ToNode, Transport::Binary));
    }

    void chunksThatDoNotContinueAreRefused() {
        const std::vector<Chunk> chunks =
            decodeAll(partitionMessages(kShare, std::span<const float>(ramp(10)), 3));
        PartitionAssembly assembly(100);
        QVERIFY(feed(assembly, chunks[0]));
        const Result<std::optional<TaskMessage>> gap = feed(assembly, chunks[2]);
        QVERIFY(!gap);
        QVERIFY2(QString::fromStdString(gap.message()).contains(u"expected offset 3"), gap.message().c_str());
        QVERIFY(!assembly.active());                                     // what was gathered is dropped
        QVERIFY(!feed(assembly, chunks[1]));                             // and cannot be continued
        QVERIFY(feed(assembly, chunks[0]) && feed(assembly, chunks[1])); // a restart at 0 is a new one

        // Another round's chunk in the middle of one.
        const std::vector<Chunk> other = decodeAll(
            partitionMessages(AverageShare{5, 2, 20, true, {}, 0, 0}, std::span<const float>(ramp(10)), 3));
        QVERIFY(!feed(assembly, other[1]));

        // A total above what the receiver allows, and a chunk past the total.
        PartitionAssembly small(9);
        QVERIFY(!feed(small, chunks[0]));
        PartitionAssembly fresh(100);
        QVERIFY(feed(fresh, chunks[0]) && feed(fresh, chunks[1]) && feed(fresh, chunks[2]));
        Chunk tooLong = chunks[1]; // 3 values at 9 of 10
        tooLong.share.offset = 9;
        QVERIFY(!feed(fresh, tooLong));
        Chunk noTotal = chunks[0];
        noTotal.share.total = -1;
        QVERIFY(!feed(fresh, noTotal));
        Chunk noFrame = chunks[0]; // a chunk's header without its values
        noFrame.message.frames.clear();
        QVERIFY(!feed(fresh, noFrame));
    }

    void anEmptyPartitionIsOneMessage() {
        const std::vector<QByteArray> m = partitionMessages(kShare, std::span<const float>(), 3);
        QCOMPARE(m.size(), std::size_t(1));
        QCOMPARE(partitionChunkValues(0), kPartitionChunkValues);
        QCOMPARE(partitionChunkValues(qint64(1) << 40), kMaxPartitionChunkValues);
    }
};

QTEST_GUILESS_MAIN(TestPartitionChunks)
#include "test_partition_chunks.moc"
