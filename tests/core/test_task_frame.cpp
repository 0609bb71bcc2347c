// TaskFrame: tensor frames round-trip, and any damaged, truncated, padded, oversize or random frame
// is refused with the failing field named, without crashing or reading past the buffer.
#include "common/Crc32c.h"
#include "common/TaskFrame.h"

#include <QRandomGenerator>
#include <QTest>
#include <QtEndian>

#include <string>

using namespace tessera;

namespace {

QByteArray samplePayload(qsizetype size) {
    QByteArray payload(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        payload[i] = char(i * 37 + 11);
    return payload;
}

TaskFrameHeader sampleHeader(TaskFrameType type = TaskFrameType::ForwardOutput) {
    TaskFrameHeader header;
    header.type = type;
    header.taskId = 0x0123456789ABCDEFll;
    header.microbatch = 42;
    header.stage = 3;
    header.codec = 2;
    header.dtype = 1;
    header.shape = {2, 4, 8};
    return header;
}

bool contains(const Result<TaskFrame>& r, const char* text) {
    return !r && r.message().find(text) != std::string::npos;
}

} // namespace

class TestTaskFrame : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void crcTestVectors() {
        QCOMPARE(crc32c(QByteArrayView("123456789")), 0xE3069283u);
        QCOMPARE(crc32c(QByteArray(32, '\0')), 0x8A9136AAu);
        QCOMPARE(crc32c(QByteArray(32, '\xFF')), 0x62A8AB43u);
        QCOMPARE(crc32c(QByteArrayView()), 0u);
    }

    void roundTripsEveryType_data() {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("payloadBytes");
        QTest::newRow("forward input (tokens)") << int(TaskFrameType::ForwardInput) << 32;
        QTest::newRow("forward output") << int(TaskFrameType::ForwardOutput) << 128;
        QTest::newRow("backward input") << int(TaskFrameType::BackwardInput) << 128;
        QTest::newRow("backward output") << int(TaskFrameType::BackwardOutput) << 64;
        QTest::newRow("targets, empty payload") << int(TaskFrameType::Targets) << 0;
    }
    void roundTripsEveryType() {
        QFETCH(int, type);
        QFETCH(int, payloadBytes);
        TaskFrameHeader header = sampleHeader(TaskFrameType(type));
        header.crc32c = 0xDEADBEEF; // ignored: encode computes length and CRC
        const QByteArray payload = samplePayload(payloadBytes);
        const QByteArray frame = encodeTaskFrame(header, payload);
        QCOMPARE(frame.size(), kTaskFrameHeaderBytes + payloadBytes);
        QCOMPARE(frame.left(4), QByteArray("TSF1"));

        const Result<TaskFrame> r = decodeTaskFrame(frame);
        QVERIFY2(r, r ? "" : r.message().c_str());
        header.payloadBytes = quint32(payloadBytes);
        header.crc32c = crc32c(payload);
        QVERIFY(r->header == header);
        QCOMPARE(r->payload, QByteArrayView(payload));
        if (payloadBytes > 0) // a view into the frame, not a copy
            QCOMPARE(r->payload.data(), frame.constData() + kTaskFrameHeaderBytes);
    }

    void fieldsAreLittleEndianAtTheirOffsets() {
        const QByteArray frame = encodeTaskFrame(sampleHeader(), samplePayload(4));
        QCOMPARE(frame.mid(4, 2), QByteArray("\x01\x00", 2));                       // version
        QCOMPARE(frame.at(6), char(TaskFrameType::ForwardOutput));                  // type
        QCOMPARE(frame.mid(10, 8), QByteArray("\xEF\xCD\xAB\x89\x67\x45\x23\x01")); // task id
        QCOMPARE(frame.mid(26, 2), QByteArray("\x03\x00", 2));                      // stage
        QCOMPARE(frame.mid(38, 4), QByteArray("\x08\x00\x00\x00", 4));              // d
        QCOMPARE(frame.mid(42, 4), QByteArray("\x04\x00\x00\x00", 4));              // payload length
    }

    void namesTheFailingField() {
        const QByteArray good = encodeTaskFrame(sampleHeader(), samplePayload(16));
        auto with = [&](qsizetype at, char value) {
            QByteArray frame = good;
            frame[at] = value;
            return decodeTaskFrame(frame);
        };
        QVERIFY(contains(decodeTaskFrame(good.left(10)), "shorter than"));
        QVERIFY(contains(with(0, 'X'), "magic"));
        QVERIFY(contains(with(4, 2), "newer than this build"));
        QVERIFY(contains(with(4, 0), "version 0 is not supported"));
        QVERIFY(contains(with(6, 0), "type 0"));
        QVERIFY(contains(with(6, 7), "type 7"));
        QVERIFY(contains(with(6, 6), "partition")); // a Partition frame's shape is {count, 0, 0}
        QVERIFY(contains(with(9, 1), "reserved"));
        QVERIFY(contains(with(29, 1), "reserved"));
        QVERIFY(contains(with(27, 4), "stage 1027"));
        QVERIFY(contains(with(30, 0), "shape B 0"));
        QVERIFY(contains(with(34, 0), "shape T 0"));
        QVERIFY(contains(with(41, 1), "shape d"));
        QVERIFY(contains(with(46, 0), "CRC32C"));

        TaskFrameLimits tight;
        tight.maxBatch = 1;
        QVERIFY(contains(decodeTaskFrame(good, tight), "shape B 2 is outside 1..1"));
        TaskFrameHeader tokens = sampleHeader(TaskFrameType::ForwardInput);
        tokens.shape = {2, 4, 0}; // d = 0 is valid for token frames
        QVERIFY(decodeTaskFrame(encodeTaskFrame(tokens, samplePayload(32))).ok());
    }

    void everyHeaderByteCorruptionIsRefusedOrChangesTheHeader() {
        const QByteArray payload = samplePayload(24);
        const QByteArray good = encodeTaskFrame(sampleHeader(), payload);
        const TaskFrameHeader original = decodeTaskFrame(good)->header;
        int refused = 0;
        int accepted = 0;
        for (qsizetype at = 0; at < kTaskFrameHeaderBytes; ++at) {
            for (int value = 0; value < 256; ++value) {
                if (char(value) == good.at(at))
                    continue;
                QByteArray frame = good;
                frame[at] = char(value);
                const Result<TaskFrame> r = decodeTaskFrame(frame);
                if (!r) {
                    ++refused;
                    continue;
                }
                ++accepted; // taskId, microbatch, codec, dtype, in-bounds stage/shape: still valid
                QVERIFY2(!(r->header == original),
                         qPrintable(QStringLiteral("byte %1 = %2").arg(at).arg(value)));
                QCOMPARE(r->payload, QByteArrayView(payload));
            }
        }
        QVERIFY(refused > 0);
        QVERIFY(accepted > 0);
        // Magic, version, type, reserved, length and CRC bytes never decode to another frame.
        for (qsizetype at : {0, 3, 4, 5, 9, 28, 29, 42, 45, 46, 49}) {
            QByteArray frame = good;
            frame[at] = char(frame.at(at) ^ 0x01);
            QVERIFY2(!decodeTaskFrame(frame), qPrintable(QStringLiteral("byte %1").arg(at)));
        }
    }

    void crcCatchesEveryPayloadBitFlip() {
        const QByteArray good = encodeTaskFrame(sampleHeader(), samplePayload(64));
        for (qsizetype at = kTaskFrameHeaderBytes; at < good.size(); ++at) {
            for (int bit = 0; bit < 8; ++bit) {
                QByteArray frame = good;
                frame[at] = char(frame.at(at) ^ (1 << bit));
                QVERIFY2(contains(decodeTaskFrame(frame), "CRC32C"),
                         qPrintable(QStringLiteral("byte %1 bit %2").arg(at).arg(bit)));
            }
        }
    }

    void everyTruncationIsRefused() {
        const QByteArray good = encodeTaskFrame(sampleHeader(), samplePayload(40));
        for (qsizetype size = 0; size < good.size(); ++size) {
            // A copy of exactly `size` bytes, so a read past the end shows up under sanitizers.
            const QByteArray cut = good.left(size);
            const Result<TaskFrame> r = decodeTaskFrame(cut);
            QVERIFY2(!r, qPrintable(QStringLiteral("size %1").arg(size)));
            if (size >= kTaskFrameHeaderBytes)
                QVERIFY2(contains(r, "truncated"), r.message().c_str());
        }
    }

    void trailingByteIsRefused() {
        const QByteArray frame = encodeTaskFrame(sampleHeader(), samplePayload(40)) + '\0';
        QVERIFY(contains(decodeTaskFrame(frame), "trailing bytes"));
    }

    void oversizeDeclaredPayloadIsRefusedBeforeReading() {
        // A header alone that claims more than the limit: refused on the bound, not as a short frame.
        QByteArray frame = encodeTaskFrame(sampleHeader(), {});
        const quint32 declared = TaskFrameLimits{}.maxPayloadBytes + 1;
        qToLittleEndian(declared, frame.data() + 42);
        QVERIFY(contains(decodeTaskFrame(frame), "exceeds the limit"));
        qToLittleEndian(0xFFFFFFFFu, frame.data() + 42);
        QVERIFY(contains(decodeTaskFrame(frame), "exceeds the limit"));

        TaskFrameLimits tight;
        tight.maxPayloadBytes = 16;
        const QByteArray big = encodeTaskFrame(sampleHeader(), samplePayload(17));
        QVERIFY(contains(decodeTaskFrame(big, tight), "payload length 17 exceeds the limit of 16"));
    }

    void randomBlobsAreRefused() {
        QRandomGenerator random(20240611);
        const QByteArray good = encodeTaskFrame(sampleHeader(), samplePayload(32));
        for (int i = 0; i < 10'000; ++i) {
            QByteArray blob(random.bounded(0, 200), Qt::Uninitialized);
            for (char& c : blob)
                c = char(random.bounded(256));
            // Half start with a valid magic and version so the later checks run too.
            if (i % 2 == 1 && blob.size() >= 6)
                blob.replace(0, 6, good.left(6));
            QVERIFY2(!decodeTaskFrame(blob), qPrintable(QStringLiteral("blob %1").arg(i)));
        }
    }
};

QTEST_GUILESS_MAIN(TestTaskFrame)
#include "test_task_frame.moc"
