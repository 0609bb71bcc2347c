// SPDX-License-Identifier: Apache-2.0
// AssignmentPolicy on the real presets: a node goes to the stage least served for its size,
// among those its memory holds; too little memory is a permanent no, a full swarm a "later".
#include "coordinator/admission/AssignmentPolicy.h"

#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;

namespace {

constexpr qint64 kGiB = qint64(1) << 30;

gpu::ModelConfig preset(const char* name) {
    Result<gpu::ModelConfig> c = gpu::ModelConfig::preset(name);
    if (!c)
        qFatal("%s", c.message().c_str());
    return *c;
}

NodeCapacity gpu24() {
    return NodeCapacity{24 * kGiB, true, gpu::Dtype::BF16};
}

} // namespace

class TestAssignmentPolicy final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void leastServedPerCostWins();
    void tiesGoToLowestStage();
    void onlyStagesThatFitAreChosen();
    void tooLittleMemoryIsRefusedInWords();
    void fullStagesAreSkipped();
    void fullSwarmWaitlists();
    void the8bRunWith8BitMomentsFitsA24GbGpu();
    void doesNotFitWinsOverWaitlist();
    void aLoneReplicaGetsASecondFirst();
};

void TestAssignmentPolicy::leastServedPerCostWins() {
    const gpu::ModelConfig c = preset("small");
    QCOMPARE(c.stages, 4);
    AssignmentPolicy policy(c, {});
    // Per parameter, stage 2 is the least served although stage 0 has less throughput in all.
    std::vector<StageLoad> loads(4);
    const double ratio[] = {1.0, 1.5, 0.9, 1.2};
    for (int s = 0; s < 4; ++s)
        loads[std::size_t(s)] = StageLoad{2, ratio[s] * double(c.stageParameterCount(s)) / 1e6};
    loads[0].gflops = 0.91 * double(c.stageParameterCount(0)) / 1e6; // the fewest gflops, not per parameter
    QVERIFY(loads[0].gflops < loads[2].gflops);
    QVERIFY(loads[0].gflops / double(c.stageParameterCount(0)) >
            loads[2].gflops / double(c.stageParameterCount(2)));

    const Assignment a = policy.choose(loads, gpu24());
    QVERIFY(std::holds_alternative<StageChosen>(a));
    QCOMPARE(std::get<StageChosen>(a).stage, 2);
    // The requirement of the layout the node will use (graphs kept, on 24 GB), not the most frugal one.
    QCOMPARE(std::get<StageChosen>(a).requiredBytes, qint64(policy.plan(2, gpu24()).deviceBytes));
    QVERIFY(policy.plan(2, gpu24()).layout.keepActivations);
    QVERIFY(std::get<StageChosen>(a).requiredBytes > policy.stageRequirement(2, gpu::Dtype::BF16));

    // An empty stage beats any served one.
    loads[3] = StageLoad{};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 3);
}

void TestAssignmentPolicy::tiesGoToLowestStage() {
    const gpu::ModelConfig c = preset("small");
    AssignmentPolicy policy(c, {});
    QCOMPARE(std::get<StageChosen>(policy.choose({}, gpu24())).stage, 0);
    std::vector<StageLoad> loads(4);
    for (int s = 0; s < 4; ++s)
        loads[std::size_t(s)] = StageLoad{1, double(c.stageParameterCount(s)) * 1e-6};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 0);
}

void TestAssignmentPolicy::onlyStagesThatFitAreChosen() {
    AssignmentPolicy policy(preset("small"), {});
    // 800 MiB at 90%: stages 0 to 2 fit (recomputed), stage 3 — the head's logits over
    // 32k tokens — does not, so the empty stage 3 is passed over for a served one.
    const NodeCapacity small{qint64(800) << 20, true, gpu::Dtype::BF16};
    QVERIFY(policy.stageRequirement(0, gpu::Dtype::BF16) <= policy.usableBytes(small.memoryBytes));
    QVERIFY(policy.stageRequirement(3, gpu::Dtype::BF16) > policy.usableBytes(small.memoryBytes));
    QVERIFY(!policy.plan(0, small).layout.keepActivations);
    std::vector<StageLoad> loads{{5, 500}, {5, 500}, {5, 1}, {}};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, small)).stage, 2);
}

void TestAssignmentPolicy::tooLittleMemoryIsRefusedInWords() {
    const gpu::ModelConfig c = preset("8b");
    AssignmentPolicy policy(c, {});
    const Assignment a = policy.choose({}, NodeCapacity{12 * kGiB, true, gpu::Dtype::BF16});
    QVERIFY(std::holds_alternative<DoesNotFit>(a));
    const DoesNotFit& no = std::get<DoesNotFit>(a);
    qint64 smallest = std::numeric_limits<qint64>::max();
    for (int s = 0; s < c.stages; ++s)
        smallest = std::min(smallest, policy.stageRequirement(s, gpu::Dtype::BF16));
    QCOMPARE(no.smallestRequirementBytes, smallest);
    const QString reason = QString::fromStdString(no.reason);
    QVERIFY2(reason.startsWith(QStringLiteral("needs ") + QString::fromStdString(formatBytes(smallest))),
             qPrintable(reason));
    QVERIFY2(reason.contains(u"this GPU has 12.0 GiB"), qPrintable(reason));
    QVERIFY2(reason.contains(u"'8b'"), qPrintable(reason));
    QVERIFY2(reason.contains(u"(activations recomputed a block at a time)"), qPrintable(reason));

    const Assignment cpu = policy.choose({}, NodeCapacity{16 * kGiB, false, gpu::Dtype::F32});
    QVERIFY(QString::fromStdString(std::get<DoesNotFit>(cpu).reason).contains(u"this computer has 16.0 GiB"));
}

void TestAssignmentPolicy::fullStagesAreSkipped() {
    AssignmentSettings settings;
    settings.maxNodesPerStage = 2;
    AssignmentPolicy policy(preset("small"), settings);
    std::vector<StageLoad> loads{{2, 1}, {2, 1}, {1, 1e6}, {2, 1}};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 2); // the only one with room
    loads[2].nodes = 2;
    const Assignment a = policy.choose(loads, gpu24());
    QVERIFY(std::holds_alternative<SwarmFull>(a));
    QCOMPARE(std::get<SwarmFull>(a).retryAfterSeconds, qint64(300));
}

void TestAssignmentPolicy::fullSwarmWaitlists() {
    AssignmentSettings settings;
    settings.maxNodesTotal = 3;
    settings.waitlistRetryAfter = std::chrono::seconds(60);
    AssignmentPolicy policy(preset("small"), settings);
    std::vector<StageLoad> loads{{1, 1}, {1, 1}, {1, 1}, {}};
    const Assignment a = policy.choose(loads, gpu24());
    QVERIFY(std::holds_alternative<SwarmFull>(a));
    QCOMPARE(std::get<SwarmFull>(a).retryAfterSeconds, qint64(60));
    loads[2] = {};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 2);
}

void TestAssignmentPolicy::the8bRunWith8BitMomentsFitsA24GbGpu() {
    // Admission plans as the node does (gpu::planStageMemory): an 8b run with fp32 moments fits no
    // 24 GB GPU; with 8-bit moments every stage fits, recomputed a block at a time, and the
    // requirement chosen is that layout's.
    const NodeCapacity card{24'000'000'000, true, gpu::Dtype::BF16};
    QVERIFY(std::holds_alternative<DoesNotFit>(AssignmentPolicy(preset("8b"), {}).choose({}, card)));
    gpu::ModelConfig eight = preset("8b");
    eight.momentBits = 8;
    AssignmentPolicy policy(eight, {});
    const Assignment a = policy.choose({}, card);
    QVERIFY(std::holds_alternative<StageChosen>(a));
    const StageChosen chosen = std::get<StageChosen>(a);
    const gpu::MemoryPlan plan = policy.plan(chosen.stage, card);
    QVERIFY(plan.fits && plan.layout.perBlock);
    QCOMPARE(chosen.requiredBytes, qint64(plan.deviceBytes));
    // The least served stage is offered, the head's too; a 16 GB GPU fits none.
    std::vector<StageLoad> loads(std::size_t(eight.stages), StageLoad{1, 1e9});
    loads[6] = StageLoad{};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, card)).stage, 6);
    QVERIFY(std::holds_alternative<DoesNotFit>(
        policy.choose(loads, NodeCapacity{16'000'000'000, true, gpu::Dtype::BF16})));
}

void TestAssignmentPolicy::doesNotFitWinsOverWaitlist() {
    AssignmentSettings settings;
    settings.maxNodesTotal = 1;
    AssignmentPolicy policy(preset("8b"), settings);
    // Waiting would not help a node that fits no stage: it is told so at once.
    QVERIFY(std::holds_alternative<DoesNotFit>(
        policy.choose({{1, 1}}, NodeCapacity{8 * kGiB, true, gpu::Dtype::BF16})));
}

// Issue 41: a stage of one node gets the next node before throughput decides — at 8b a second replica
// is the only check of the first one's answers, and a lone node that answers fast (it skips the work)
// made its stage look served: in a real run every newcomer went to the other stages and the liar on
// stage 1 answered 8,452 microbatches unchecked.
void TestAssignmentPolicy::aLoneReplicaGetsASecondFirst() {
    const gpu::ModelConfig c = preset("small");
    std::vector<StageLoad> loads(4);
    for (int s = 0; s < 4; ++s)
        loads[std::size_t(s)] = StageLoad{2, double(c.stageParameterCount(s)) * 1e-6};
    loads[1] = StageLoad{1, 1000.0 * double(c.stageParameterCount(1)) * 1e-6}; // one node, 1000× served
    AssignmentPolicy policy(c, {});
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 1);
    // Among stages of one node, the least served for its size; with every stage at two, throughput alone.
    loads[3] = StageLoad{1, 0.5 * double(c.stageParameterCount(3)) * 1e-6};
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 3);
    loads[1].nodes = loads[3].nodes = 2;
    QCOMPARE(std::get<StageChosen>(policy.choose(loads, gpu24())).stage, 3);
    // Off: throughput alone, as before.
    AssignmentSettings off;
    off.minReplicas = 0;
    loads[3] = StageLoad{2, double(c.stageParameterCount(3)) * 1e-6};
    loads[1].nodes = 1;
    QCOMPARE(std::get<StageChosen>(AssignmentPolicy(c, off).choose(loads, gpu24())).stage, 0);
}

QTEST_GUILESS_MAIN(TestAssignmentPolicy)
#include "test_assignment_policy.moc"
