// SPDX-License-Identifier: Apache-2.0
// TokenFrame round-trips token ids and refuses every malformed frame with a reason; built
// without torch on its include path (as core/ is), it also drives a StageEngine end to end.
#include "GpuTest.h"
#include "base/TokenFrame.h"
#include "engine/StageEngine.h"

#include <cmath>
#include <cstring>

using namespace tessera::gpu;

namespace {

constexpr int kVocab = 256;
constexpr int kMaxSeq = 64;
constexpr std::int64_t kMaxTokens = 1024;

bool mentions(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

Bytes frameOf(const std::vector<std::int32_t>& ids, int batch, int seq) {
    auto frame = encodeTokens(ids, batch, seq);
    CHECK_MSG(frame.ok(), frame.message());
    return *frame;
}

std::string decodeError(const Bytes& frame) {
    auto decoded = decodeTokens(frame, kVocab, kMaxSeq, kMaxTokens);
    CHECK_MSG(!decoded.ok(), "a malformed frame decoded");
    return decoded.message();
}

void putU32(Bytes& frame, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        frame[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

} // namespace

TESSERA_TEST(roundTripsIdsLittleEndian) {
    const std::vector<std::int32_t> ids{0, 1, 255, 7, 0x0102, 42};
    const Bytes frame = frameOf(ids, 2, 3);
    CHECK(frame.size() == kTokenFrameHeaderSize + 4 * ids.size());
    CHECK(std::memcmp(frame.data(), "TST1", 4) == 0);
    CHECK(frame[4] == 2 && frame[8] == 3);
    CHECK(frame[12 + 4 * 4] == 0x02 && frame[12 + 4 * 4 + 1] == 0x01); // 0x0102 little-endian
    auto decoded = decodeTokens(frame, 0x0103, kMaxSeq, kMaxTokens);
    CHECK_MSG(decoded.ok(), decoded.message());
    CHECK(decoded->batch == 2 && decoded->seq == 3 && decoded->ids == ids);
}

TESSERA_TEST(encodingRefusesMisuse) {
    const std::vector<std::int32_t> ids{1, 2, 3, 4};
    CHECK(!encodeTokens(ids, 3, 1).ok());
    CHECK(!encodeTokens(ids, 0, 4).ok());
    CHECK(!encodeTokens({}, 1, 0).ok());
    auto negative = encodeTokens(std::vector<std::int32_t>{1, -5}, 1, 2);
    CHECK(!negative.ok() && mentions(negative.message(), "-5"));
}

TESSERA_TEST(malformedFramesNameWhatIsWrong) {
    const Bytes good = frameOf({1, 2, 3, 4, 5, 6}, 2, 3);

    for (std::size_t n = 0; n < good.size(); ++n)
        CHECK(mentions(decodeError(Bytes(good.begin(), good.begin() + n)), "truncated"));
    Bytes longer = good;
    longer.push_back(0);
    CHECK(mentions(decodeError(longer), "trailing"));

    Bytes magic = good;
    magic[3] = 'X';
    CHECK(mentions(decodeError(magic), "magic"));
    Bytes codecFrame = good;
    codecFrame[2] = 'C'; // "TSC1": an activation frame sent to stage 0
    CHECK(mentions(decodeError(codecFrame), "TSC1"));

    Bytes empty = good;
    putU32(empty, 4, 0);
    CHECK(mentions(decodeError(empty), "empty"));
    Bytes tooLong = good;
    putU32(tooLong, 8, kMaxSeq + 1);
    CHECK(mentions(decodeError(tooLong), "max_seq_len"));
    // 2^32-1 sequences: refused by the token limit, before anything is allocated.
    Bytes huge = good;
    putU32(huge, 4, 0xFFFFFFFFu);
    CHECK(mentions(decodeError(huge), "limit"));

    Bytes outside = good;
    putU32(outside, 12 + 4 * 5, kVocab);
    const std::string why = decodeError(outside);
    CHECK_MSG(mentions(why, "256") && mentions(why, "position 5"), why);
    Bytes negative = good;
    putU32(negative, 12, 0xFFFFFFFFu); // -1 as a u32
    CHECK(mentions(decodeError(negative), "vocabulary"));
}

TESSERA_TEST(randomBytesNeverDecode) {
    std::uint64_t state = 99;
    for (int trial = 0; trial < 2000; ++trial) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        Bytes junk(static_cast<std::size_t>(state >> 56) + 1);
        for (auto& b : junk) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            b = static_cast<std::uint8_t>(state >> 33);
        }
        if (trial % 2 == 0 && junk.size() >= 4)
            std::memcpy(junk.data(), "TST1", 4);
        CHECK(!decodeTokens(junk, kVocab, kMaxSeq, kMaxTokens).ok());
    }
}

// What the node's engine does, in code that cannot see torch: two stages, forward then backward.
TESSERA_TEST(engineRunsFromTorchFreeCode) {
    StageEngineOptions options;
    options.config = ModelConfig::preset("tiny").value();
    options.config.stages = 2;
    auto first = StageEngine::create(options);
    options.stage = 1;
    auto last = StageEngine::create(options);
    CHECK_MSG(first.ok() && last.ok(), (first ? last.message() : first.message()));

    const Bytes input = (*first)->syntheticInput(2, 16, 1).value();
    const Bytes targets = (*last)->syntheticTargets(2, 16, 1).value();
    auto forward0 = (*first)->forward(7, input);
    CHECK_MSG(forward0.ok(), forward0.message());
    auto forward1 = (*last)->forward(7, forward0->output, targets);
    CHECK_MSG(forward1.ok(), forward1.message());
    CHECK(std::isfinite(forward1->loss) && forward1->output.empty() && forward1->tokens == 32);
    auto backward1 = (*last)->backward(7, {});
    CHECK_MSG(backward1.ok(), backward1.message());
    auto backward0 = (*first)->backward(7, backward1->gradInput);
    CHECK_MSG(backward0.ok(), backward0.message());
    CHECK(backward0->gradInput.empty() && (*first)->accumulatedMicrobatches() == 1);
    CHECK((*first)->step(1).ok() && (*first)->steps() == 1);
}
