// SPDX-License-Identifier: Apache-2.0
// A payload that is truncated, foreign, oversized, inconsistent with the run's model or
// corrupted is refused with an error that says what is wrong, before anything is allocated;
// no byte string makes decoding crash.
#include "GpuTest.h"
#include "codec/Codec.h"
#include "codec/FrameHeader.h"
#include "codec/Int8Codec.h"
#include "codec/NoneCodec.h"
#include "codec/SubspaceCodec.h"

#include <cstring>
#include <stdexcept>

using namespace tessera::gpu;

namespace {

using Bytes = std::vector<std::uint8_t>;

ModelConfig tiny(CodecKind codec) {
    auto c = ModelConfig::preset("tiny").value(); // d=128, k=16, vocab 256, max_seq_len 256
    c.codec = codec;
    return c;
}

std::unique_ptr<Codec> codecFor(const ModelConfig& config) {
    auto r = makeCodec(config);
    CHECK_MSG(r, r.message());
    return std::move(r).value();
}

Bytes activationPayload(const Codec& codec, std::int64_t batch = 1, std::int64_t seq = 3) {
    torch::manual_seed(11);
    return codec.encodeActivation(torch::randn({batch, seq, codec.config().dModel}),
                                  torch::randint(codec.config().vocabSize, {batch, seq}, torch::kLong));
}

void putU32(Bytes& b, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

// Decoding fails, and the message contains `what`.
void refused(const Codec& codec, const Bytes& bytes, const std::string& what) {
    const auto r = codec.decodeActivation(bytes);
    CHECK_MSG(!r, "decoded although it should mention '" << what << "'");
    CHECK_MSG(r.message().find(what) != std::string::npos,
              "'" << r.message() << "' does not mention '" << what << "'");
}

// Header field offsets (FrameHeader.h).
constexpr std::size_t kCodecAt = 4, kKindAt = 5, kDtypeAt = 6, kTokenBytesAt = 7, kBatchAt = 8, kSeqAt = 12,
                      kWidthAt = 16, kRankAt = 20, kBlockAt = 24;

} // namespace

TESSERA_TEST(everyTruncationIsRefused) {
    for (CodecKind kind : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace}) {
        const auto codec = codecFor(tiny(kind));
        const auto full = activationPayload(*codec);
        CHECK(codec->decodeActivation(full));
        for (std::size_t n = 0; n < full.size(); ++n)
            refused(*codec, Bytes(full.begin(), full.begin() + n), "truncated");
    }
}

TESSERA_TEST(trailingBytesAreRefused) {
    const auto codec = codecFor(tiny(CodecKind::Subspace));
    auto bytes = activationPayload(*codec);
    bytes.push_back(0);
    refused(*codec, bytes, "trailing bytes: " + std::to_string(bytes.size()) + " bytes");
}

TESSERA_TEST(foreignPayloadsAreRefused) {
    const auto codec = codecFor(tiny(CodecKind::Subspace));
    auto bytes = activationPayload(*codec);
    auto bad = bytes;
    std::memcpy(bad.data(), "TSC2", 4);
    refused(*codec, bad, "bad magic");
    refused(*codec, Bytes(64, 0), "bad magic");
    bad = bytes;
    bad[kCodecAt] = 0x7f;
    refused(*codec, bad, "unknown codec id 127");
    bad = bytes;
    bad[kKindAt] = 9;
    refused(*codec, bad, "unknown payload kind");
    bad = bytes;
    bad[kDtypeAt] = 0;
    refused(*codec, bad, "unknown element type");

    // Another run's codec: names both.
    const auto none = codecFor(tiny(CodecKind::None));
    refused(*codec, activationPayload(*none), "encoded with codec 'none', this run uses 'subspace'");
    refused(*none, bytes, "encoded with codec 'subspace', this run uses 'none'");

    // A gradient is not an activation, and the other way round.
    torch::manual_seed(3);
    const auto grad = codec->encodeGradient(torch::randn({1, 3, 128}), torch::Tensor());
    refused(*codec, grad, "is a gradient, expected an activation");
    CHECK(codec->decodeGradient(bytes).message().find("is an activation, expected a gradient") !=
          std::string::npos);
}

TESSERA_TEST(absurdSizesAreRefusedBeforeAllocating) {
    const auto codec = codecFor(tiny(CodecKind::Subspace));
    const auto bytes = activationPayload(*codec);
    auto bad = bytes;
    putU32(bad, kBatchAt, 0xffffffffu);
    putU32(bad, kSeqAt, 0xffffffffu);
    refused(*codec, bad, "exceeds max_seq_len 256");
    putU32(bad, kSeqAt, 256);
    refused(*codec, bad, "more than the limit of 65536");
    putU32(bad, kBatchAt, 256);
    putU32(bad, kSeqAt, 256); // 65536 tokens: allowed, so the length decides
    refused(*codec, bad, "truncated");
    putU32(bad, kBatchAt, 0);
    refused(*codec, bad, "empty");
    bad = bytes;
    putU32(bad, kWidthAt, 0xffffffffu);
    refused(*codec, bad, "this model's d_model is 128");
    // An int8 block size of 0 would divide by zero; 2^32-1 would pad to 16 GiB.
    const auto int8 = codecFor(tiny(CodecKind::Int8));
    bad = activationPayload(*int8);
    putU32(bad, kBlockAt, 0);
    refused(*int8, bad, "block size 0");
    putU32(bad, kBlockAt, 0xffffffffu);
    refused(*int8, bad, "block size 4294967295");
    // A stricter limit from the options is honoured too.
    CodecOptions small;
    small.maxTokens = 2;
    auto limited = NoneCodec::create(tiny(CodecKind::None), small);
    CHECK(limited);
    refused(**limited, activationPayload(*codecFor(tiny(CodecKind::None))), "more than the limit of 2");
}

TESSERA_TEST(aDifferentModelIsRefused) {
    const auto codec = codecFor(tiny(CodecKind::Subspace));
    auto wider = tiny(CodecKind::Subspace);
    wider.dModel = 256;
    wider.subspaceRatio = 16; // same k = 16, so only d differs
    refused(*codec, activationPayload(*codecFor(wider)), "256 wide, this model's d_model is 128");
    auto otherRank = tiny(CodecKind::Subspace);
    otherRank.subspaceRatio = 4; // k = 32
    refused(*codec, activationPayload(*codecFor(otherRank)), "32 subspace coefficients per token");
    auto bigVocab = tiny(CodecKind::Subspace);
    bigVocab.vocabSize = 70000; // 3-byte ids
    refused(*codec, activationPayload(*codecFor(bigVocab)), "3-byte token ids");
}

TESSERA_TEST(tokenIdsBeyondTheVocabularyAreRefused) {
    const auto codec = codecFor(tiny(CodecKind::None));
    auto bytes = activationPayload(*codec);
    // The ids are the last 3·2 bytes; make the second one 0x0100 = 256.
    bytes[bytes.size() - 4] = 0x00;
    bytes[bytes.size() - 3] = 0x01;
    refused(*codec, bytes, "token id 256, outside the vocabulary of 256");
}

TESSERA_TEST(corruptValuesAreRefused) {
    // A NaN scale would turn a whole block into NaN downstream.
    const auto sub = codecFor(tiny(CodecKind::Subspace));
    auto bytes = activationPayload(*sub);
    const std::uint32_t nan = 0x7fc00000u;
    putU32(bytes, FrameHeader::kSize, nan);
    refused(*sub, bytes, "NaN scale");
    const auto int8 = codecFor(tiny(CodecKind::Int8));
    bytes = activationPayload(*int8);
    putU32(bytes, FrameHeader::kSize + 4, 0xbf800000u); // -1.0f
    refused(*int8, bytes, "negative");
    // An element type this codec does not carry, even where the length would fit.
    bytes = activationPayload(*codecFor(tiny(CodecKind::None)));
    bytes[kDtypeAt] = 3; // fp16
    refused(*codecFor(tiny(CodecKind::None)), bytes, "carries fp16 values");
    bytes = activationPayload(*sub);
    putU32(bytes, kBlockAt, 64);
    refused(*sub, bytes, "block size");
    bytes = activationPayload(*sub);
    bytes[kTokenBytesAt] = 4;
    refused(*sub, bytes, "4-byte token ids");
    bytes = activationPayload(*sub);
    putU32(bytes, kRankAt, 0);
    refused(*sub, bytes, "0 subspace coefficients");
}

TESSERA_TEST(randomCorruptionNeverCrashes) {
    // Flip bytes of valid payloads at random: every outcome is a value or an Error.
    std::uint32_t seed = 12345;
    const auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
    int refusedCount = 0;
    for (CodecKind kind : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace}) {
        const auto codec = codecFor(tiny(kind));
        const auto good = activationPayload(*codec, 2, 5);
        for (int trial = 0; trial < 400; ++trial) {
            auto bytes = good;
            const int flips = 1 + next() % 4;
            for (int f = 0; f < flips; ++f) {
                // Mostly the header, where the structure is.
                const std::size_t at = next() % 2 ? next() % FrameHeader::kSize : next() % bytes.size();
                bytes[at] = static_cast<std::uint8_t>(next() >> 24);
            }
            if (next() % 8 == 0)
                bytes.resize(next() % bytes.size());
            const auto r = codec->decodeActivation(bytes);
            refusedCount += !r;
            CHECK(r || !r.message().empty());
            CHECK(!codec->decodeGradient(bytes) || bytes[kKindAt] == 2);
        }
    }
    CHECK(refusedCount > 100);
}

TESSERA_TEST(misuseOnTheEncodingSideThrows) {
    const auto codec = codecFor(tiny(CodecKind::Subspace));
    const auto ok = torch::randn({1, 3, 128});
    const auto ids = torch::randint(256, {1, 3}, torch::kLong);
    const auto throws = [](auto f) {
        try {
            f();
        } catch (const std::invalid_argument&) {
            return true;
        }
        return false;
    };
    CHECK(throws([&] { (void)codec->encodeActivation(torch::randn({1, 3, 64}), ids); }));
    CHECK(throws([&] { (void)codec->encodeActivation(ok, torch::full({1, 3}, 256, torch::kLong)); }));
    CHECK(throws([&] { (void)codec->encodeActivation(ok, torch::Tensor()); }));
    CHECK(throws([&] { (void)codec->encodeActivation(ok, ids.to(torch::kFloat)); }));
    CHECK(throws([&] {
        (void)codec->encodeActivation(torch::randn({1, 257, 128}), torch::zeros({1, 257}, torch::kLong));
    }));
    CHECK(throws([&] { (void)codec->encodeGradient(ok, torch::zeros({1, 4}, torch::kLong)); }));
}
