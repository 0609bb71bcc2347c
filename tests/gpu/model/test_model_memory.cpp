// SPDX-License-Identifier: Apache-2.0
// estimateStageMemory: the parts of a stage's training memory come out at the sizes the
// arithmetic of mixed precision and AdamW says, and the 8b preset's stages at sane totals.
#include "GpuTest.h"
#include "model/MemoryEstimate.h"

#include <stdexcept>

using namespace tessera::gpu;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

ModelConfig eightB(CodecKind codec) {
    auto config = ModelConfig::preset("8b").value();
    config.codec = codec;
    return config;
}

} // namespace

TESSERA_TEST(weightsGradientsAndMomentsFollowTheParameterCount) {
    const auto config = eightB(CodecKind::None);
    const int middle = 3;
    const std::int64_t n = config.stageParameterCount(middle);
    CHECK_MSG(n > 1'000'000'000 && n < 1'400'000'000, n);

    const auto bf16 = estimateStageMemory(config, middle, Dtype::BF16, 1, 4096, false);
    CHECK(bf16.weightBytes == 6 * n); // fp32 master + bf16 copy
    CHECK(bf16.gradientBytes == 6 * n);
    CHECK(bf16.optimizerBytes == 8 * n);
    // Recompute: only the stage's input and output, fp32 [1, 4096, 4096] each.
    CHECK(bf16.activationBytesPerMicrobatch == 2 * 4 * 4096 * 4096);
    CHECK(bf16.workingBytes > bf16.activationBytesPerMicrobatch);
    const double total = static_cast<double>(bf16.total(4)) / kGiB;
    CHECK_MSG(total > 20 && total < 40, total << " GiB");

    const auto fp32 = estimateStageMemory(config, middle, Dtype::F32, 1, 4096, false);
    CHECK(fp32.weightBytes == 4 * n && fp32.gradientBytes == 4 * n && fp32.optimizerBytes == 8 * n);
}

TESSERA_TEST(keepingActivationsCostsWhatRecomputingSaves) {
    const auto config = eightB(CodecKind::None);
    const auto recompute = estimateStageMemory(config, 3, Dtype::BF16, 1, 4096, false);
    const auto keep = estimateStageMemory(config, 3, Dtype::BF16, 1, 4096, true);
    CHECK(keep.workingBytes == 0);
    CHECK(keep.activationBytesPerMicrobatch ==
          recompute.activationBytesPerMicrobatch + recompute.workingBytes);
    // A few GiB per 4096-token microbatch of ~5 blocks with explicit attention (the T×T
    // probabilities dominate), not MiB and not hundreds of GiB.
    const double perMicrobatch = static_cast<double>(keep.activationBytesPerMicrobatch) / kGiB;
    CHECK_MSG(perMicrobatch > 2 && perMicrobatch < 30, perMicrobatch << " GiB");
    // Twice the tokens, at least twice the activations (attention grows with T²).
    const auto longer = estimateStageMemory(config, 3, Dtype::BF16, 2, 4096, true);
    CHECK(longer.activationBytesPerMicrobatch == 2 * keep.activationBytesPerMicrobatch);
}

TESSERA_TEST(endStagesCountEmbeddingHeadAndFixedTensors) {
    const auto none = eightB(CodecKind::None);
    const auto sub = eightB(CodecKind::Subspace);
    const int last = none.stages - 1;
    // No stage keeps E [vocab, d] (2 GiB at 8b): stage 0 makes the rows of its microbatch's tokens.
    const auto first = estimateStageMemory(sub, 0, Dtype::BF16, 1, 1024, false);
    CHECK(first.bufferBytes < 64LL << 20);
    CHECK(first.bufferBytes == estimateStageMemory(sub, 1, Dtype::BF16, 1, 1024, false).bufferBytes);
    // The last stage's working set holds the logits over the 128k vocabulary.
    const auto head = estimateStageMemory(none, last, Dtype::BF16, 1, 1024, false);
    CHECK(head.workingBytes > 1024LL * 128256 * (2 + 4 + 4));
    CHECK(head.activationBytesPerMicrobatch == 4LL * 1024 * 4096); // input only; the loss is a scalar
}

TESSERA_TEST(nonFloatComputeIsRefused) {
    bool threw = false;
    try {
        (void)estimateStageMemory(eightB(CodecKind::None), 0, Dtype::I8, 1, 16, false);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
}
