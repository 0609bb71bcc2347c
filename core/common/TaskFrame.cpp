#include "common/TaskFrame.h"

#include "common/Crc32c.h"

#include <QtEndian>

#include <cstring>
#include <string>

namespace tessera {

namespace {

constexpr char kMagic[4] = {'T', 'S', 'F', '1'};

// The layout documented in TaskFrame.h is the order of these writes and reads.
class Writer {
public:
    explicit Writer(char* out)
        : m_out(out) {}
    template <class T>
    void put(T value) {
        qToLittleEndian(value, m_out + m_at);
        m_at += sizeof(T);
    }
    qsizetype position() const { return m_at; }

private:
    char* m_out;
    qsizetype m_at = sizeof kMagic;
};

class Reader {
public:
    explicit Reader(QByteArrayView in)
        : m_in(in) {}
    template <class T>
    T take() {
        const T value = qFromLittleEndian<T>(m_in.data() + m_at);
        m_at += sizeof(T);
        return value;
    }
    qsizetype position() const { return m_at; }

private:
    QByteArrayView m_in;
    qsizetype m_at = sizeof kMagic;
};

Error frameError(const std::string& what) {
    return makeError("task frame: " + what);
}

std::string bound(const char* field, quint64 value, quint64 min, quint64 max) {
    return std::string(field) + " " + std::to_string(value) + " is outside " + std::to_string(min) + ".." +
           std::to_string(max);
}

} // namespace

QByteArray encodeTaskFrame(const TaskFrameHeader& header, QByteArrayView payload) {
    Q_ASSERT(header.stage >= 0 && header.stage <= 0xFFFF);
    Q_ASSERT(payload.size() <= qsizetype(0xFFFFFFFFu));
    QByteArray frame(kTaskFrameHeaderBytes + payload.size(), Qt::Uninitialized);
    std::memcpy(frame.data(), kMagic, sizeof kMagic);
    Writer out(frame.data());
    out.put<quint16>(kTaskFrameVersion);
    out.put<quint8>(static_cast<quint8>(header.type));
    out.put<quint8>(header.codec);
    out.put<quint8>(header.dtype);
    out.put<quint8>(0); // reserved
    out.put<qint64>(header.taskId);
    out.put<qint64>(header.microbatch);
    out.put<quint16>(static_cast<quint16>(header.stage));
    out.put<quint16>(0); // reserved
    for (const quint32 extent : header.shape)
        out.put<quint32>(extent);
    out.put<quint32>(static_cast<quint32>(payload.size()));
    out.put<quint32>(crc32c(payload));
    Q_ASSERT(out.position() == kTaskFrameHeaderBytes);
    if (!payload.isEmpty())
        std::memcpy(frame.data() + kTaskFrameHeaderBytes, payload.data(), payload.size());
    return frame;
}

Result<TaskFrame> decodeTaskFrame(QByteArrayView frame, const TaskFrameLimits& limits) {
    if (frame.size() < kTaskFrameHeaderBytes)
        return frameError("size " + std::to_string(frame.size()) + " bytes is shorter than the " +
                          std::to_string(kTaskFrameHeaderBytes) + "-byte header");
    if (std::memcmp(frame.data(), kMagic, sizeof kMagic) != 0)
        return frameError("magic is not \"TSF1\"");
    // Read every header field first (all within the 50 bytes checked above), then check in order.
    Reader in(frame);
    const quint16 version = in.take<quint16>();
    const quint8 type = in.take<quint8>();
    TaskFrameHeader header;
    header.codec = in.take<quint8>();
    header.dtype = in.take<quint8>();
    const quint8 reserved8 = in.take<quint8>();
    header.taskId = in.take<qint64>();
    header.microbatch = in.take<qint64>();
    header.stage = in.take<quint16>();
    const quint16 reserved16 = in.take<quint16>();
    for (quint32& extent : header.shape)
        extent = in.take<quint32>();
    header.payloadBytes = in.take<quint32>();
    header.crc32c = in.take<quint32>();
    Q_ASSERT(in.position() == kTaskFrameHeaderBytes);

    if (version > kTaskFrameVersion)
        return frameError("protocol version " + std::to_string(version) + " is newer than this build (" +
                          std::to_string(kTaskFrameVersion) + "); update Tessera");
    if (version != kTaskFrameVersion)
        return frameError("protocol version " + std::to_string(version) + " is not supported");
    if (type < quint8(TaskFrameType::ForwardInput) || type > quint8(TaskFrameType::Partition))
        return frameError("type " + std::to_string(type) + " is unknown");
    header.type = static_cast<TaskFrameType>(type);
    if (reserved8 != 0 || reserved16 != 0)
        return frameError("reserved bytes are not zero");
    if (header.stage > limits.maxStage)
        return frameError(bound("stage", header.stage, 0, limits.maxStage));
    const auto [batch, seq, width] = header.shape;
    if (header.type == TaskFrameType::Partition) {
        // A flat vector of fp32 weights: its length is the whole shape.
        const quint32 maxCount = limits.maxPayloadBytes / 4;
        if (batch > maxCount)
            return frameError(bound("partition count", batch, 0, maxCount));
        if (seq != 0 || width != 0)
            return frameError("partition shape must be {count, 0, 0}, got {" + std::to_string(batch) + ", " +
                              std::to_string(seq) + ", " + std::to_string(width) + "}");
        if (quint64(header.payloadBytes) != 4ull * batch)
            return frameError("partition payload length " + std::to_string(header.payloadBytes) +
                              " is not 4 × " + std::to_string(batch) + " floats");
    } else {
        if (batch < 1 || batch > limits.maxBatch)
            return frameError(bound("shape B", batch, 1, limits.maxBatch));
        if (seq < 1 || seq > limits.maxSeq)
            return frameError(bound("shape T", seq, 1, limits.maxSeq));
        if (width > limits.maxWidth)
            return frameError(bound("shape d", width, 0, limits.maxWidth));
    }

    if (header.payloadBytes > limits.maxPayloadBytes)
        return frameError("payload length " + std::to_string(header.payloadBytes) + " exceeds the limit of " +
                          std::to_string(limits.maxPayloadBytes) + " bytes");
    const qsizetype carried = frame.size() - kTaskFrameHeaderBytes;
    if (carried < qsizetype(header.payloadBytes))
        return frameError("payload length " + std::to_string(header.payloadBytes) + " but only " +
                          std::to_string(carried) + " bytes follow the header (truncated)");
    if (carried > qsizetype(header.payloadBytes))
        return frameError("payload length " + std::to_string(header.payloadBytes) + " but " +
                          std::to_string(carried) + " bytes follow the header (trailing bytes)");

    const QByteArrayView payload = frame.sliced(kTaskFrameHeaderBytes);
    if (crc32c(payload) != header.crc32c)
        return frameError("CRC32C of the payload does not match");
    return TaskFrame{header, payload};
}

} // namespace tessera
