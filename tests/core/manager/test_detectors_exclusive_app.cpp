// SPDX-License-Identifier: Apache-2.0
// ExclusiveAppDetector and its ProcessScanner: real processes named like games (a copy of sleep
// called witcher3.exe, a Wine-style argv[0]) are found in the real /proc, in any case and with or
// without ".exe", and no longer once killed; the scanner reads a process's names only once.
#include "TestSupport.h"
#include "manager/detectors/ExclusiveAppDetector.h"
#include "manager/detectors/ProcessScanner.h"
#include "test_detectors.h"

#include <QDir>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera::manager;
using tessera::test::sleepCalled;
using tessera::test::startSleeper;

class TestExclusiveAppDetector final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }
    void findsAListedGameInAnySpelling_data();
    void findsAListedGameInAnySpelling();
    void findsAWineGameByItsWindowsPath();
    void neverPausesForAnUnlistedProcess();
    void knowsNamesLinuxCutShort();
    void readsEachProcessOnce();
    void costOfACheck();
};

void TestExclusiveAppDetector::findsAListedGameInAnySpelling_data() {
    QTest::addColumn<QString>("listed");
    QTest::newRow("exact") << QStringLiteral("witcher3.exe");
    QTest::newRow("without .exe") << QStringLiteral("witcher3");
    QTest::newRow("upper case") << QStringLiteral("WITCHER3.EXE");
    QTest::newRow("mixed, no .exe") << QStringLiteral(" Witcher3 ");
}

void TestExclusiveAppDetector::findsAListedGameInAnySpelling() {
    QFETCH(QString, listed);
    ExclusiveAppDetector detector({QStringLiteral("steam"), listed});
    QVERIFY(!detector.check());

    auto game = startSleeper(sleepCalled(m_dir.path(), QStringLiteral("witcher3.exe")));
    QVERIFY(game);
    QElapsedTimer latency;
    latency.start();
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 5'000);
    const auto cause = detector.check();
    QCOMPARE(cause->rule, QStringLiteral("exclusive-app"));
    QCOMPARE(cause->reason, QStringLiteral("a game is running: witcher3.exe"));
    QVERIFY(cause->game);
    qInfo("found %lld ms after the process started", latency.elapsed());

    game->kill();
    QVERIFY(game->waitForFinished(10'000));
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 5'000);
}

void TestExclusiveAppDetector::findsAWineGameByItsWindowsPath() {
    // Wine shows the game only in argv[0]; the kernel's name and the executable are Wine's own.
    ExclusiveAppDetector detector({QStringLiteral("cyberpunk2077")});
    auto game =
        startSleeper(QStringLiteral("/bin/bash"),
                     {QStringLiteral("-c"),
                      QStringLiteral("exec -a 'C:\\Games\\Cyberpunk 2077\\Cyberpunk2077.exe' sleep 600")});
    QVERIFY(game);
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 5'000);
    QCOMPARE(detector.check()->reason, QStringLiteral("a game is running: Cyberpunk2077.exe"));
    game->kill();
    QVERIFY(game->waitForFinished(10'000));
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 5'000);
}

void TestExclusiveAppDetector::neverPausesForAnUnlistedProcess() {
    auto game = startSleeper(sleepCalled(m_dir.path(), QStringLiteral("witcher3.exe")));
    QVERIFY(game);
    // Names that contain the process's, or that it contains, are other programs.
    ExclusiveAppDetector detector({QStringLiteral("witcher"), QStringLiteral("witcher3.ex"),
                                   QStringLiteral("itcher3.exe"), QStringLiteral("notepad.exe")});
    ExclusiveAppDetector listed({QStringLiteral("witcher3.exe")});
    QTRY_VERIFY_WITH_TIMEOUT(listed.check().has_value(), 5'000); // the process is there to be seen
    for (int i = 0; i < 8; ++i) {
        QVERIFY(!detector.check());
        QTest::qWait(100);
    }
    QVERIFY(!ExclusiveAppDetector(QStringList{}).check());
    game->kill();
    game->waitForFinished(10'000);
}

void TestExclusiveAppDetector::knowsNamesLinuxCutShort() {
    // A process root of our own: comm keeps 15 characters, and another user's process shows no
    // executable and (kernel threads) no argv[0].
    QTemporaryDir proc;
    QVERIFY(QDir(proc.path()).mkpath(QStringLiteral("4242")));
    QVERIFY(tessera::test::writeFile(proc.path() + QStringLiteral("/4242/comm"), "Cyberpunk2077.e\n"));
    ExclusiveAppDetector detector({QStringLiteral("Cyberpunk2077.exe")}, proc.path());
    const auto cause = detector.check();
    QVERIFY(cause);
    QCOMPARE(cause->reason, QStringLiteral("a game is running: Cyberpunk2077.e"));
    QVERIFY(!ExclusiveAppDetector({QStringLiteral("Cyberpunk2078.exe")}, proc.path()).check());
}

void TestExclusiveAppDetector::readsEachProcessOnce() {
    QTemporaryDir proc;
    for (int pid = 100; pid < 300; ++pid) {
        QVERIFY(QDir(proc.path()).mkpath(QString::number(pid)));
        QVERIFY(tessera::test::writeFile(proc.path() + QStringLiteral("/%1/comm").arg(pid), "worker\n"));
    }
    QVERIFY(QDir(proc.path()).mkpath(QStringLiteral("self"))); // not a process
    ProcessScanner scanner(proc.path(), std::chrono::milliseconds(0));
    scanner.scan();
    QCOMPARE(scanner.processes().size(), size_t(200));
    QCOMPARE(scanner.nameReads(), 200);
    for (int i = 0; i < 10; ++i)
        scanner.scan();
    QCOMPARE(scanner.nameReads(), 200); // known processes cost a directory entry, no file reads

    QVERIFY(QDir(proc.path()).mkpath(QStringLiteral("300")));
    QVERIFY(tessera::test::writeFile(proc.path() + QStringLiteral("/300/comm"), "game\n"));
    QVERIFY(QDir(proc.path() + QStringLiteral("/100")).removeRecursively());
    scanner.scan();
    QCOMPARE(scanner.nameReads(), 201);
    QCOMPARE(scanner.processes().size(), size_t(200));
    QVERIFY(!scanner.processes().contains(100));
    QCOMPARE(scanner.processes().at(300), QStringList{QStringLiteral("game")});
}

void TestExclusiveAppDetector::costOfACheck() {
    // Not an assertion: the figure for a real /proc, a check being asked four times a second.
    ExclusiveAppDetector detector(QStringList{QStringLiteral("witcher3.exe"), QStringLiteral("steam")});
    detector.check();
    QElapsedTimer timer;
    timer.start();
    constexpr int kChecks = 200;
    for (int i = 0; i < kChecks; ++i)
        detector.check();
    qInfo("one check of the real /proc takes %.1f µs", double(timer.nsecsElapsed()) / kChecks / 1000);
}

namespace tessera::test {
int runExclusiveAppDetectorTests(int argc, char** argv) {
    TestExclusiveAppDetector test;
    return QTest::qExec(&test, argc, argv);
}
} // namespace tessera::test

#include "test_detectors_exclusive_app.moc"
