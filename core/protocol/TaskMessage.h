// SPDX-License-Identifier: Apache-2.0
#pragma once
// TaskMessage: one binary /v1/session WebSocket message — a small JSON header (a typed session
// message: a task, a result, an averaging share; see SessionMessages.h) followed by the TaskFrames
// that carry its tensors.
//
// Layout: "TSM1" · u32 LE JSON length (≤ kTaskMessageMaxJsonBytes) · the JSON object (UTF-8,
// with a string "type") · 0..kTaskMessageMaxFrames TaskFrames back to back, nothing after.
//
// One copy per hop: a sender writes each payload once, into the message it sends (TaskMessageBuilder
// copies a payload in and computes its CRC as it goes; wrapInPlace writes the envelope in front of a
// payload the engine wrote behind reserved headroom). A receiver checks every frame once
// (decodeTaskMessage) and keeps views into the buffer it received. The coordinator relays a frame
// with one copy into the next message and the CRC it checked on arrival.

#include "base/Result.h"
#include "protocol/TaskFrame.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonObject>
#include <QList>

#include <cstdint>
#include <optional>
#include <span>

namespace tessera::protocol {

inline constexpr qsizetype kTaskMessageMaxJsonBytes = 64 * 1024;
inline constexpr int kTaskMessageMaxFrames = 8;
inline constexpr qsizetype kTaskMessageMaxBytes = qsizetype(256) << 20;
inline constexpr qsizetype kTaskMessagePrefixBytes = 8; // "TSM1" and the JSON length
// What an engine leaves free in front of an output frame so that its node can write the message
// around it (prefix, a task_result header, the frame header): a result's header is ~200 bytes.
inline constexpr qsizetype kTaskMessageHeadroom = 1024;

// A frame kept past its message: the message's buffer (shared, never copied) and the view into it.
struct HeldFrame {
    QByteArray buffer;
    TaskFrame frame;
    bool isNull() const { return frame.payload.isNull(); }
};

// A payload this process made (a token frame), held with its CRC32C computed once, for every time
// it is sent.
HeldFrame holdPayload(QByteArray payload, TaskFrameType type);

struct TaskMessage {
    QByteArray bytes; // the message as received: the frames are views into it
    QJsonObject header;
    QList<TaskFrame> frames;

    // The first frame of `type`, or nullptr.
    const TaskFrame* frame(TaskFrameType type) const;
    // That frame with the buffer that keeps it valid; null when there is none.
    HeldFrame hold(TaskFrameType type) const;
};

// Checks the magic, the JSON bound and shape (an object with a string "type"), every frame (CRC32C
// included) and the absence of trailing bytes. Takes `message` without copying it (implicit
// sharing). Every failure names what is wrong. When the JSON header was readable but a frame was
// not, `readableHeader` (if given) receives it, so that a task can still be answered by its id.
Result<TaskMessage> decodeTaskMessage(QByteArray message, const TaskFrameLimits& limits = {},
                                      QJsonObject* readableHeader = nullptr);

// Builds one message in a buffer of its final size: the header first, then each frame, its payload
// copied in once.
class TaskMessageBuilder final {
public:
    // payloadBytes: the frames' payloads together (the buffer is reserved once).
    explicit TaskMessageBuilder(const QJsonObject& header, qsizetype payloadBytes = 0);
    // A payload this process made: copied in, its CRC32C computed over the copy as it lands.
    TaskMessageBuilder& add(TaskFrameType type, QByteArrayView payload);
    // A frame decoded (and CRC-checked) on arrival, relayed as `type`: copied in once, its CRC reused.
    TaskMessageBuilder& relay(TaskFrameType type, const TaskFrame& frame);
    // A payload and its CRC32C already known (a frame this process built and sends again).
    TaskMessageBuilder& addWithCrc(TaskFrameType type, QByteArrayView payload, quint32 crc);
    QByteArray take() { return std::move(m_message); }

private:
    QByteArray m_message;
    int m_frames = 0;
};

// The bytes a message with this JSON header and one frame adds in front of the frame's payload.
qsizetype envelopeBytes(const QByteArray& compactJson);

// Writes the envelope of a one-frame message into buffer[..payloadAt), right before the payload at
// buffer[payloadAt..] (which stays where it is), and returns the offset the message starts at.
// nullopt (nothing written) when the envelope does not fit in front of the payload.
std::optional<qsizetype> wrapInPlace(std::span<std::uint8_t> buffer, qsizetype payloadAt,
                                     const QJsonObject& header, TaskFrameType type);

// A Partition frame's floats (a copy), checked: 4 bytes each.
Result<std::vector<float>> partitionValues(const TaskFrame& frame);
// The message's Partition frame's fp32 values; an error when it has none.
Result<std::vector<float>> partitionValues(const TaskMessage& message);
// fp32 values as a Partition payload (a view of their memory: little-endian hosts only).
QByteArrayView partitionPayload(std::span<const float> values);
// A gradient share's or result's values in `bits` (32, 8 or 4: gpu/base/BlockQuant) as a Partition
// payload, and back: exactly `count` values, checked (size, scales, codes, finite).
QByteArray gradientPayload(std::span<const float> values, int bits);
Result<std::vector<float>> gradientValues(const TaskFrame& frame, int bits, qint64 count);

} // namespace tessera::protocol
