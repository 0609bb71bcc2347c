// SPDX-License-Identifier: Apache-2.0
// The X11 detectors on a real X server (ctest runs this under xvfb-run): FullscreenDetector against
// real X clients (fake_game, and windows the test makes), with and without a window manager's
// _NET_ACTIVE_WINDOW; UserActiveDetector's idle time against input faked through XTest.
#include "manager/detectors/FullscreenDetector.h"
#include "manager/detectors/PauseDetectors.h"
#include "manager/detectors/UserActiveDetector.h"

#include <QElapsedTimer>
#include <QProcess>
#include <QTest>

#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#ifdef TESSERA_HAVE_XTEST
#include <X11/extensions/XTest.h>
#endif

using namespace tessera::manager;
using namespace std::chrono_literals;

namespace {

// A fake_game process and its window.
class FakeGame {
public:
    explicit FakeGame(const QStringList& arguments) {
        m_process.setProgram(QStringLiteral(FAKE_GAME_PATH));
        m_process.setArguments(arguments);
        m_process.start();
    }
    ~FakeGame() { stop(); }
    // Whether it printed "shown", i.e. its window is mapped.
    bool waitShown() {
        QElapsedTimer timer;
        timer.start();
        while (timer.elapsed() < 10'000) {
            if (m_process.canReadLine() && m_process.readLine().startsWith("shown"))
                return true;
            if (m_process.state() == QProcess::NotRunning)
                return false;
            m_process.waitForReadyRead(100);
        }
        return false;
    }
    void stop() {
        if (m_process.state() == QProcess::NotRunning)
            return;
        m_process.terminate();
        if (!m_process.waitForFinished(10'000))
            m_process.kill();
    }
    qint64 pid() const { return m_process.processId(); }

private:
    QProcess m_process;
};

// The test's own X connection: to find windows and to play the window manager.
class X {
public:
    X()
        : d(qEnvironmentVariableIsEmpty("DISPLAY") ? nullptr : XOpenDisplay(nullptr)) {}
    ~X() {
        if (d)
            XCloseDisplay(d);
    }
    Atom atom(const char* name) { return XInternAtom(d, name, False); }
    // The top-level window whose _NET_WM_PID is `pid`; None when there is none.
    Window windowOf(qint64 pid) {
        Window rootReturn = None, parent = None, *children = nullptr;
        unsigned count = 0;
        Window found = None;
        if (!XQueryTree(d, DefaultRootWindow(d), &rootReturn, &parent, &children, &count))
            return None;
        for (unsigned i = 0; i < count && found == None; ++i) {
            Atom type = None;
            int format = 0;
            unsigned long n = 0, after = 0;
            unsigned char* data = nullptr;
            if (XGetWindowProperty(d, children[i], atom("_NET_WM_PID"), 0, 1, False, XA_CARDINAL, &type,
                                   &format, &n, &after, &data) == Success &&
                data && n == 1 && *reinterpret_cast<unsigned long*>(data) == static_cast<unsigned long>(pid))
                found = children[i];
            if (data)
                XFree(data);
        }
        if (children)
            XFree(children);
        return found;
    }
    void setActiveWindow(Window w) {
        XChangeProperty(d, DefaultRootWindow(d), atom("_NET_ACTIVE_WINDOW"), XA_WINDOW, 32, PropModeReplace,
                        reinterpret_cast<const unsigned char*>(&w), 1);
        XSync(d, False);
    }
    void forgetWindowManager() {
        XDeleteProperty(d, DefaultRootWindow(d), atom("_NET_ACTIVE_WINDOW"));
        XSync(d, False);
    }

    Display* d;
};

} // namespace

class TestFullscreenDetector final : public QObject {
    Q_OBJECT

    DetectorContext m_context;
    X* m_x;

public:
    explicit TestFullscreenDetector(X* x)
        : m_x(x) {}

private Q_SLOTS:
    void initTestCase();
    void cleanup() {
        if (m_x->d)
            m_x->forgetWindowManager();
    }
    void reportsAFullscreenGameByName();
    void ignoresAnOrdinaryWindow();
    void withAWindowManagerOnlyTheActiveWindowCounts();
    void findsAnUnmanagedWindowCoveringTheScreen();
    void withoutADisplayIsUnavailable();
};

void TestFullscreenDetector::initTestCase() {
    if (qEnvironmentVariableIsEmpty("DISPLAY"))
        QSKIP("no X display: run under xvfb-run -a -s \"-screen 0 1280x720x24\" (ctest does)");
    QVERIFY(m_x->d);
}

void TestFullscreenDetector::reportsAFullscreenGameByName() {
    FullscreenDetector detector(m_context);
    QVERIFY(detector.available());
    QVERIFY(!detector.check());

    FakeGame game({QStringLiteral("--fullscreen"), QStringLiteral("--title"), QStringLiteral("The Game")});
    QVERIFY(game.waitShown());
    QElapsedTimer latency;
    latency.start();
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 2'000);
    qInfo("full-screen window found %lld ms after it was shown", latency.elapsed());
    const auto cause = detector.check();
    QCOMPARE(cause->rule, QStringLiteral("fullscreen"));
    QCOMPARE(cause->reason, QStringLiteral("a full-screen app is in front: fake_game"));
    QVERIFY(cause->game);

    game.stop();
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 2'000);
}

void TestFullscreenDetector::ignoresAnOrdinaryWindow() {
    FullscreenDetector detector(m_context);
    FakeGame game({QStringLiteral("--window")});
    QVERIFY(game.waitShown());
    for (int i = 0; i < 6; ++i) {
        QVERIFY(!detector.check());
        QTest::qWait(100);
    }
}

void TestFullscreenDetector::withAWindowManagerOnlyTheActiveWindowCounts() {
    // The test plays the window manager: EWMH's _NET_ACTIVE_WINDOW names the window in front.
    X& x = *m_x;
    FakeGame fullscreen({QStringLiteral("--fullscreen")});
    FakeGame ordinary({QStringLiteral("--window")});
    QVERIFY(fullscreen.waitShown());
    QVERIFY(ordinary.waitShown());
    const Window game = x.windowOf(fullscreen.pid());
    const Window editor = x.windowOf(ordinary.pid());
    QVERIFY(game != None && editor != None);

    FullscreenDetector detector(m_context);
    x.setActiveWindow(editor);
    QVERIFY(!detector.check()); // the game is behind the editor
    x.setActiveWindow(game);
    QVERIFY(detector.check());
    x.setActiveWindow(None); // the desktop has the focus
    QVERIFY(!detector.check());
}

void TestFullscreenDetector::findsAnUnmanagedWindowCoveringTheScreen() {
    // A game that bypasses the window manager sets no state: it just covers the screen.
    X& x = *m_x;
    XSetWindowAttributes attributes{};
    attributes.override_redirect = True;
    const int screen = DefaultScreen(x.d);
    const Window w = XCreateWindow(x.d, DefaultRootWindow(x.d), 0, 0, DisplayWidth(x.d, screen),
                                   DisplayHeight(x.d, screen), 0, CopyFromParent, InputOutput, CopyFromParent,
                                   CWOverrideRedirect, &attributes);
    XClassHint hint{const_cast<char*>("oldgame"), const_cast<char*>("OldGame")};
    XSetClassHint(x.d, w, &hint);
    FullscreenDetector detector(m_context);
    QVERIFY(!detector.check()); // not yet mapped
    XMapWindow(x.d, w);
    XSync(x.d, False);
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 2'000);
    QCOMPARE(detector.check()->reason, QStringLiteral("a full-screen app is in front: OldGame"));
    XDestroyWindow(x.d, w); // while the detector may still remember it: no X error may abort
    XSync(x.d, False);
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 2'000);
}

void TestFullscreenDetector::withoutADisplayIsUnavailable() {
    DetectorContext nowhere;
    nowhere.x11Display = QStringLiteral(":4242");
    FullscreenDetector detector(nowhere);
    QVERIFY(!detector.check());
    QVERIFY(!detector.available());
    QCOMPARE(detector.unavailableReason(), QStringLiteral("cannot open the X display :4242"));
}

class TestUserActiveDetector final : public QObject {
    Q_OBJECT

    X* m_x;

public:
    explicit TestUserActiveDetector(X* x)
        : m_x(x) {}

private Q_SLOTS:
    void initTestCase();
    void idleTimeGrowsWithoutInput();
    void inputMeansTheUserIsActive();
};

void TestUserActiveDetector::initTestCase() {
    if (qEnvironmentVariableIsEmpty("DISPLAY"))
        QSKIP("no X display: run under xvfb-run -a -s \"-screen 0 1280x720x24\" (ctest does)");
    QVERIFY(m_x->d);
}

void TestUserActiveDetector::idleTimeGrowsWithoutInput() {
    UserActiveDetector detector(3min);
    QVERIFY2(detector.available(), qPrintable(detector.unavailableReason()));
    const auto before = detector.idleTime();
    QVERIFY(before);
    QTest::qWait(1'500);
    const auto after = detector.idleTime();
    QVERIFY(after);
    QVERIFY2(*after - *before >= 1'000ms,
             qPrintable(QStringLiteral("%1 → %2 ms").arg(before->count()).arg(after->count())));
}

void TestUserActiveDetector::inputMeansTheUserIsActive() {
#ifndef TESSERA_HAVE_XTEST
    QSKIP("built without libXtst: no way to fake input");
#else
    X& x = *m_x;
    int event = 0, error = 0, major = 0, minor = 0;
    if (!XTestQueryExtension(x.d, &event, &error, &major, &minor))
        QSKIP("the X server has no XTEST extension");
    UserActiveDetector detector(1s);
    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 5'000); // a second without input: idle

    XTestFakeMotionEvent(x.d, -1, 100, 100, CurrentTime);
    XTestFakeMotionEvent(x.d, -1, 300, 200, CurrentTime);
    XSync(x.d, False);
    QElapsedTimer latency;
    latency.start();
    QTRY_VERIFY_WITH_TIMEOUT(detector.check().has_value(), 2'000);
    qInfo("user active %lld ms after the mouse moved", latency.elapsed());
    const auto cause = detector.check();
    QCOMPARE(cause->rule, QStringLiteral("user-active"));
    QCOMPARE(cause->reason, QStringLiteral("you are using the computer — contributing only when idle"));
    QVERIFY(!cause->game);
    QVERIFY(*detector.idleTime() < 1s);

    QTRY_VERIFY_WITH_TIMEOUT(!detector.check().has_value(), 5'000); // idle again a second later
#endif
}

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    // One connection held from start to end: an X server started by xvfb-run resets (forgetting
    // root properties, refusing connections for a moment) whenever its last client leaves.
    X x;
    TestFullscreenDetector fullscreen(&x);
    TestUserActiveDetector userActive(&x);
    return QTest::qExec(&fullscreen, argc, argv) + QTest::qExec(&userActive, argc, argv);
}

#include "test_x11_detectors.moc"
