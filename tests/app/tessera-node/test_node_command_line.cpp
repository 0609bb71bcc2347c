// SPDX-License-Identifier: Apache-2.0
// tessera-node's command line, run as a real process: what a user types and reads.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTest>

#include "TestSupport.h"

namespace {

using Run = tessera::test::ProcessRun;

Run runNode(const QStringList& arguments,
            const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
    return tessera::test::runProcess(QStringLiteral(TESSERA_NODE_PATH), arguments, {env});
}

} // namespace

class TestNodeCommandLine : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void versionNamesTheProgramAndItsLibraries() {
        const Run run = runNode({QStringLiteral("--version")});
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.out.startsWith("tessera-node " TESSERA_VERSION " (Qt 6."), run.out.constData());
        QVERIFY(run.out.contains("LibTorch 1."));
    }

    void helpListsTheBenchCommand() {
        const Run run = runNode({QStringLiteral("--help")});
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.contains("bench"));
        const Run benchHelp = runNode({QStringLiteral("bench"), QStringLiteral("--help")});
        QCOMPARE(benchHelp.exitCode, 0);
        QVERIFY2(benchHelp.out.contains("--seconds"), benchHelp.out.constData());
    }

    void benchJsonMatchesTheSchema() {
        // NVML absent (as on this machine; forced, so that a driver elsewhere cannot change it).
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("TESSERA_NVML_LIBRARY"), QStringLiteral("/nonexistent/libnvidia-ml.so.1"));
        const Run run =
            runNode({QStringLiteral("bench"), QStringLiteral("--json"), QStringLiteral("--device"),
                     QStringLiteral("cpu"), QStringLiteral("--seconds"), QStringLiteral("1")},
                    env);
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.err.contains("[1/"), "progress goes to stderr");

        QJsonParseError error{};
        const QJsonDocument doc = QJsonDocument::fromJson(run.out, &error);
        QVERIFY2(error.error == QJsonParseError::NoError, qPrintable(error.errorString()));
        const QJsonObject root = doc.object();

        const QJsonArray devices = root.value(u"devices").toArray();
        QVERIFY(!devices.isEmpty());
        const QJsonObject cpu = devices.first().toObject();
        QCOMPARE(cpu.value(u"id").toString(), QStringLiteral("cpu"));
        QVERIFY(!cpu.value(u"name").toString().isEmpty());
        QVERIFY(cpu.value(u"cores").toInt() >= 1);
        QVERIFY(cpu.value(u"memory_bytes").toDouble() > 0);
        QVERIFY(!cpu.value(u"simd").toString().isEmpty());
        QVERIFY(cpu.value(u"peak_fp32_gflops").toDouble() > 0);

        const QJsonObject nvml = root.value(u"nvml").toObject();
        QCOMPARE(nvml.value(u"available").toBool(true), false);
        QVERIFY(nvml.value(u"status").toString().contains(u"NVML not available"));

        const QJsonArray results = root.value(u"results").toArray();
        QVERIFY(!results.isEmpty());
        for (const QJsonValue& v : results) {
            const QJsonObject r = v.toObject();
            QCOMPARE(r.value(u"device").toString(), QStringLiteral("cpu"));
            QVERIFY(r.value(u"op").isString());
            QVERIFY(r.value(u"dtype").isString());
            QVERIFY(r.value(u"size").isString());
            QVERIFY(r.value(u"repeats").toInt() >= 3);
            // Exactly one of the two figures, and a positive one.
            QVERIFY(r.contains(u"gflops") != r.contains(u"gbps"));
            const double figure =
                r.contains(u"gflops") ? r.value(u"gflops").toDouble() : r.value(u"gbps").toDouble();
            QVERIFY2(figure > 0, qPrintable(r.value(u"op").toString()));
        }
    }

    void benchTableIsReadable() {
        const Run run = runNode({QStringLiteral("bench"), QStringLiteral("--device"), QStringLiteral("cpu"),
                                 QStringLiteral("--seconds"), QStringLiteral("0.5")});
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.contains("GFLOP/s"));
        QVERIFY(run.out.contains("peak fp32"));
        QVERIFY2(!run.out.contains("[1/"), "progress stays out of the table");
    }

    void unknownDeviceFailsWithAReason() {
        const Run run =
            runNode({QStringLiteral("bench"), QStringLiteral("--device"), QStringLiteral("cuda:7")});
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains("no device cuda:7"), run.err.constData());
        QVERIFY(run.out.isEmpty());
    }

    void badArgumentsAreUsageErrors_data() {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QByteArray>("message");
        QTest::newRow("no command") << QStringList{} << QByteArray("no command given");
        QTest::newRow("unknown command")
            << QStringList{QStringLiteral("frobnicate")} << QByteArray("unknown command");
        QTest::newRow("seconds not a number")
            << QStringList{QStringLiteral("bench"), QStringLiteral("--seconds"), QStringLiteral("abc")}
            << QByteArray("--seconds wants");
        QTest::newRow("negative seconds")
            << QStringList{QStringLiteral("bench"), QStringLiteral("--seconds"), QStringLiteral("-1")}
            << QByteArray("--seconds wants");
        QTest::newRow("bad device") << QStringList{QStringLiteral("bench"), QStringLiteral("--device"),
                                                   QStringLiteral("tpu")}
                                    << QByteArray("--device wants");
        QTest::newRow("unknown option")
            << QStringList{QStringLiteral("bench"), QStringLiteral("--fast")} << QByteArray("Unknown option");
    }

    void badArgumentsAreUsageErrors() {
        QFETCH(QStringList, arguments);
        QFETCH(QByteArray, message);
        const Run run = runNode(arguments);
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains(message), run.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestNodeCommandLine)
#include "test_node_command_line.moc"
