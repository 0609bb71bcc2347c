// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/X11Connection.h"

#include <QtGlobal>

#include <algorithm>
#include <mutex>
#include <vector>

#ifdef TESSERA_HAVE_X11
#include <X11/Xlib.h>
#endif

namespace tessera::manager {

#ifdef TESSERA_HAVE_X11
namespace {

// Xlib's error handler is one per process, and its default one exits. Errors on our connections
// (a window closed between listing and asking about it) are expected and ignored; those on anyone
// else's (Qt's GLX code may use Xlib) go to the handler that was there before.
std::mutex g_mutex;
std::vector<Display*> g_ourDisplays;
XErrorHandler g_previousHandler = nullptr;

int onXError(Display* display, XErrorEvent* event) {
    {
        const std::lock_guard lock(g_mutex);
        if (std::find(g_ourDisplays.begin(), g_ourDisplays.end(), display) != g_ourDisplays.end())
            return 0;
    }
    return g_previousHandler ? g_previousHandler(display, event) : 0;
}

void registerDisplay(Display* display) {
    static std::once_flag installed;
    std::call_once(installed, [] { g_previousHandler = XSetErrorHandler(onXError); });
    const std::lock_guard lock(g_mutex);
    g_ourDisplays.push_back(display);
}

void unregisterDisplay(Display* display) {
    const std::lock_guard lock(g_mutex);
    std::erase(g_ourDisplays, display);
}

} // namespace
#endif

X11Connection::X11Connection(QString displayName)
    : m_displayName(std::move(displayName)) {}

X11Connection::~X11Connection() {
#ifdef TESSERA_HAVE_X11
    if (m_display) {
        XCloseDisplay(m_display);
        unregisterDisplay(m_display);
    }
#endif
}

_XDisplay* X11Connection::display() const {
#ifdef TESSERA_HAVE_X11
    if (m_display)
        return m_display;
    const auto now = std::chrono::steady_clock::now();
    if (m_failedAt && now - *m_failedAt < kRetry)
        return nullptr;
    const QByteArray name = m_displayName.isEmpty() ? qgetenv("DISPLAY") : m_displayName.toLocal8Bit();
    if (name.isEmpty()) {
        m_error = QStringLiteral("no X display (DISPLAY is not set)");
        m_failedAt = now;
        return nullptr;
    }
    m_display = XOpenDisplay(name.constData());
    if (!m_display) {
        m_error = QStringLiteral("cannot open the X display %1").arg(QString::fromLocal8Bit(name));
        m_failedAt = now;
        return nullptr;
    }
    registerDisplay(m_display);
    m_error.clear();
    m_failedAt.reset();
    return m_display;
#else
    m_error = QStringLiteral("this build has no X11 support");
    return nullptr;
#endif
}

unsigned long X11Connection::atom(const char* name) const {
#ifdef TESSERA_HAVE_X11
    Display* d = display();
    if (!d)
        return None;
    const QByteArray key(name);
    auto found = m_atoms.constFind(key);
    if (found != m_atoms.constEnd())
        return *found;
    const Atom atom = XInternAtom(d, name, False);
    m_atoms.insert(key, atom);
    return atom;
#else
    Q_UNUSED(name);
    return 0;
#endif
}

} // namespace tessera::manager
