// SPDX-License-Identifier: Apache-2.0
#include "base/TokenFrame.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace tessera::gpu {

namespace {

constexpr char kMagic[4] = {'T', 'S', 'T', '1'};

void appendU32(Bytes& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// Byte by byte, so the format is little-endian whatever the host is.
std::uint32_t readU32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
           std::uint32_t(p[3]) << 24;
}

} // namespace

Result<Bytes> encodeTokens(std::span<const std::int32_t> ids, int batch, int seq) {
    if (batch < 1 || seq < 1)
        return makeError("token frame: batch and sequence length must be at least 1, got " +
                         std::to_string(batch) + "x" + std::to_string(seq));
    if (std::uint64_t(ids.size()) != std::uint64_t(batch) * std::uint64_t(seq))
        return makeError("token frame: " + std::to_string(ids.size()) + " ids do not fill " +
                         std::to_string(batch) + "x" + std::to_string(seq));
    if (const auto it = std::find_if(ids.begin(), ids.end(), [](std::int32_t id) { return id < 0; });
        it != ids.end())
        return makeError("token frame: token id " + std::to_string(*it) + " at position " +
                         std::to_string(it - ids.begin()) + " is negative");
    Bytes out;
    out.reserve(kTokenFrameHeaderSize + 4 * ids.size());
    out.insert(out.end(), std::begin(kMagic), std::end(kMagic));
    appendU32(out, static_cast<std::uint32_t>(batch));
    appendU32(out, static_cast<std::uint32_t>(seq));
    for (const std::int32_t id : ids)
        appendU32(out, static_cast<std::uint32_t>(id));
    return out;
}

Result<TokenBatch> decodeTokens(std::span<const std::uint8_t> frame, int vocabSize, int maxSeqLen,
                                std::int64_t maxTokens) {
    const auto str = [](auto v) { return std::to_string(v); };
    if (vocabSize < 1)
        return makeError("token frame: the vocabulary size must be positive, got " + str(vocabSize));
    if (frame.size() < kTokenFrameHeaderSize)
        return makeError("token frame truncated: " + str(frame.size()) + " bytes, shorter than its " +
                         str(kTokenFrameHeaderSize) + "-byte header");
    if (std::memcmp(frame.data(), kMagic, sizeof kMagic) != 0)
        return makeError("not a token frame: the magic is not \"TST1\" (a codec activation frame "
                         "starts with \"TSC1\"; stage 0 takes token ids)");
    const std::uint32_t batch = readU32(frame.data() + 4), seq = readU32(frame.data() + 8);
    if (batch < 1 || seq < 1)
        return makeError("token frame is empty (" + str(batch) + "x" + str(seq) + ")");
    if (batch > std::uint32_t(INT32_MAX))
        return makeError("token frame's batch " + str(batch) + " is beyond any limit");
    if (seq > std::uint32_t(std::max(maxSeqLen, 0)))
        return makeError("token frame's sequence length " + str(seq) + " exceeds max_seq_len " +
                         str(maxSeqLen));
    // u32·u32 fits u64: no overflow before the bound.
    const std::uint64_t count = std::uint64_t(batch) * seq;
    if (count > std::uint64_t(std::max<std::int64_t>(maxTokens, 0)))
        return makeError("token frame carries " + str(batch) + "x" + str(seq) +
                         " tokens, more than the limit of " + str(maxTokens));
    const std::uint64_t expected = kTokenFrameHeaderSize + 4 * count;
    if (frame.size() < expected)
        return makeError("token frame truncated: " + str(frame.size()) + " bytes, its header announces " +
                         str(expected));
    if (frame.size() > expected)
        return makeError("token frame has trailing bytes: " + str(frame.size()) +
                         " bytes, its header announces " + str(expected));
    const std::uint8_t* ids = frame.data() + kTokenFrameHeaderSize;
    for (std::uint64_t i = 0; i < count; ++i)
        if (const std::uint32_t id = readU32(ids + 4 * i); id >= std::uint32_t(vocabSize))
            return makeError("token frame carries token id " + str(id) + " at position " + str(i) +
                             ", outside the vocabulary of " + str(vocabSize));

    TokenBatch out;
    out.batch = static_cast<int>(batch);
    out.seq = static_cast<int>(seq);
    out.ids.resize(count);
    for (std::uint64_t i = 0; i < count; ++i)
        out.ids[i] = static_cast<std::int32_t>(readU32(ids + 4 * i));
    return out;
}

} // namespace tessera::gpu
