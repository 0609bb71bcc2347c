// SPDX-License-Identifier: Apache-2.0
#include "manager/detectors/UserActiveDetector.h"

#include <QCoreApplication>

#if defined(Q_OS_WIN)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#elif defined(Q_OS_MACOS)
#include <CoreGraphics/CoreGraphics.h>
#elif defined(TESSERA_HAVE_X11)
#include <X11/Xlib.h>
#include <X11/extensions/scrnsaver.h>
#endif

namespace tessera::manager {

UserActiveDetector::UserActiveDetector(std::chrono::milliseconds idleAfter, const QString& x11Display)
    : m_idleAfter(idleAfter)
#if !defined(Q_OS_WIN) && !defined(Q_OS_MACOS)
    , m_x11(x11Display)
#endif
{
#if defined(Q_OS_WIN) || defined(Q_OS_MACOS)
    Q_UNUSED(x11Display);
#endif
}

std::optional<PauseCause> UserActiveDetector::check() {
    const auto idle = idleTime();
    if (!idle || *idle >= m_idleAfter)
        return std::nullopt;
    return PauseCause{rule(),
                      QCoreApplication::translate("PauseReason",
                                                  "you are using the computer — contributing only when idle"),
                      false};
}

bool UserActiveDetector::available() const {
#if defined(Q_OS_WIN) || defined(Q_OS_MACOS)
    return true;
#else
    return hasIdleExtension();
#endif
}

QString UserActiveDetector::unavailableReason() const {
#if defined(Q_OS_WIN) || defined(Q_OS_MACOS)
    return {};
#else
    if (!m_x11.display())
        return m_x11.unavailableReason();
    return hasIdleExtension() ? QString()
                              : QStringLiteral("the X server does not tell idle time (no MIT-SCREEN-SAVER)");
#endif
}

std::optional<std::chrono::milliseconds> UserActiveDetector::idleTime() const {
#if defined(Q_OS_WIN)
    LASTINPUTINFO last{};
    last.cbSize = sizeof last;
    if (!GetLastInputInfo(&last))
        return std::nullopt;
    // Both are 32-bit tick counts: unsigned subtraction stays right across their wrap (49 days).
    return std::chrono::milliseconds(static_cast<DWORD>(GetTickCount() - last.dwTime));
#elif defined(Q_OS_MACOS)
    const double seconds =
        CGEventSourceSecondsSinceLastEventType(kCGEventSourceStateCombinedSessionState, kCGAnyInputEventType);
    return std::chrono::milliseconds(static_cast<qint64>(seconds * 1000));
#elif defined(TESSERA_HAVE_X11)
    if (!hasIdleExtension())
        return std::nullopt;
    Display* d = m_x11.display();
    XScreenSaverInfo info{};
    if (!XScreenSaverQueryInfo(d, DefaultRootWindow(d), &info))
        return std::nullopt;
    return std::chrono::milliseconds(info.idle);
#else
    return std::nullopt;
#endif
}

#if !defined(Q_OS_WIN) && !defined(Q_OS_MACOS)
bool UserActiveDetector::hasIdleExtension() const {
#if defined(TESSERA_HAVE_X11)
    Display* d = m_x11.display();
    if (!d)
        return false;
    if (!m_hasExtension) {
        int eventBase = 0;
        int errorBase = 0;
        m_hasExtension = XScreenSaverQueryExtension(d, &eventBase, &errorBase) != 0;
    }
    return *m_hasExtension;
#else
    return false;
#endif
}
#endif

} // namespace tessera::manager
