// SPDX-License-Identifier: Apache-2.0
// bench_app: the desktop app's own cost and how fast it gets out of a gamer's way (run under
// Xvfb: `make bench` does). Measured side by side in one run:
//  1. the idle app's CPU share and memory (target < 0.5% of a core): the real `tessera` process in
//     the tray (tint2 as tray host), first not contributing, then supervising a working node;
//  2. the time from a game starting to the node's compute stopping, over N trials each: a real
//     full-screen X11 window, and a process with a listed name. "Stopped" is the node process
//     gone (a hard pause frees all GPU memory); the moment the policy decided is printed too.
#include "CoordinatorProcess.h"
#include "ProcessStats.h"
#include "manager/AppSettings.h"
#include "manager/Manager.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cstdio>

using namespace tessera::manager;
using namespace Qt::StringLiterals;
using Key = AppSettings::Key;

namespace {

double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, std::size_t(p * double(v.size() - 1) + 0.5));
    return v[i];
}

bool waitFor(const std::function<bool()>& done, int ms) {
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        if (done())
            return true;
        QTest::qWait(5);
    }
    return done();
}

void configure(AppSettings& s, const CoordinatorProcess& coordinator, const QTemporaryDir& dir,
               const QString& node) {
    s.setValue(Key::CoordinatorUrl, coordinator.url());
    s.setValue(Key::CoordinatorCaFile, dir.filePath(u"coordinator/tls.crt"_s));
    s.setValue(Key::DataDir, dir.filePath(node));
    s.setValue(Key::NodeProgram, QStringLiteral(TESSERA_NODE_PATH));
    s.setValue(Key::PauseExclusiveApps, QStringList{u"tessera-fakegame"_s});
    s.setValue(Key::PauseOnGpuGraphics, false);
    s.setValue(Key::PauseOnBattery, false);
    s.setValue(Key::FirstRunDone, true);
    s.sync();
}

// 1. The real app process, idle in the tray.
void idleApp(const CoordinatorProcess& coordinator, const QTemporaryDir& dir, int seconds) {
    QProcess tray;
    if (!QStandardPaths::findExecutable(u"tint2"_s).isEmpty()) {
        tray.start(u"tint2"_s, {});
        tray.waitForStarted();
        QTest::qWait(1000);
    }
    std::printf("\n1. The idle app (the real tessera process, %d s each%s)\n", seconds,
                tray.state() == QProcess::Running ? ", tint2 as tray host"
                                                  : ", no tray host: its dashboard is open");
    std::printf("%-40s %12s %10s\n", "", "CPU % core", "RSS MiB");
    for (const bool contributing : {false, true}) {
        const QString ini =
            dir.filePath(contributing ? u"app-working/tessera.ini"_s : u"app-idle/tessera.ini"_s);
        {
            AppSettings s(ini);
            configure(s, coordinator, dir, contributing ? u"node-app"_s : u"node-unused"_s);
            s.setValue(Key::Contributing, contributing);
        }
        QProcess app;
        app.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        app.start(QStringLiteral(TESSERA_APP_PATH), {u"--minimized"_s, u"--settings"_s, ini});
        app.waitForStarted();
        if (contributing) {
            // Measured once the node works: the app then polls it every second.
            const QString nodeDir = dir.filePath(u"node-app"_s);
            waitFor(
                [&] {
                    QProcess status;
                    status.start(QStringLiteral(TESSERA_NODE_PATH), {u"status"_s, u"--data-dir"_s, nodeDir});
                    status.waitForFinished(5000);
                    return status.readAll().contains("Working");
                },
                120'000);
        } else {
            QTest::qWait(3000);
        }
        const qint64 pid = app.processId();
        const double cpu0 = processCpuSeconds(pid);
        QElapsedTimer wall;
        wall.start();
        QTest::qWait(seconds * 1000);
        const double cpu = (processCpuSeconds(pid) - cpu0) / (double(wall.elapsed()) / 1000);
        std::printf("%-40s %11.2f%% %10.1f\n",
                    contributing ? "contributing (a node working)" : "not contributing", 100 * cpu,
                    processRssMiB(pid));
        app.terminate();
        if (!app.waitForFinished(15'000))
            app.kill();
    }
    tray.terminate();
    tray.waitForFinished(3000);
}

struct Trial {
    double decidedMs = 0;
    double stoppedMs = 0;
};

// 2. A game starts: how long until the node's compute stops.
std::vector<Trial> gameTrials(Manager& manager, int trials, bool fullscreen, const QString& gameCopy) {
    std::vector<Trial> out;
    for (int i = 0; i < trials; ++i) {
        if (!waitFor(
                [&] {
                    return manager.state() == AppState::Contributing && manager.supervisor().nodePid() != 0;
                },
                120'000)) {
            std::printf("   trial %d: the node did not come back (%s)\n", i, qPrintable(manager.stateText()));
            break;
        }
        QTest::qWait(1000); // working, mid-microbatch
        QProcess game;
        QElapsedTimer t;
        if (fullscreen) {
            game.start(QStringLiteral(TESSERA_FAKE_GAME_PATH),
                       {u"--fullscreen"_s, u"--title"_s, u"Bench game"_s});
            waitFor(
                [&] {
                    game.waitForReadyRead(1);
                    return game.readAll().contains("shown");
                },
                10'000);
            t.start(); // the window is on screen
        } else {
            t.start();
            game.start(gameCopy, {u"600"_s});
        }
        Trial trial;
        waitFor([&] { return manager.pauseDecision().paused(); }, 10'000);
        trial.decidedMs = double(t.nsecsElapsed()) / 1e6;
        waitFor([&] { return manager.supervisor().nodePid() == 0; }, 10'000);
        trial.stoppedMs = double(t.nsecsElapsed()) / 1e6;
        out.push_back(trial);
        game.terminate();
        game.waitForFinished(5000);
    }
    return out;
}

void report(const char* what, const std::vector<Trial>& trials) {
    std::vector<double> decided, stopped;
    for (const Trial& t : trials) {
        decided.push_back(t.decidedMs);
        stopped.push_back(t.stoppedMs);
    }
    std::printf("%-34s %3zu %9.0f %9.0f %11.0f %11.0f\n", what, trials.size(), percentile(decided, 0.5),
                percentile(decided, 0.99), percentile(stopped, 0.5), percentile(stopped, 0.99));
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const int trials = argc > 1 ? std::atoi(argv[1]) : 20;
    const int idleSeconds = argc > 2 ? std::atoi(argv[2]) : 60;
    if (qEnvironmentVariableIsEmpty("DISPLAY")) {
        std::fprintf(stderr, "bench_app needs an X server: run it under xvfb-run -a\n");
        return 2;
    }
    qputenv("OMP_NUM_THREADS", "1");
    QTemporaryDir dir;
    CoordinatorProcess coordinator({u"--data-dir"_s, dir.filePath(u"coordinator"_s), u"--listen"_s,
                                    u"127.0.0.1:0"_s, u"--model"_s, u"tiny"_s, u"--stages"_s, u"1"_s});
    if (!coordinator.waitReady()) {
        std::fprintf(stderr, "the coordinator did not start: %s\n", coordinator.err().constData());
        return 1;
    }
    std::printf("bench_app: the desktop app (tiny model, 1 stage, a real node on this machine's CPU)\n");
    idleApp(coordinator, dir, idleSeconds);

    AppSettings settings(dir.filePath(u"bench/tessera.ini"_s));
    configure(settings, coordinator, dir, u"node-bench"_s);
    settings.setValue(Key::GraceSeconds, 1);
    Manager manager(settings);
    manager.setExtraNodeArguments({u"--bench-seconds"_s, u"0.5"_s, u"--heartbeat-ms"_s, u"500"_s});
    manager.supervisor().setPollInterval(std::chrono::milliseconds(500));
    manager.start();
    manager.contribute();

    const QString gameCopy = dir.filePath(u"tessera-fakegame"_s);
    QFile::copy(u"/bin/sleep"_s, gameCopy);
    std::printf(
        "\n2. From a game starting to the node's compute stopping (%d trials each; policy tick %lld ms)\n",
        trials, qint64(Manager::kPolicyTick.count()));
    std::printf("%-34s %3s %9s %9s %11s %11s\n", "game", "n", "decided", "p99", "node gone", "p99");
    std::printf("%-34s %3s %9s %9s %11s %11s\n", "", "", "p50 ms", "ms", "p50 ms", "ms");
    report("full-screen X11 window", gameTrials(manager, trials, true, gameCopy));
    report("listed process (tessera-fakegame)", gameTrials(manager, trials, false, gameCopy));

    manager.shutdown();
    waitFor([&] { return manager.supervisor().state() == NodeSupervisor::State::Stopped; }, 15'000);
    return 0;
}
