#pragma once
// TaskFrame: the binary WebSocket frame that carries one tensor between the coordinator and a node.
//
// Fixed little-endian layout, 50 bytes of header followed by the payload:
//   offset  size  field
//        0     4  magic "TSF1"
//        4     2  protocol version (u16, = 1)
//        6     1  type (TaskFrameType)
//        7     1  codec id
//        8     1  dtype
//        9     1  reserved, must be 0
//       10     8  task id (i64)
//       18     8  microbatch (i64)
//       26     2  stage (u16)
//       28     2  reserved, must be 0
//       30    12  shape: B, T, d (3 × u32; d = 0 for token frames; {count, 0, 0} for Partition)
//       42     4  payload length in bytes (u32)
//       46     4  CRC32C of the payload (u32)
//       50     …  payload
// decodeTaskFrame checks every field against bounds before the caller allocates anything.

#include "Result.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QtGlobal>

#include <array>

namespace tessera {

enum class TaskFrameType : quint8 {
    ForwardInput = 1,
    ForwardOutput = 2,
    BackwardInput = 3,
    BackwardOutput = 4,
    Targets = 5,
    Partition = 6, // fp32 weights for averaging: shape {count, 0, 0}, payload 4·count bytes
};

struct TaskFrameHeader {
    TaskFrameType type = TaskFrameType::ForwardInput;
    qint64 taskId = 0;
    qint64 microbatch = 0;
    int stage = 0;
    quint8 codec = 0;
    quint8 dtype = 0;
    std::array<quint32, 3> shape{}; // B, T, d (d = 0 for token frames)
    quint32 payloadBytes = 0;       // filled in by encodeTaskFrame
    quint32 crc32c = 0;             // filled in by encodeTaskFrame

    bool operator==(const TaskFrameHeader&) const = default;
};

struct TaskFrameLimits {
    int maxStage = 1023;
    quint32 maxBatch = 4096;
    quint32 maxSeq = 65536;
    quint32 maxWidth = 65536;
    quint32 maxPayloadBytes = 256u << 20;
};

struct TaskFrame {
    TaskFrameHeader header;
    QByteArrayView payload; // a view into the decoded frame: valid only while that buffer lives
};

inline constexpr qsizetype kTaskFrameHeaderBytes = 50;
inline constexpr quint16 kTaskFrameVersion = 1;

// Header then payload; payloadBytes and crc32c come from `payload`, whatever `header` says.
// The caller keeps stage within 0..65535 and the payload under 4 GiB (decode enforces tighter limits).
QByteArray encodeTaskFrame(const TaskFrameHeader& header, QByteArrayView payload);

// Checks, in order: size, magic, version, type, reserved bytes, stage, shape, payload length
// (bound, then exact match with the frame size), CRC32C. The error names the failing field.
// A Partition frame's shape is {count, 0, 0} with count ≤ maxPayloadBytes/4 and a payload of
// exactly 4·count bytes.
// Allocates nothing on success: the payload is a view into `frame`.
Result<TaskFrame> decodeTaskFrame(QByteArrayView frame, const TaskFrameLimits& limits = {});

} // namespace tessera
