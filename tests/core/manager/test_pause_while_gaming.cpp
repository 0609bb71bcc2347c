// SPDX-License-Identifier: Apache-2.0
// Pausing while gaming, end to end under a real X server (ctest runs this under xvfb-run): the
// Manager with the real detectors supervises a real tessera-node working for a real coordinator.
// A real full-screen X11 window (fake_game) appears → the node's compute stops within 2 s (a hard
// pause: the process leaves) and comes back after the grace period once the window closes; a
// process with a listed name starts → paused; a snooze whose hour ends while a game runs → stays
// paused until the game has gone. None of it shows a notification: the user started the game.
#include "CoordinatorProcess.h"
#include "manager/AppSettings.h"
#include "manager/Manager.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera::manager;
using namespace Qt::StringLiterals;
using Key = AppSettings::Key;
using State = NodeSupervisor::State;

namespace {

constexpr int kGraceSeconds = 3;

// A program that plays a game: a real X11 window, full screen, until it is killed.
class FakeGame final {
public:
    explicit FakeGame(const QStringList& arguments) {
        m_process.setProgram(QStringLiteral(TESSERA_FAKE_GAME_PATH));
        m_process.setArguments(arguments);
        m_process.start();
    }
    ~FakeGame() { close(); }
    bool waitShown() {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < 10'000) {
            if (m_process.canReadLine() && m_process.readLine().startsWith("shown"))
                return true;
            m_process.waitForReadyRead(100);
        }
        return false;
    }
    void close() {
        if (m_process.state() == QProcess::NotRunning)
            return;
        m_process.terminate();
        m_process.waitForFinished(5000);
    }

private:
    QProcess m_process;
};

} // namespace

class TestPauseWhileGaming final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<CoordinatorProcess> m_coordinator;
    std::unique_ptr<AppSettings> m_settings;
    std::unique_ptr<Manager> m_manager;
    qint64 m_clockOffsetMs = 0;

    NodeSupervisor& supervisor() { return m_manager->supervisor(); }
    QString nodeState() { return supervisor().nodeStatus().value(u"state").toString(); }

    bool waitContributing(int ms) {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < ms) {
            if (m_manager->state() == AppState::Contributing && supervisor().state() == State::Running &&
                nodeState() == u"Working")
                return true;
            QTest::qWait(50);
        }
        return false;
    }

private Q_SLOTS:
    void initTestCase() {
        if (qEnvironmentVariableIsEmpty("DISPLAY"))
            QSKIP("needs an X server: ctest runs this test under xvfb-run");
        QVERIFY(m_dir.isValid());
        qputenv("OMP_NUM_THREADS", "1");
        m_coordinator = std::make_unique<CoordinatorProcess>(
            QStringList{u"--data-dir"_s, m_dir.filePath(u"coordinator"_s), u"--listen"_s, u"127.0.0.1:0"_s,
                        u"--model"_s, u"tiny"_s, u"--stages"_s, u"1"_s});
        QVERIFY2(m_coordinator->waitReady(), m_coordinator->err().constData());

        m_settings = std::make_unique<AppSettings>(m_dir.filePath(u"app/tessera.ini"_s));
        m_settings->setValue(Key::CoordinatorUrl, m_coordinator->url());
        m_settings->setValue(Key::CoordinatorCaFile, m_dir.filePath(u"coordinator/tls.crt"_s));
        m_settings->setValue(Key::DataDir, m_dir.filePath(u"node"_s));
        m_settings->setValue(Key::NodeProgram, QStringLiteral(TESSERA_NODE_PATH));
        m_settings->setValue(Key::GraceSeconds, kGraceSeconds);
        m_settings->setValue(Key::PauseExclusiveApps, QStringList{u"tessera-fakegame"_s});
        m_settings->setValue(Key::PauseOnFullscreen, true);
        // This machine has no NVIDIA GPU and no UPower: those rules cannot sense anything here.
        m_settings->setValue(Key::PauseOnGpuGraphics, false);
        m_settings->setValue(Key::PauseOnBattery, false);

        m_manager = std::make_unique<Manager>(*m_settings);
        m_manager->setClock([this] { return QDateTime::currentMSecsSinceEpoch() + m_clockOffsetMs; });
        m_manager->setExtraNodeArguments({u"--bench-seconds"_s, u"0.5"_s, u"--heartbeat-ms"_s, u"500"_s});
        m_manager->supervisor().setPollInterval(std::chrono::milliseconds(200));
        m_manager->start();
        m_manager->contribute();
        QVERIFY2(waitContributing(120'000), qPrintable(m_manager->stateText()));
    }

    void cleanupTestCase() {
        if (m_manager) {
            m_manager->shutdown();
            QTRY_COMPARE_WITH_TIMEOUT(supervisor().state(), State::Stopped, 15'000);
        }
    }

    void fullScreenWindowStopsTheNodeWithin2s() {
        // Quiet while gaming: no balloon over the game, none when it ends (notifications are on).
        QVERIFY(m_settings->flag(Key::Notifications));
        QSignalSpy told(m_manager.get(), &Manager::notify);
        FakeGame game({u"--fullscreen"_s, u"--title"_s, u"Witcher 3"_s});
        QVERIFY(game.waitShown());
        QElapsedTimer shown;
        shown.start();
        QTRY_COMPARE_WITH_TIMEOUT(supervisor().nodePid(), 0, 2000);
        qInfo("the node's process was gone %lld ms after the window was shown", shown.elapsed());
        QCOMPARE(m_manager->state(), AppState::Paused);
        QVERIFY2(m_manager->stateText().startsWith(u"Paused — a full-screen app"_s),
                 qPrintable(m_manager->stateText()));

        game.close();
        QElapsedTimer closed;
        closed.start();
        QTRY_VERIFY_WITH_TIMEOUT(m_manager->stateText().contains(u"resuming in"_s), 2000);
        QVERIFY(waitContributing(60'000));
        QVERIFY2(closed.elapsed() >= kGraceSeconds * 1000 - 300, "resumed before the grace period was over");
        QVERIFY2(told.isEmpty(), qPrintable(told.value(0).value(0).toString()));
    }

    void listedProcessPauses() {
        // A copy of sleep named like a game on the list.
        const QString game = m_dir.filePath(u"tessera-fakegame"_s);
        QVERIFY(QFile::copy(u"/bin/sleep"_s, game));
        QProcess process;
        process.start(game, {u"60"_s});
        QVERIFY(process.waitForStarted());
        QSignalSpy told(m_manager.get(), &Manager::notify);
        QTRY_COMPARE_WITH_TIMEOUT(supervisor().nodePid(), 0, 2000);
        QVERIFY2(m_manager->stateText().contains(u"tessera-fakegame"_s), qPrintable(m_manager->stateText()));
        process.kill();
        process.waitForFinished();
        QVERIFY(waitContributing(60'000));
        QVERIFY2(told.isEmpty(), qPrintable(told.value(0).value(0).toString())); // a game: not told
    }

    void snoozeEndingDuringAGameStaysPaused() {
        m_manager->pauseFor(std::chrono::minutes(60));
        QTRY_COMPARE_WITH_TIMEOUT(supervisor().nodePid(), 0, 5000);
        FakeGame game({u"--fullscreen"_s, u"--title"_s, u"Long game"_s});
        QVERIFY(game.waitShown());
        // The hour passes while the game runs.
        m_clockOffsetMs += 61 * 60'000;
        QTest::qWait(2000);
        QCOMPARE(m_manager->state(), AppState::Paused);
        QCOMPARE(supervisor().nodePid(), 0);
        QVERIFY2(m_manager->stateText().contains(u"full-screen"_s), qPrintable(m_manager->stateText()));
        game.close();
        QVERIFY(waitContributing(60'000));
    }
};

QTEST_GUILESS_MAIN(TestPauseWhileGaming)
#include "test_pause_while_gaming.moc"
