// SPDX-License-Identifier: Apache-2.0
// NodeStatusText: the sentences a user reads about the node, from status JSON as Node::status()
// writes it.
#include "manager/NodeStatusText.h"

#include <QJsonArray>
#include <QTest>

using namespace Qt::StringLiterals;
using tessera::manager::NodeStatusText;

class TestNodeStatusText final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void benchmarkInWords();
    void creditsReadable();
    void stageCountsFromOne();
    void anEmptyStageIsAnotherOne();
    void aFallBackToTheCpuIsSaid();
    void waitlistSaysWhen();
    void downloadInMegabytes();
    void refusalAdvice();
};

void TestNodeStatusText::benchmarkInWords() {
    QJsonObject gpu{{u"device"_s, u"cuda:0"_s},
                    {u"benchmark"_s, QJsonObject{{u"device"_s, u"NVIDIA GeForce RTX 4070"_s},
                                                 {u"tflops"_s, 29.1},
                                                 {u"dtype"_s, u"bf16"_s}}}};
    QCOMPARE(NodeStatusText::benchmark(gpu), u"Your NVIDIA GeForce RTX 4070: about 29 TFLOP/s in bf16"_s);
    QCOMPARE(NodeStatusText::benchmarkProgress(gpu), 1.0);

    QJsonObject cpu{
        {u"device"_s, u"cpu"_s},
        {u"benchmark"_s,
         QJsonObject{{u"device"_s, u"AMD Ryzen 7 5800X"_s}, {u"tflops"_s, 0.1512}, {u"dtype"_s, u"fp32"_s}}}};
    QCOMPARE(NodeStatusText::benchmark(cpu), u"Your CPU (AMD Ryzen 7 5800X): about 0.15 TFLOP/s in fp32"_s);

    // As Node::status() writes it: the kind of device and its name apart.
    const QJsonObject node{{u"benchmark"_s, QJsonObject{{u"device"_s, u"cuda:0"_s},
                                                        {u"name"_s, u"NVIDIA GeForce RTX 4070"_s},
                                                        {u"tflops"_s, 29.1},
                                                        {u"dtype"_s, u"bf16"_s}}}};
    QCOMPARE(NodeStatusText::benchmark(node), u"Your NVIDIA GeForce RTX 4070: about 29 TFLOP/s in bf16"_s);
    const QJsonObject nodeCpu{{u"benchmark"_s, QJsonObject{{u"device"_s, u"cpu"_s},
                                                           {u"name"_s, u"Intel(R) Xeon(R) Gold 6248"_s},
                                                           {u"tflops"_s, 0.0421},
                                                           {u"dtype"_s, u"fp32"_s}}}};
    QCOMPARE(NodeStatusText::benchmark(nodeCpu),
             u"Your CPU (Intel(R) Xeon(R) Gold 6248): about 0.042 TFLOP/s in fp32"_s);

    // Still measuring: a progress, no sentence yet.
    const QJsonObject running{{u"benchmark"_s, QJsonObject{{u"elapsed_s"_s, 1.5}, {u"budget_s"_s, 3.0}}}};
    QVERIFY(NodeStatusText::benchmark(running).isEmpty());
    QCOMPARE(NodeStatusText::benchmarkProgress(running), 0.5);
    QCOMPARE(NodeStatusText::benchmarkProgress({}), -1.0);
    QCOMPARE(NodeStatusText::tflops(2.34), u"2.3"_s);
}

void TestNodeStatusText::creditsReadable() {
    QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates));
    QCOMPARE(NodeStatusText::credits(0), u"0"_s);
    QCOMPARE(NodeStatusText::credits(0.001234), u"0.0012"_s);
    QCOMPARE(NodeStatusText::credits(0.000001), u"0.000001"_s);
    QCOMPARE(NodeStatusText::credits(3.75), u"3.75"_s);
    QCOMPARE(NodeStatusText::credits(1234.4), u"1,234"_s);
}

void TestNodeStatusText::aFallBackToTheCpuIsSaid() {
    const auto measured = [](const QString& device) {
        return QJsonObject{{u"benchmark"_s, QJsonObject{{u"device"_s, device}, {u"tflops"_s, 0.19}}}};
    };
    // Left to choose ("the first CUDA GPU, else the CPU"), the node found no GPU: said.
    QCOMPARE(NodeStatusText::cpuFallback(measured(u"cpu"_s), QString()),
             u"No NVIDIA GPU found — contributing with the CPU"_s);
    QVERIFY(NodeStatusText::onCpu(measured(u"cpu"_s)));
    // The user chose the CPU, a GPU was found, or nothing is measured yet: nothing to say.
    QCOMPARE(NodeStatusText::cpuFallback(measured(u"cpu"_s), u"cpu"_s), QString());
    QCOMPARE(NodeStatusText::cpuFallback(measured(u"cuda:0"_s), QString()), QString());
    QVERIFY(!NodeStatusText::onCpu(measured(u"cuda:0"_s)));
    QCOMPARE(NodeStatusText::cpuFallback(QJsonObject{{u"device"_s, u"cpu"_s}}, QString()), QString());
}

void TestNodeStatusText::anEmptyStageIsAnotherOne() {
    const auto swarm = [](int online0, int online1, int online2) {
        QJsonArray stages;
        for (const auto& [stage, online] : {std::pair{0, online0}, {1, online1}, {2, online2}})
            stages.append(QJsonObject{{u"stage"_s, stage}, {u"nodes_online"_s, online}});
        return QJsonObject{{u"stages"_s, stages}};
    };
    QCOMPARE(NodeStatusText::emptyStage(swarm(1, 0, 2), 0), 1);
    // A status from before this node arrived lists its own stage empty too: never named.
    QCOMPARE(NodeStatusText::emptyStage(swarm(0, 0, 1), 0), 1);
    QCOMPARE(NodeStatusText::emptyStage(swarm(0, 1, 1), 0), -1);
    QCOMPARE(NodeStatusText::emptyStage(swarm(2, 1, 1), 1), -1);
    QCOMPARE(NodeStatusText::emptyStage(QJsonObject(), 0), -1); // no status yet
}

void TestNodeStatusText::stageCountsFromOne() {
    QCOMPARE(NodeStatusText::stage({{u"stage"_s, 1}, {u"stages"_s, 7}}),
             u"You hold stage 2 of 7 of the model"_s);
    // The count from the swarm's status when the node does not say it.
    const QJsonObject swarm{{u"stages"_s, QJsonArray{QJsonObject{}, QJsonObject{}}}};
    QCOMPARE(NodeStatusText::stage({{u"stage"_s, 0}}, swarm), u"You hold stage 1 of 2 of the model"_s);
    QCOMPARE(NodeStatusText::stage({{u"stage"_s, 0}}), u"You hold stage 1 of the model"_s);
    QVERIFY(NodeStatusText::stage({{u"stage"_s, -1}}).isEmpty());
}

void TestNodeStatusText::waitlistSaysWhen() {
    QCOMPARE(
        NodeStatusText::waitlist({{u"retry_in_s"_s, 230.0}}),
        u"The swarm is full right now. Tessera will try again in 4 minutes — you can close this window."_s);
    QVERIFY(NodeStatusText::waitlist({{u"retry_in_s"_s, 30.0}}).contains(u"in 30 seconds"));
    // A new run's coordinator writing its initial weights answers 503 too: that is not a full swarm.
    const QJsonObject preparing{{u"state"_s, u"preparing"_s},
                                {u"preparing"_s, QJsonObject{{u"percent"_s, 37.4}}}};
    QCOMPARE(
        NodeStatusText::waitlist({{u"retry_in_s"_s, 60.0}}, preparing),
        u"The coordinator is still preparing the model (37% ready). Tessera will try again in 1 minute — "
        u"you can close this window."_s);
    QCOMPARE(NodeStatusText::preparingPercent({{u"state"_s, u"serving"_s}}), -1);
    QVERIFY(NodeStatusText::waitlist({{u"retry_in_s"_s, 60.0}}, {{u"state"_s, u"serving"_s}})
                .startsWith(u"The swarm is full"));
    QCOMPARE(NodeStatusText::duration(60), u"1 minute"_s);
    QCOMPARE(NodeStatusText::duration(3 * 3600), u"3 hours"_s);
}

void TestNodeStatusText::downloadInMegabytes() {
    const QJsonObject status{{u"download"_s, QJsonObject{{u"bytes"_s, 12'500'000},
                                                         {u"total"_s, 48'000'000},
                                                         {u"bytes_per_second"_s, 3'200'000.0},
                                                         {u"eta_s"_s, 110.0}}}};
    QCOMPARE(NodeStatusText::download(status), u"12.5 MB of 48.0 MB · 3.2 MB/s · about 2 minutes left"_s);
    QCOMPARE(NodeStatusText::downloadProgress(status), 12.5 / 48);
    QCOMPARE(NodeStatusText::downloadProgress({}), -1.0);
}

void TestNodeStatusText::refusalAdvice() {
    // By kind, whatever the node's words were.
    using tessera::protocol::RefusalKind;
    QVERIFY(NodeStatusText::refusalAdvice(RefusalKind::CoordinatorKeyChanged).contains(u"coordinator.json"));
    QVERIFY(NodeStatusText::refusalAdvice(RefusalKind::NoStageFits).contains(u"memory"));
    QVERIFY(NodeStatusText::refusalAdvice(RefusalKind::ClientTooOld).contains(u"latest"));
    QVERIFY(NodeStatusText::refusalAdvice(RefusalKind::Other).contains(u"address"));
    // A kind this build does not know reads as Other.
    QCOMPARE(tessera::protocol::refusalKindFromName(u"something_new"_s), RefusalKind::Other);
}

QTEST_GUILESS_MAIN(TestNodeStatusText)
#include "test_node_status_text.moc"
