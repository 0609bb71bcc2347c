// SPDX-License-Identifier: Apache-2.0
// TaskFrame: tensor frames round-trip, and any damaged, truncated, padded, oversize or random frame
// is refused with the failing field named, without crashing or reading past the buffer.
#include "protocol/Crc32c.h"
#include "protocol/TaskFrame.h"

#include <QRandomGenerator>
#include <QTest>
#include <QtEndian>

#include <cstring>
#include <string>

using namespace tessera;
using protocol::TaskFrameType;

namespace {

QByteArray samplePayload(qsizetype size) {
    QByteArray payload(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        payload[i] = char(i * 37 + 11);
    return payload;
}

QByteArray frameOf(TaskFrameType type, const QByteArray& payload) {
    QByteArray frame(protocol::kTaskFrameHeaderBytes + payload.size(), Qt::Uninitialized);
    protocol::writeTaskFrameHeader(frame.data(), type, quint32(payload.size()), protocol::crc32c(payload));
    if (!payload.isEmpty())
        std::memcpy(frame.data() + protocol::kTaskFrameHeaderBytes, payload.constData(),
                    std::size_t(payload.size()));
    return frame;
}

bool contains(const Result<protocol::TaskFrame>& r, const char* text) {
    return !r && r.message().find(text) != std::string::npos;
}

} // namespace

class TestTaskFrame : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void crcTestVectors() {
        QCOMPARE(protocol::crc32c(QByteArrayView("123456789")), 0xE3069283u);
        QCOMPARE(protocol::crc32c(QByteArray(32, '\0')), 0x8A9136AAu);
        QCOMPARE(protocol::crc32c(QByteArray(32, '\xFF')), 0x62A8AB43u);
        QCOMPARE(protocol::crc32c(QByteArrayView()), 0u);
    }

    void crcOfEveryLengthAndAlignmentMatchesBytewise() {
        // Slicing-by-8 against the definition, a byte at a time, over every length and start.
        const QByteArray data = samplePayload(97);
        const auto bytewise = [](QByteArrayView d) {
            quint32 crc = 0xFFFFFFFFu;
            for (const char c : d) {
                crc ^= quint8(c);
                for (int bit = 0; bit < 8; ++bit)
                    crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
            }
            return crc ^ 0xFFFFFFFFu;
        };
        for (qsizetype start = 0; start < 8; ++start)
            for (qsizetype length = 0; start + length <= data.size(); ++length) {
                const QByteArrayView part = QByteArrayView(data).sliced(start, length);
                QCOMPARE(protocol::crc32c(part), bytewise(part));
            }
    }

    void roundTripsEveryType_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("payloadBytes");
        QTest::newRow("forward input (tokens)") << int(TaskFrameType::ForwardInput) << 32;
        QTest::newRow("forward output") << int(TaskFrameType::ForwardOutput) << 128;
        QTest::newRow("backward input") << int(TaskFrameType::BackwardInput) << 128;
        QTest::newRow("backward output") << int(TaskFrameType::BackwardOutput) << 64;
        QTest::newRow("targets, empty payload") << int(TaskFrameType::Targets) << 0;
        QTest::newRow("partition") << int(TaskFrameType::Partition) << 40;
    }
    void roundTripsEveryType() {
        QFETCH(int, type);
        QFETCH(int, payloadBytes);
        const QByteArray payload = samplePayload(payloadBytes);
        const QByteArray frame = frameOf(TaskFrameType(type), payload);
        QCOMPARE(frame.size(), protocol::kTaskFrameHeaderBytes + payloadBytes);
        QCOMPARE(frame.left(4), QByteArray("TSF1"));

        const Result<protocol::TaskFrame> r = protocol::decodeTaskFrame(frame);
        QVERIFY2(r, r ? "" : r.message().c_str());
        QCOMPARE(r->type, TaskFrameType(type));
        QCOMPARE(r->crc32c, protocol::crc32c(payload));
        QCOMPARE(r->payload, QByteArrayView(payload));
        if (payloadBytes > 0) // a view into the frame, not a copy
            QCOMPARE(r->payload.data(), frame.constData() + protocol::kTaskFrameHeaderBytes);
    }

    void fieldsAreLittleEndianAtTheirOffsets() {
        const QByteArray frame = frameOf(TaskFrameType::ForwardOutput, samplePayload(4));
        QCOMPARE(frame.mid(4, 2), QByteArray("\x02\x00", 2));         // version
        QCOMPARE(frame.at(6), char(TaskFrameType::ForwardOutput));    // type
        QCOMPARE(frame.at(7), char(0));                               // reserved
        QCOMPARE(frame.mid(8, 4), QByteArray("\x04\x00\x00\x00", 4)); // payload length
        quint32 crc = protocol::crc32c(samplePayload(4));
        QCOMPARE(frame.mid(12, 4), QByteArray(reinterpret_cast<const char*>(&crc), 4)); // CRC32C
    }

    void namesTheFailingFieldAndItsKind() {
        const QByteArray good = frameOf(TaskFrameType::ForwardOutput, samplePayload(16));
        auto with = [&](qsizetype at, char value) {
            QByteArray frame = good;
            frame[at] = value;
            return protocol::decodeTaskFrame(frame);
        };
        QVERIFY(contains(protocol::decodeTaskFrame(good.left(10)), "shorter than"));
        QVERIFY(contains(with(0, 'X'), "magic"));
        QVERIFY(contains(with(4, 3), "newer than this build"));
        QCOMPARE(with(4, 3).kind(), ErrorKind::Unsupported); // the reader must update
        // Tessera 0.1's 50-byte frames: the other side must update.
        QVERIFY(contains(with(4, 1), "from an older Tessera"));
        QCOMPARE(with(4, 1).kind(), ErrorKind::InvalidInput);
        QVERIFY(contains(with(6, 0), "type 0"));
        QVERIFY(contains(with(6, 7), "type 7"));
        QVERIFY(contains(with(7, 1), "reserved"));
        QVERIFY(contains(with(12, 0), "CRC32C"));
        QCOMPARE(with(12, 0).kind(), ErrorKind::InvalidInput);
        // A partition is a whole number of fp32 values.
        QVERIFY(contains(protocol::decodeTaskFrame(frameOf(TaskFrameType::Partition, samplePayload(6))),
                         "whole number of fp32"));
    }

    void everyHeaderByteCorruptionIsRefusedOrChangesOnlyTheType() {
        const QByteArray payload = samplePayload(24);
        const QByteArray good = frameOf(TaskFrameType::ForwardOutput, payload);
        int accepted = 0;
        for (qsizetype at = 0; at < protocol::kTaskFrameHeaderBytes; ++at) {
            for (int value = 0; value < 256; ++value) {
                if (char(value) == good.at(at))
                    continue;
                QByteArray frame = good;
                frame[at] = char(value);
                const Result<protocol::TaskFrame> r = protocol::decodeTaskFrame(frame);
                if (!r)
                    continue;
                // Only another valid type reads: every other byte is checked exactly.
                ++accepted;
                QCOMPARE(at, qsizetype(6));
                QVERIFY(r->type != TaskFrameType::ForwardOutput);
                QCOMPARE(r->payload, QByteArrayView(payload));
            }
        }
        QCOMPARE(accepted, 5); // the five other types (a Partition of 24 bytes is 6 values)
    }

    void crcCatchesEveryPayloadBitFlip() {
        const QByteArray good = frameOf(TaskFrameType::ForwardOutput, samplePayload(64));
        for (qsizetype at = protocol::kTaskFrameHeaderBytes; at < good.size(); ++at) {
            for (int bit = 0; bit < 8; ++bit) {
                QByteArray frame = good;
                frame[at] = char(frame.at(at) ^ (1 << bit));
                QVERIFY2(contains(protocol::decodeTaskFrame(frame), "CRC32C"),
                         qPrintable(QStringLiteral("byte %1 bit %2").arg(at).arg(bit)));
            }
        }
    }

    void everyTruncationIsRefused() {
        const QByteArray good = frameOf(TaskFrameType::ForwardOutput, samplePayload(40));
        for (qsizetype size = 0; size < good.size(); ++size) {
            // A copy of exactly `size` bytes, so a read past the end shows up under sanitizers.
            const QByteArray cut = good.left(size);
            const Result<protocol::TaskFrame> r = protocol::decodeTaskFrame(cut);
            QVERIFY2(!r, qPrintable(QStringLiteral("size %1").arg(size)));
            if (size >= protocol::kTaskFrameHeaderBytes)
                QVERIFY2(contains(r, "truncated"), r.message().c_str());
        }
    }

    void trailingByteIsRefused() {
        const QByteArray frame = frameOf(TaskFrameType::ForwardOutput, samplePayload(40)) + '\0';
        QVERIFY(contains(protocol::decodeTaskFrame(frame), "trailing bytes"));
    }

    void oversizeDeclaredPayloadIsRefusedBeforeReading() {
        // A header alone that claims more than the limit: refused on the bound, not as a short frame.
        QByteArray frame = frameOf(TaskFrameType::ForwardOutput, {});
        const quint32 declared = protocol::TaskFrameLimits{}.maxPayloadBytes + 1;
        qToLittleEndian(declared, frame.data() + 8);
        QVERIFY(contains(protocol::decodeTaskFrame(frame), "exceeds the limit"));
        qToLittleEndian(0xFFFFFFFFu, frame.data() + 8);
        QVERIFY(contains(protocol::decodeTaskFrame(frame), "exceeds the limit"));

        protocol::TaskFrameLimits tight;
        tight.maxPayloadBytes = 16;
        const QByteArray big = frameOf(TaskFrameType::ForwardOutput, samplePayload(17));
        QVERIFY(contains(protocol::decodeTaskFrame(big, tight), "payload length 17 exceeds the limit of 16"));
    }

    void randomBlobsAreRefused() {
        QRandomGenerator random(20240611);
        const QByteArray good = frameOf(TaskFrameType::ForwardOutput, samplePayload(32));
        for (int i = 0; i < 10'000; ++i) {
            QByteArray blob(random.bounded(0, 200), Qt::Uninitialized);
            for (char& c : blob)
                c = char(random.bounded(256));
            // Half start with a valid magic and version so the later checks run too.
            if (i % 2 == 1 && blob.size() >= 6)
                blob.replace(0, 6, good.left(6));
            QVERIFY2(!protocol::decodeTaskFrame(blob), qPrintable(QStringLiteral("blob %1").arg(i)));
        }
    }
};

QTEST_GUILESS_MAIN(TestTaskFrame)
#include "test_task_frame.moc"
