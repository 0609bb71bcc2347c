// SPDX-License-Identifier: Apache-2.0
// bench_reclaim [MODEL=8b] [STAGE=3] [REPLICAS=2] [DIR]: a restarted coordinator taking one stage's
// weights back from its replicas (training/Reclaim), at the stage's real size, and what it holds in
// memory meanwhile.
//
// The stage's seeded shard is written to DIR and opened as the coordinator opens its checkpoints
// (gpu::StageCheckpointFile). REPLICAS nodes are expected and ready; each is asked for its weights
// (sync_request) and answers as a node does: every SPARTA partition in order, in chunks of 4 Mi values
// (16 MiB messages), each value the checkpoint's moved by less than the steps since it allow (the
// replicas differ in the last bits, so the two-replica rule takes their mean). Reclaim writes the
// answers to disk as they come and, when the last is in, judges them a piece at a time and writes the
// choice into the checkpoint a partition at a time. Printed: the stage's size, each phase's time and
// this process's peak resident memory above what it held before (the kernel's VmHWM, reset per phase
// with clear_refs), beside what holding every answer whole would take (the code before this).
#include "SelfMemory.h"
#include "coordinator/training/Reclaim.h"
#include "protocol/PartitionChunks.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"
#include "shard/InitialShards.h"
#include "train/StageCheckpointFile.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>

#include <cstdio>
#include <string>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

constexpr int kPartitions = 20; // the run's --averaging-partitions default
constexpr double kGiB = 1024.0 * 1024 * 1024;

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const std::string model = argc > 1 ? argv[1] : "8b";
    const int stage = argc > 2 ? std::atoi(argv[2]) : 3;
    const int replicas = argc > 3 ? std::atoi(argv[3]) : 2;
    const QString dir =
        argc > 4 ? QString::fromLocal8Bit(argv[4]) : QDir::temp().filePath(QStringLiteral("bench-reclaim"));
    Result<gpu::ModelConfig> config = gpu::ModelConfig::preset(model);
    if (!config || stage < 0 || stage >= config->stages || replicas < 1) {
        std::fprintf(stderr, "usage: bench_reclaim [MODEL=8b] [STAGE=3] [REPLICAS=2] [DIR]%s%s\n",
                     config ? "" : ": ", config ? "" : config.message().c_str());
        return 2;
    }
    QDir(dir).removeRecursively();
    const std::filesystem::path root = dir.toStdString();
    std::printf("bench_reclaim %s %d %d: one stage's reclaim after a restart, %d replicas answering\n",
                model.c_str(), stage, replicas, replicas);
    QElapsedTimer t;
    t.start();
    Result<gpu::ShardManifest> manifest = gpu::writeInitialShard(*config, stage, root / "shards", 1);
    if (!manifest) {
        std::fprintf(stderr, "bench_reclaim: %s\n", manifest.message().c_str());
        return 1;
    }
    Result<std::unique_ptr<gpu::StageCheckpointFile>> opened = gpu::StageCheckpointFile::open(
        *config, stage, root / "shards" / gpu::stageShardFileName(stage, 1), *manifest, root / "work");
    if (!opened) {
        std::fprintf(stderr, "bench_reclaim: %s\n", opened.message().c_str());
        return 1;
    }
    gpu::StageCheckpointFile& checkpoint = **opened;
    const qint64 values = checkpoint.parameterCount();
    std::printf("stage %d: %lld parameters (%.2f GiB of fp32), shard written and opened in %.0f s\n", stage,
                qlonglong(values), double(values) * 4 / kGiB, double(t.elapsed()) / 1000);

    std::vector<qint64> partitions;
    for (int p = 0; p < kPartitions; ++p)
        partitions.push_back(*checkpoint.partitionSize(p, kPartitions));
    ReclaimSettings settings;
    settings.spillDir = dir + QStringLiteral("/reclaim");
    QHash<QString, qint64> asked;
    Reclaim reclaim(
        settings,
        ReclaimCheckpoint{
            [](int) { return qint64(30); }, [&](int) { return partitions; },
            [&](int, int p) { return checkpoint.gatherPartition(p, kPartitions); },
            [&](int, int p, std::span<const float> v) { return checkpoint.setPartition(p, kPartitions, v); }},
        [](const QString&) { return 0; },
        [&](const QString& node, const protocol::SessionMessage& m) {
            if (const auto* request = std::get_if<protocol::SyncRequest>(&m))
                asked.insert(node, request->round);
            return true;
        },
        [&] { return qint64(t.elapsed()); });
    std::optional<ReclaimOutcome> outcome;
    QObject::connect(&reclaim, &Reclaim::settled, [&](const ReclaimOutcome& o) { outcome = o; });
    QStringList nodes;
    for (int r = 0; r < replicas; ++r) {
        nodes.append(QStringLiteral("replica-%1").arg(r));
        reclaim.expect(nodes.back(), stage);
    }
    for (const QString& node : nodes)
        reclaim.onReady(node, stage);

    const double before = bench::selfStatusGiB("VmRSS:");
    std::printf("resident before the answers: %.2f GiB\n", before);
    // Every replica but the last answers: the reclaim holds their answers (on disk) while it waits.
    double receivePeak = 0, receiveSeconds = 0, choosePeak = 0, chooseSeconds = 0;
    for (int r = 0; r < replicas; ++r) {
        bench::resetSelfPeak();
        QElapsedTimer phase;
        phase.start();
        const qint64 round = asked.value(nodes[r]);
        qint64 at = 0;
        for (int p = 0; p < kPartitions; ++p) {
            Result<std::vector<float>> part = checkpoint.gatherPartition(p, kPartitions);
            if (!part) {
                std::fprintf(stderr, "bench_reclaim: %s\n", part.message().c_str());
                return 1;
            }
            for (std::size_t i = r; i < part->size(); i += 4099) // the replicas differ in a few last bits
                (*part)[i] = std::nextafter((*part)[i], 1.0f);
            for (qint64 offset = 0; offset < qint64(part->size());
                 offset += protocol::kPartitionChunkValues) {
                const qint64 n = std::min(protocol::kPartitionChunkValues, qint64(part->size()) - offset);
                protocol::AverageShare share{round, -1, 0, false, {}, at + offset, values};
                const QByteArrayView payload =
                    protocol::partitionPayload(std::span<const float>(part->data() + offset, std::size_t(n)));
                Result<protocol::TaskMessage> message = protocol::decodeTaskMessage(
                    protocol::TaskMessageBuilder(protocol::toJson(protocol::SessionMessage{share}),
                                                 payload.size())
                        .add(protocol::TaskFrameType::Partition, payload)
                        .take());
                if (!message || !reclaim.onShare(nodes[r], share, *message)) {
                    std::fprintf(stderr, "bench_reclaim: a chunk was not taken\n");
                    return 1;
                }
            }
            at += qint64(part->size());
        }
        // The last answer's last chunk closes the stage: its choice is the second phase.
        const double seconds = double(phase.elapsed()) / 1000;
        const double peak = bench::selfStatusGiB("VmHWM:") - before;
        if (r + 1 < replicas || !outcome) {
            receivePeak = std::max(receivePeak, peak);
            receiveSeconds += seconds;
        } else {
            choosePeak = peak;
            chooseSeconds = seconds;
        }
    }
    if (!outcome) {
        std::fprintf(stderr, "bench_reclaim: the stage did not close\n");
        return 1;
    }
    std::printf("outcome: %s\n", qPrintable(outcome->summary));
    const double answer = double(values) * 4 / kGiB;
    std::printf("\n%-58s %9s %12s\n", "phase", "seconds", "peak GiB");
    std::printf("%-58s %9.1f %12.2f\n", "answers received, written to disk (per answer before the last)",
                replicas > 1 ? receiveSeconds / (replicas - 1) : 0.0, receivePeak);
    std::printf("%-58s %9.1f %12.2f\n", "last answer received, the choice judged and written", chooseSeconds,
                choosePeak);
    std::printf("%-58s %9s %12.2f\n", "held whole (before): every answer and the checkpoint's weights", "-",
                answer * (replicas + 1));
    std::printf("peak GiB: this process's resident set above the %.2f GiB it held before the answers "
                "(the benchmark's own partition buffer, %.2f GiB, included)\n",
                before, double(partitions.front()) * 4 / kGiB);
    std::printf("total time %.0f s\n", double(t.elapsed()) / 1000);
    QDir(dir).removeRecursively();
    return outcome->took ? 0 : 1;
}
