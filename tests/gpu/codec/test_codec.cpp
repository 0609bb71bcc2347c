// SPDX-License-Identifier: Apache-2.0
// Every codec gives back what it was given within the error it states, and its payloads are
// exactly as long as its size formula says (header + bytes per token), at tiny and 8b width.
#include "GpuTest.h"
#include "codec/Codec.h"
#include "codec/FrameHeader.h"
#include "codec/Int8Codec.h"
#include "codec/NoneCodec.h"
#include "codec/SubspaceCodec.h"

#include <ATen/ATen.h>

#include <cmath>

using namespace tessera::gpu;

namespace {

constexpr std::int64_t kBatch = 2, kSeq = 24;

ModelConfig tiny(CodecKind codec) {
    auto c = ModelConfig::preset("tiny").value(); // d=128, ratio 8 -> k=16, vocab 256
    c.codec = codec;
    return c;
}

template <class T>
T take(tessera::Result<T> r) {
    CHECK_MSG(r, r.message());
    return std::move(r).value();
}

// Values of very different sizes per block and per token, as real activations have.
torch::Tensor activations(std::int64_t d, std::uint64_t seed) {
    torch::manual_seed(seed);
    return torch::randn({kBatch, kSeq, d}) * torch::randn({kBatch, kSeq, 1}).mul(2).exp();
}

torch::Tensor tokenIds(int vocab) {
    return torch::randint(vocab, {kBatch, kSeq}, torch::kLong);
}

// An activation the subspace model can produce: E[tok] + U·c with random c.
torch::Tensor inSubspace(const SubspaceCodec& codec, const torch::Tensor& tokens,
                         torch::Tensor* coeffs = nullptr) {
    const auto& b = codec.basis();
    const auto c = torch::randn({kBatch, kSeq, b.basis.size(1)}) * 3;
    if (coeffs)
        *coeffs = c;
    return fixedEmbeddingRows(codec.config(), tokens).view({kBatch, kSeq, -1}) + at::matmul(c, b.basis.t());
}

Activation roundTrip(const Codec& codec, const torch::Tensor& hidden, const torch::Tensor& tokens) {
    const auto bytes = codec.encodeActivation(hidden, tokens);
    CHECK_MSG(bytes.size() == codec.payloadBytes(PayloadKind::Activation, kBatch, kSeq), codec.describe());
    auto decoded = take(codec.decodeActivation(bytes));
    CHECK(decoded.hidden.sizes() == hidden.sizes() && decoded.hidden.scalar_type() == torch::kFloat);
    CHECK(decoded.tokens.equal(tokens));
    return decoded;
}

torch::Tensor gradientRoundTrip(const Codec& codec, const torch::Tensor& grad, const torch::Tensor& tokens) {
    const auto bytes = codec.encodeGradient(grad, tokens);
    CHECK_MSG(bytes.size() == codec.payloadBytes(PayloadKind::Gradient, kBatch, kSeq), codec.describe());
    auto decoded = take(codec.decodeGradient(bytes));
    CHECK(decoded.sizes() == grad.sizes() && decoded.scalar_type() == torch::kFloat);
    return decoded;
}

// Per token (row of [.., width]): the worst |a-b| over the allowed bound; ≤ 1 passes.
double worstRatio(const torch::Tensor& error, const torch::Tensor& bound) {
    return (error / bound.clamp_min(1e-30)).max().item<double>();
}

// Int8 rows: |x - x̂| ≤ absmax(row)/254, with a hair for the fp32 division.
void checkInt8Rows(const torch::Tensor& x, const torch::Tensor& decoded, std::int64_t row) {
    const auto a = x.reshape({-1, row}), b = decoded.reshape({-1, row});
    const auto bound = a.abs().amax(1, true) / 254 * (1 + 1e-5);
    const double r = worstRatio((a - b).abs(), bound);
    CHECK_MSG(r <= 1, "error is " << r << " of absmax/254");
}

} // namespace

TESSERA_TEST(noneFp32IsExact) {
    const auto codec = take(NoneCodec::create(tiny(CodecKind::None)));
    const auto x = activations(128, 1);
    const auto tokens = tokenIds(256);
    CHECK(roundTrip(*codec, x, tokens).hidden.equal(x));
    CHECK(gradientRoundTrip(*codec, x, tokens).equal(x));
}

TESSERA_TEST(noneBf16RoundsEachValueToBf16) {
    CodecOptions o;
    o.activationDtype = o.gradientDtype = Dtype::BF16;
    const auto codec = take(NoneCodec::create(tiny(CodecKind::None), o));
    const auto x = activations(128, 2);
    const auto tokens = tokenIds(256);
    for (const auto& y : {roundTrip(*codec, x, tokens).hidden, gradientRoundTrip(*codec, x, tokens)}) {
        const double r = worstRatio((y - x).abs(), x.abs() * std::ldexp(1.0, -8));
        CHECK_MSG(r <= 1, "relative error is " << r << " of 2^-8");
    }
}

TESSERA_TEST(int8StaysWithinHalfAStepOfEachBlock) {
    const auto x = activations(128, 3);
    const auto tokens = tokenIds(256);
    const auto codec = take(Int8Codec::create(tiny(CodecKind::Int8)));
    checkInt8Rows(x, roundTrip(*codec, x, tokens).hidden, 64);
    checkInt8Rows(x, gradientRoundTrip(*codec, x, tokens), 64);

    // A block size that does not divide B·T·d (6144 = 61·100 + 44): the padded last block.
    CodecOptions o;
    o.blockSize = 100;
    const auto odd = take(Int8Codec::create(tiny(CodecKind::Int8), o));
    const auto y = roundTrip(*odd, x, tokens).hidden;
    checkInt8Rows(x.flatten().narrow(0, 0, 6100), y.flatten().narrow(0, 0, 6100), 100);
    checkInt8Rows(x.flatten().narrow(0, 6100, 44), y.flatten().narrow(0, 6100, 44), 44);

    // Zeros stay zeros (scale 0, no division by it).
    const auto zeros = torch::zeros({kBatch, kSeq, 128});
    CHECK(roundTrip(*codec, zeros, tokens).hidden.equal(zeros));
}

TESSERA_TEST(subspaceInt8RebuildsAnInSubspaceActivation) {
    const auto codec = take(SubspaceCodec::create(tiny(CodecKind::Subspace)));
    const auto tokens = tokenIds(256);
    torch::Tensor c;
    const auto h = inSubspace(*codec, tokens, &c);
    const auto decoded = roundTrip(*codec, h, tokens).hidden;
    const auto embedded = fixedEmbeddingRows(codec->config(), tokens).view(h.sizes());
    // The coefficients the receiver holds, read back through U (orthonormal): each within half
    // an int8 step of the token's largest, max|c_token|/254 (plus fp32 noise of the projection).
    const auto received = at::matmul(decoded - embedded, codec->basis().basis);
    const auto bound = c.abs().amax(2, true) / 254 + 1e-4;
    const double r = worstRatio((received - c).abs(), bound);
    CHECK_MSG(r <= 1, "coefficient error is " << r << " of the int8 bound");
    // Nothing outside span(U) appears: the rebuilt activation is E[tok] + U·ĉ, up to fp32.
    const auto outside = (decoded - embedded) - at::matmul(received, codec->basis().basis.t());
    CHECK_MSG(outside.abs().max().item<double>() < 1e-4,
              "off-subspace residue " << outside.abs().max().item<double>());
}

TESSERA_TEST(subspaceFp16AndFp32CoefficientsAreNearExact) {
    const auto tokens = tokenIds(256);
    for (Dtype dtype : {Dtype::F16, Dtype::F32}) {
        CodecOptions o;
        o.activationDtype = o.gradientDtype = dtype;
        const auto codec = take(SubspaceCodec::create(tiny(CodecKind::Subspace), o));
        const auto h = inSubspace(*codec, tokens);
        const auto decoded = roundTrip(*codec, h, tokens).hidden;
        const auto learned = h - fixedEmbeddingRows(codec->config(), tokens).view(h.sizes());
        // Relative to the learned part U·c, per token: fp16 rounds to 2^-11 (≈4.9e-4).
        const double r = ((decoded - h).norm(2, 2) / learned.norm(2, 2)).max().item<double>();
        const double limit = dtype == Dtype::F16 ? 1e-3 : 2e-6;
        CHECK_MSG(r < limit, dtypeName(dtype) << " relative error " << r);
        if (dtype == Dtype::F32) {
            const double worst = (decoded - h).abs().max().item<double>();
            CHECK_MSG(worst < 5e-6, "fp32 max abs error " << worst);
        }
    }
}

TESSERA_TEST(subspaceGradientComesBackAsItsProjection) {
    const auto tokens = tokenIds(256);
    const auto g = activations(128, 4); // a full-width gradient, not in the subspace
    for (Dtype dtype : {Dtype::I8, Dtype::F16, Dtype::F32}) {
        CodecOptions o;
        o.gradientDtype = dtype;
        const auto codec = take(SubspaceCodec::create(tiny(CodecKind::Subspace), o));
        const auto& u = codec->basis().basis;
        const auto coeffs = at::matmul(g, u); // Uᵀg per token
        const auto projection = at::matmul(coeffs, u.t());
        const auto decoded = gradientRoundTrip(*codec, g, tokens);
        const auto error = (decoded - projection).norm(2, 2);
        if (dtype == Dtype::I8) {
            // Per coefficient of Uᵀg: half an int8 step of the token's largest.
            const auto received = at::matmul(decoded, u);
            const double r =
                worstRatio((received - coeffs).abs(), coeffs.abs().amax(2, true) / 254 * 1.001 + 1e-6);
            CHECK_MSG(r <= 1, "int8 gradient error is " << r << " of its bound");
        } else {
            const double r = (error / projection.norm(2, 2)).max().item<double>();
            CHECK_MSG(r < (dtype == Dtype::F16 ? 1e-3 : 2e-6), dtypeName(dtype) << " relative error " << r);
        }
        // The projection really is smaller: what lies outside span(U) does not travel.
        CHECK(projection.norm().item<double>() < 0.9 * g.norm().item<double>());
    }
    // Gradients need no token ids (the previous stage has them).
    const auto codec = take(SubspaceCodec::create(tiny(CodecKind::Subspace)));
    CHECK(codec->decodeGradient(codec->encodeGradient(g, torch::Tensor())));
}

// The coordinator's checks read k + 1 coordinates a token instead of the d decoded values: every
// norm, every difference and dot product of two frames of the same ids must be the decoded rows'.
// Tried: two activations and two gradients of the same tokens in each coefficient dtype, a token
// repeated within a frame, and a frame whose tokens the codec met before (its cached rows).
TESSERA_TEST(subspaceCheckRowsKeepTheDecodedRowsGeometry) {
    auto tokens = tokenIds(256);
    tokens.index_put_({0, 1}, tokens.index({0, 0})); // a token twice in one frame
    for (Dtype dtype : {Dtype::I8, Dtype::F16, Dtype::F32}) {
        CodecOptions o;
        o.activationDtype = o.gradientDtype = dtype;
        const auto codec = take(SubspaceCodec::create(tiny(CodecKind::Subspace), o));
        const std::int64_t d = codec->config().dModel, k = codec->config().subspaceDim();
        const auto near = [](const torch::Tensor& a, const torch::Tensor& b) {
            return ((a - b).abs() <= 1e-4 * b.abs().clamp_min(1e-3)).all().item<bool>();
        };
        for (int round = 0; round < 2; ++round) { // the second from the cache
            const auto a = codec->encodeActivation(activations(d, 10 + round), tokens);
            const auto b = codec->encodeActivation(activations(d, 20 + round), tokens);
            const auto fullA = take(codec->decodeActivation(a)).hidden.reshape({-1, d}).to(torch::kDouble);
            const auto fullB = take(codec->decodeActivation(b)).hidden.reshape({-1, d}).to(torch::kDouble);
            const Activation checkA = take(codec->decodeActivationForChecks(a));
            CHECK(checkA.tokens.equal(tokens) && checkA.hidden.size(2) == k + 1);
            const auto rowsA = checkA.hidden.reshape({-1, k + 1}).to(torch::kDouble);
            const auto rowsB =
                take(codec->decodeActivationForChecks(b)).hidden.reshape({-1, k + 1}).to(torch::kDouble);
            CHECK_MSG(near(rowsA.norm(2, 1), fullA.norm(2, 1)), dtypeName(dtype) << ": row norms differ");
            CHECK(near((rowsA - rowsB).norm(), (fullA - fullB).norm()));
            CHECK(near((rowsA * rowsB).sum(), (fullA * fullB).sum()));
        }
        const auto g1 = codec->encodeGradient(activations(d, 30), tokens);
        const auto g2 = codec->encodeGradient(activations(d, 31), tokens);
        const auto full1 = take(codec->decodeGradient(g1)).reshape({-1, d}).to(torch::kDouble);
        const auto full2 = take(codec->decodeGradient(g2)).reshape({-1, d}).to(torch::kDouble);
        const auto rows1 = take(codec->decodeGradientForChecks(g1)).reshape({-1, k}).to(torch::kDouble);
        const auto rows2 = take(codec->decodeGradientForChecks(g2)).reshape({-1, k}).to(torch::kDouble);
        CHECK(near(rows1.norm(2, 1), full1.norm(2, 1)));
        CHECK(near((rows1 * rows2).sum(), (full1 * full2).sum()));
    }
    // A frame that does not decode does not give check rows either.
    const auto codec = take(SubspaceCodec::create(tiny(CodecKind::Subspace)));
    auto bytes = codec->encodeActivation(activations(128, 40), tokens);
    bytes.pop_back();
    CHECK(!codec->decodeActivationForChecks(bytes));
}

TESSERA_TEST(makeCodecFollowsTheConfig) {
    for (CodecKind kind : {CodecKind::None, CodecKind::Int8, CodecKind::Subspace}) {
        const auto codec = take(makeCodec(tiny(kind)));
        CHECK(codec->id() == kind);
    }
    CodecOptions bad;
    bad.activationDtype = Dtype::I8;
    CHECK(!makeCodec(tiny(CodecKind::None), bad));
    bad.activationDtype = Dtype::BF16;
    CHECK(!makeCodec(tiny(CodecKind::Subspace), bad));
    CHECK(!makeCodec(tiny(CodecKind::Int8), bad));
    CodecOptions block;
    block.blockSize = 0;
    CHECK(!makeCodec(tiny(CodecKind::Int8), block));
    // A subspace codec on a model that does not keep its residual stream in span(U) is refused.
    CHECK(!SubspaceCodec::create(tiny(CodecKind::None)));
}

TESSERA_TEST(tinyPayloadSizesFollowTheFormula) {
    // header 28 + per token: values (+ scales) + 2-byte token id (vocab 256 ≤ 65536).
    const std::uint64_t n = kBatch * kSeq, header = FrameHeader::kSize;
    CodecOptions bf16;
    bf16.activationDtype = bf16.gradientDtype = Dtype::BF16;
    CodecOptions fp16;
    fp16.activationDtype = fp16.gradientDtype = Dtype::F16;
    const auto none = take(NoneCodec::create(tiny(CodecKind::None)));
    const auto noneBf16 = take(NoneCodec::create(tiny(CodecKind::None), bf16));
    const auto int8 = take(Int8Codec::create(tiny(CodecKind::Int8)));
    const auto sub = take(SubspaceCodec::create(tiny(CodecKind::Subspace)));
    const auto subFp16 = take(SubspaceCodec::create(tiny(CodecKind::Subspace), fp16));
    const auto x = activations(128, 5);
    const auto tokens = tokenIds(256);
    const auto size = [&](const Codec& c) { return c.encodeActivation(x, tokens).size(); };
    const auto gradSize = [&](const Codec& c) { return c.encodeGradient(x, tokens).size(); };
    CHECK(size(*none) == header + n * (128 * 4 + 2));
    CHECK(size(*noneBf16) == header + n * (128 * 2 + 2));
    CHECK(size(*int8) == header + n * (128 + 2) + (n * 128 / 64) * 4);
    CHECK(size(*sub) == header + n * (16 + 4 + 2));
    CHECK(size(*subFp16) == header + n * (16 * 2 + 2));
    CHECK(gradSize(*none) == header + n * 128 * 4);
    CHECK(gradSize(*int8) == header + n * 128 + (n * 128 / 64) * 4);
    CHECK(gradSize(*sub) == header + n * (16 + 4));
    CHECK(gradSize(*subFp16) == header + n * 16 * 2);
}

TESSERA_TEST(largeVocabularyIdsTravelInThreeBytes) {
    auto config = tiny(CodecKind::None);
    config.vocabSize = 128256; // Llama-3's: 17 bits
    const auto codec = take(NoneCodec::create(config));
    CHECK(codec->tokenBytes() == 3);
    auto tokens = tokenIds(config.vocabSize);
    tokens[0][0] = config.vocabSize - 1;
    tokens[0][1] = 0;
    tokens[1][0] = 65536;
    const auto x = activations(128, 6);
    CHECK(codec->encodeActivation(x, tokens).size() == FrameHeader::kSize + kBatch * kSeq * (128 * 4 + 3));
    roundTrip(*codec, x, tokens); // checks the ids come back equal
}

TESSERA_TEST(eightBWidthSubspaceIsAHundredTimesSmallerThanBf16) {
    // Sizes only: a stand-in E (one zero row broadcast over the 8b vocabulary, no 2 GiB) and a
    // random orthonormal U have the 8b shapes; the size formulas do not look at their values.
    auto config = ModelConfig::preset("8b").value();
    config.codec = CodecKind::Subspace;
    const std::int64_t d = config.dModel, k = config.subspaceDim();
    CHECK(d == 4096 && k == 40);
    torch::manual_seed(7);
    SubspaceBasis basis{std::get<0>(at::linalg_qr(torch::randn({d, k}))),
                        torch::zeros({1, d}).expand({config.vocabSize, d})};
    CodecOptions fp16;
    fp16.activationDtype = fp16.gradientDtype = Dtype::F16;
    const auto subInt8 = take(SubspaceCodec::create(config, {}, basis));
    const auto subFp16 = take(SubspaceCodec::create(config, fp16, basis));
    config.codec = CodecKind::None;
    CodecOptions bf16;
    bf16.activationDtype = bf16.gradientDtype = Dtype::BF16;
    const auto noneBf16 = take(NoneCodec::create(config, bf16));

    // Per token at T=1024: bf16 4096·2 + 3 (17-bit ids in 3 bytes); subspace 40·2 + 3 (fp16),
    // 40 + 4 + 3 (int8 with its fp32 scale).
    const std::int64_t seq = 1024;
    const auto act = [&](const Codec& c) { return c.payloadBytes(PayloadKind::Activation, 1, seq); };
    const auto grad = [&](const Codec& c) { return c.payloadBytes(PayloadKind::Gradient, 1, seq); };
    CHECK(act(*noneBf16) == 28 + seq * 8195);
    CHECK(act(*subFp16) == 28 + seq * 83);
    CHECK(act(*subInt8) == 28 + seq * 47);
    CHECK(grad(*noneBf16) == 28 + seq * 8192);
    CHECK(grad(*subFp16) == 28 + seq * 80);
    CHECK(grad(*subInt8) == 28 + seq * 44);
    // The values themselves: 8192/80 = 102.4x with fp16 coefficients (the paper's "~100x");
    // with the token ids counted on both sides a frame is 98.7x smaller, and int8 174x.
    CHECK(double(grad(*noneBf16)) / grad(*subFp16) >= 100);
    CHECK(double(act(*noneBf16)) / act(*subFp16) >= 98);
    CHECK(double(act(*noneBf16)) / act(*subInt8) >= 150);
    CHECK(double(grad(*noneBf16)) / grad(*subInt8) >= 150);

    // And what encoding writes at that width is what the formula says.
    const auto tokens = torch::randint(config.vocabSize, {1, 8}, torch::kLong);
    const auto hidden = torch::randn({1, 8, d});
    CHECK(subInt8->encodeActivation(hidden, tokens).size() == 28 + 8 * 47);
    CHECK(subFp16->encodeGradient(hidden, tokens).size() == 28 + 8 * 80);
}
