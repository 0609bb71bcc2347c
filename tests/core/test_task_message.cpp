// TaskMessage: binary session messages round-trip with their frames, and any truncated, damaged,
// padded or oversize message is refused with what is wrong named, never a crash.
#include "common/TaskMessage.h"

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

TaskFrameHeader frameHeader(TaskFrameType type, qint64 taskId) {
    TaskFrameHeader header;
    header.type = type;
    header.taskId = taskId;
    header.microbatch = 7;
    header.stage = 1;
    header.shape = {2, 4, 8};
    return header;
}

QJsonObject taskHeader() {
    return QJsonObject{{QStringLiteral("type"), QStringLiteral("task")},
                       {QStringLiteral("kind"), QStringLiteral("forward")},
                       {QStringLiteral("task_id"), 12},
                       {QStringLiteral("microbatch"), 7}};
}

// A message with `count` frames of different types and sizes (the payloads outlive the views).
struct Sample {
    std::vector<QByteArray> payloads;
    std::vector<TaskMessageFrame> frames;
    QByteArray message;

    explicit Sample(int count) {
        const TaskFrameType types[] = {TaskFrameType::ForwardInput, TaskFrameType::Targets,
                                       TaskFrameType::BackwardInput};
        for (int i = 0; i < count; ++i)
            payloads.push_back(samplePayload(16 + 24 * i, i));
        for (int i = 0; i < count; ++i)
            frames.push_back({frameHeader(types[i % 3], 100 + i), payloads[std::size_t(i)]});
        message = encodeTaskMessage(taskHeader(), frames);
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

bool fails(const Result<TaskMessage>& r, const char* text) {
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
        const Result<TaskMessage> r = decodeTaskMessage(sample.message);
        QVERIFY2(r, r ? "" : r.message().c_str());
        QCOMPARE(r->header, taskHeader());
        QCOMPARE(r->frames.size(), count);
        for (int i = 0; i < count; ++i) {
            TaskFrameHeader expected = sample.frames[std::size_t(i)].header;
            expected.payloadBytes = r->frames[i].header.payloadBytes;
            expected.crc32c = r->frames[i].header.crc32c;
            QVERIFY(r->frames[i].header == expected);
            QCOMPARE(r->frames[i].payload, QByteArrayView(sample.payloads[std::size_t(i)]));
            // A view into the message, not a copy.
            QVERIFY(r->frames[i].payload.data() >= sample.message.constData() &&
                    r->frames[i].payload.data() < sample.message.constData() + sample.message.size());
        }
        if (count >= 2) {
            QVERIFY(r->frame(TaskFrameType::Targets) == &r->frames[1]);
            QCOMPARE(r->frame(TaskFrameType::ForwardOutput), nullptr);
        }
    }

    // Frames are self-delimited and the envelope does not count them: a message cut exactly
    // where a frame ends is a valid message with fewer frames (the receiver then misses a frame
    // its message type requires). Every other length is an error.
    void everyTruncationIsAnErrorExceptAtFrameEnds() {
        const Sample sample(3);
        const Result<TaskMessage> whole = decodeTaskMessage(sample.message);
        QVERIFY(whole);
        QList<qsizetype> frameEnds;
        frameEnds.append(sample.message.size() - whole->frames[0].payload.size() -
                         whole->frames[1].payload.size() - whole->frames[2].payload.size() -
                         3 * kTaskFrameHeaderBytes);
        for (const TaskFrame& f : whole->frames)
            frameEnds.append(f.payload.data() + f.payload.size() - sample.message.constData());
        int refused = 0;
        for (qsizetype size = 0; size < sample.message.size(); ++size) {
            // A copy of exactly `size` bytes, so reading past it would be visible to sanitizers.
            const QByteArray cut = sample.message.left(size);
            const Result<TaskMessage> r = decodeTaskMessage(cut);
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
        QVERIFY(fails(decodeTaskMessage(m), "magic"));
        QVERIFY(fails(decodeTaskMessage(QByteArray("TSF1\0\0\0\0", 8)), "magic"));
    }

    void jsonLengthOverTheBoundIsRefused() {
        QByteArray m = Sample(0).message;
        qToLittleEndian<quint32>(quint32(kTaskMessageMaxJsonBytes + 1), m.data() + 4);
        m.append(QByteArray(kTaskMessageMaxJsonBytes + 10, ' '));
        QVERIFY(fails(decodeTaskMessage(m), "exceeds the limit of 65536"));
        // Longer than what follows: truncated, and nothing is read past the end.
        QByteArray shortMessage = Sample(0).message;
        qToLittleEndian<quint32>(quint32(1000), shortMessage.data() + 4);
        QVERIFY(fails(decodeTaskMessage(shortMessage), "truncated"));
    }

    void jsonMustBeAnObjectWithAStringType() {
        QVERIFY(fails(decodeTaskMessage(withJson("[1,2]")), "not an object"));
        QVERIFY(fails(decodeTaskMessage(withJson("{\"kind\":\"forward\"}")), "\"type\""));
        QVERIFY(fails(decodeTaskMessage(withJson("{\"type\":3}")), "\"type\""));
        QVERIFY(fails(decodeTaskMessage(withJson("{\"type\":")), "JSON header"));
        QVERIFY(fails(decodeTaskMessage(withJson("")), "JSON header"));
        QVERIFY(decodeTaskMessage(withJson("{\"type\":\"x\"}")).ok());
    }

    void aDamagedPayloadNamesItsFrame() {
        const Sample sample(3);
        const Result<TaskMessage> good = decodeTaskMessage(sample.message);
        QVERIFY(good);
        // The last byte of frame 1's payload.
        const qsizetype at =
            good->frames[1].payload.data() - sample.message.constData() + good->frames[1].payload.size() - 1;
        QByteArray m = sample.message;
        m[at] = char(m.at(at) ^ 0x10);
        const Result<TaskMessage> r = decodeTaskMessage(m);
        QVERIFY(fails(r, "frame 1"));
        QVERIFY(fails(r, "CRC32C"));
    }

    void trailingBytesAreRefused() {
        for (int count : {0, 2}) {
            const QByteArray m = Sample(count).message;
            QVERIFY(fails(decodeTaskMessage(QByteArray(m + "x")), "trailing"));
            QVERIFY(fails(decodeTaskMessage(QByteArray(m + QByteArray(100, '\0'))), "trailing"));
            // Something that starts like a frame but is cut short is a broken frame.
            QVERIFY(fails(decodeTaskMessage(QByteArray(m + "TSF1xx")), "shorter than"));
        }
    }

    void nineFramesAreRefused() {
        std::vector<QByteArray> payloads;
        std::vector<TaskMessageFrame> frames;
        for (int i = 0; i < 9; ++i)
            payloads.push_back(samplePayload(8, i));
        for (int i = 0; i < 9; ++i)
            frames.push_back({frameHeader(TaskFrameType::ForwardInput, i), payloads[std::size_t(i)]});
        const QByteArray eight = encodeTaskMessage(taskHeader(), std::span(frames).first(8));
        QVERIFY(decodeTaskMessage(eight).ok());
        // encodeTaskMessage asserts the bound; build the ninth by hand.
        const QByteArray nine = eight + encodeTaskFrame(frames[8].header, payloads[8]);
        QVERIFY(fails(decodeTaskMessage(nine), "more than 8 frames"));
    }

    void frameLimitsApply() {
        const Sample sample(1);
        TaskFrameLimits tight;
        tight.maxBatch = 1;
        QVERIFY(fails(decodeTaskMessage(sample.message, tight), "frame 0"));
    }

    void partitionValuesRoundTrip() {
        const std::vector<float> values{0.f, -1.5f, 3.25f, 1e-20f, 6.02e23f};
        const QByteArrayView bytes(reinterpret_cast<const char*>(values.data()),
                                   qsizetype(values.size() * 4));
        TaskFrameHeader header = partitionHeader(2, qint64(values.size()));
        header.taskId = 5;
        const TaskMessageFrame frame{header, bytes};
        const QByteArray m =
            encodeTaskMessage(QJsonObject{{QStringLiteral("type"), QStringLiteral("average_share")},
                                          {QStringLiteral("round"), 5}},
                              std::span(&frame, 1));
        const Result<TaskMessage> r = decodeTaskMessage(m);
        QVERIFY2(r, r ? "" : r.message().c_str());
        const TaskFrame* partition = r->frame(TaskFrameType::Partition);
        QVERIFY(partition);
        QCOMPARE(partition->header.stage, 2);
        QCOMPARE(partition->header.shape[0], quint32(values.size()));
        const Result<std::vector<float>> back = partitionValues(*partition);
        QVERIFY2(back, back ? "" : back.message().c_str());
        QVERIFY(*back == values);

        // An empty partition is valid (a stage may have fewer weights than partitions).
        const TaskMessageFrame empty{partitionHeader(0, 0), {}};
        const Result<TaskMessage> none = decodeTaskMessage(encodeTaskMessage(
            QJsonObject{{QStringLiteral("type"), QStringLiteral("sync")}}, std::span(&empty, 1)));
        QVERIFY(none);
        QVERIFY(partitionValues(none->frames[0])->empty());
    }

    void partitionOfTheWrongShapeIsRefused() {
        const QByteArray payload = samplePayload(16, 3);
        TaskFrameHeader header = partitionHeader(0, 4);
        // In a message: the frame decoder checks the shape and the payload length.
        auto decode = [&](const TaskFrameHeader& h, QByteArrayView p) {
            const TaskMessageFrame f{h, p};
            return decodeTaskMessage(encodeTaskMessage(
                QJsonObject{{QStringLiteral("type"), QStringLiteral("sync")}}, std::span(&f, 1)));
        };
        QVERIFY(decode(header, payload).ok());
        TaskFrameHeader tall = header;
        tall.shape = {4, 1, 0};
        QVERIFY(fails(decode(tall, payload), "{count, 0, 0}"));
        TaskFrameHeader wide = header;
        wide.shape = {4, 0, 8};
        QVERIFY(fails(decode(wide, payload), "{count, 0, 0}"));
        QVERIFY(fails(decode(header, payload.left(12)), "not 4 × 4"));
        TaskFrameHeader huge = header;
        huge.shape = {(256u << 20) / 4 + 1, 0, 0};
        QVERIFY(fails(decode(huge, payload), "partition count"));

        // partitionValues checks on its own too (a frame a caller built, or of another type).
        TaskFrame frame{header, payload};
        QVERIFY(partitionValues(frame).ok());
        frame.header.shape = {4, 0, 1};
        QVERIFY(!partitionValues(frame));
        frame.header.shape = {5, 0, 0};
        QVERIFY(!partitionValues(frame));
        frame.header = frameHeader(TaskFrameType::ForwardInput, 1);
        QVERIFY(!partitionValues(frame));
    }
};

QTEST_GUILESS_MAIN(TestTaskMessage)
#include "test_task_message.moc"
