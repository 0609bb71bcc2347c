// SPDX-License-Identifier: Apache-2.0
#pragma once
// X11Connection: the detectors' own connection to the X server — opened on first use, tried again
// while there is none, and immune to X errors such as a window that vanished between two requests.

#include <QByteArray>
#include <QHash>
#include <QString>

#include <chrono>
#include <optional>

struct _XDisplay; // Xlib's Display; Xlib's headers stay out of the detectors' headers

namespace tessera::manager {

class X11Connection {
public:
    // A display that could not be opened is tried again after this long (the X server may start
    // after the app at login).
    static constexpr std::chrono::seconds kRetry{10};

    // displayName: ":0"; empty: $DISPLAY.
    explicit X11Connection(QString displayName = {});
    ~X11Connection();
    X11Connection(const X11Connection&) = delete;
    X11Connection& operator=(const X11Connection&) = delete;

    // The open Display, opening it if needed; nullptr when there is none (see unavailableReason()).
    _XDisplay* display() const;
    QString unavailableReason() const { return m_error; }
    // An atom by name, asked of the server once.
    unsigned long atom(const char* name) const;

private:
    QString m_displayName;
    mutable _XDisplay* m_display = nullptr;
    mutable QString m_error;
    mutable std::optional<std::chrono::steady_clock::time_point> m_failedAt;
    mutable QHash<QByteArray, unsigned long> m_atoms;
};

} // namespace tessera::manager
