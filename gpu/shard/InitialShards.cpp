// SPDX-License-Identifier: Apache-2.0
#include "shard/InitialShards.h"

#include "base/ShardHasher.h"
#include "model/ParameterSpec.h"
#include "model/SeededInit.h"
#include "shard/AtomicFile.h"
#include "shard/SafetensorsWriter.h"
#include "shard/StageShard.h"

#include <algorithm>
#include <array>
#include <future>
#include <span>
#include <system_error>
#include <thread>

namespace tessera::gpu {

namespace {

// The data is made, hashed and written this many floats (16 MiB) at a time: while one block is
// hashed and written the next is generated, so two blocks are all a stage ever holds.
constexpr std::int64_t kBlockFloats = std::int64_t{4} << 20;

const char* const kCancelled = "writing the initial shards was cancelled";

// A stage's file without its data: the parameters in order and the bytes before the first one.
struct StageLayout {
    std::vector<ParameterSpec> parameters;
    std::string head; // the header's length and the header, exactly as writeStageShard writes them
    std::uint64_t fileSize = 0;
};

Result<StageLayout> layoutStage(const ModelConfig& config, int stage) {
    StageLayout layout;
    layout.parameters = stageParameters(config, stage);
    SafetensorsWriter writer;
    for (const ParameterSpec& p : layout.parameters)
        if (Status declared = writer.declare(p.name, Dtype::F32, p.shape); !declared)
            return declared.error();
    if (Status set = setStageShardMetadata(writer, config, stage, 0); !set)
        return set.error();
    Result<std::string> head = writer.fileHead();
    if (!head)
        return head.error();
    layout.head = std::move(*head);
    layout.fileSize = layout.head.size() + writer.dataSize();
    return layout;
}

// Where generation stands in a stage's data: a parameter and an element of it.
struct Cursor {
    std::size_t parameter = 0;
    std::int64_t element = 0;
};

// Every core: the coordinator runs this on a background thread (nice 10, RunPreparation), whose
// threads inherit it, so the weights take the cores only when serving does not want them.
int everyCore() {
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The stage's next `count` floats from `at` on into out, as StageModel initialises them.
void generate(const std::vector<ParameterSpec>& parameters, std::uint64_t seed, Cursor& at, float* out,
              std::int64_t count, int threads) {
    while (count > 0) {
        const ParameterSpec& p = parameters.at(at.parameter);
        const std::int64_t n = std::min(count, p.numel() - at.element);
        if (p.init == ParameterSpec::Init::Ones)
            std::fill_n(out, n, 1.0f);
        else
            fillSeededNormal(out, n, at.element, seed, p.name, p.stddev, threads);
        out += n;
        count -= n;
        at.element += n;
        if (at.element == p.numel()) {
            ++at.parameter;
            at.element = 0;
        }
    }
}

bool cancelled(const InitialShardProgress* progress) {
    return progress && progress->cancel.load();
}

void advance(InitialShardProgress* progress, std::uint64_t bytes) {
    if (progress)
        progress->bytesWritten += static_cast<std::int64_t>(bytes);
}

// Streams one stage's shard to `file` and returns its manifest, hashed on the way.
Result<ShardManifest> writeStage(const ModelConfig& config, int stage, const StageLayout& layout,
                                 const std::filesystem::path& file, std::int64_t version,
                                 InitialShardProgress* progress, int threads) {
    Result<AtomicFile> opened = AtomicFile::create(file);
    if (!opened)
        return opened.error();
    AtomicFile& out = *opened;
    ShardHasher hasher(ShardManifest::kDefaultChunkSize);
    const auto head = std::as_bytes(std::span(layout.head.data(), layout.head.size()));
    hasher.update(head);
    if (Status s = out.append(head); !s)
        return s.error();
    advance(progress, head.size());

    const std::int64_t total =
        static_cast<std::int64_t>((layout.fileSize - layout.head.size()) / sizeof(float));
    // Declared before the task that uses them, so that it is waited for (its future's destructor)
    // before they go, on every path out.
    std::array<std::vector<float>, 2> blocks;
    std::future<Status> pending;
    const auto finishPending = [&]() -> Status {
        if (!pending.valid())
            return {};
        try {
            return pending.get();
        } catch (const std::exception& e) {
            return makeError("writing " + file.string() + " failed: " + e.what());
        }
    };
    Cursor at;
    std::size_t next = 0;
    for (std::int64_t done = 0; done < total; done += kBlockFloats) {
        if (cancelled(progress)) {
            (void)finishPending();
            return makeError(kCancelled);
        }
        std::vector<float>& block = blocks[next];
        next ^= 1;
        const std::int64_t n = std::min(kBlockFloats, total - done);
        block.resize(static_cast<std::size_t>(n));
        generate(layout.parameters, config.seed, at, block.data(), n,
                 threads); // the previous block is written meanwhile
        if (Status s = finishPending(); !s)
            return s.error();
        pending = std::async(std::launch::async, [&hasher, &out, &block, progress]() -> Status {
            const auto bytes = std::as_bytes(std::span(block));
            hasher.update(bytes);
            if (Status s = out.append(bytes); !s)
                return s;
            advance(progress, bytes.size());
            return {};
        });
    }
    if (Status s = finishPending(); !s)
        return s.error();
    if (cancelled(progress))
        return makeError(kCancelled);
    if (Status s = out.commit(); !s)
        return s.error();
    return hasher.finish(file.filename().string(), config.hash(), stage, version, 0);
}

} // namespace

std::string stageShardFileName(std::int64_t stage, std::int64_t version) {
    return "stage-" + std::to_string(stage) + "-v" + std::to_string(version) + ".safetensors";
}

Result<std::vector<ShardManifest>> writeInitialShards(const ModelConfig& config,
                                                      const std::filesystem::path& dir, std::int64_t version,
                                                      InitialShardProgress* progress) {
    if (Status valid = config.validate(); !valid)
        return valid.error();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return makeError("cannot create " + dir.string() + ": " + ec.message());

    // Every stage's layout first: the total is known before the first byte.
    std::vector<StageLayout> layouts;
    std::int64_t totalBytes = 0;
    for (int stage = 0; stage < config.stages; ++stage) {
        Result<StageLayout> layout = layoutStage(config, stage);
        if (!layout)
            return layout.error();
        totalBytes += static_cast<std::int64_t>(layout->fileSize);
        layouts.push_back(std::move(*layout));
    }
    if (progress) {
        progress->bytesWritten = 0;
        progress->bytesTotal = totalBytes;
    }

    // All stages or none: a run cannot start from some of them.
    std::vector<std::filesystem::path> written;
    const auto removeWritten = [&] {
        for (const auto& file : written) {
            std::error_code ignored;
            std::filesystem::remove(file, ignored);
        }
    };
    std::vector<ShardManifest> manifests;
    for (int stage = 0; stage < config.stages; ++stage) {
        const std::filesystem::path file = dir / stageShardFileName(stage, version);
        Result<ShardManifest> manifest = makeError(kCancelled);
        try {
            if (!cancelled(progress))
                manifest = writeStage(config, stage, layouts[static_cast<std::size_t>(stage)], file, version,
                                      progress, everyCore());
        } catch (const std::exception& e) {
            manifest = makeError("writing stage " + std::to_string(stage) + "'s shard failed: " + e.what());
        }
        if (!manifest) {
            removeWritten();
            return manifest.error();
        }
        written.push_back(file);
        manifests.push_back(std::move(*manifest));
    }
    return manifests;
}

Result<ShardManifest> writeInitialShard(const ModelConfig& config, int stage,
                                        const std::filesystem::path& dir, std::int64_t version, int threads) {
    if (Status valid = config.validate(); !valid)
        return valid.error();
    Result<StageLayout> layout = layoutStage(config, stage);
    if (!layout)
        return layout.error();
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        return makeError("cannot create " + dir.string() + ": " + ec.message());
    try {
        return writeStage(config, stage, *layout, dir / stageShardFileName(stage, version), version, nullptr,
                          threads > 0 ? threads : everyCore());
    } catch (const std::exception& e) {
        return makeError("writing stage " + std::to_string(stage) + "'s shard failed: " + e.what());
    }
}

} // namespace tessera::gpu
