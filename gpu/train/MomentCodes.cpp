// SPDX-License-Identifier: Apache-2.0
#include "train/MomentCodes.h"

namespace tessera::gpu {

namespace {

constexpr float kTiny = 1e-30f;

// x flattened and zero-padded to whole blocks: [blocks, 256].
torch::Tensor inBlocks(const torch::Tensor& x) {
    const torch::Tensor flat = x.reshape({-1});
    const std::int64_t pad = (kMomentBlock - flat.numel() % kMomentBlock) % kMomentBlock;
    return (pad == 0 ? flat : torch::constant_pad_nd(flat, {0, pad})).view({-1, kMomentBlock});
}

torch::Tensor fromBlocks(const torch::Tensor& blocks, const torch::Tensor& like) {
    return blocks.reshape({-1}).narrow(0, 0, like.numel()).view(like.sizes());
}

} // namespace

// The first moment: a sign and a 7-bit log code — magnitude code 1..127 for max|m|·2^((code − 127)/5)
// per block, 0 for 0: ±7% of |m| over 25 octaves below the block's largest (a linear code would
// round every value under 1/254 of it to zero and stall those weights).
void encodeFirst(const torch::Tensor& m, torch::Tensor& codes, torch::Tensor& scales) {
    const torch::Tensor b = inBlocks(m);
    scales = b.abs().amax(1, true);
    const torch::Tensor magnitude = b.abs();
    const torch::Tensor level = magnitude.div(scales.clamp_min(kTiny))
                                    .clamp_min_(kTiny)
                                    .log2_()
                                    .mul_(5.0f)
                                    .add_(127.0f)
                                    .round_()
                                    .clamp_(1, 127);
    codes = level.mul_(b.sign()).to(torch::kInt8); // sign 0: code 0
}

torch::Tensor decodeFirst(const torch::Tensor& codes, const torch::Tensor& scales,
                          const torch::Tensor& like) {
    const torch::Tensor c = codes.to(torch::kFloat);
    const torch::Tensor value = c.abs().sub_(127.0f).div_(5.0f).exp2_().mul_(scales).mul_(c.sign());
    return fromBlocks(value, like).clone(); // sign(0) = 0: a zero code decodes to 0
}

// The second moment (≥ 0), through its square root (what the update divides by): 0 for 0, else code
// 1..255 for √v_max·2^((code − 255)/10) per block — ±3.5% of √v over 25 octaves of √v (50 of v).
void encodeSecond(const torch::Tensor& v, torch::Tensor& codes, torch::Tensor& scales) {
    const torch::Tensor b = inBlocks(v).sqrt();
    scales = b.amax(1, true);
    const torch::Tensor level = b.div(scales.clamp_min(kTiny))
                                    .clamp_min_(kTiny)
                                    .log2_()
                                    .mul_(10.0f)
                                    .add_(255.0f)
                                    .round_()
                                    .clamp_(1, 255);
    codes = level.mul_(b.sign()).to(torch::kUInt8); // √0 codes 0
}

torch::Tensor decodeSecond(const torch::Tensor& codes, const torch::Tensor& scales,
                           const torch::Tensor& like) {
    const torch::Tensor c = codes.to(torch::kFloat);
    const torch::Tensor root = c.sub(255.0f).div_(10.0f).exp2_().mul_(scales).mul_(c.sign()); // code 0: 0
    return fromBlocks(root.mul_(root), like).clone();
}

} // namespace tessera::gpu
