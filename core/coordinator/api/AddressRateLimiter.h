// SPDX-License-Identifier: Apache-2.0
#pragma once
// AddressRateLimiter: at most N requests per client address per minute (a fixed one-minute window
// per address; AddressCounter::keyOf names the address), for the unauthenticated routes a host
// could otherwise call as fast as it likes. The table is bounded: windows that ended are dropped
// as it grows.

#include <QHash>
#include <QHostAddress>
#include <QString>

namespace tessera::coordinator {

class AddressRateLimiter final {
public:
    // perMinute <= 0: no limit.
    explicit AddressRateLimiter(int perMinute)
        : m_perMinute(perMinute) {}

    // Counts one request from `address` at nowMs; false when it already made perMinute in this
    // window. retryAfterSeconds: when the window ends.
    bool allow(const QHostAddress& address, qint64 nowMs, int* retryAfterSeconds = nullptr);
    int perMinute() const { return m_perMinute; }

private:
    struct Window {
        qint64 startMs = 0;
        int count = 0;
    };
    void dropEnded(qint64 nowMs);

    int m_perMinute;
    QHash<QString, Window> m_windows;
    qsizetype m_dropAt = 4096; // the table's size that triggers dropping ended windows
};

} // namespace tessera::coordinator
