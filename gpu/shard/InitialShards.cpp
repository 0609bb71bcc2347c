// SPDX-License-Identifier: Apache-2.0
#include "shard/InitialShards.h"

#include "model/StageModel.h"
#include "shard/StageShard.h"

#include <system_error>

namespace tessera::gpu {

std::string stageShardFileName(std::int64_t stage, std::int64_t version) {
    return "stage-" + std::to_string(stage) + "-v" + std::to_string(version) + ".safetensors";
}

Result<std::vector<ShardManifest>>
writeInitialShards(const ModelConfig& config, const std::filesystem::path& dir, std::int64_t version) {
    if (Status valid = config.validate(); !valid)
        return valid.error();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return makeError("cannot create " + dir.string() + ": " + ec.message());
    std::vector<ShardManifest> manifests;
    for (int stage = 0; stage < config.stages; ++stage) {
        try {
            // Scoped: a large model's stages never sit in memory together.
            const StageModel model(config, stage, torch::kCPU);
            Result<ShardManifest> written =
                writeStageShard(model, dir / stageShardFileName(stage, version), version, 0);
            if (!written)
                return written.error();
            manifests.push_back(std::move(*written));
        } catch (const std::exception& e) {
            return makeError("building stage " + std::to_string(stage) + " failed: " + e.what());
        }
    }
    return manifests;
}

} // namespace tessera::gpu
