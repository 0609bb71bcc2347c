// SPDX-License-Identifier: Apache-2.0
// TaskFrame: one tensor's 16-byte header and payload as it arrives inside a binary session message.
// A frame that decodes is exactly its header and payload, its CRC matches, and writing its header
// again gives the same 16 bytes (one spelling per frame).
#include "FuzzCheck.h"
#include "protocol/Crc32c.h"
#include "protocol/TaskFrame.h"

#include <cstring>

using namespace tessera::protocol;

namespace {

void decodeAndCheck(QByteArrayView frame, const TaskFrameLimits& limits) {
    const tessera::Result<TaskFrame> decoded = decodeTaskFrame(frame, limits);
    tessera::fuzz::verdict("frame", decoded);
    if (!decoded) {
        FUZZ_CHECK(decoded.kind() == tessera::ErrorKind::InvalidInput ||
                   decoded.kind() == tessera::ErrorKind::Unsupported);
        return;
    }
    const TaskFrame& f = *decoded;
    FUZZ_CHECK(f.payload.size() + kTaskFrameHeaderBytes == frame.size());
    FUZZ_CHECK(f.payload.data() == frame.data() + kTaskFrameHeaderBytes);
    FUZZ_CHECK(quint32(f.payload.size()) <= limits.maxPayloadBytes);
    FUZZ_CHECK(crc32c(f.payload) == f.crc32c);
    FUZZ_CHECK(f.type != TaskFrameType::Partition || f.payload.size() % 4 == 0);
    char header[kTaskFrameHeaderBytes];
    writeTaskFrameHeader(header, f.type, quint32(f.payload.size()), f.crc32c);
    FUZZ_CHECK(std::memcmp(header, frame.data(), sizeof header) == 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArrayView frame(reinterpret_cast<const char*>(data), qsizetype(size));
    decodeAndCheck(frame, {});
    decodeAndCheck(frame, TaskFrameLimits{64});
    return 0;
}
