// SPDX-License-Identifier: Apache-2.0
#include "shard/StageShard.h"

#include "model/StageModel.h"
#include "shard/Safetensors.h"
#include "shard/SafetensorsWriter.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>

namespace tessera::gpu {

namespace {

constexpr const char* kConfigKey = "tessera.model_config";
constexpr const char* kHashKey = "tessera.model_config_hash";
constexpr const char* kStageKey = "tessera.stage";
constexpr const char* kStepKey = "tessera.step";

std::string metadataValue(const SafetensorsFile& file, const std::string& key) {
    for (const auto& [k, v] : file.metadata())
        if (k == key)
            return v;
    return {};
}

} // namespace

Status setStageShardMetadata(SafetensorsWriter& writer, const ModelConfig& config, std::int64_t stage,
                             std::int64_t step) {
    for (const auto& [key, value] : {std::pair<const char*, std::string>{kConfigKey, config.toJson()},
                                     {kHashKey, config.hash()},
                                     {kStageKey, std::to_string(stage)},
                                     {kStepKey, std::to_string(step)}})
        if (auto set = writer.setMetadata(key, value); !set)
            return set;
    return {};
}

Result<ShardManifest> writeStageShard(const StageModel& model, const std::filesystem::path& file,
                                      std::int64_t version, std::int64_t step, std::uint64_t chunkSize) {
    try {
        SafetensorsWriter writer;
        std::vector<torch::Tensor> keepAlive; // the writer references their memory until write()
        for (const auto& [name, parameter] : model.namedParameters()) {
            torch::Tensor t = parameter.detach().to(torch::kCPU, torch::kFloat).contiguous();
            keepAlive.push_back(t);
            std::vector<std::int64_t> shape(t.sizes().begin(), t.sizes().end());
            const auto* bytes = static_cast<const std::byte*>(t.data_ptr());
            if (auto added = writer.add(name, Dtype::F32, shape, std::span(bytes, t.numel() * sizeof(float)));
                !added)
                return added.error();
        }
        if (Status set = setStageShardMetadata(writer, model.config(), model.stage(), step); !set)
            return set.error();
        const std::string hash = model.config().hash();
        if (auto written = writer.write(file); !written)
            return written.error();
        return ShardManifest::build(file, hash, model.stage(), version, step, chunkSize);
    } catch (const std::exception& e) {
        return makeError("writing the stage shard failed: " + std::string(e.what()));
    }
}

Status loadStageShard(StageModel& model, const std::filesystem::path& file, const ShardManifest* manifest,
                      std::uint64_t chunkBytes) {
    const std::string hash = model.config().hash();
    const std::string where = file.filename().string() + ": ";
    if (manifest) {
        if (manifest->modelConfigHash != hash)
            return makeError(where + "the manifest is for another model (config hash " +
                             manifest->modelConfigHash + ", this run's is " + hash + ")");
        if (manifest->stage != model.stage())
            return makeError(where + "the manifest is for stage " + std::to_string(manifest->stage) +
                             ", not stage " + std::to_string(model.stage()));
        if (auto verified = manifest->verifyFile(file); !verified)
            return verified.error();
    }
    auto opened = SafetensorsFile::open(file);
    if (!opened)
        return opened.error();
    const SafetensorsFile& shard = *opened;
    if (metadataValue(shard, kHashKey) != hash)
        return makeError(where + "the shard belongs to another model (config hash '" +
                         metadataValue(shard, kHashKey) + "')");
    if (metadataValue(shard, kStageKey) != std::to_string(model.stage()))
        return makeError(where + "the shard holds stage '" + metadataValue(shard, kStageKey) +
                         "', not stage " + std::to_string(model.stage()));

    // Check the whole tensor set before changing anything: a bad shard leaves the model as it was.
    const auto parameters = model.namedParameters();
    std::map<std::string, const TensorInfo*> byName;
    for (const TensorInfo& t : shard.tensors())
        byName[t.name] = &t;
    for (const auto& [name, parameter] : parameters) {
        const auto it = byName.find(name);
        if (it == byName.end())
            return makeError(where + "tensor '" + name + "' is missing");
        const TensorInfo& info = *it->second;
        if (info.dtype != "F32")
            return makeError(where + "tensor '" + name + "' is " + info.dtype + ", expected F32");
        if (!std::equal(info.shape.begin(), info.shape.end(), parameter.sizes().begin(),
                        parameter.sizes().end()))
            return makeError(where + "tensor '" + name + "' has the wrong shape");
        byName.erase(it);
    }
    if (!byName.empty())
        return makeError(where + "unexpected tensor '" + byName.begin()->first + "' (not part of stage " +
                         std::to_string(model.stage()) + ")");

    try {
        torch::NoGradGuard noGrad;
        // One host buffer of at most a chunk for every tensor: a whole 8b head staged at once held
        // 2.1 GB more than the weights for a moment.
        const std::int64_t chunkValues = std::max<std::int64_t>(1, std::int64_t(chunkBytes / sizeof(float)));
        const torch::Tensor staging = torch::empty({chunkValues}, torch::kFloat);
        for (const auto& [name, parameter] : parameters) {
            const TensorInfo& info = *shard.find(name);
            const torch::Tensor flat = parameter.view({-1});
            for (std::int64_t at = 0; at < flat.numel(); at += chunkValues) {
                const std::int64_t n = std::min(chunkValues, flat.numel() - at);
                const torch::Tensor piece = staging.narrow(0, 0, n);
                auto* out = static_cast<std::byte*>(piece.data_ptr());
                const auto bytes = static_cast<std::size_t>(n) * sizeof(float);
                if (auto read =
                        shard.readRange(info, std::uint64_t(at) * sizeof(float), std::span(out, bytes));
                    !read)
                    return read.error();
                // copy_ (not a raw write into the weights) so a bf16 compute copy sees the change: a
                // view shares its parameter's version counter.
                flat.narrow(0, at, n).copy_(piece);
            }
        }
    } catch (const std::exception& e) {
        return makeError(where + "loading failed: " + e.what());
    }
    return {};
}

} // namespace tessera::gpu
