// SPDX-License-Identifier: Apache-2.0
// ModelConfig: a run's model as JSON (the coordinator's --model-config file, /v1/info, a checkpoint).
// A config that parses is valid, survives toJson unchanged (its hash names shards and manifests),
// and cuts into stages that cover every block once, each stage with at least one.
#include "FuzzCheck.h"
#include "base/ModelConfig.h"

using namespace tessera;
using tessera::gpu::ModelConfig;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view json(reinterpret_cast<const char*>(data), size);
    const Result<ModelConfig> parsed = ModelConfig::fromJson(json);
    tessera::fuzz::verdict("config", parsed);
    if (!parsed)
        return 0;
    const ModelConfig& c = *parsed;
    FUZZ_CHECK(c.validate());
    const std::string text = c.toJson();
    const Result<ModelConfig> again = ModelConfig::fromJson(text);
    FUZZ_CHECK(again);
    FUZZ_CHECK(again->toJson() == text);
    FUZZ_CHECK(again->hash() == c.hash() && c.hash().size() == 64);

    FUZZ_CHECK(c.subspaceDim() >= 1 && c.subspaceDim() <= c.dModel);
    FUZZ_CHECK(c.blockParameterCount() > 0);
    // Every stage when there are few, else the first and last few (each stageBlocks is O(stages)).
    int next = 0;
    for (int s = 0; s < c.stages; ++s) {
        if (c.stages > 64 && s == 32)
            s = c.stages - 32;
        const auto [first, last] = c.stageBlocks(s);
        FUZZ_CHECK(first < last);
        if (c.stages <= 64 || s < 32)
            FUZZ_CHECK(first == next);
        next = last;
        FUZZ_CHECK(c.stageParameterCount(s) > 0);
    }
    FUZZ_CHECK(next == c.nLayers);
    if (c.stages <= 64)
        FUZZ_CHECK(c.parameterCount() > 0);
    return 0;
}
