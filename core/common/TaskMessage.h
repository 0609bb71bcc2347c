#pragma once
// TaskMessage: one binary /v1/session WebSocket message — a small JSON header (what it is: a
// task, a result, an averaging share) followed by the TaskFrames that carry its tensors.
//
// Layout: "TSM1" · u32 LE JSON length (≤ kTaskMessageMaxJsonBytes) · the JSON object (UTF-8,
// with a string "type") · 0..kTaskMessageMaxFrames TaskFrames back to back, nothing after.
// decodeTaskMessage checks the magic, the JSON bound and shape, every frame (CRC32C included)
// and the absence of trailing bytes before it returns; frames are views into the buffer.

#include "Result.h"
#include "common/TaskFrame.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QJsonObject>
#include <QList>

#include <span>

namespace tessera {

inline constexpr qsizetype kTaskMessageMaxJsonBytes = 64 * 1024;
inline constexpr int kTaskMessageMaxFrames = 8;
inline constexpr qsizetype kTaskMessageMaxBytes = qsizetype(256) << 20;

struct TaskMessage {
    QJsonObject header;
    QList<TaskFrame> frames; // views into the decoded buffer: valid only while it lives

    // The first frame of `type`, or nullptr.
    const TaskFrame* frame(TaskFrameType type) const;
};

struct TaskMessageFrame {
    TaskFrameHeader header; // payloadBytes and crc32c are filled in
    QByteArrayView payload;
};

QByteArray encodeTaskMessage(const QJsonObject& header, std::span<const TaskMessageFrame> frames = {});

// Every failure names what is wrong (the magic, the JSON length and its bound, frame i's field).
Result<TaskMessage> decodeTaskMessage(QByteArrayView message, const TaskFrameLimits& limits = {});

// A Partition frame's floats (a copy), checked: shape {count,0,0}, payload 4·count bytes.
Result<std::vector<float>> partitionValues(const TaskFrame& frame);
// A Partition frame header for `count` floats of `stage`.
TaskFrameHeader partitionHeader(int stage, qint64 count);

} // namespace tessera
