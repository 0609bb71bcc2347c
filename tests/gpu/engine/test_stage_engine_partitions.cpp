// SPDX-License-Identifier: Apache-2.0
// StageEngine's SPARTA partitions: they cover every weight once, a set or a delta moves exactly the
// partition it is given, bad arguments are errors that change nothing, and kept graphs still run
// backward after a partition changed.
#include "StageEngineTestSupport.h"

using namespace tessera::gpu;
using namespace tessera::test;

// SPARTA through the facade: the partitions of a stage cover each of its weights exactly once,
// and partition -1 is all of them in order.
TESSERA_TEST(spartaPartitionsCoverEveryWeightOnce) {
    TempDir dir;
    const auto config = twoStages();
    auto e = engine(config, 0);
    constexpr int kPartitions = 20;
    const std::int64_t n = e->parameterCount();
    const auto all = e->gatherPartition(-1, kPartitions);
    CHECK_MSG(all.ok(), all.message());
    CHECK(static_cast<std::int64_t>(all->size()) == n && e->partitionSize(-1, kPartitions).value() == n);
    std::vector<float> concatenated;
    std::int64_t sum = 0;
    for (int p = 0; p < kPartitions; ++p) {
        const auto part = e->gatherPartition(p, kPartitions).value();
        CHECK(static_cast<std::int64_t>(part.size()) == e->partitionSize(p, kPartitions).value());
        concatenated.insert(concatenated.end(), part.begin(), part.end());
        sum += static_cast<std::int64_t>(part.size());
    }
    CHECK(sum == n && concatenated == *all);
    // The simulator's partitioning (Sparta over a StageModel's masters with the run's seed).
    StageModel reference(config, 0);
    const Sparta simulated(reference.namedParameters(), config.seed, kPartitions);
    for (const int p : {0, 9, kPartitions - 1}) {
        const torch::Tensor expected = simulated.gather(p);
        const auto got = e->gatherPartition(p, kPartitions).value();
        CHECK_MSG(torch::equal(torch::tensor(got), expected), "partition " << p);
    }

    // Number every weight through partition -1: the shard then holds each number exactly once.
    std::vector<float> ids(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = static_cast<float>(i);
    auto set = e->setPartition(-1, kPartitions, ids);
    CHECK_MSG(set.ok(), set.message());
    CHECK(e->gatherPartition(-1, kPartitions).value() == ids);
    std::vector<torch::Tensor> flat;
    for (const auto& [name, t] : weightsOf(*e, dir.path))
        flat.push_back(t.reshape({-1}));
    const torch::Tensor sorted = std::get<0>(torch::cat(flat).sort());
    CHECK(torch::equal(sorted, torch::arange(n, torch::kFloat)));
}

// What the coordinator's checkpoint or a ghost does: copy a replica's partition. Only that
// partition then agrees; partition -1 syncs every weight.
TESSERA_TEST(setPartitionCopiesOnlyThatPartition) {
    TempDir dir;
    const auto config = twoStages();
    auto a0 = engine(config, 0), a1 = engine(config, 1);
    trainMicrobatch(*a0, *a1, 1, makeBatch(12));
    CHECK(a0->step(1).ok());
    auto b0 = engine(config, 0); // the initial weights: every partition differs from a0's now
    constexpr int kPartitions = 20, kP = 7;
    const auto values = a0->gatherPartition(kP, kPartitions).value();
    CHECK(b0->gatherPartition(kP, kPartitions).value() != values);
    auto set = b0->setPartition(kP, kPartitions, values);
    CHECK_MSG(set.ok(), set.message());
    for (int p = 0; p < kPartitions; ++p) {
        const bool same =
            a0->gatherPartition(p, kPartitions).value() == b0->gatherPartition(p, kPartitions).value();
        CHECK_MSG(same == (p == kP), "partition " << p << (same ? " agrees" : " differs"));
    }
    CHECK(shardHash(*a0, dir.path) != shardHash(*b0, dir.path));
    CHECK(b0->setPartition(-1, kPartitions, a0->gatherPartition(-1, kPartitions).value()).ok());
    CHECK(shardHash(*a0, dir.path) == shardHash(*b0, dir.path));
}

// w += average − snapshot on partition p only, computed in fp32 as the simulator does.
TESSERA_TEST(partitionDeltaMovesOnlyItsPartition) {
    const auto config = twoStages();
    for (const Dtype dtype : {Dtype::F32, Dtype::BF16}) {
        auto options = optionsFor(config, 1);
        options.computeDtype = dtype;
        auto e = std::move(StageEngine::create(options)).value();
        constexpr int kPartitions = 16, kP = 5;
        const Batch b = makeBatch(13);
        const Bytes hidden = engine(config, 0)->forward(1, b.idsFrame)->output;
        const double lossBefore = e->forward(1, hidden, b.targetsFrame)->loss;

        std::vector<std::vector<float>> before;
        for (int p = 0; p < kPartitions; ++p)
            before.push_back(e->gatherPartition(p, kPartitions).value());
        const auto& snapshot = before[kP];
        std::vector<float> average(snapshot.size());
        for (std::size_t i = 0; i < average.size(); ++i)
            average[i] = snapshot[i] * 0.5f + 0.25f;
        // The replica kept training during the exchange: its weights are no longer the snapshot.
        std::vector<float> moved = snapshot;
        for (float& v : moved)
            v += 0.125f;
        CHECK(e->setPartition(kP, kPartitions, moved).ok());
        auto applied = e->applyPartitionDelta(kP, kPartitions, average, snapshot);
        CHECK_MSG(applied.ok(), applied.message());
        for (int p = 0; p < kPartitions; ++p) {
            const auto after = e->gatherPartition(p, kPartitions).value();
            if (p != kP) {
                CHECK_MSG(after == before[p], "partition " << p << " moved");
                continue;
            }
            CHECK(after.size() == snapshot.size());
            for (std::size_t i = 0; i < after.size(); ++i)
                CHECK_MSG(after[i] == moved[i] + (average[i] - snapshot[i]), "element " << i);
        }
        // The compute weights follow (in bf16 the re-cast copy): the loss changes.
        const double lossAfter = e->forward(2, hidden, b.targetsFrame)->loss;
        CHECK_MSG(lossAfter != lossBefore, dtypeName(dtype) << " loss did not change: " << lossAfter);
    }
}

TESSERA_TEST(badPartitionArgumentsAreErrorsAndChangeNothing) {
    TempDir dir;
    const auto config = twoStages();
    auto e = engine(config, 0);
    const std::string before = shardHash(*e, dir.path);
    const auto refused = [](const auto& result, const std::string& part) {
        CHECK_MSG(!result.ok(), "accepted; expected an error mentioning '" << part << "'");
        CHECK_MSG(mentions(result.message(), part), result.message());
    };
    const std::vector<float> some(100, 1.0f);
    for (const auto& [partition, partitions] :
         {std::pair{20, 20}, std::pair{-2, 20}, std::pair{0, 0}, std::pair{0, 1001}, std::pair{-1, -1}}) {
        const std::string part = partitions < 1 || partitions > 1000 ? "partition count" : "not in [0, 20)";
        refused(e->gatherPartition(partition, partitions), part);
        refused(e->partitionSize(partition, partitions), part);
        refused(e->setPartition(partition, partitions, some), part);
        refused(e->applyPartitionDelta(partition, partitions, some, some), part);
    }
    const std::int64_t size = e->partitionSize(3, 20).value();
    std::vector<float> right(static_cast<std::size_t>(size), 0.5f), longer(right.size() + 1, 0.5f);
    refused(e->setPartition(3, 20, longer), "got " + std::to_string(size + 1) + " values for the weights");
    refused(e->setPartition(3, 20, {}), "got 0 values");
    refused(e->applyPartitionDelta(3, 20, right, longer), "for the snapshot");
    refused(e->applyPartitionDelta(3, 20, longer, right), "for the average");
    refused(e->setPartition(-1, 20, right), "the partition has " + std::to_string(e->parameterCount()));
    std::vector<float> nan = right;
    nan[17] = std::nanf("");
    refused(e->setPartition(3, 20, nan), "non-finite value at index 17 in the weights");
    refused(e->applyPartitionDelta(3, 20, right, nan), "in the snapshot");
    CHECK(shardHash(*e, dir.path) == before);
}

// SPARTA rounds land between a microbatch's forward and its backward: kept graphs still work,
// also when other forwards ran after the new weights arrived. (fp32 compute; in bf16 the re-cast
// of StageModel's compute copies at the next forward still ends the graphs kept before it.)
TESSERA_TEST(keptGraphsBackwardAfterAPartitionDelta) {
    const auto config = twoStages();
    auto e0 = engine(config, 0), e1 = engine(config, 1);
    const Batch b = makeBatch(14);
    auto f0 = e0->forward(1, b.idsFrame);
    auto f1 = e1->forward(1, f0->output, b.targetsFrame);
    CHECK(f0.ok() && f1.ok() && e0->keptCount() == 1 && e1->keptCount() == 1);
    for (StageEngine* e : {e0.get(), e1.get()}) {
        const auto snapshot = e->gatherPartition(-1, 20).value();
        std::vector<float> average = snapshot;
        for (float& v : average)
            v *= 0.9f;
        auto applied = e->applyPartitionDelta(-1, 20, average, snapshot);
        CHECK_MSG(applied.ok(), applied.message());
    }
    CHECK(e0->keptCount() == 1 && e1->keptCount() == 1);
    CHECK(e1->forward(2, e0->forward(2, b.idsFrame)->output, b.targetsFrame).ok());
    auto b1 = e1->backward(1, {});
    CHECK_MSG(b1.ok(), b1.message());
    auto b0 = e0->backward(1, b1->gradInput);
    CHECK_MSG(b0.ok(), b0.message());
    CHECK(e0->accumulatedMicrobatches() == 1 && e1->accumulatedMicrobatches() == 1);
}
