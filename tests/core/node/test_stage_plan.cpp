// SPDX-License-Identifier: Apache-2.0
// planAssignedStage: before it downloads anything, a node plans the stage it was given on the memory it
// claimed (the arithmetic admission used) — a stage it cannot hold is refused in words naming the
// stage, what it needs and what the device has; one that fits is laid out as planned; claims or a model
// that make no sense are an error, not a guess.
#include "node/StagePlan.h"

#include <QJsonDocument>
#include <QTest>

using namespace tessera;
using namespace tessera::node;

namespace {

constexpr qint64 kGiB = qint64(1) << 30;

QJsonObject model(const char* preset, int momentBits = 32) {
    gpu::ModelConfig c = gpu::ModelConfig::preset(preset).value();
    c.momentBits = momentBits;
    return QJsonDocument::fromJson(QByteArray::fromStdString(c.toJson())).object();
}

StagePlanInput input(QJsonObject config, int stage, const char* device, qint64 memory, const char* dtype) {
    return {std::move(config), stage,
            QJsonObject{{QStringLiteral("device"), QString::fromLatin1(device)},
                        {QStringLiteral("name"), QStringLiteral("test device")},
                        {QStringLiteral("memory_bytes"), memory}},
            QJsonObject{{QStringLiteral("gflops"), 100.0},
                        {QStringLiteral("dtype"), QString::fromLatin1(dtype)}}};
}

} // namespace

class TestStagePlan final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aStageThatFitsIsLaidOutAsPlanned() {
        const Result<gpu::MemoryPlan> tiny =
            planAssignedStage(input(model("tiny"), 1, "cpu", 24 * kGiB, "fp32"));
        QVERIFY2(tiny, tiny ? "" : tiny.message().c_str());
        QVERIFY(tiny->fits && tiny->layout.keepActivations && tiny->maxKept == 64);
        // An 8b middle stage with 8-bit moments on a 24 GB GPU: a block at a time.
        const Result<gpu::MemoryPlan> big =
            planAssignedStage(input(model("8b", 8), 3, "cuda:0", 24'000'000'000, "bf16"));
        QVERIFY2(big, big ? "" : big.message().c_str());
        QVERIFY2(big->fits, big->reason.c_str());
        QVERIFY(big->layout.perBlock && !big->layout.keepActivations);
    }

    void aStageThatDoesNotFitIsRefusedInWords() {
        const Result<gpu::MemoryPlan> plan =
            planAssignedStage(input(model("8b"), 3, "cpu", 16 * kGiB, "fp32"));
        QVERIFY2(plan, plan ? "" : plan.message().c_str());
        QVERIFY(!plan->fits);
        const QString reason = QString::fromStdString(plan->reason);
        QVERIFY2(reason.startsWith(u"stage 3 of model '8b' needs "), qPrintable(reason));
        QVERIFY2(reason.contains(u"this computer has 16.0 GiB (14.4 GiB usable at 90%)"), qPrintable(reason));
        QVERIFY2(reason.contains(u"in fp32"), qPrintable(reason));
    }

    void nonsenseIsAnErrorNotAGuess() {
        QVERIFY(!planAssignedStage(input(model("tiny"), 9, "cpu", 24 * kGiB, "fp32"))); // no such stage
        QVERIFY(!planAssignedStage(input(model("tiny"), 0, "cpu", 0, "fp32")));         // no memory
        QVERIFY(!planAssignedStage(input(model("tiny"), 0, "cpu", 24 * kGiB, "int3"))); // no dtype
        QJsonObject broken = model("tiny");
        broken.insert(QStringLiteral("d_model"), 7);
        const Result<gpu::MemoryPlan> bad = planAssignedStage(input(broken, 0, "cpu", 24 * kGiB, "fp32"));
        QVERIFY(!bad && QString::fromStdString(bad.message()).contains(u"d_model"));
    }
};

QTEST_GUILESS_MAIN(TestStagePlan)
#include "test_stage_plan.moc"
