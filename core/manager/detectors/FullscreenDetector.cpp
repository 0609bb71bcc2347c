// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/FullscreenDetector.h"

#include "manager/detectors/PauseDetectors.h"
#include "manager/detectors/ProcessScanner.h"

#include <QCoreApplication>
#include <QFile>

#include <algorithm>
#include <vector>

#if defined(Q_OS_WIN)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
// windows.h first: shellapi.h relies on its types.
#include <shellapi.h>
#elif defined(TESSERA_HAVE_X11)
#include <X11/Xatom.h>
#include <X11/Xlib.h>
#include <X11/Xutil.h>
#endif

namespace tessera::manager {

namespace {

QString reasonFor(const QString& app) {
    return QCoreApplication::translate("PauseReason", "a full-screen app is in front: %1").arg(app);
}

#if defined(Q_OS_WIN)
// The foreground window's program, "witcher3.exe".
QString foregroundProgram() {
    DWORD pid = 0;
    GetWindowThreadProcessId(GetForegroundWindow(), &pid);
    QString name = QCoreApplication::translate("PauseReason", "an unnamed app");
    if (HANDLE process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid)) {
        wchar_t path[MAX_PATH] = {};
        DWORD size = MAX_PATH;
        if (QueryFullProcessImageNameW(process, 0, path, &size))
            name = ProcessScanner::fileName(QString::fromWCharArray(path, static_cast<qsizetype>(size)));
        CloseHandle(process);
    }
    return name;
}
#elif defined(TESSERA_HAVE_X11)
// A window property's 32-bit items; nullopt when the window lacks the property (or is gone).
std::optional<std::vector<unsigned long>> property(Display* d, Window w, Atom name, Atom type) {
    Atom actualType = None;
    int format = 0;
    unsigned long count = 0;
    unsigned long after = 0;
    unsigned char* data = nullptr;
    if (XGetWindowProperty(d, w, name, 0, 64, False, type, &actualType, &format, &count, &after, &data) !=
        Success)
        return std::nullopt;
    std::optional<std::vector<unsigned long>> items;
    if (actualType != None) {
        items.emplace();
        if (data && format == 32) { // Xlib hands 32-bit items over as longs
            const auto* values = reinterpret_cast<const unsigned long*>(data);
            items->assign(values, values + count);
        }
    }
    if (data)
        XFree(data);
    return items;
}
#endif

} // namespace

FullscreenDetector::FullscreenDetector(const DetectorContext& context)
#if !defined(Q_OS_WIN)
    : m_x11(context.x11Display)
    , m_procRoot(context.procRoot)
#endif
{
#if defined(Q_OS_WIN)
    Q_UNUSED(context);
#endif
}

FullscreenDetector::~FullscreenDetector() = default;

bool FullscreenDetector::available() const {
#if defined(Q_OS_WIN)
    return true;
#elif defined(Q_OS_MACOS)
    return false;
#else
    return m_x11.display() != nullptr;
#endif
}

QString FullscreenDetector::unavailableReason() const {
#if defined(Q_OS_WIN)
    return {};
#elif defined(Q_OS_MACOS)
    return QStringLiteral("not supported on macOS yet");
#else
    return available() ? QString() : m_x11.unavailableReason();
#endif
}

std::optional<PauseCause> FullscreenDetector::check() {
#if defined(Q_OS_WIN)
    // Windows' own answer to "may I show a notification now?": no while a Direct3D game runs
    // full-screen, a full-screen app is busy, or presentation mode is on.
    QUERY_USER_NOTIFICATION_STATE state{};
    if (FAILED(SHQueryUserNotificationState(&state)))
        return std::nullopt;
    if (state != QUNS_RUNNING_D3D_FULL_SCREEN && state != QUNS_BUSY && state != QUNS_PRESENTATION_MODE)
        return std::nullopt;
    return PauseCause{rule(), reasonFor(foregroundProgram()), true};
#else
    const auto app = frontFullscreenWindow();
    if (!app)
        return std::nullopt;
    return PauseCause{rule(), reasonFor(*app), true};
#endif
}

#if !defined(Q_OS_WIN)

std::optional<QString> FullscreenDetector::frontFullscreenWindow() {
#if defined(TESSERA_HAVE_X11)
    Display* d = m_x11.display();
    if (!d)
        return std::nullopt;
    const Window root = DefaultRootWindow(d);
    // A window manager names the window in front; without one (a bare X server, a kiosk) any
    // full-screen top-level window counts.
    const auto active = property(d, root, m_x11.atom("_NET_ACTIVE_WINDOW"), XA_WINDOW);
    std::optional<Window> front;
    if (active) {
        if (!active->empty() && active->front() != None && isFullscreen(active->front()))
            front = active->front();
    } else {
        front = fullscreenTopLevel();
    }
    if (!front)
        return std::nullopt;
    if (m_names.size() > 64) // windows come and go; the cache only saves re-reading the same one
        m_names.clear();
    auto name = m_names.constFind(*front);
    if (name == m_names.constEnd())
        name = m_names.insert(*front, windowName(*front));
    return *name;
#else
    return std::nullopt;
#endif
}

bool FullscreenDetector::isFullscreen(unsigned long window) {
#if defined(TESSERA_HAVE_X11)
    const auto states = property(m_x11.display(), window, m_x11.atom("_NET_WM_STATE"), XA_ATOM);
    const Atom fullscreen = m_x11.atom("_NET_WM_STATE_FULLSCREEN");
    return states && std::find(states->begin(), states->end(), fullscreen) != states->end();
#else
    Q_UNUSED(window);
    return false;
#endif
}

std::optional<unsigned long> FullscreenDetector::fullscreenTopLevel() {
#if defined(TESSERA_HAVE_X11)
    Display* d = m_x11.display();
    const Window root = DefaultRootWindow(d);
    XWindowAttributes screen{};
    if (!XGetWindowAttributes(d, root, &screen))
        return std::nullopt;
    Window rootReturn = None;
    Window parent = None;
    Window* children = nullptr;
    unsigned count = 0;
    if (!XQueryTree(d, root, &rootReturn, &parent, &children, &count))
        return std::nullopt;
    std::optional<unsigned long> found;
    const Atom desktopType = m_x11.atom("_NET_WM_WINDOW_TYPE_DESKTOP");
    for (unsigned i = count; i-- > 0 && !found;) { // top of the stack first
        XWindowAttributes a{};
        if (!XGetWindowAttributes(d, children[i], &a) || a.map_state != IsViewable || a.c_class == InputOnly)
            continue;
        // Games that bypass the window manager (override-redirect) just cover the screen.
        const bool covers = a.x <= 0 && a.y <= 0 && a.x + a.width + 2 * a.border_width >= screen.width &&
                            a.y + a.height + 2 * a.border_width >= screen.height;
        if (!covers && !isFullscreen(children[i]))
            continue;
        // A desktop's background window covers the screen too, and is no app.
        const auto type = property(d, children[i], m_x11.atom("_NET_WM_WINDOW_TYPE"), XA_ATOM);
        if (type && std::find(type->begin(), type->end(), desktopType) != type->end())
            continue;
        found = children[i];
    }
    if (children)
        XFree(children);
    return found;
#else
    return std::nullopt;
#endif
}

QString FullscreenDetector::windowName(unsigned long window) {
#if defined(TESSERA_HAVE_X11)
    Display* d = m_x11.display();
    // The process's own name where the window says which it is; its class ("mpv") otherwise.
    const auto pid = property(d, window, m_x11.atom("_NET_WM_PID"), XA_CARDINAL);
    if (pid && !pid->empty() && pid->front() > 0) {
        QFile comm(m_procRoot + QLatin1Char('/') + QString::number(pid->front()) + QStringLiteral("/comm"));
        if (comm.open(QIODevice::ReadOnly)) {
            const QString name = QString::fromUtf8(comm.readAll().trimmed());
            if (!name.isEmpty())
                return name;
        }
    }
    XClassHint hint{};
    QString name;
    if (XGetClassHint(d, window, &hint)) {
        name = QString::fromLocal8Bit(hint.res_class ? hint.res_class : hint.res_name);
        if (hint.res_name)
            XFree(hint.res_name);
        if (hint.res_class)
            XFree(hint.res_class);
    }
    return name.isEmpty() ? QCoreApplication::translate("PauseReason", "an unnamed app") : name;
#else
    Q_UNUSED(window);
    return {};
#endif
}

#endif // !Q_OS_WIN

} // namespace tessera::manager
