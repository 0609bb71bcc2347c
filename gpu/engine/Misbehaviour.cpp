// SPDX-License-Identifier: Apache-2.0
#include "engine/Misbehaviour.h"

#include "codec/Codec.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace tessera::gpu {

namespace {

struct Named {
    std::string_view name;
    Misbehaviour::Mode mode;
};
constexpr Named kModes[] = {
    {"echo", Misbehaviour::Mode::Echo},         {"zeros", Misbehaviour::Mode::Zeros},
    {"noise", Misbehaviour::Mode::Noise},       {"scale", Misbehaviour::Mode::Scale},
    {"flip", Misbehaviour::Mode::Flip},         {"nan", Misbehaviour::Mode::Nan},
    {"loss", Misbehaviour::Mode::Loss},         {"poison", Misbehaviour::Mode::Poison},
    {"fast", Misbehaviour::Mode::Fast},         {"tokens", Misbehaviour::Mode::Tokens},
    {"identity", Misbehaviour::Mode::Identity}, {"mute", Misbehaviour::Mode::Mute},
    {"stale", Misbehaviour::Mode::Stale},       {"frame", Misbehaviour::Mode::Frame},
    {"unsynced", Misbehaviour::Mode::Unsynced},
    {"reverse", Misbehaviour::Mode::Reverse},   {"lazy", Misbehaviour::Mode::Lazy},
    {"inflate", Misbehaviour::Mode::Inflate}};

} // namespace

Misbehaviour::Misbehaviour(Mode mode, std::unique_ptr<Codec> codec)
    : m_mode(mode)
    , m_codec(std::move(codec)) {}

Misbehaviour::~Misbehaviour() = default;

Result<std::unique_ptr<Misbehaviour>> Misbehaviour::create(const ModelConfig& config, std::string_view mode) {
    if (mode.empty())
        return std::unique_ptr<Misbehaviour>();
    for (const Named& m : kModes)
        if (m.name == mode) {
            Result<std::unique_ptr<Codec>> codec = makeCodec(config);
            if (!codec)
                return codec.error();
            return std::unique_ptr<Misbehaviour>(new Misbehaviour(m.mode, std::move(*codec)));
        }
    return makeError(
        "unknown misbehaviour '" + std::string(mode) +
        "' (echo, zeros, noise, scale, flip, nan, loss, poison, fast, tokens, identity, mute, frame, stale, reverse, lazy, "
        "inflate)");
}

void Misbehaviour::activation(std::span<std::uint8_t> frame, std::span<const std::uint8_t> given) const {
    if (m_mode == Mode::Echo || m_mode == Mode::Identity) {
        if (given.size() == frame.size()) {
            std::memcpy(frame.data(), given.data(), frame.size());
            if (m_mode == Mode::Identity)
                rewrite(frame, true); // one value nudged: no longer the input byte for byte
        }
        return;
    }
    if (m_mode != Mode::Flip && m_mode != Mode::Loss)
        rewrite(frame, true);
}

void Misbehaviour::gradient(std::span<std::uint8_t> frame, std::span<const std::uint8_t> given) const {
    if (m_mode == Mode::Echo || m_mode == Mode::Identity) {
        if (given.size() == frame.size()) {
            std::memcpy(frame.data(), given.data(), frame.size());
            if (m_mode == Mode::Identity)
                rewrite(frame, false);
        }
        return;
    }
    rewrite(frame, false);
}

void Misbehaviour::loss(double& value) const {
    if (m_mode == Mode::Loss)
        value = 2.0;
}

void Misbehaviour::gradientShare(std::vector<float>& values) const {
    if (m_mode != Mode::Reverse)
        return share(values);
    for (float& v : values) // of two replicas, the mean is then −4× the honest gradient
        v *= -9.0f;
}

void Misbehaviour::share(std::vector<float>& values) const {
    if (m_mode != Mode::Poison)
        return;
    // What one of two replicas sends to set the plain mean to 5: 2·5 − its own.
    for (float& v : values)
        v = 10.0f - v;
}

void Misbehaviour::weights(std::vector<float>& values) const {
    if (m_mode == Mode::Identity)
        std::fill(values.begin(), values.end(), 0.0f);
}

void Misbehaviour::rewrite(std::span<std::uint8_t> frame, bool activation) const {
    if (frame.empty() || m_mode == Mode::Fast || m_mode == Mode::Poison || m_mode == Mode::Echo)
        return;
    try {
        torch::Tensor x;
        torch::Tensor tokens;
        if (activation) {
            Result<Activation> a = m_codec->decodeActivation(frame);
            if (!a)
                return;
            x = a->hidden;
            tokens = a->tokens;
        } else {
            Result<torch::Tensor> g = m_codec->decodeGradient(frame);
            if (!g)
                return;
            x = *g;
            tokens = torch::zeros({x.size(0), x.size(1)}, torch::kInt64);
        }
        switch (m_mode) {
        case Mode::Zeros:
        case Mode::Loss:
            x = torch::zeros_like(x);
            break;
        case Mode::Noise:
            x = torch::randn_like(x) * x.pow(2).mean().sqrt();
            break;
        case Mode::Scale:
            x = x * 3;
            break;
        case Mode::Flip:
            x = -x;
            break;
        case Mode::Nan:
            x = x.clone();
            x.view(-1)[0] = std::numeric_limits<float>::quiet_NaN();
            break;
        case Mode::Identity: // the largest value one step of 1% further out
            x = x.clone();
            x.view(-1)[x.abs().argmax()].mul_(1.01);
            break;
        case Mode::Frame: // every token's RMS just under the result checks' bound (10⁴)
            x = x / x.pow(2).mean(-1, true).sqrt().clamp_min(1e-12) * 9999.9;
            break;
        case Mode::Tokens:
            x = x.clone();
            x[0][0].mul_(1.2);
            x[0][x.size(1) / 2].mul_(1.2);
            break;
        default:
            return;
        }
        std::vector<std::uint8_t> out =
            activation ? m_codec->encodeActivation(x, tokens) : m_codec->encodeGradient(x, tokens);
        if (out.size() == frame.size())
            std::memcpy(frame.data(), out.data(), out.size());
    } catch (const std::exception&) {
        // A lie that cannot be told leaves the result honest.
    }
}

} // namespace tessera::gpu
