// SPDX-License-Identifier: Apache-2.0
#include "codec/FrameHeader.h"

#include <algorithm>
#include <string>

namespace tessera::gpu {

namespace {

constexpr std::uint8_t kMagic[4] = {'T', 'S', 'C', '1'};

// Wire numbers are spelled out rather than taken from the enums, so that reordering an enum
// never changes the format. Zero is never valid: a zeroed buffer is refused.
std::uint8_t codecWire(CodecKind kind) {
    switch (kind) {
    case CodecKind::None:
        return 1;
    case CodecKind::Int8:
        return 2;
    case CodecKind::Subspace:
        return 3;
    }
    return 0;
}

std::uint8_t dtypeWire(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32:
        return 1;
    case Dtype::BF16:
        return 2;
    case Dtype::F16:
        return 3;
    case Dtype::I8:
        return 4;
    }
    return 0;
}

void putU32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

std::uint32_t getU32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
           std::uint32_t(p[3]) << 24;
}

} // namespace

std::string_view payloadKindName(PayloadKind kind) {
    return kind == PayloadKind::Activation ? "activation" : "gradient";
}

void FrameHeader::appendTo(std::vector<std::uint8_t>& out) const {
    out.insert(out.end(), std::begin(kMagic), std::end(kMagic));
    out.push_back(codecWire(codec));
    out.push_back(static_cast<std::uint8_t>(kind));
    out.push_back(dtypeWire(dtype));
    out.push_back(tokenBytes);
    putU32(out, batch);
    putU32(out, seq);
    putU32(out, width);
    putU32(out, rank);
    putU32(out, block);
}

Result<FrameHeader> FrameHeader::parse(std::span<const std::uint8_t> bytes) {
    if (bytes.size() < kSize)
        return makeError("codec payload truncated: " + std::to_string(bytes.size()) +
                         " bytes, the header alone is " + std::to_string(kSize));
    const std::uint8_t* p = bytes.data();
    if (!std::equal(std::begin(kMagic), std::end(kMagic), p))
        return makeError("not a Tessera codec payload (bad magic, expected \"TSC1\")");

    FrameHeader h;
    bool known = false;
    for (CodecKind c : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace})
        if (codecWire(c) == p[4]) {
            h.codec = c;
            known = true;
        }
    if (!known)
        return makeError("codec payload names an unknown codec id " + std::to_string(p[4]));
    if (p[5] != std::uint8_t(PayloadKind::Activation) && p[5] != std::uint8_t(PayloadKind::Gradient))
        return makeError("codec payload names an unknown payload kind " + std::to_string(p[5]));
    h.kind = static_cast<PayloadKind>(p[5]);
    known = false;
    for (Dtype d : {Dtype::F32, Dtype::BF16, Dtype::F16, Dtype::I8})
        if (dtypeWire(d) == p[6]) {
            h.dtype = d;
            known = true;
        }
    if (!known)
        return makeError("codec payload names an unknown element type " + std::to_string(p[6]));
    h.tokenBytes = p[7];
    h.batch = getU32(p + 8);
    h.seq = getU32(p + 12);
    h.width = getU32(p + 16);
    h.rank = getU32(p + 20);
    h.block = getU32(p + 24);
    return h;
}

} // namespace tessera::gpu
