// SPDX-License-Identifier: Apache-2.0
// The torch-free codec framing: FrameHeader (the 28 bytes in front of every activation or gradient
// payload) and TokenFrame (stage 0's input and the last stage's targets, "TST1"), as a stage reads
// them from the previous one. The first byte picks the model a token frame is checked against.
// What parses writes back to the same bytes.
#include "FuzzCheck.h"
#include "base/TokenFrame.h"
#include "codec/FrameHeader.h"

#include <algorithm>

using namespace tessera;
using namespace tessera::gpu;

namespace {

struct TokenModel {
    int vocab;
    int maxSeqLen;
    std::int64_t maxTokens;
};
constexpr TokenModel kModels[] = {
    {256, 256, 65536}, {32000, 1024, 4096}, {2, 4, 8}, {16777216, 1 << 20, 1 << 24}};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const TokenModel& model = kModels[data[0] % std::size(kModels)];
    const std::span<const std::uint8_t> bytes(data + 1, size - 1);

    const Result<FrameHeader> header = FrameHeader::parse(bytes);
    tessera::fuzz::verdict("codec header", header);
    if (header) {
        std::vector<std::uint8_t> written;
        header->appendTo(written);
        FUZZ_CHECK(written.size() == FrameHeader::kSize);
        FUZZ_CHECK(std::equal(written.begin(), written.end(), bytes.begin()));
        FUZZ_CHECK(header->tokens() == std::uint64_t(header->batch) * header->seq);
    }

    const Result<TokenBatch> tokens = decodeTokens(bytes, model.vocab, model.maxSeqLen, model.maxTokens);
    tessera::fuzz::verdict("token frame", tokens);
    if (!tokens)
        return 0;
    FUZZ_CHECK(tokens->batch >= 1 && tokens->seq >= 1 && tokens->seq <= model.maxSeqLen);
    FUZZ_CHECK(std::int64_t(tokens->batch) * tokens->seq <= model.maxTokens);
    FUZZ_CHECK(tokens->ids.size() == std::size_t(tokens->batch) * std::size_t(tokens->seq));
    for (std::int32_t id : tokens->ids)
        FUZZ_CHECK(id >= 0 && id < model.vocab);
    const Result<Bytes> again = encodeTokens(tokens->ids, tokens->batch, tokens->seq);
    FUZZ_CHECK(again);
    FUZZ_CHECK(again->size() == bytes.size() && std::equal(again->begin(), again->end(), bytes.begin()));
    return 0;
}
