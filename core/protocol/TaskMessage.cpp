// SPDX-License-Identifier: Apache-2.0
// TaskMessage: the binary envelope built in place, decoded into views, relayed with one copy.
#include "protocol/TaskMessage.h"

#include "base/BlockQuant.h"

#include "protocol/Crc32c.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QtEndian>

#include <cstring>
#include <string>

namespace tessera::protocol {

static_assert(Q_BYTE_ORDER == Q_LITTLE_ENDIAN, "Partition payloads are the host's fp32 bytes");

namespace {

constexpr char kMagic[4] = {'T', 'S', 'M', '1'};
constexpr char kFrameMagic[4] = {'T', 'S', 'F', '1'};
// Where TaskFrame's u32 payload length sits in its header (see TaskFrame.h).
constexpr qsizetype kFramePayloadLengthAt = 8;

Error messageError(const std::string& what, ErrorKind kind = ErrorKind::InvalidInput) {
    return makeError("task message: " + what, kind);
}

std::string num(qint64 v) {
    return std::to_string(v);
}

QByteArray compact(const QJsonObject& header) {
    const QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    Q_ASSERT(json.size() <= kTaskMessageMaxJsonBytes);
    return json;
}

void writePrefix(char* out, qsizetype jsonBytes) {
    std::memcpy(out, kMagic, sizeof kMagic);
    qToLittleEndian<quint32>(quint32(jsonBytes), out + sizeof kMagic);
}

} // namespace

const TaskFrame* TaskMessage::frame(TaskFrameType type) const {
    for (const TaskFrame& f : frames)
        if (f.type == type)
            return &f;
    return nullptr;
}

HeldFrame TaskMessage::hold(TaskFrameType type) const {
    const TaskFrame* f = frame(type);
    return f ? HeldFrame{bytes, *f} : HeldFrame{};
}

HeldFrame holdPayload(QByteArray payload, TaskFrameType type) {
    const TaskFrame frame{type, QByteArrayView(payload), crc32c(payload)};
    return HeldFrame{std::move(payload), frame};
}

// --- building ----------------------------------------------------------------------------------

TaskMessageBuilder::TaskMessageBuilder(const QJsonObject& header, qsizetype payloadBytes) {
    const QByteArray json = compact(header);
    m_message.reserve(kTaskMessagePrefixBytes + json.size() + kTaskMessageMaxFrames * kTaskFrameHeaderBytes +
                      payloadBytes);
    m_message.resize(kTaskMessagePrefixBytes);
    writePrefix(m_message.data(), json.size());
    m_message.append(json);
}

TaskMessageBuilder& TaskMessageBuilder::addWithCrc(TaskFrameType type, QByteArrayView payload, quint32 crc) {
    Q_ASSERT(++m_frames <= kTaskMessageMaxFrames);
    Q_ASSERT(payload.size() <= qsizetype(0xFFFFFFFFu));
    const qsizetype at = m_message.size();
    m_message.resize(at + kTaskFrameHeaderBytes);
    writeTaskFrameHeader(m_message.data() + at, type, quint32(payload.size()), crc);
    m_message.append(payload);
    return *this;
}

TaskMessageBuilder& TaskMessageBuilder::add(TaskFrameType type, QByteArrayView payload) {
    addWithCrc(type, payload, 0);
    // The CRC over the bytes as they lie in the message: the copy is still in cache.
    const qsizetype payloadAt = m_message.size() - payload.size();
    qToLittleEndian<quint32>(crc32c(QByteArrayView(m_message).sliced(payloadAt)),
                             m_message.data() + payloadAt - 4);
    return *this;
}

TaskMessageBuilder& TaskMessageBuilder::relay(TaskFrameType type, const TaskFrame& frame) {
    return addWithCrc(type, frame.payload, frame.crc32c);
}

qsizetype envelopeBytes(const QByteArray& compactJson) {
    return kTaskMessagePrefixBytes + compactJson.size() + kTaskFrameHeaderBytes;
}

std::optional<qsizetype> wrapInPlace(std::span<std::uint8_t> buffer, qsizetype payloadAt,
                                     const QJsonObject& header, TaskFrameType type) {
    const QByteArray json = compact(header);
    const qsizetype start = payloadAt - envelopeBytes(json);
    const qsizetype payloadBytes = qsizetype(buffer.size()) - payloadAt;
    if (start < 0 || payloadBytes < 0 || payloadBytes > qsizetype(0xFFFFFFFFu))
        return std::nullopt;
    char* out = reinterpret_cast<char*>(buffer.data()) + start;
    writePrefix(out, json.size());
    std::memcpy(out + kTaskMessagePrefixBytes, json.constData(), std::size_t(json.size()));
    const QByteArrayView payload(reinterpret_cast<const char*>(buffer.data()) + payloadAt, payloadBytes);
    writeTaskFrameHeader(out + kTaskMessagePrefixBytes + json.size(), type, quint32(payloadBytes),
                         crc32c(payload));
    return start;
}

// --- decoding ----------------------------------------------------------------------------------

Result<TaskMessage> decodeTaskMessage(QByteArray message, const TaskFrameLimits& limits,
                                      QJsonObject* readableHeader) {
    if (message.size() > kTaskMessageMaxBytes)
        return messageError("size " + num(message.size()) + " bytes exceeds the limit of " +
                            num(kTaskMessageMaxBytes));
    if (message.size() < kTaskMessagePrefixBytes)
        return messageError("size " + num(message.size()) + " bytes is shorter than the " +
                            num(kTaskMessagePrefixBytes) + "-byte prefix");
    if (std::memcmp(message.constData(), kMagic, sizeof kMagic) != 0)
        return messageError("magic is not \"TSM1\"");
    const quint32 jsonBytes = qFromLittleEndian<quint32>(message.constData() + sizeof kMagic);
    if (jsonBytes > quint32(kTaskMessageMaxJsonBytes))
        return messageError("JSON length " + num(jsonBytes) + " exceeds the limit of " +
                            num(kTaskMessageMaxJsonBytes) + " bytes");
    if (qsizetype(jsonBytes) > message.size() - kTaskMessagePrefixBytes)
        return messageError("JSON length " + num(jsonBytes) + " but only " +
                            num(message.size() - kTaskMessagePrefixBytes) + " bytes follow (truncated)");
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(
        QByteArray::fromRawData(message.constData() + kTaskMessagePrefixBytes, jsonBytes), &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return messageError("JSON header: " + parseError.errorString().toStdString() + " at byte " +
                            num(parseError.offset));
    if (!doc.isObject())
        return messageError("JSON header is not an object");
    TaskMessage out;
    out.header = doc.object();
    if (!out.header.value(u"type").isString())
        return messageError("JSON header has no string \"type\"");
    if (readableHeader)
        *readableHeader = out.header;

    const QByteArrayView all(message);
    qsizetype at = kTaskMessagePrefixBytes + jsonBytes;
    while (at < all.size()) {
        const QByteArrayView rest = all.sliced(at);
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
            return messageError("frame " + num(index) + " (at byte " + num(at) + "): " + frame.message(),
                                frame.kind());
        out.frames.append(*frame);
        at += size;
    }
    out.bytes = std::move(message);
    return out;
}

Result<std::vector<float>> partitionValues(const TaskFrame& frame) {
    if (frame.type != TaskFrameType::Partition)
        return makeError("partition values: frame type " + num(int(frame.type)) + " is not Partition (6)",
                         ErrorKind::InvalidInput);
    if (frame.payload.size() % 4 != 0)
        return makeError("partition values: payload of " + num(frame.payload.size()) +
                             " bytes is not a whole number of fp32 values",
                         ErrorKind::InvalidInput);
    std::vector<float> values(std::size_t(frame.payload.size() / 4));
    if (!values.empty())
        std::memcpy(values.data(), frame.payload.data(), std::size_t(frame.payload.size()));
    return values;
}

QByteArrayView partitionPayload(std::span<const float> values) {
    return {reinterpret_cast<const char*>(values.data()), qsizetype(values.size() * sizeof(float))};
}

QByteArray gradientPayload(std::span<const float> values, int bits) {
    if (bits == 32)
        return partitionPayload(values).toByteArray();
    const std::vector<std::uint8_t> bytes = gpu::quantize(values, bits);
    return {reinterpret_cast<const char*>(bytes.data()), qsizetype(bytes.size())};
}

Result<std::vector<float>> partitionValues(const TaskMessage& message) {
    const TaskFrame* frame = message.frame(TaskFrameType::Partition);
    return frame ? partitionValues(*frame) : makeError("no Partition frame", ErrorKind::InvalidInput);
}

Result<std::vector<float>> gradientValues(const TaskFrame& frame, int bits, qint64 count) {
    if (frame.type != TaskFrameType::Partition)
        return makeError("gradient values: frame type " + num(int(frame.type)) + " is not Partition (6)",
                         ErrorKind::InvalidInput);
    Result<std::vector<float>> values = gpu::dequantize(
        {reinterpret_cast<const std::uint8_t*>(frame.payload.data()), std::size_t(frame.payload.size())},
        count, bits);
    if (!values)
        return makeError("gradient values: " + values.message(), ErrorKind::InvalidInput);
    return values;
}

} // namespace tessera::protocol
