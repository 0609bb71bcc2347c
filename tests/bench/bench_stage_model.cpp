// SPDX-License-Identifier: Apache-2.0
// How much StageModel's structure (modules, context, input checks, master-weight bookkeeping)
// costs against the same blocks written as bare LibTorch in a plain loop, on a middle stage of
// d=768 blocks (the `small` preset's width). Also a textbook attention (kv heads repeated, 4-D
// matmuls, masked_fill) to show what the grouped baddbmm layout buys. Interleaved repetitions,
// medians. Usage: bench_stage_model [repetitions=5] [batch=4] [seq=256]
#include "model/StageModel.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace tessera::gpu;

namespace {

// One block's weights, copied out of the StageModel so every variant computes the same function.
struct BlockWeights {
    torch::Tensor norm1, wq, wk, wv, wo, norm2, w1, w2, w3;
};

struct Bare {
    ModelConfig config;
    std::vector<BlockWeights> blocks;
    torch::Tensor cos, sin; // [T, 1, headDim]; sin with the rotate-half sign folded in
    torch::Tensor groupedMask, squareMask;
};

torch::Tensor rms(const torch::Tensor& x, const torch::Tensor& gain, double eps) {
    return x * torch::rsqrt(x.square().mean(-1, true) + eps) * gain;
}

torch::Tensor rope(const Bare& b, const torch::Tensor& x) {
    const std::int64_t half = x.size(3) / 2;
    return x * b.cos + torch::cat({x.narrow(3, half, half), x.narrow(3, 0, half)}, 3) * b.sin;
}

// The same kernels as StageModel's Attention: query heads grouped by kv head, one baddbmm.
torch::Tensor groupedAttention(const Bare& b, const BlockWeights& w, const torch::Tensor& h) {
    const std::int64_t B = h.size(0), T = h.size(1), H = b.config.nHeads, KV = b.config.nKvHeads, G = H / KV,
                       hd = b.config.headDim();
    const auto q = rope(b, torch::linear(h, w.wq).view({B, T, H, hd}));
    const auto k = rope(b, torch::linear(h, w.wk).view({B, T, KV, hd}));
    const auto v = torch::linear(h, w.wv).view({B, T, KV, hd});
    const auto q3 = q.view({B, T, KV, G, hd}).permute({0, 2, 3, 1, 4}).reshape({B * KV, G * T, hd});
    const auto k3 = k.transpose(1, 2).reshape({B * KV, T, hd});
    const auto v3 = v.transpose(1, 2).reshape({B * KV, T, hd});
    const auto s = torch::baddbmm(b.groupedMask, q3, k3.transpose(1, 2), 1.0, 1.0 / std::sqrt(double(hd)));
    const auto o = torch::bmm(torch::softmax(s, -1), v3).view({B, KV, G, T, hd}).permute({0, 3, 1, 2, 4});
    return torch::linear(o.reshape({B, T, H * hd}), w.wo);
}

// The textbook form: kv heads repeated to every query head, 4-D matmuls, a boolean mask.
torch::Tensor textbookAttention(const Bare& b, const BlockWeights& w, const torch::Tensor& h) {
    const std::int64_t B = h.size(0), T = h.size(1), H = b.config.nHeads, KV = b.config.nKvHeads, G = H / KV,
                       hd = b.config.headDim();
    const auto q = rope(b, torch::linear(h, w.wq).view({B, T, H, hd})).transpose(1, 2);
    const auto k =
        rope(b, torch::linear(h, w.wk).view({B, T, KV, hd})).repeat_interleave(G, 2).transpose(1, 2);
    const auto v = torch::linear(h, w.wv).view({B, T, KV, hd}).repeat_interleave(G, 2).transpose(1, 2);
    const auto s = torch::matmul(q, k.transpose(2, 3)) / std::sqrt(double(hd));
    const auto p = torch::softmax(s.masked_fill(b.squareMask, -std::numeric_limits<double>::infinity()), -1);
    return torch::linear(torch::matmul(p, v).transpose(1, 2).reshape({B, T, H * hd}), w.wo);
}

torch::Tensor bareForward(const Bare& b, torch::Tensor x, bool textbook) {
    for (const BlockWeights& w : b.blocks) {
        const auto h = rms(x, w.norm1, b.config.normEps);
        x = x + (textbook ? textbookAttention(b, w, h) : groupedAttention(b, w, h));
        const auto m = rms(x, w.norm2, b.config.normEps);
        x = x + torch::linear(torch::silu(torch::linear(m, w.w1)) * torch::linear(m, w.w3), w.w2);
    }
    return x;
}

Bare makeBare(const StageModel& model, std::int64_t seq) {
    Bare b{model.config(), {}, {}, {}, {}, {}};
    std::map<std::string, torch::Tensor> named;
    for (const auto& [name, p] : model.namedParameters())
        named[name] = p.detach().clone().requires_grad_();
    const auto [first, last] = model.blockRange();
    for (int i = first; i < last; ++i) {
        const std::string p = "blocks." + std::to_string(i) + ".";
        b.blocks.push_back(
            {named.at(p + "norm1.weight"), named.at(p + "attn.wq.weight"), named.at(p + "attn.wk.weight"),
             named.at(p + "attn.wv.weight"), named.at(p + "attn.wo.weight"), named.at(p + "norm2.weight"),
             named.at(p + "mlp.w1.weight"), named.at(p + "mlp.w2.weight"), named.at(p + "mlp.w3.weight")});
    }
    const int half = b.config.headDim() / 2;
    const auto pos = torch::arange(seq, torch::kDouble).unsqueeze(1);
    const auto freq =
        torch::pow(b.config.ropeTheta, -torch::arange(half, torch::kDouble) * 2.0 / (2.0 * half));
    const auto angle = pos * freq;
    b.cos = torch::cat({angle.cos(), angle.cos()}, 1).unsqueeze(1).to(torch::kFloat);
    b.sin = torch::cat({-angle.sin(), angle.sin()}, 1).unsqueeze(1).to(torch::kFloat);
    b.squareMask = torch::ones({seq, seq}, torch::kBool).triu(1);
    b.groupedMask = torch::full({seq, seq}, -std::numeric_limits<double>::infinity())
                        .triu(1)
                        .repeat({b.config.nHeads / b.config.nKvHeads, 1});
    return b;
}

double seconds(const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

} // namespace

int main(int argc, char** argv) {
    const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    const std::int64_t batch = argc > 2 ? std::max(1, std::atoi(argv[2])) : 4;
    const std::int64_t seq = argc > 3 ? std::max(1, std::atoi(argv[3])) : 256;

    // The small preset's blocks; 5 layers in 3 stages leave the middle stage 3 blocks.
    auto config = ModelConfig::preset("small").value();
    config.nLayers = 5;
    config.stages = 3;
    StageModel model(config, 1);
    Bare bare = makeBare(model, seq);
    const auto [first, last] = model.blockRange();

    auto generator = at::detail::createCPUGenerator(1);
    const auto input = torch::randn({batch, seq, config.dModel}, generator);
    const auto gradOutput = torch::randn({batch, seq, config.dModel}, generator) * 1e-3;

    std::printf("StageModel vs bare LibTorch: middle stage of d=%d blocks [%d, %d), B=%lld T=%lld, fp32, "
                "%d torch threads, %d repetitions (median)\n",
                config.dModel, first, last, static_cast<long long>(batch), static_cast<long long>(seq),
                at::get_num_threads(), repetitions);
    {
        torch::NoGradGuard noGrad;
        const auto ours = model.forward(input);
        const double grouped = (bareForward(bare, input, false) - ours).abs().max().item<double>();
        const double textbook = (bareForward(bare, input, true) - ours).abs().max().item<double>();
        std::printf("  same function: max |Δ| vs bare %.2e, vs textbook %.2e\n", grouped, textbook);
    }

    auto bareStep = [&](bool textbook) {
        const auto x = input.detach().requires_grad_();
        torch::autograd::backward({bareForward(bare, x, textbook)}, {gradOutput});
    };
    auto bareForwardOnly = [&](bool textbook) {
        torch::NoGradGuard noGrad;
        (void)bareForward(bare, input, textbook);
    };
    struct Variant {
        const char* name;
        std::function<void()> forward, step;
        std::vector<double> forwardTimes{}, stepTimes{};
    };
    std::vector<Variant> variants{
        {"StageModel",
         [&] { (void)model.forward(input); },
         [&] { (void)model.backward(input, gradOutput); },
         {},
         {}},
        {"bare", [&] { bareForwardOnly(false); }, [&] { bareStep(false); }, {}, {}},
        {"textbook", [&] { bareForwardOnly(true); }, [&] { bareStep(true); }, {}, {}},
    };
    for (Variant& v : variants) { // warm-up: allocator caches, thread pool
        v.forward();
        v.step();
    }
    for (int r = 0; r < repetitions; ++r)
        for (Variant& v : variants) {
            v.forwardTimes.push_back(seconds(v.forward));
            v.stepTimes.push_back(seconds(v.step));
        }

    const double oursForward = median(variants[0].forwardTimes);
    const double oursStep = median(variants[0].stepTimes);
    std::printf("  %-11s %14s %26s\n", "", "forward (ms)", "forward+backward (ms)");
    for (const Variant& v : variants) {
        const double f = median(v.forwardTimes), s = median(v.stepTimes);
        std::printf("  %-11s %14.1f %26.1f\n", v.name, f * 1e3, s * 1e3);
    }
    std::printf("  StageModel speed / bare speed:     forward %5.1f%%   forward+backward %5.1f%%   (target "
                ">= 95%%)\n",
                100 * median(variants[1].forwardTimes) / oursForward,
                100 * median(variants[1].stepTimes) / oursStep);
    std::printf("  StageModel speed / textbook speed: forward %5.1f%%   forward+backward %5.1f%%\n",
                100 * median(variants[2].forwardTimes) / oursForward,
                100 * median(variants[2].stepTimes) / oursStep);
    return 0;
}
