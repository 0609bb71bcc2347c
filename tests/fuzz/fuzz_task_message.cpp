// SPDX-License-Identifier: Apache-2.0
// TaskMessage: a binary /v1/session message as either side receives it ("TSM1", a JSON header, up
// to 8 TaskFrames), then what a node or the coordinator reads of it: the header as a typed session
// message (each direction), a Partition's values at 32, 8 and 4 bits. A message that decodes
// relays (TaskMessageBuilder::relay) and wraps in place (wrapInPlace) into messages that decode to
// the same frames.
#include "FuzzCheck.h"
#include "base/BlockQuant.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QJsonDocument>

#include <vector>

using namespace tessera;
using namespace tessera::protocol;

namespace {

void sameFrames(const TaskMessage& a, const TaskMessage& b) {
    FUZZ_CHECK(a.frames.size() == b.frames.size());
    for (qsizetype i = 0; i < a.frames.size(); ++i) {
        FUZZ_CHECK(a.frames[i].type == b.frames[i].type);
        FUZZ_CHECK(a.frames[i].crc32c == b.frames[i].crc32c);
        FUZZ_CHECK(a.frames[i].payload == b.frames[i].payload);
    }
}

// The values of a Partition frame as a gradient share at `bits`, for every count its size allows.
void readGradient(const TaskFrame& frame) {
    (void)gradientValues(frame, 32, frame.payload.size() / 4);
    for (int bits : {8, 4}) {
        const qint64 bytes = frame.payload.size();
        const qint64 estimate = bytes * 256 / (256 + 4) * (bits == 4 ? 2 : 1);
        for (qint64 n = std::max<qint64>(0, estimate - 8); n <= estimate + 8; ++n) {
            if (gpu::quantizedBytes(n, bits) != bytes)
                continue;
            const Result<std::vector<float>> values = gradientValues(frame, bits, n);
            FUZZ_CHECK(!values || qint64(values->size()) == n);
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    QJsonObject readable;
    const Result<TaskMessage> decoded = decodeTaskMessage(
        QByteArray(reinterpret_cast<const char*>(data), qsizetype(size)), TaskFrameLimits{}, &readable);
    tessera::fuzz::verdict("message", decoded);
    if (!decoded) {
        // The node answers a task whose frames are bad by its id: the header must be one it read.
        if (!readable.isEmpty())
            FUZZ_CHECK(readable.value(u"type").isString());
        (void)readableTaskId(readable);
        return 0;
    }
    const TaskMessage& m = *decoded;
    FUZZ_CHECK(m.header.value(u"type").isString());
    FUZZ_CHECK(m.frames.size() <= kTaskMessageMaxFrames);
    FUZZ_CHECK(m.bytes.size() == qsizetype(size));
    for (const TaskFrame& f : m.frames) {
        FUZZ_CHECK(f.payload.data() >= m.bytes.constData() &&
                   f.payload.data() + f.payload.size() <= m.bytes.constData() + m.bytes.size());
        FUZZ_CHECK(!m.hold(f.type).isNull());
        if (f.type == TaskFrameType::Partition) {
            const Result<std::vector<float>> values = partitionValues(f);
            FUZZ_CHECK(values && qsizetype(values->size()) * 4 == f.payload.size());
            readGradient(f);
        }
    }
    // The header as the session reads it, both ways.
    for (Direction direction : {Direction::ToNode, Direction::ToCoordinator}) {
        const Result<SessionMessage> typed = parseSessionMessage(m.header, direction, Transport::Binary);
        tessera::fuzz::verdict(
            direction == Direction::ToNode ? "header to a node" : "header to the coordinator", typed);
        if (typed) {
            FUZZ_CHECK(directionOf(typeOf(*typed)) == direction);
            FUZZ_CHECK(int(transportOf(typeOf(*typed))) & int(Transport::Binary));
        }
    }
    (void)readableTaskId(m.header);

    // Relayed by the coordinator: one copy of each frame into a new message with the same header.
    qsizetype payloadBytes = 0;
    for (const TaskFrame& f : m.frames)
        payloadBytes += f.payload.size();
    if (QJsonDocument(m.header).toJson(QJsonDocument::Compact).size() > kTaskMessageMaxJsonBytes)
        return 0; // re-encoded JSON may be longer than what was sent (escapes); the builder asserts
    TaskMessageBuilder builder(m.header, payloadBytes);
    for (const TaskFrame& f : m.frames)
        builder.relay(f.type, f);
    const Result<TaskMessage> relayed = decodeTaskMessage(builder.take());
    FUZZ_CHECK(relayed);
    sameFrames(m, *relayed);

    // Sent by a node: the envelope written in front of an engine's output in its own buffer.
    if (m.frames.size() == 1) {
        const TaskFrame& f = m.frames.first();
        std::vector<std::uint8_t> buffer(std::size_t(kTaskMessageHeadroom + f.payload.size()));
        std::memcpy(buffer.data() + kTaskMessageHeadroom, f.payload.data(), std::size_t(f.payload.size()));
        const std::optional<qsizetype> start = wrapInPlace(buffer, kTaskMessageHeadroom, m.header, f.type);
        if (start) {
            const Result<TaskMessage> wrapped = decodeTaskMessage(QByteArray(
                reinterpret_cast<const char*>(buffer.data()) + *start, qsizetype(buffer.size()) - *start));
            FUZZ_CHECK(wrapped);
            sameFrames(m, *wrapped);
        }
    }
    return 0;
}
