// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/CheckpointOpening.h"

#include "coordinator/training/StageCheckpoints.h"
#include "train/StageCheckpointFile.h"

#include <QDir>

namespace tessera::coordinator {

namespace {

// Versions named per stage and round: the newest verifies unless a disk or a hand damaged it, and
// publishing keeps three files a stage.
constexpr int kCandidates = 4;

} // namespace

CheckpointOpening::CheckpointOpening(gpu::ModelConfig config, QString shardDir)
    : m_config(std::move(config))
    , m_shardDir(std::move(shardDir))
    , m_stages(std::size_t(m_config.stages)) {}

CheckpointOpening::~CheckpointOpening() = default;
CheckpointOpening::CheckpointOpening(CheckpointOpening&&) noexcept = default;

Result<bool> CheckpointOpening::next(Database& db) {
    StageVersionStore store(db);
    bool readNeeded = false;
    for (std::size_t s = 0; s < m_stages.size(); ++s) {
        Stage& stage = m_stages[s];
        for (const auto& [version, why] : stage.refused) {
            qWarning("checkpoints: stage %d's checkpoint %s — refused; using the version before it", int(s),
                     why.c_str());
            if (Status refused = store.refuse(int(s), version, QString::fromStdString(why)); !refused)
                return makeError("refusing a damaged checkpoint: " + refused.message());
            stage.damaged += (stage.damaged.empty() ? "" : "; ") + why;
        }
        stage.refused.clear();
        if (stage.file || !stage.candidates.empty())
            continue;
        while (int(stage.candidates.size()) < kCandidates) {
            Result<std::optional<StageVersion>> older = store.latest(int(s), stage.below);
            if (!older)
                return older.error();
            if (!*older)
                break;
            stage.below = (*older)->version;
            stage.candidates.push_back(std::move(**older));
        }
        if (stage.candidates.empty())
            return makeError("stage " + std::to_string(s) + " has no usable published version" +
                             (stage.damaged.empty() ? std::string() : " (" + stage.damaged + ")"));
        readNeeded = true;
    }
    return readNeeded;
}

Status CheckpointOpening::read(const std::function<Status(std::uint64_t)>& afterChunk) {
    const std::filesystem::path workDir = QDir(m_shardDir).filePath(QStringLiteral("work")).toStdString();
    std::uint64_t done = 0; // bytes of the files finished in this read
    for (std::size_t s = 0; s < m_stages.size(); ++s) {
        Stage& stage = m_stages[s];
        while (!stage.file && !stage.candidates.empty()) {
            const StageVersion v = stage.candidates.front();
            const QString path = QDir(m_shardDir).filePath(v.file);
            bool stopped = false;
            std::uint64_t inFile = 0;
            const auto progress = [&](std::uint64_t bytes) -> Status {
                inFile = bytes;
                if (!afterChunk)
                    return {};
                Status said = afterChunk(done + bytes);
                stopped = !said;
                return said;
            };
            Result<gpu::ShardManifest> manifest = gpu::ShardManifest::fromJson(v.manifestJson.toStdString());
            Result<std::unique_ptr<gpu::StageCheckpointFile>> opened =
                manifest
                    ? gpu::StageCheckpointFile::open(m_config, int(s), path.toStdString(), *manifest, workDir,
                                                     gpu::StageCheckpointFile::kDefaultChunkValues, progress)
                    : Result<std::unique_ptr<gpu::StageCheckpointFile>>(manifest.error());
            if (stopped)
                return opened.error();
            done += inFile;
            stage.candidates.erase(stage.candidates.begin());
            if (opened) {
                stage.file = std::move(*opened);
                stage.loaded = v;
                stage.candidates.clear();
            } else {
                stage.refused.emplace_back(v.version, "version " + std::to_string(v.version) + " (" +
                                                          path.toStdString() + "): " + opened.message());
            }
        }
    }
    return {};
}

std::uint64_t CheckpointOpening::bytesToRead() const {
    std::uint64_t bytes = 0;
    for (const Stage& stage : m_stages)
        if (!stage.file && !stage.candidates.empty())
            bytes += std::uint64_t(stage.candidates.front().fileSize);
    return bytes;
}

Result<std::unique_ptr<StageCheckpoints>> CheckpointOpening::finish(Database& db, const Identity& key) {
    if (Result<bool> more = next(db); !more)
        return more.error();
    else if (*more)
        return makeError("the checkpoints are not all read yet");
    std::vector<StageCheckpoints::Loaded> loaded;
    for (Stage& stage : m_stages)
        loaded.push_back({std::move(stage.file), stage.loaded.version, stage.loaded.step});
    m_stages.clear();
    return StageCheckpoints::adopt(db, key, m_shardDir, std::move(loaded));
}

} // namespace tessera::coordinator
