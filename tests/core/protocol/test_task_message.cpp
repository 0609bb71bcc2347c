// SPDX-License-Identifier: Apache-2.0
// TaskMessage: binary session messages round-trip with their frames, and any truncated, damaged,
// padded or oversize message is refused with what is wrong named, never a crash.
#include "protocol/Crc32c.h"
#include "protocol/TaskMessage.h"

#include <QJsonArray>
#include <QTest>
#include <QtEndian>

#include <string>
#include <vector>

using namespace tessera;

namespace {

QByteArray samplePayload(qsizetype size, int salt) {
    QByteArray payload(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        payload[i] = char(i * 37 + salt);
    return payload;
}

QJsonObject taskHeader() {
    return QJsonObject{{QStringLiteral("type"), QStringLiteral("task")},
                       {QStringLiteral("kind"), QStringLiteral("forward")},
                       {QStringLiteral("task_id"), 12},
                       {QStringLiteral("microbatch"), 7}};
}

constexpr protocol::TaskFrameType kTypes[] = {protocol::TaskFrameType::ForwardInput,
                                              protocol::TaskFrameType::Targets,
                                              protocol::TaskFrameType::BackwardInput};

// A message with `count` frames of different types and sizes.
struct Sample {
    std::vector<QByteArray> payloads;
    QByteArray message;

    explicit Sample(int count) {
        protocol::TaskMessageBuilder builder(taskHeader());
        for (int i = 0; i < count; ++i) {
            payloads.push_back(samplePayload(16 + 24 * i, i));
            builder.add(kTypes[i % 3], payloads.back());
        }
        message = builder.take();
    }
};

QByteArray withJson(const QByteArray& json) {
    QByteArray m("TSM1");
    char length[4];
    qToLittleEndian<quint32>(quint32(json.size()), length);
    m.append(length, 4);
    m.append(json);
    return m;
}

bool fails(const Result<protocol::TaskMessage>& r, const char* text) {
    if (r)
        return false;
    if (r.message().find(text) == std::string::npos) {
        qWarning("error \"%s\" does not mention \"%s\"", r.message().c_str(), text);
        return false;
    }
    return true;
}

} // namespace

class TestTaskMessage : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTrips_data() {
        QTest::addColumn<int>("count");
        QTest::newRow("no frame") << 0;
        QTest::newRow("one frame") << 1;
        QTest::newRow("three frames") << 3;
    }
    void roundTrips() {
        QFETCH(int, count);
        const Sample sample(count);
        QCOMPARE(sample.message.left(4), QByteArray("TSM1"));
        const Result<protocol::TaskMessage> r = protocol::decodeTaskMessage(sample.message);
        QVERIFY2(r, r ? "" : r.message().c_str());
        QCOMPARE(r->header, taskHeader());
        QCOMPARE(r->frames.size(), count);
        for (int i = 0; i < count; ++i) {
            QCOMPARE(r->frames[i].type, kTypes[i % 3]);
            QCOMPARE(r->frames[i].crc32c, protocol::crc32c(sample.payloads[std::size_t(i)]));
            QCOMPARE(r->frames[i].payload, QByteArrayView(sample.payloads[std::size_t(i)]));
            // A view into the message, not a copy.
            QVERIFY(r->frames[i].payload.data() >= sample.message.constData() &&
                    r->frames[i].payload.data() < sample.message.constData() + sample.message.size());
        }
        if (count >= 2) {
            QVERIFY(r->frame(protocol::TaskFrameType::Targets) == &r->frames[1]);
            QCOMPARE(r->frame(protocol::TaskFrameType::ForwardOutput), nullptr);
        }
    }

    // Frames are self-delimited and the envelope does not count them: a message cut exactly
    // where a frame ends is a valid message with fewer frames (the receiver then misses a frame
    // its message type requires). Every other length is an error.
    void everyTruncationIsAnErrorExceptAtFrameEnds() {
        const Sample sample(3);
        const Result<protocol::TaskMessage> whole = protocol::decodeTaskMessage(sample.message);
        QVERIFY(whole);
        QList<qsizetype> frameEnds;
        frameEnds.append(sample.message.size() - whole->frames[0].payload.size() -
                         whole->frames[1].payload.size() - whole->frames[2].payload.size() -
                         3 * protocol::kTaskFrameHeaderBytes);
        for (const protocol::TaskFrame& f : whole->frames)
            frameEnds.append(f.payload.data() + f.payload.size() - sample.message.constData());
        int refused = 0;
        for (qsizetype size = 0; size < sample.message.size(); ++size) {
            // A copy of exactly `size` bytes, so reading past it would be visible to sanitizers.
            const QByteArray cut = sample.message.left(size);
            const Result<protocol::TaskMessage> r = protocol::decodeTaskMessage(cut);
            const int at = int(frameEnds.indexOf(size));
            if (at < 0) {
                QVERIFY2(!r, qPrintable(QStringLiteral("length %1").arg(size)));
                ++refused;
            } else {
                QVERIFY2(r, qPrintable(QStringLiteral("length %1").arg(size)));
                QCOMPARE(r->frames.size(), at);
            }
        }
        QCOMPARE(refused, sample.message.size() - 3);
    }

    void badMagicIsRefused() {
        QByteArray m = Sample(1).message;
        m[3] = '2';
        QVERIFY(fails(protocol::decodeTaskMessage(m), "magic"));
        QVERIFY(fails(protocol::decodeTaskMessage(QByteArray("TSF1\0\0\0\0", 8)), "magic"));
        QCOMPARE(protocol::decodeTaskMessage(m).kind(), ErrorKind::InvalidInput);
    }

    void jsonLengthOverTheBoundIsRefused() {
        QByteArray m = Sample(0).message;
        qToLittleEndian<quint32>(quint32(protocol::kTaskMessageMaxJsonBytes + 1), m.data() + 4);
        m.append(QByteArray(protocol::kTaskMessageMaxJsonBytes + 10, ' '));
        QVERIFY(fails(protocol::decodeTaskMessage(m), "exceeds the limit of 65536"));
        // Longer than what follows: truncated, and nothing is read past the end.
        QByteArray shortMessage = Sample(0).message;
        qToLittleEndian<quint32>(quint32(1000), shortMessage.data() + 4);
        QVERIFY(fails(protocol::decodeTaskMessage(shortMessage), "truncated"));
    }

    void jsonMustBeAnObjectWithAStringType() {
        QVERIFY(fails(protocol::decodeTaskMessage(withJson("[1,2]")), "not an object"));
        QVERIFY(fails(protocol::decodeTaskMessage(withJson("{\"kind\":\"forward\"}")), "\"type\""));
        QVERIFY(fails(protocol::decodeTaskMessage(withJson("{\"type\":3}")), "\"type\""));
        QVERIFY(fails(protocol::decodeTaskMessage(withJson("{\"type\":")), "JSON header"));
        QVERIFY(fails(protocol::decodeTaskMessage(withJson("")), "JSON header"));
        QVERIFY(protocol::decodeTaskMessage(withJson("{\"type\":\"x\"}")).ok());
    }

    void aDamagedPayloadNamesItsFrame() {
        const Sample sample(3);
        const Result<protocol::TaskMessage> good = protocol::decodeTaskMessage(sample.message);
        QVERIFY(good);
        // The last byte of frame 1's payload.
        const qsizetype at =
            good->frames[1].payload.data() - sample.message.constData() + good->frames[1].payload.size() - 1;
        QByteArray m = sample.message;
        m[at] = char(m.at(at) ^ 0x10);
        const Result<protocol::TaskMessage> r = protocol::decodeTaskMessage(m);
        QVERIFY(fails(r, "frame 1"));
        QVERIFY(fails(r, "CRC32C"));
    }

    void trailingBytesAreRefused() {
        for (int count : {0, 2}) {
            const QByteArray m = Sample(count).message;
            QVERIFY(fails(protocol::decodeTaskMessage(QByteArray(m + "x")), "trailing"));
            QVERIFY(fails(protocol::decodeTaskMessage(QByteArray(m + QByteArray(100, '\0'))), "trailing"));
            // Something that starts like a frame but is cut short is a broken frame.
            QVERIFY(fails(protocol::decodeTaskMessage(QByteArray(m + "TSF1xx")), "shorter than"));
        }
    }

    void nineFramesAreRefused() {
        protocol::TaskMessageBuilder eight(taskHeader());
        const QByteArray payload = samplePayload(8, 1);
        for (int i = 0; i < 8; ++i)
            eight.add(protocol::TaskFrameType::ForwardInput, payload);
        const QByteArray message = eight.take();
        QVERIFY(protocol::decodeTaskMessage(message).ok());
        // The builder asserts the bound; build the ninth by hand from the eighth.
        const qsizetype frameBytes = protocol::kTaskFrameHeaderBytes + payload.size();
        const QByteArray nine = message + message.right(frameBytes);
        QVERIFY(fails(protocol::decodeTaskMessage(nine), "more than 8 frames"));
    }

    void frameLimitsApply() {
        const Sample sample(1);
        protocol::TaskFrameLimits tight;
        tight.maxPayloadBytes = 8;
        QVERIFY(fails(protocol::decodeTaskMessage(sample.message, tight), "frame 0"));
    }

    void aNewerFrameVersionSaysUpdate() {
        QByteArray m = Sample(1).message;
        const qsizetype frameAt = m.size() - protocol::kTaskFrameHeaderBytes - 16;
        m[frameAt + 4] = 3; // version 3
        const Result<protocol::TaskMessage> r = protocol::decodeTaskMessage(m);
        QVERIFY(fails(r, "update Tessera"));
        QCOMPARE(r.kind(), ErrorKind::Unsupported);
    }

    // The header of a message whose frame is damaged still reads: a task is answered by its id.
    void theHeaderOfADamagedMessageReads() {
        QByteArray m = Sample(1).message;
        m[m.size() - 1] = char(m.at(m.size() - 1) ^ 1);
        QJsonObject header;
        QVERIFY(fails(protocol::decodeTaskMessage(m, {}, &header), "CRC32C"));
        QCOMPARE(header, taskHeader());
    }

    // A relayed frame is copied once into the new message, with the CRC it was checked against.
    void relayKeepsTheCheckedCrc() {
        const Sample sample(1);
        const Result<protocol::TaskMessage> in = protocol::decodeTaskMessage(sample.message);
        QVERIFY(in);
        const protocol::HeldFrame held = in->hold(protocol::TaskFrameType::ForwardInput);
        QVERIFY(!held.isNull());
        QCOMPARE(held.buffer.constData(), sample.message.constData()); // shared, not copied
        const QByteArray out = protocol::TaskMessageBuilder(taskHeader())
                                   .relay(protocol::TaskFrameType::BackwardInput, held.frame)
                                   .take();
        const Result<protocol::TaskMessage> relayed = protocol::decodeTaskMessage(out);
        QVERIFY2(relayed, relayed ? "" : relayed.message().c_str());
        QCOMPARE(relayed->frames.size(), 1);
        QCOMPARE(relayed->frames[0].type, protocol::TaskFrameType::BackwardInput);
        QCOMPARE(relayed->frames[0].payload, QByteArrayView(sample.payloads[0]));
        QCOMPARE(relayed->frames[0].crc32c, held.frame.crc32c);
        // A held payload made here has its CRC computed once.
        const protocol::HeldFrame made =
            protocol::holdPayload(samplePayload(40, 9), protocol::TaskFrameType::Targets);
        QCOMPARE(made.frame.crc32c, protocol::crc32c(made.buffer));
    }

    // The engine's output stays where it was written: the envelope goes in front of it.
    void wrapInPlaceBuildsTheMessageAroundThePayload() {
        const QByteArray payload = samplePayload(300, 5);
        std::vector<std::uint8_t> buffer(std::size_t(protocol::kTaskMessageHeadroom), 0);
        buffer.insert(buffer.end(), payload.begin(), payload.end());
        const std::uint8_t* payloadAt = buffer.data() + protocol::kTaskMessageHeadroom;
        const std::optional<qsizetype> start = protocol::wrapInPlace(
            buffer, protocol::kTaskMessageHeadroom, taskHeader(), protocol::TaskFrameType::ForwardOutput);
        QVERIFY(start);
        const QByteArray message = QByteArray::fromRawData(
            reinterpret_cast<const char*>(buffer.data()) + *start, qsizetype(buffer.size()) - *start);
        const Result<protocol::TaskMessage> r = protocol::decodeTaskMessage(message);
        QVERIFY2(r, r ? "" : r.message().c_str());
        QCOMPARE(r->header, taskHeader());
        QCOMPARE(r->frames[0].payload, QByteArrayView(payload));
        QCOMPARE(reinterpret_cast<const std::uint8_t*>(r->frames[0].payload.data()), payloadAt);
        // Byte for byte what the builder makes.
        QCOMPARE(QByteArray(message), protocol::TaskMessageBuilder(taskHeader())
                                          .add(protocol::TaskFrameType::ForwardOutput, payload)
                                          .take());
        // Headroom too small for the envelope: nothing written.
        std::vector<std::uint8_t> tight(8, 0);
        tight.insert(tight.end(), payload.begin(), payload.end());
        QVERIFY(!protocol::wrapInPlace(tight, 8, taskHeader(), protocol::TaskFrameType::ForwardOutput));
        QCOMPARE(tight[0], std::uint8_t(0));
    }

    void partitionValuesRoundTrip() {
        const std::vector<float> values{0.f, -1.5f, 3.25f, 1e-20f, 6.02e23f};
        const QByteArray m =
            protocol::TaskMessageBuilder(QJsonObject{{QStringLiteral("type"), QStringLiteral("x")}})
                .add(protocol::TaskFrameType::Partition, protocol::partitionPayload(values))
                .take();
        const Result<protocol::TaskMessage> r = protocol::decodeTaskMessage(m);
        QVERIFY2(r, r ? "" : r.message().c_str());
        const protocol::TaskFrame* partition = r->frame(protocol::TaskFrameType::Partition);
        QVERIFY(partition);
        const Result<std::vector<float>> back = protocol::partitionValues(*partition);
        QVERIFY2(back, back ? "" : back.message().c_str());
        QVERIFY(*back == values);

        // An empty partition is valid (a stage may have fewer weights than partitions).
        const Result<protocol::TaskMessage> none = protocol::decodeTaskMessage(
            protocol::TaskMessageBuilder(QJsonObject{{QStringLiteral("type"), QStringLiteral("x")}})
                .add(protocol::TaskFrameType::Partition, {})
                .take());
        QVERIFY(none);
        QVERIFY(protocol::partitionValues(none->frames[0])->empty());
    }

    void partitionOfTheWrongSizeIsRefused() {
        const QByteArray m =
            protocol::TaskMessageBuilder(QJsonObject{{QStringLiteral("type"), QStringLiteral("x")}})
                .add(protocol::TaskFrameType::Partition, samplePayload(14, 3))
                .take();
        QVERIFY(fails(protocol::decodeTaskMessage(m), "whole number of fp32"));
        // partitionValues checks on its own too (a frame a caller built, or of another type).
        const QByteArray payload = samplePayload(16, 3);
        protocol::TaskFrame frame{protocol::TaskFrameType::Partition, payload, 0};
        QVERIFY(protocol::partitionValues(frame).ok());
        frame.payload = QByteArrayView(payload).first(13);
        QVERIFY(!protocol::partitionValues(frame));
        frame = {protocol::TaskFrameType::ForwardInput, payload, 0};
        QVERIFY(!protocol::partitionValues(frame));
    }
};

QTEST_GUILESS_MAIN(TestTaskMessage)
#include "test_task_message.moc"
