// SPDX-License-Identifier: Apache-2.0
#pragma once
// TrustFrames: real boundary tensors of the tiny model in three stages, computed by real stage
// engines on the CPU, for the result-check and audit tests — the honest answers, and lies made
// from them by gpu::Misbehaviour (what TESSERA_TEST_MISBEHAVE makes a node send).

#include "TinyFrames.h"
#include "engine/Misbehaviour.h"
#include "engine/StageEngine.h"

#include <QTest>

#include <memory>
#include <span>
#include <vector>

namespace tessera::test {

inline std::span<const std::uint8_t> span(const QByteArray& b) {
    return {reinterpret_cast<const std::uint8_t*>(b.constData()), std::size_t(b.size())};
}
inline QByteArray bytes(const std::vector<std::uint8_t>& b) {
    return QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size()));
}

inline gpu::ModelConfig tinyThreeStages() {
    gpu::ModelConfig c = tinyTwoStages();
    c.stages = 3;
    return c;
}

inline std::unique_ptr<gpu::StageEngine> stageEngine(const gpu::ModelConfig& config, int stage) {
    gpu::StageEngineOptions o;
    o.config = config;
    o.stage = stage;
    o.keepActivations = false;
    Result<std::unique_ptr<gpu::StageEngine>> e = gpu::StageEngine::create(o);
    if (!e)
        qFatal("stage engine: %s", e.message().c_str());
    return std::move(*e);
}

// One microbatch through the three stages, every boundary tensor kept.
struct Trip {
    QByteArray tokens, targets;
    QByteArray act0, act1;   // stage 0's and stage 1's forward outputs
    QByteArray grad2, grad1; // the last stage's gradient for stage 1, stage 1's for stage 0
    double loss = 0;
};

inline Trip trip(const gpu::ModelConfig& config, std::vector<std::unique_ptr<gpu::StageEngine>>& engines,
                 int offset) {
    Trip t;
    t.tokens = tokenFrame(offset);
    t.targets = tokenFrame(offset + 1);
    if (engines.empty())
        for (int s = 0; s < config.stages; ++s)
            engines.push_back(stageEngine(config, s));
    auto f0 = engines[0]->forward(1, span(t.tokens));
    auto f1 = f0 ? engines[1]->forward(1, f0->output) : Result<gpu::StageForwardResult>(f0.error());
    if (!f1)
        qFatal("forward: %s", f1.message().c_str());
    t.act0 = bytes(f0->output);
    t.act1 = bytes(f1->output);
    auto b2 = engines[2]->backward(1, {}, span(t.act1), span(t.targets));
    auto b1 = b2 ? engines[1]->backward(1, b2->gradInput, span(t.act0))
                 : Result<gpu::StageBackwardResult>(b2.error());
    if (!b1)
        qFatal("backward: %s", b1.message().c_str());
    t.grad2 = bytes(b2->gradInput);
    t.grad1 = bytes(b1->gradInput);
    t.loss = b2->loss;
    return t;
}

// The frame as a lying node would send it.
inline QByteArray lie(const gpu::ModelConfig& config, const char* mode, QByteArray frame, bool activation) {
    Result<std::unique_ptr<gpu::Misbehaviour>> m = gpu::Misbehaviour::create(config, mode);
    if (!m || !*m)
        qFatal("misbehaviour %s", mode);
    std::span<std::uint8_t> out(reinterpret_cast<std::uint8_t*>(frame.data()), std::size_t(frame.size()));
    if (activation)
        (*m)->activation(out, {});
    else
        (*m)->gradient(out, {});
    return frame;
}

} // namespace tessera::test
