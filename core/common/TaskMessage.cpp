#include "common/TaskMessage.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QtEndian>

#include <cstring>
#include <string>

namespace tessera {

namespace {

constexpr char kMagic[4] = {'T', 'S', 'M', '1'};
constexpr char kFrameMagic[4] = {'T', 'S', 'F', '1'};
constexpr qsizetype kPrefixBytes = sizeof kMagic + sizeof(quint32);
// Where TaskFrame's u32 payload length sits in its header (see TaskFrame.h).
constexpr qsizetype kFramePayloadLengthAt = 42;

Error messageError(const std::string& what) {
    return makeError("task message: " + what);
}

std::string num(qint64 v) {
    return std::to_string(v);
}

} // namespace

const TaskFrame* TaskMessage::frame(TaskFrameType type) const {
    for (const TaskFrame& f : frames)
        if (f.header.type == type)
            return &f;
    return nullptr;
}

QByteArray encodeTaskMessage(const QJsonObject& header, std::span<const TaskMessageFrame> frames) {
    const QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    Q_ASSERT(json.size() <= kTaskMessageMaxJsonBytes);
    Q_ASSERT(frames.size() <= std::size_t(kTaskMessageMaxFrames));
    qsizetype total = kPrefixBytes + json.size();
    for (const TaskMessageFrame& f : frames)
        total += kTaskFrameHeaderBytes + f.payload.size();
    QByteArray message;
    message.reserve(total);
    message.append(kMagic, sizeof kMagic);
    char length[4];
    qToLittleEndian<quint32>(quint32(json.size()), length);
    message.append(length, sizeof length);
    message.append(json);
    for (const TaskMessageFrame& f : frames)
        message.append(encodeTaskFrame(f.header, f.payload));
    return message;
}

Result<TaskMessage> decodeTaskMessage(QByteArrayView message, const TaskFrameLimits& limits) {
    if (message.size() > kTaskMessageMaxBytes)
        return messageError("size " + num(message.size()) + " bytes exceeds the limit of " +
                            num(kTaskMessageMaxBytes));
    if (message.size() < kPrefixBytes)
        return messageError("size " + num(message.size()) + " bytes is shorter than the " +
                            num(kPrefixBytes) + "-byte prefix");
    if (std::memcmp(message.data(), kMagic, sizeof kMagic) != 0)
        return messageError("magic is not \"TSM1\"");
    const quint32 jsonBytes = qFromLittleEndian<quint32>(message.data() + sizeof kMagic);
    if (jsonBytes > quint32(kTaskMessageMaxJsonBytes))
        return messageError("JSON length " + num(jsonBytes) + " exceeds the limit of " +
                            num(kTaskMessageMaxJsonBytes) + " bytes");
    if (qsizetype(jsonBytes) > message.size() - kPrefixBytes)
        return messageError("JSON length " + num(jsonBytes) + " but only " +
                            num(message.size() - kPrefixBytes) + " bytes follow (truncated)");
    QJsonParseError parseError;
    const QJsonDocument doc =
        QJsonDocument::fromJson(message.sliced(kPrefixBytes, jsonBytes).toByteArray(), &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return messageError("JSON header: " + parseError.errorString().toStdString() + " at byte " +
                            num(parseError.offset));
    if (!doc.isObject())
        return messageError("JSON header is not an object");
    TaskMessage out;
    out.header = doc.object();
    if (!out.header.value(u"type").isString())
        return messageError("JSON header has no string \"type\"");

    qsizetype at = kPrefixBytes + jsonBytes;
    while (at < message.size()) {
        const QByteArrayView rest = message.sliced(at);
        const int index = int(out.frames.size());
        // Something that does not even start like a frame is trailing garbage, not a frame.
        if (rest.size() < qsizetype(sizeof kFrameMagic) ||
            std::memcmp(rest.data(), kFrameMagic, sizeof kFrameMagic) != 0)
            return messageError(num(rest.size()) + " trailing bytes after " +
                                (index == 0 ? std::string("the JSON header") : "frame " + num(index - 1)) +
                                " are not a frame");
        if (index >= kTaskMessageMaxFrames)
            return messageError("more than " + num(kTaskMessageMaxFrames) + " frames");
        // The frame's own length field says where it ends; decodeTaskFrame checks it against its
        // bound and against what is actually there.
        qsizetype size = rest.size();
        if (rest.size() >= kTaskFrameHeaderBytes) {
            const quint32 payload = qFromLittleEndian<quint32>(rest.data() + kFramePayloadLengthAt);
            size = std::min<qint64>(rest.size(), qint64(kTaskFrameHeaderBytes) + qint64(payload));
        }
        Result<TaskFrame> frame = decodeTaskFrame(rest.first(size), limits);
        if (!frame)
            return messageError("frame " + num(index) + " (at byte " + num(at) + "): " + frame.message());
        out.frames.append(*frame);
        at += size;
    }
    return out;
}

Result<std::vector<float>> partitionValues(const TaskFrame& frame) {
    if (frame.header.type != TaskFrameType::Partition)
        return makeError("partition values: frame type " + num(int(frame.header.type)) +
                         " is not Partition (6)");
    const auto [count, seq, width] = frame.header.shape;
    if (seq != 0 || width != 0)
        return makeError("partition values: shape must be {count, 0, 0}, got {" + num(count) + ", " +
                         num(seq) + ", " + num(width) + "}");
    if (frame.payload.size() != 4 * qsizetype(count))
        return makeError("partition values: payload of " + num(frame.payload.size()) + " bytes is not 4 × " +
                         num(count) + " floats");
    std::vector<float> values(count);
    if (count > 0)
        qFromLittleEndian<float>(frame.payload.data(), qsizetype(count), values.data());
    return values;
}

TaskFrameHeader partitionHeader(int stage, qint64 count) {
    Q_ASSERT(count >= 0 && count <= qint64(0xFFFFFFFFu / 4));
    TaskFrameHeader header;
    header.type = TaskFrameType::Partition;
    header.stage = stage;
    header.codec = 0;
    header.dtype = 0; // fp32 (gpu::Dtype::F32)
    header.shape = {quint32(count), 0, 0};
    return header;
}

} // namespace tessera
