// SPDX-License-Identifier: Apache-2.0
#pragma once
// TaskFrame: one tensor's bytes inside a binary session message — its role, its length and its
// CRC32C. Nothing else: the message's JSON header says which task, microbatch or round the frame
// belongs to, and the payload describes itself (a codec frame "TSC1" carries codec, dtype and
// B·T·d; a token frame "TST1" carries B·T; a partition is fp32 values, 4 bytes each). A field
// travels once, and whoever needs it reads it where it is.
//
// Fixed little-endian layout, 16 bytes of header followed by the payload:
//   offset  size  field
//        0     4  magic "TSF1"
//        4     2  version (u16, = 2)
//        6     1  type (TaskFrameType)
//        7     1  reserved, must be 0
//        8     4  payload length in bytes (u32)
//       12     4  CRC32C of the payload (u32)
//       16     …  payload
// Version 1 (Tessera 0.1) had a 50-byte header that repeated the message's ids and the payload's
// shape; a version-1 peer reading this one says "protocol version 2 is newer ... update Tessera".

#include "base/Result.h"

#include <QByteArrayView>
#include <QtGlobal>

namespace tessera::protocol {

enum class TaskFrameType : quint8 {
    ForwardInput = 1,   // a token frame (stage 0) or the previous stage's activation frame
    ForwardOutput = 2,  // this stage's activation frame, for the next stage
    BackwardInput = 3,  // the next stage's gradient frame
    BackwardOutput = 4, // this stage's gradient frame, for the previous stage
    Targets = 5,        // a token frame of the input's shape (the last stage)
    Partition = 6,      // fp32 weights for averaging: 4 bytes a value
};

struct TaskFrame {
    TaskFrameType type = TaskFrameType::ForwardInput;
    QByteArrayView payload; // a view into the decoded buffer: valid only while that buffer lives
    quint32 crc32c = 0;     // of the payload, checked when the frame was decoded
};

struct TaskFrameLimits {
    quint32 maxPayloadBytes = 256u << 20;
};

inline constexpr qsizetype kTaskFrameHeaderBytes = 16;
inline constexpr quint16 kTaskFrameVersion = 2;

// Writes the 16-byte header of a frame whose payload follows it (crc: that payload's CRC32C).
void writeTaskFrameHeader(char* out, TaskFrameType type, quint32 payloadBytes, quint32 crc);

// Checks, in order: size, magic, version, type, reserved byte, payload length (bound, then exact
// match with the frame size; a Partition's a multiple of 4), CRC32C. The error names the failing
// field; a newer version is ErrorKind::Unsupported, anything else InvalidInput. Allocates nothing:
// the payload is a view into `frame`.
Result<TaskFrame> decodeTaskFrame(QByteArrayView frame, const TaskFrameLimits& limits = {});

} // namespace tessera::protocol
