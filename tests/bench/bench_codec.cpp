// SPDX-License-Identifier: Apache-2.0
// bench_codec: what each boundary codec costs at the 8b width (d=4096, k=40) — bytes per token
// against bf16, and the time a middle stage spends encoding and decoding one microbatch's
// activations and gradients as a share of that stage's own forward+backward compute, both
// measured in one run on this CPU. Usage: bench_codec [T] [B] [vocab] [device] (default 1024 1 128256
// cpu). On cuda:N the codec computes on the device (as the engine's does) and the stage's linear layers
// run there in bf16, as a GPU node computes them; each timing waits for the device.
#include "codec/Codec.h"
#include "codec/Int8Codec.h"
#include "codec/NoneCodec.h"
#include "codec/SubspaceCodec.h"
#include "device/BenchTiming.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <utility>

using namespace tessera::gpu;

namespace {

torch::Device g_device = torch::kCPU;

// Wall seconds of fn, the device's queued work included.
template <class Fn>
double deviceSeconds(Fn&& fn) {
    return wallSeconds([&] {
        fn();
        if (g_device.is_cuda())
            torch::cuda::synchronize();
    });
}

struct Variant {
    std::string name;
    std::unique_ptr<Codec> codec;
    bool subspace;
};

template <class T>
std::unique_ptr<Codec> take(tessera::Result<std::unique_ptr<T>> r) {
    if (!r) {
        std::fprintf(stderr, "%s\n", r.message().c_str());
        std::exit(1);
    }
    return std::move(r).value();
}

CodecOptions onDevice() {
    CodecOptions o;
    o.device = g_device;
    return o;
}

CodecOptions wire(Dtype dtype) {
    CodecOptions o = onDevice();
    o.activationDtype = o.gradientDtype = dtype;
    return o;
}

// Forward + backward of one linear layer [in -> out] on T tokens: the three GEMMs
// Y = X·W, dX = dY·Wᵀ, dW = Xᵀ·dY, timed once (after a warm-up of the same shape at T/8).
double linearSeconds(std::int64_t tokens, std::int64_t in, std::int64_t out) {
    const auto options =
        torch::TensorOptions().device(g_device).dtype(g_device.is_cuda() ? torch::kBFloat16 : torch::kFloat);
    const auto w = torch::randn({in, out}, options) * 0.01;
    const auto run = [&](std::int64_t t) {
        const auto x = torch::randn({t, in}, options);
        const auto dy = torch::randn({t, out}, options);
        return deviceSeconds([&] {
            (void)at::mm(x, w);
            (void)at::mm(dy, w.t());
            (void)at::mm(x.t(), dy);
        });
    };
    run(std::max<std::int64_t>(1, tokens / 8));
    return run(tokens);
}

} // namespace

int main(int argc, char** argv) {
    const std::int64_t seq = argc > 1 ? std::atoll(argv[1]) : 1024;
    const std::int64_t batch = argc > 2 ? std::atoll(argv[2]) : 1;
    auto config = ModelConfig::preset("8b").value();
    if (argc > 3)
        config.vocabSize = std::atoi(argv[3]);
    if (argc > 4)
        g_device = torch::Device(argv[4]);
    config.codec = CodecKind::Subspace;
    const std::int64_t d = config.dModel, k = config.subspaceDim(), tokens = batch * seq;
    std::printf("8b preset: d=%lld, k=%lld (subspace_ratio %d), vocab %d; microbatch B=%lld T=%lld\n",
                (long long)d, (long long)k, config.subspaceRatio, config.vocabSize, (long long)batch,
                (long long)seq);

    SubspaceBasis basis;
    const double basisSeconds = wallSeconds([&] { basis = makeSubspaceBasis(config); });
    std::printf(
        "subspace basis U [%lld,%lld] built from the seed in %.1f s (E's rows are made per frame, for its "
        "tokens)\n\n",
        (long long)d, (long long)k, basisSeconds);

    std::vector<Variant> variants;
    {
        auto plain = config;
        plain.codec = CodecKind::None;
        variants.push_back({"none fp32", take(NoneCodec::create(plain, onDevice())), false});
        variants.push_back({"none bf16", take(NoneCodec::create(plain, wire(Dtype::BF16))), false});
        plain.codec = CodecKind::Int8;
        variants.push_back({"int8 block 64", take(Int8Codec::create(plain, onDevice())), false});
        variants.push_back(
            {"subspace fp32", take(SubspaceCodec::create(config, wire(Dtype::F32), basis)), true});
        variants.push_back(
            {"subspace fp16", take(SubspaceCodec::create(config, wire(Dtype::F16), basis)), true});
        variants.push_back({"subspace int8", take(SubspaceCodec::create(config, onDevice(), basis)), true});
    }

    // (a) Bytes per token: a frame's body over its tokens (the 28-byte header once per frame
    // is left out; at T=1024 it adds 0.03 B/token). Activations include the token id.
    const auto perToken = [&](const Codec& c, PayloadKind kind) {
        return double(c.payloadBytes(kind, batch, seq) - FrameHeader::kSize) / double(tokens);
    };
    const Codec& bf16 = *variants[1].codec;
    std::printf(
        "(a) bytes per token (%d-byte token ids with activations; header %zu B per frame not included)\n",
        variants[0].codec->tokenBytes(), FrameHeader::kSize);
    std::printf("%-16s %12s %10s %12s %10s\n", "codec", "activation", "vs bf16", "gradient", "vs bf16");
    for (const auto& v : variants) {
        const double a = perToken(*v.codec, PayloadKind::Activation),
                     g = perToken(*v.codec, PayloadKind::Gradient);
        std::printf("%-16s %12.2f %9.1fx %12.2f %9.1fx\n", v.name.c_str(), a,
                    perToken(bf16, PayloadKind::Activation) / a, g,
                    perToken(bf16, PayloadKind::Gradient) / g);
    }
    const auto ratio = [&](const Codec& c, PayloadKind kind) {
        return perToken(bf16, kind) / perToken(c, kind);
    };
    const Codec& fp16 = *variants[4].codec;
    const Codec& int8 = *variants[5].codec;
    const double valuesFp16 = ratio(fp16, PayloadKind::Gradient),
                 frameFp16 = ratio(fp16, PayloadKind::Activation);
    const double frameInt8 = ratio(int8, PayloadKind::Activation);
    std::printf(
        "target subspace fp16 >= 100x: values alone (k*2 vs d*2 bytes, = the gradient frame) %.1fx %s; "
        "activation frame with its token id on both sides %.1fx %s\n",
        valuesFp16, valuesFp16 >= 100 ? "met" : "NOT met", frameFp16, frameFp16 >= 100 ? "met" : "NOT met");
    std::printf("target subspace int8 >= 150x: activation frame %.1fx %s\n\n", frameInt8,
                frameInt8 >= 150 ? "met" : "NOT met");

    // (b) Stage compute: one block's linear layers, forward + backward, at this T.
    std::map<std::pair<std::int64_t, std::int64_t>, double> linear;
    const std::int64_t kv = std::int64_t(config.nKvHeads) * config.headDim(), ffn = config.ffnHidden;
    const std::pair<std::int64_t, std::int64_t> shapes[] = {{d, d}, {d, kv}, {d, ffn}, {ffn, d},
                                                            {d, k}, {k, d},  {ffn, k}};
    for (const auto& s : shapes)
        linear[s] = linearSeconds(tokens, s.first, s.second);
    // Full block: q, o d->d; k, v d->kv; gate, up d->ffn; down ffn->d.
    const double fullBlock =
        2 * linear[{d, d}] + 2 * linear[{d, kv}] + 2 * linear[{d, ffn}] + linear[{ffn, d}];
    // Subspace block: o and down write k wide, then U maps k->d.
    const double subspaceBlock = linear[{d, d}] + 2 * linear[{d, kv}] + 2 * linear[{d, ffn}] +
                                 linear[{d, k}] + linear[{ffn, k}] + 2 * linear[{k, d}];
    const int stage = config.stages / 2;
    auto plain = config;
    plain.codec = CodecKind::None;
    const auto [fullFirst, fullLast] = plain.stageBlocks(stage);
    const auto [subFirst, subLast] = config.stageBlocks(stage);
    const double fullStage = fullBlock * (fullLast - fullFirst),
                 subStage = subspaceBlock * (subLast - subFirst);
    std::printf("(b) stage compute, timed on %s: the linear layers of one block, forward + backward (3 GEMMs "
                "each: X·W, dY·Wᵀ, Xᵀ·dY) on %lld tokens, %s, attention scores and norms not included\n",
                g_device.str().c_str(), (long long)tokens, g_device.is_cuda() ? "bf16" : "fp32");
    std::printf(
        "    full block (q,o %lld->%lld; k,v %lld->%lld; gate,up %lld->%lld; down %lld->%lld): %.2f s; "
        "middle stage %d holds %d blocks: %.1f s\n",
        (long long)d, (long long)d, (long long)d, (long long)kv, (long long)d, (long long)ffn, (long long)ffn,
        (long long)d, fullBlock, stage, fullLast - fullFirst, fullStage);
    std::printf(
        "    subspace block (o, down write k=%lld, then U: k->d): %.2f s; middle stage %d holds %d blocks: "
        "%.1f s\n\n",
        (long long)k, subspaceBlock, stage, subLast - subFirst, subStage);

    // Boundary work per microbatch at a middle stage: decode the activation in, encode the
    // activation out, decode the gradient in, encode the gradient out.
    torch::manual_seed(1);
    const auto ids = torch::randint(config.vocabSize, {batch, seq}, torch::kLong);
    const auto hidden = (fixedEmbeddingRows(config, ids).view({batch, seq, d}) +
                         at::matmul(torch::randn({batch, seq, k}) * 3, basis.basis.t()))
                            .to(g_device);
    const auto grad = (torch::randn({batch, seq, d}) * 1e-3).to(g_device);
    RepeatPolicy policy;
    policy.warmups = 1;
    policy.minRepeats = 5;
    policy.budgetSeconds = 1.0;
    std::printf(
        "boundary time per microbatch (median of >= %d runs), share of the matching stage's compute\n",
        policy.minRepeats);
    std::printf("%-16s %9s %9s %9s %9s %10s %8s\n", "codec", "enc act", "dec act", "enc grad", "dec grad",
                "total", "share");
    for (const auto& v : variants) {
        const Codec& c = *v.codec;
        const auto act = c.encodeActivation(hidden, ids);
        const auto gr = c.encodeGradient(grad, ids);
        const auto ms = [&](auto fn) {
            return 1e3 * repeatTimed(policy, [&] { return deviceSeconds(fn); }).median();
        };
        const double encA = ms([&] { (void)c.encodeActivation(hidden, ids); });
        const double decA = ms([&] {
            if (!c.decodeActivation(act))
                std::abort();
        });
        const double encG = ms([&] { (void)c.encodeGradient(grad, ids); });
        const double decG = ms([&] {
            if (!c.decodeGradient(gr))
                std::abort();
        });
        const double total = encA + decA + encG + decG;
        const double stageMs = 1e3 * (v.subspace ? subStage : fullStage);
        std::printf("%-16s %6.2f ms %6.2f ms %6.2f ms %6.2f ms %7.2f ms %7.3f%%\n", v.name.c_str(), encA,
                    decA, encG, decG, total, 100 * total / stageMs);
    }
    if (g_device.is_cuda())
        std::printf(
            "target: <= 5%% of the stage's compute. Codec and GEMMs on %s (payload bytes copied to and "
            "from the host inside each timing)\n",
            g_device.str().c_str());
    else
        std::printf(
            "target: <= 5%% of the stage's compute. Codec ops ran on %d torch thread(s); the GEMMs on "
            "the BLAS's own threads (%u hardware threads)\n",
            at::get_num_threads(), std::thread::hardware_concurrency());
    return 0;
}
