// SPDX-License-Identifier: Apache-2.0
// TaskFrame: the 16-byte frame header written and checked field by field.
#include "protocol/TaskFrame.h"

#include "protocol/Crc32c.h"

#include <QtEndian>

#include <cstring>
#include <string>

namespace tessera::protocol {

namespace {

constexpr char kMagic[4] = {'T', 'S', 'F', '1'};
constexpr qsizetype kVersionAt = 4, kTypeAt = 6, kReservedAt = 7, kLengthAt = 8, kCrcAt = 12;

Error frameError(const std::string& what, ErrorKind kind = ErrorKind::InvalidInput) {
    return makeError("task frame: " + what, kind);
}

std::string num(qint64 v) {
    return std::to_string(v);
}

} // namespace

void writeTaskFrameHeader(char* out, TaskFrameType type, quint32 payloadBytes, quint32 crc) {
    std::memcpy(out, kMagic, sizeof kMagic);
    qToLittleEndian<quint16>(kTaskFrameVersion, out + kVersionAt);
    out[kTypeAt] = char(type);
    out[kReservedAt] = 0;
    qToLittleEndian<quint32>(payloadBytes, out + kLengthAt);
    qToLittleEndian<quint32>(crc, out + kCrcAt);
}

Result<TaskFrame> decodeTaskFrame(QByteArrayView frame, const TaskFrameLimits& limits) {
    if (frame.size() < kTaskFrameHeaderBytes)
        return frameError("size " + num(frame.size()) + " bytes is shorter than the " +
                          num(kTaskFrameHeaderBytes) + "-byte header");
    if (std::memcmp(frame.data(), kMagic, sizeof kMagic) != 0)
        return frameError("magic is not \"TSF1\"");
    const quint16 version = qFromLittleEndian<quint16>(frame.data() + kVersionAt);
    const auto type = quint8(frame[kTypeAt]);
    const auto reserved = quint8(frame[kReservedAt]);
    const quint32 length = qFromLittleEndian<quint32>(frame.data() + kLengthAt);
    const quint32 crc = qFromLittleEndian<quint32>(frame.data() + kCrcAt);

    if (version > kTaskFrameVersion)
        return frameError("protocol version " + num(version) + " is newer than this build (" +
                              num(kTaskFrameVersion) + "); update Tessera",
                          ErrorKind::Unsupported);
    if (version != kTaskFrameVersion)
        return frameError("protocol version " + num(version) +
                          " is from an older Tessera (this build speaks " + num(kTaskFrameVersion) +
                          "); the other side must update");
    if (type < quint8(TaskFrameType::ForwardInput) || type > quint8(TaskFrameType::Partition))
        return frameError("type " + num(type) + " is unknown");
    if (reserved != 0)
        return frameError("reserved byte is not zero");
    if (length > limits.maxPayloadBytes)
        return frameError("payload length " + num(length) + " exceeds the limit of " +
                          num(limits.maxPayloadBytes) + " bytes");
    const qsizetype carried = frame.size() - kTaskFrameHeaderBytes;
    if (carried < qsizetype(length))
        return frameError("payload length " + num(length) + " but only " + num(carried) +
                          " bytes follow the header (truncated)");
    if (carried > qsizetype(length))
        return frameError("payload length " + num(length) + " but " + num(carried) +
                          " bytes follow the header (trailing bytes)");
    if (TaskFrameType(type) == TaskFrameType::Partition && length % 4 != 0)
        return frameError("partition payload length " + num(length) +
                          " is not a whole number of fp32 values");
    const QByteArrayView payload = frame.sliced(kTaskFrameHeaderBytes);
    if (crc32c(payload) != crc)
        return frameError("CRC32C of the payload does not match");
    return TaskFrame{TaskFrameType(type), payload, crc};
}

} // namespace tessera::protocol
