// SPDX-License-Identifier: Apache-2.0
// The codecs (gpu/codec, through engine/FrameDecoder, as the coordinator's result checks and a
// stage's engine read them): an activation or gradient payload from another node, decoded against
// the run's model. The first byte picks the model (none, int8 or subspace codec; 2- or 3-byte token
// ids) and the kind. What decodes has the shape its header announced and ids in the vocabulary, and
// decodes as the result checks' rows too.
#include "FuzzCheck.h"
#include "base/ModelConfig.h"
#include "engine/FrameDecoder.h"

#include <memory>
#include <vector>

using namespace tessera;
using namespace tessera::gpu;

namespace {

ModelConfig model(CodecKind codec, int vocab) {
    ModelConfig c;
    c.name = "fuzz";
    c.vocabSize = vocab;
    c.dModel = 16;
    c.nLayers = 2;
    c.nHeads = 2;
    c.nKvHeads = 1;
    c.ffnHidden = 32;
    c.maxSeqLen = 32;
    c.stages = 2;
    c.codec = codec;
    c.subspaceRatio = 4; // k = 4
    return c;
}

const std::vector<std::unique_ptr<FrameDecoder>>& decoders() {
    static const auto all = [] {
        std::vector<std::unique_ptr<FrameDecoder>> out;
        for (const ModelConfig& c : {model(CodecKind::None, 256), model(CodecKind::Int8, 256),
                                     model(CodecKind::Subspace, 256), model(CodecKind::None, 70000)})
            out.push_back(FrameDecoder::create(c, 256).value());
        return out;
    }();
    return all;
}

constexpr int kVocab[] = {256, 256, 256, 70000};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const std::size_t which = data[0] % 4;
    const bool activation = (data[0] >> 2) & 1;
    const std::span<const std::uint8_t> payload(data + 1, size - 1);
    const FrameDecoder& decoder = *decoders()[which];
    const Result<DecodedFrame> frame = activation ? decoder.activation(payload) : decoder.gradient(payload);
    tessera::fuzz::verdict(activation ? "activation" : "gradient", frame);
    if (!frame)
        return 0;
    FUZZ_CHECK(frame->batch >= 1 && frame->seq >= 1 && frame->seq <= 32 && frame->batch * frame->seq <= 256);
    FUZZ_CHECK(frame->width == 16);
    FUZZ_CHECK(std::int64_t(frame->values.size()) == frame->batch * frame->seq * frame->width);
    if (activation) {
        FUZZ_CHECK(std::int64_t(frame->tokens.size()) == frame->batch * frame->seq);
        for (std::int64_t id : frame->tokens)
            FUZZ_CHECK(id >= 0 && id < kVocab[which]);
    } else {
        FUZZ_CHECK(frame->tokens.empty());
    }
    // What the result checks read (k + 1 coordinates a subspace token): the same payloads decode,
    // to the same shape and ids.
    const Result<DecodedFrame> rows =
        activation ? decoder.activationForChecks(payload) : decoder.gradientForChecks(payload);
    FUZZ_CHECK(rows && rows->batch == frame->batch && rows->seq == frame->seq && rows->dimension == 16);
    FUZZ_CHECK(rows->tokens == frame->tokens);
    FUZZ_CHECK(std::int64_t(rows->values.size()) == rows->batch * rows->seq * rows->width);
    FUZZ_CHECK(rows->width == (which != 2 ? 16 : activation ? 5 : 4));
    return 0;
}
