// SPDX-License-Identifier: Apache-2.0
// Manager: the desktop app's brain with a real node and a real coordinator (tiny, one stage) —
// a disk limit smaller than the stage stops the node with the reason and raising it resumes; the
// user's "pause until I resume" survives a restart of the app (no node is started); Contribute
// turned off is remembered; "Contributing" is said only while tasks flow (a stage nobody holds,
// a coordinator gone: each said in words). The pause rules are isolated from this machine (an empty /proc, no
// display, no NVML, no system bus): test_pause_while_gaming runs them for real.
#include "CoordinatorProcess.h"
#include "IsolatedDetectors.h"
#include "manager/AppSettings.h"
#include "manager/Manager.h"
#include "manager/detectors/PauseDetectors.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTime>

using namespace tessera::manager;
using namespace Qt::StringLiterals;
using Key = AppSettings::Key;

class TestManager final : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<CoordinatorProcess> m_coordinator;

    DetectorContext isolated() const { return tessera::test::isolatedDetectors(m_dir.path()); }

    std::unique_ptr<AppSettings> settings(const QString& name) const {
        auto s = std::make_unique<AppSettings>(m_dir.filePath(name + u"/tessera.ini"_s));
        s->setValue(Key::CoordinatorUrl, m_coordinator->url());
        s->setValue(Key::CoordinatorCaFile, m_dir.filePath(u"coordinator/tls.crt"_s));
        s->setValue(Key::DataDir, m_dir.filePath(name + u"/node"_s));
        s->setValue(Key::NodeProgram, QStringLiteral(TESSERA_NODE_PATH));
        return s;
    }

    std::unique_ptr<Manager> manager(AppSettings& s) const {
        auto m = std::make_unique<Manager>(s, isolated());
        m->setExtraNodeArguments({u"--bench-seconds"_s, u"0.5"_s, u"--heartbeat-ms"_s, u"500"_s});
        m->supervisor().setPollInterval(std::chrono::milliseconds(200));
        return m;
    }

    static void shutdown(Manager& m) {
        bool done = false;
        connect(&m, &Manager::finished, [&done] { done = true; });
        m.shutdown();
        QTRY_VERIFY_WITH_TIMEOUT(done, 15'000);
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        qputenv("OMP_NUM_THREADS", "1");
        m_coordinator = std::make_unique<CoordinatorProcess>(
            QStringList{u"--data-dir"_s, m_dir.filePath(u"coordinator"_s), u"--listen"_s, u"127.0.0.1:0"_s,
                        u"--model"_s, u"tiny"_s, u"--stages"_s, u"1"_s});
        QVERIFY2(m_coordinator->waitReady(), m_coordinator->err().constData());
    }

    void diskLimitStopsAndRaisingItResumes() {
        auto s = settings(u"disk"_s);
        s->setValue(Key::DiskLimitGb, 0.001); // 1 MB; the tiny stage is ~6.6 MB
        auto m = manager(*s);
        m->start();
        m->contribute();
        QTRY_COMPARE_WITH_TIMEOUT(m->state(), AppState::Error, 60'000);
        QVERIFY2(m->stateText().contains(u"needs 6.6 MB on disk; your limit is 1.0 MB"_s),
                 qPrintable(m->stateText()));
        QTRY_COMPARE_WITH_TIMEOUT(m->supervisor().nodePid(), 0, 15'000);
        QTest::qWait(1000);
        QCOMPARE(m->supervisor().nodePid(), 0); // not restarted behind the user's back

        s->setValue(Key::DiskLimitGb, 20.0);
        QTRY_COMPARE_WITH_TIMEOUT(m->state(), AppState::Contributing, 90'000);
        QVERIFY2(m->stateText().startsWith(u"Contributing to stage 1 of 1"_s), qPrintable(m->stateText()));
        shutdown(*m);
    }

    void pauseUntilResumedSurvivesARestart() {
        auto s = settings(u"restart"_s);
        {
            auto m = manager(*s);
            m->start();
            m->contribute();
            QTRY_COMPARE_WITH_TIMEOUT(m->state(), AppState::Contributing, 90'000);
            m->pauseUntilResumed();
            QTRY_COMPARE_WITH_TIMEOUT(m->supervisor().nodePid(), 0, 15'000);
            QCOMPARE(m->stateText(), u"Paused — you paused it until you resume"_s);
            shutdown(*m);
        }
        // The app starts again (a reboot, a login): still paused, and no node is started.
        auto again = manager(*s);
        again->start();
        QCOMPARE(again->state(), AppState::Paused);
        QTest::qWait(1500);
        QCOMPARE(again->supervisor().nodePid(), 0);
        again->resume();
        QTRY_COMPARE_WITH_TIMEOUT(again->state(), AppState::Contributing, 90'000);
        shutdown(*again);
    }

    void contributeTurnedOffIsRemembered() {
        auto s = settings(u"off"_s);
        {
            auto m = manager(*s);
            m->start();
            QCOMPARE(m->state(), AppState::NotStarted); // never clicked Contribute
            m->contribute();
            QTRY_VERIFY_WITH_TIMEOUT(m->supervisor().nodePid() != 0, 10'000);
            m->stopContributing();
            QTRY_COMPARE_WITH_TIMEOUT(m->supervisor().nodePid(), 0, 15'000);
            QCOMPARE(m->state(), AppState::NotStarted);
            shutdown(*m);
        }
        auto again = manager(*s);
        again->start();
        QTest::qWait(1000);
        QCOMPARE(again->state(), AppState::NotStarted);
        QCOMPARE(again->supervisor().nodePid(), 0);
    }

    void aPauseTheUserDidNotCauseIsTold() {
        // Outside the user's hours (a one-minute window three hours from now): paused and told, and
        // told again when the hours allow it once more.
        auto s = settings(u"hours"_s);
        auto m = manager(*s);
        QSignalSpy told(m.get(), &Manager::notify);
        m->start();
        m->contribute();
        QTRY_COMPARE_WITH_TIMEOUT(m->state(), AppState::Contributing, 90'000);
        const QTime later = QTime::currentTime().addSecs(3 * 3600);
        s->setValue(Key::TimeWindows,
                    u"%1-%2"_s.arg(later.toString(u"HH:mm"_s), later.addSecs(60).toString(u"HH:mm"_s)));
        QTRY_COMPARE_WITH_TIMEOUT(m->state(), AppState::Paused, 10'000);
        QTRY_COMPARE_WITH_TIMEOUT(told.size(), 1, 5'000);
        QCOMPARE(told.first().value(0).toString(), u"Tessera paused"_s);
        s->setValue(Key::TimeWindows, QString());
        QTRY_COMPARE_WITH_TIMEOUT(told.size(), 2, 60'000); // after the grace period
        QCOMPARE(told.last().value(0).toString(), u"Tessera resumed"_s);
        shutdown(*m);
    }

    void contributingOnlyWhileTasksFlow() {
        // A two-stage run with this node alone: admitted, its stage loaded, "Working" — but no
        // microbatch can pass the empty stage, so the app must not say "Contributing".
        CoordinatorProcess two({u"--data-dir"_s, m_dir.filePath(u"two-stages"_s), u"--listen"_s,
                                u"127.0.0.1:0"_s, u"--model"_s, u"tiny"_s, u"--stages"_s, u"2"_s});
        QVERIFY2(two.waitReady(), two.err().constData());
        auto s = settings(u"alone"_s);
        s->setValue(Key::CoordinatorUrl, two.url());
        s->setValue(Key::CoordinatorCaFile, m_dir.filePath(u"two-stages/tls.crt"_s));
        auto m = manager(*s);
        m->start();
        m->contribute();
        QTRY_VERIFY_WITH_TIMEOUT(m->stateText().startsWith(u"Waiting for other volunteers"_s), 90'000);
        QCOMPARE(m->state(), AppState::Waiting);
        QCOMPARE(m->nodeStatus().value(u"state").toString(), u"Working"_s);
        const int other = 1 - m->nodeStatus().value(u"stage").toInt(); // the stage nobody holds
        QVERIFY2(m->stateText() == u"Waiting for other volunteers (stage %1 has nobody yet)"_s.arg(other + 1),
                 QJsonDocument(m->swarmStatus().value(u"stages"_s).toArray()).toJson().constData());

        // The coordinator goes away: lost contact, said within seconds, never "Contributing".
        two.kill();
        QTRY_COMPARE_WITH_TIMEOUT(m->stateText(), u"Lost contact with the coordinator — reconnecting"_s,
                                  15'000);
        QCOMPARE(m->state(), AppState::Waiting);
        shutdown(*m);
    }
};

QTEST_GUILESS_MAIN(TestManager)
#include "test_manager.moc"
