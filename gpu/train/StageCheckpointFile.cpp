// SPDX-License-Identifier: Apache-2.0
#include "train/StageCheckpointFile.h"

#include "base/ShardHasher.h"
#include "model/ParameterSpec.h"
#include "shard/AtomicFile.h"
#include "shard/Safetensors.h"
#include "shard/SafetensorsWriter.h"
#include "shard/ScratchFile.h"
#include "shard/StageShard.h"
#include "train/GradientExchange.h"
#include "train/MomentCodes.h"
#include "train/OptimizerOptions.h"
#include "train/SpartaPartitions.h"
#include "train/StageOptimizer.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace tessera::gpu {

namespace {

std::string str(std::int64_t v) {
    return std::to_string(v);
}

struct Parameter {
    std::string name;
    std::vector<std::int64_t> shape;
    std::int64_t numel = 0;
    std::int64_t offset = 0;      // values before it in the data buffer (the shard's and stage-S.weights')
    std::int64_t codeOffset = 0;  // 8-bit moments: codes before it (padded to whole blocks)
    std::int64_t blockOffset = 0; // 8-bit moments: block scales before it
};

std::int64_t blocksOf(std::int64_t n) {
    return (n + kMomentBlock - 1) / kMomentBlock;
}

torch::Tensor floats(std::int64_t n) {
    return torch::empty({n}, torch::kFloat);
}

} // namespace

struct StageCheckpointFile::State {
    ModelConfig config;
    int stage = 0;
    std::int64_t chunk = 0;
    std::filesystem::path workDir;
    std::vector<Parameter> parameters;
    std::int64_t total = 0, codes = 0, blocks = 0;
    ScratchFile shard;
    std::uint64_t dataStart = 0;
    ScratchFile weights;       // open after the first change
    ScratchFile first, second; // open after the first step
    OptimizerOptions optimizer;
    std::int64_t steps = 0;
    mutable std::optional<std::pair<int, std::vector<std::int64_t>>> sizes; // per partition, cached

    std::filesystem::path scratch(const char* what) const {
        return workDir / ("stage-" + str(stage) + "." + what);
    }
    std::vector<std::pair<std::string, std::int64_t>> numels() const {
        std::vector<std::pair<std::string, std::int64_t>> out;
        for (const Parameter& p : parameters)
            out.emplace_back(p.name, p.numel);
        return out;
    }

    Status readWeights(const Parameter& p, std::int64_t begin, std::int64_t count, float* out) const {
        const std::uint64_t at = std::uint64_t(p.offset + begin) * sizeof(float);
        const std::size_t bytes = std::size_t(count) * sizeof(float);
        return weights.isOpen() ? weights.read(at, out, bytes) : shard.read(dataStart + at, out, bytes);
    }
    Status writeWeights(const Parameter& p, std::int64_t begin, std::int64_t count, const float* values) {
        if (Status made = makeWeights(); !made)
            return made;
        return weights.write(std::uint64_t(p.offset + begin) * sizeof(float), values,
                             std::size_t(count) * sizeof(float));
    }
    // The first change copies the shard's weights to stage-S.weights, a chunk at a time.
    Status makeWeights() {
        if (weights.isOpen())
            return {};
        if (Status made = weights.create(scratch("weights"), std::uint64_t(total) * sizeof(float)); !made)
            return made;
        std::vector<float> buffer(std::size_t(std::min(chunk, std::max<std::int64_t>(total, 1))));
        for (std::int64_t at = 0; at < total; at += chunk) {
            const std::int64_t n = std::min(chunk, total - at);
            const std::uint64_t offset = std::uint64_t(at) * sizeof(float);
            if (Status s = shard.read(dataStart + offset, buffer.data(), std::size_t(n) * sizeof(float));
                !s) {
                weights.close();
                return s;
            }
            if (Status s = weights.write(offset, buffer.data(), std::size_t(n) * sizeof(float)); !s) {
                weights.close();
                return s;
            }
        }
        return {};
    }

    Result<std::vector<std::int64_t>> partitionSizes(int partitions) const {
        if (partitions < 1 || partitions > 4096)
            return makeError("partitions must be within 1..4096, got " + str(partitions),
                             ErrorKind::InvalidInput);
        if (!sizes || sizes->first != partitions)
            sizes.emplace(partitions, spartaPartitionSizes(numels(), config.seed, partitions));
        return sizes->second;
    }

    // Every slice of the partitions asked for with where it goes in their values, visited in the
    // weights' order a chunk at a time: visit(slice, out offset, chunk values, chunk's first index).
    template <typename Visit>
    Status eachSlice(int partition, int partitions, bool writeBack, Visit&& visit) {
        Result<std::vector<std::int64_t>> sized = partitionSizes(partitions);
        if (!sized)
            return sized.error();
        if (partition < -1 || partition >= partitions)
            return makeError("no partition " + str(partition) + " of " + str(partitions),
                             ErrorKind::InvalidInput);
        struct Placed {
            SpartaSlice slice;
            std::int64_t out;
        };
        std::vector<Placed> placed;
        std::int64_t out = 0;
        for (int p = partition < 0 ? 0 : partition; p < (partition < 0 ? partitions : partition + 1); ++p)
            for (const SpartaSlice& s : spartaPartition(numels(), config.seed, partitions, p)) {
                placed.push_back({s, out});
                out += s.length;
            }
        std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
            return a.slice.parameter != b.slice.parameter ? a.slice.parameter < b.slice.parameter
                                                          : a.slice.begin < b.slice.begin;
        });
        std::vector<float> buffer;
        std::size_t loadedParameter = SIZE_MAX;
        std::int64_t loadedBegin = 0, loadedCount = 0;
        const auto flush = [&]() -> Status {
            if (!writeBack || loadedParameter == SIZE_MAX)
                return {};
            return writeWeights(parameters[loadedParameter], loadedBegin, loadedCount, buffer.data());
        };
        for (const Placed& p : placed) {
            const Parameter& param = parameters[p.slice.parameter];
            const std::int64_t begin = p.slice.begin / chunk * chunk;
            if (p.slice.parameter != loadedParameter || begin != loadedBegin) {
                if (Status s = flush(); !s)
                    return s;
                loadedParameter = p.slice.parameter;
                loadedBegin = begin;
                loadedCount = std::min(chunk, param.numel - begin);
                buffer.resize(std::size_t(loadedCount));
                if (Status s = readWeights(param, begin, loadedCount, buffer.data()); !s)
                    return s;
            }
            visit(p.slice, p.out, buffer.data() + (p.slice.begin - begin));
        }
        return flush();
    }

    // AdamW's moments of values [begin, begin + count) of p, as fp32 tensors, and back.
    Status makeMoments() {
        if (first.isOpen())
            return {};
        const bool coded = optimizer.momentBits == 8;
        const std::uint64_t bytes = coded ? std::uint64_t(codes) + std::uint64_t(blocks) * sizeof(float)
                                          : std::uint64_t(total) * sizeof(float);
        if (Status s = first.create(scratch("first"), bytes); !s)
            return s;
        return second.create(scratch("second"), bytes);
    }
    Result<torch::Tensor> readMoment(const ScratchFile& file, bool firstMoment, const Parameter& p,
                                     std::int64_t begin, std::int64_t count) const {
        if (optimizer.momentBits != 8) {
            torch::Tensor t = floats(count);
            if (Status s = file.read(std::uint64_t(p.offset + begin) * sizeof(float), t.data_ptr<float>(),
                                     std::size_t(count) * sizeof(float));
                !s)
                return s.error();
            return t;
        }
        const std::int64_t n = blocksOf(count);
        torch::Tensor c = torch::empty({n, kMomentBlock}, firstMoment ? torch::kInt8 : torch::kUInt8);
        torch::Tensor scales = torch::empty({n, 1}, torch::kFloat);
        if (Status s =
                file.read(std::uint64_t(p.codeOffset + begin), c.data_ptr(), std::size_t(n * kMomentBlock));
            !s)
            return s.error();
        if (Status s =
                file.read(std::uint64_t(codes) + std::uint64_t(p.blockOffset + begin / kMomentBlock) * 4,
                          scales.data_ptr<float>(), std::size_t(n) * sizeof(float));
            !s)
            return s.error();
        const torch::Tensor like = floats(count);
        return firstMoment ? decodeFirst(c, scales, like) : decodeSecond(c, scales, like);
    }
    Status writeMoment(ScratchFile& file, bool firstMoment, const Parameter& p, std::int64_t begin,
                       const torch::Tensor& values) {
        if (optimizer.momentBits != 8)
            return file.write(std::uint64_t(p.offset + begin) * sizeof(float), values.data_ptr<float>(),
                              std::size_t(values.numel()) * sizeof(float));
        torch::Tensor c, scales;
        if (firstMoment)
            encodeFirst(values, c, scales);
        else
            encodeSecond(values, c, scales);
        c = c.contiguous();
        scales = scales.contiguous();
        if (Status s = file.write(std::uint64_t(p.codeOffset + begin), c.data_ptr(), std::size_t(c.numel()));
            !s)
            return s;
        return file.write(std::uint64_t(codes) + std::uint64_t(p.blockOffset + begin / kMomentBlock) * 4,
                          scales.data_ptr<float>(), std::size_t(scales.numel()) * sizeof(float));
    }
};

StageCheckpointFile::StageCheckpointFile(std::unique_ptr<State> state)
    : m_state(std::move(state)) {}

StageCheckpointFile::~StageCheckpointFile() = default;

Result<std::unique_ptr<StageCheckpointFile>>
StageCheckpointFile::open(const ModelConfig& config, int stage, const std::filesystem::path& shard,
                          const ShardManifest& manifest, const std::filesystem::path& workDir,
                          std::int64_t chunkValues, const std::function<Status(std::uint64_t)>& afterChunk) {
    const std::string where = shard.filename().string() + ": ";
    if (chunkValues < kMomentBlock || chunkValues % kMomentBlock != 0)
        return makeError("the checkpoint's chunk must be a multiple of 256 values");
    const std::string hash = config.hash();
    if (manifest.modelConfigHash != hash || manifest.stage != stage)
        return makeError(where + "the manifest is for another model or stage");
    if (Status verified = manifest.verifyFile(shard, afterChunk); !verified)
        return verified.error();
    Result<SafetensorsFile> file = SafetensorsFile::open(shard);
    if (!file)
        return file.error();
    const auto meta = [&](const std::string& key) {
        for (const auto& [k, v] : file->metadata())
            if (k == key)
                return v;
        return std::string();
    };
    if (meta("tessera.model_config_hash") != hash || meta("tessera.stage") != str(stage))
        return makeError(where + "the shard belongs to another model or stage");

    auto state = std::make_unique<State>();
    state->config = config;
    state->stage = stage;
    state->chunk = chunkValues;
    state->workDir = workDir;
    state->optimizer.momentBits = config.momentBits;
    const std::vector<ParameterSpec> specs = stageParameters(config, stage);
    if (file->tensors().size() != specs.size())
        return makeError(where + "holds " + str(std::int64_t(file->tensors().size())) + " tensors, stage " +
                         str(stage) + " has " + str(std::int64_t(specs.size())));
    for (const ParameterSpec& spec : specs) {
        const TensorInfo* t = file->find(spec.name);
        if (!t)
            return makeError(where + "tensor '" + spec.name + "' is missing");
        if (t->dtype != "F32" || t->shape != spec.shape || t->begin % sizeof(float) != 0)
            return makeError(where + "tensor '" + spec.name + "' is not the stage's (dtype, shape)");
        Parameter p;
        p.name = spec.name;
        p.shape = spec.shape;
        p.numel = std::int64_t(t->byteSize() / sizeof(float));
        p.offset = std::int64_t(t->begin / sizeof(float));
        p.codeOffset = state->codes;
        p.blockOffset = state->blocks;
        state->codes += blocksOf(p.numel) * kMomentBlock;
        state->blocks += blocksOf(p.numel);
        state->total = std::max(state->total, p.offset + p.numel);
        state->parameters.push_back(std::move(p));
    }
    state->dataStart = 8 + file->headerLength();
    if (Status opened = state->shard.openRead(shard); !opened)
        return opened.error();
    std::error_code ec;
    std::filesystem::create_directories(workDir, ec);
    if (ec)
        return makeError("cannot create " + workDir.string() + ": " + ec.message());
    return std::unique_ptr<StageCheckpointFile>(new StageCheckpointFile(std::move(state)));
}

std::int64_t StageCheckpointFile::parameterCount() const {
    std::int64_t n = 0;
    for (const Parameter& p : m_state->parameters)
        n += p.numel;
    return n;
}

std::vector<std::vector<std::int64_t>> StageCheckpointFile::parameterShapes() const {
    std::vector<std::vector<std::int64_t>> shapes;
    for (const Parameter& p : m_state->parameters)
        shapes.push_back(p.shape);
    return shapes;
}

std::int64_t StageCheckpointFile::steps() const {
    return m_state->steps;
}

Result<std::int64_t> StageCheckpointFile::partitionSize(int partition, int partitions) const {
    Result<std::vector<std::int64_t>> sizes = m_state->partitionSizes(partitions);
    if (!sizes)
        return sizes.error();
    if (partition < -1 || partition >= partitions)
        return makeError("no partition " + str(partition) + " of " + str(partitions),
                         ErrorKind::InvalidInput);
    if (partition >= 0)
        return (*sizes)[std::size_t(partition)];
    std::int64_t n = 0;
    for (std::int64_t s : *sizes)
        n += s;
    return n;
}

Result<std::vector<float>> StageCheckpointFile::gatherPartition(int partition, int partitions) const {
    Result<std::int64_t> size = partitionSize(partition, partitions);
    if (!size)
        return size.error();
    std::vector<float> out(static_cast<std::size_t>(*size));
    Status s = const_cast<State&>(*m_state).eachSlice(
        partition, partitions, false, [&](const SpartaSlice& slice, std::int64_t at, float* values) {
            std::copy_n(values, slice.length, out.data() + at);
        });
    if (!s)
        return s.error();
    return out;
}

Result<std::vector<float>> StageCheckpointFile::readRange(std::int64_t offset, std::int64_t count) const {
    const State& st = *m_state;
    if (offset < 0 || count < 0 || offset > st.total - count)
        return makeError("weights " + str(offset) + "+" + str(count) + " are not within the stage's " +
                             str(st.total),
                         ErrorKind::InvalidInput);
    std::vector<float> out(static_cast<std::size_t>(count));
    std::int64_t start = 0; // of the current parameter, in parameter order
    for (const Parameter& p : st.parameters) {
        const std::int64_t from = std::max(offset, start), to = std::min(offset + count, start + p.numel);
        if (from < to)
            if (Status read = st.readWeights(p, from - start, to - from, out.data() + (from - offset)); !read)
                return read.error();
        start += p.numel;
    }
    return out;
}

bool StageCheckpointFile::stateSync() const {
    return m_state->optimizer.momentBits == 32;
}

Result<std::vector<float>> StageCheckpointFile::readStateRange(std::int64_t offset, std::int64_t count) const {
    const State& st = *m_state;
    if (st.optimizer.momentBits != 32)
        return makeError("the checkpoint's moments are coded in 8 bits: a sync carries the weights alone",
                         ErrorKind::InvalidInput);
    if (offset < 0 || count < 0 || offset > 3 * st.total - count)
        return makeError("values " + str(offset) + "+" + str(count) + " are not within the stage's state of " +
                             str(3 * st.total),
                         ErrorKind::InvalidInput);
    std::vector<float> out(static_cast<std::size_t>(count), 0.0f);
    for (int r = 0; r < kStateRegions; ++r) {
        const std::int64_t from = std::max(offset, r * st.total), to = std::min(offset + count, (r + 1) * st.total);
        if (from >= to)
            continue;
        if (StateRegion(r) == StateRegion::Weights) {
            Result<std::vector<float>> w = readRange(from - r * st.total, to - from);
            if (!w)
                return w.error();
            std::copy(w->begin(), w->end(), out.begin() + (from - offset));
            continue;
        }
        const ScratchFile& file = StateRegion(r) == StateRegion::FirstMoment ? st.first : st.second;
        if (!file.isOpen())
            continue; // no step yet: the moments are zeros
        std::int64_t start = r * st.total; // of the current parameter, in state order
        for (const Parameter& p : st.parameters) {
            const std::int64_t a = std::max(from, start), b = std::min(to, start + p.numel);
            if (a < b)
                if (Status read = file.read(std::uint64_t(p.offset + (a - start)) * sizeof(float),
                                            out.data() + (a - offset), std::size_t(b - a) * sizeof(float));
                    !read)
                    return read.error();
            start += p.numel;
        }
    }
    return out;
}

Status StageCheckpointFile::setPartition(int partition, int partitions, std::span<const float> values) {
    Result<std::int64_t> size = partitionSize(partition, partitions);
    if (!size)
        return size.error();
    if (std::int64_t(values.size()) != *size)
        return makeError("partition " + str(partition) + " holds " + str(*size) + " values, not " +
                             str(std::int64_t(values.size())),
                         ErrorKind::InvalidInput);
    return m_state->eachSlice(partition, partitions, true,
                              [&](const SpartaSlice& slice, std::int64_t at, float* weights) {
                                  std::copy_n(values.data() + at, slice.length, weights);
                              });
}

Status StageCheckpointFile::applyGradients(int rank, std::span<const float> result, double learningRate,
                                           double clipScale, WeightFingerprint* fingerprint) {
    State& st = *m_state;
    if (rank < 0 || rank > 1024)
        return makeError("gradient exchange: rank must be within 0..1024, got " + str(rank),
                         ErrorKind::InvalidInput);
    if (!(clipScale > 0 && clipScale <= 1) || !(learningRate >= 0 && learningRate < 1))
        return makeError(
            "gradient exchange: the clip scale must be in (0, 1] and the learning rate in [0, 1)",
            ErrorKind::InvalidInput);
    const GradientLayout layout(parameterShapes(), rank);
    if (std::int64_t(result.size()) != layout.resultSize())
        return makeError("a gradient result of " + str(std::int64_t(result.size())) + " values, " +
                             str(layout.resultSize()) + " expected",
                         ErrorKind::InvalidInput);
    for (const float v : result)
        if (!std::isfinite(v))
            return makeError("the gradient result holds a value that is not finite", ErrorKind::InvalidInput);
    if (Status made = st.makeMoments(); !made)
        return made;
    const OptimizerOptions& o = st.optimizer;
    const AdamwStep step{learningRate,
                         o.beta1,
                         o.beta2,
                         o.weightDecay,
                         o.epsilon,
                         1.0 - std::pow(o.beta1, double(st.steps + 1)),
                         1.0 - std::pow(o.beta2, double(st.steps + 1)),
                         true};
    try {
        torch::NoGradGuard noGrad;
        const auto fromResult = [&](std::int64_t offset, std::int64_t rows, std::int64_t cols) {
            return torch::from_blob(const_cast<float*>(result.data() + offset), {rows, cols}, torch::kFloat)
                .clone();
        };
        for (std::size_t i = 0; i < st.parameters.size(); ++i) {
            const Parameter& p = st.parameters[i];
            const GradientLayout::Entry& e = layout.entries()[i];
            torch::Tensor lowRank; // the whole update of a low-rank entry (P̂·Ȳᵀ), as the replicas make it
            if (e.rank > 0)
                lowRank = fromResult(e.resultOffset, e.m, e.rank)
                              .mm(fromResult(e.resultOffset + e.m * e.rank, e.n, e.rank).t())
                              .reshape({-1});
            for (std::int64_t begin = 0; begin < p.numel; begin += st.chunk) {
                const std::int64_t count = std::min(st.chunk, p.numel - begin);
                torch::Tensor g = e.rank > 0 ? lowRank.narrow(0, begin, count).clone()
                                             : fromResult(e.resultOffset + begin, count, 1).reshape({-1});
                if (clipScale != 1.0)
                    g.mul_(clipScale);
                torch::Tensor w = floats(count);
                if (Status s = st.readWeights(p, begin, count, w.data_ptr<float>()); !s)
                    return s;
                Result<torch::Tensor> m = st.readMoment(st.first, true, p, begin, count);
                Result<torch::Tensor> v = m ? st.readMoment(st.second, false, p, begin, count) : m;
                if (!v)
                    return v.error();
                adamwUpdate(w, g, *m, *v, step);
                if (Status s = st.writeWeights(p, begin, count, w.data_ptr<float>()); !s)
                    return s;
                if (fingerprint) // in parameter order, as the replicas take theirs
                    fingerprint->add(std::span<const float>(w.data_ptr<float>(), std::size_t(count)));
                if (Status s = st.writeMoment(st.first, true, p, begin, *m); !s)
                    return s;
                if (Status s = st.writeMoment(st.second, false, p, begin, *v); !s)
                    return s;
            }
        }
    } catch (const std::exception& e) {
        return makeError(std::string("applying the averaged gradients to the checkpoint: ") + e.what());
    }
    ++st.steps;
    return {};
}

Result<ShardManifest> StageCheckpointFile::save(const std::filesystem::path& file, std::int64_t version,
                                                std::int64_t step) const {
    const State& st = *m_state;
    SafetensorsWriter layout;
    for (const Parameter& p : st.parameters)
        if (Status declared = layout.declare(p.name, Dtype::F32, p.shape); !declared)
            return declared.error();
    if (Status set = setStageShardMetadata(layout, st.config, st.stage, step); !set)
        return set.error();
    Result<std::string> head = layout.fileHead();
    if (!head)
        return head.error();
    Result<AtomicFile> out = AtomicFile::create(file);
    if (!out)
        return out.error();
    ShardHasher hasher;
    const auto append = [&](std::span<const std::byte> bytes) {
        hasher.update(bytes);
        return out->append(bytes);
    };
    if (Status s = append(std::as_bytes(std::span(head->data(), head->size()))); !s)
        return s.error();
    std::vector<float> buffer;
    for (const Parameter& p : st.parameters)
        for (std::int64_t begin = 0; begin < p.numel; begin += st.chunk) {
            const std::int64_t count = std::min(st.chunk, p.numel - begin);
            buffer.resize(std::size_t(count));
            if (Status s = st.readWeights(p, begin, count, buffer.data()); !s)
                return s.error();
            if (Status s = append(std::as_bytes(std::span(buffer))); !s)
                return s.error();
        }
    if (Status s = out->commit(); !s)
        return s.error();
    return hasher.finish(file.filename().string(), st.config.hash(), st.stage, version, step);
}

} // namespace tessera::gpu
