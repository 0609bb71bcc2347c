// SPDX-License-Identifier: Apache-2.0
#pragma once
// ByteBudget: the bytes of partially received messages (HTTP bodies, WebSocket messages still
// arriving) held across every connection at once, against one limit, so that many sockets each
// within their own limit still cannot exhaust the coordinator's memory together.

#include <QtGlobal>

namespace tessera::coordinator::http {

class ByteBudget final {
public:
    // limit <= 0: no limit (only counted).
    explicit ByteBudget(qint64 limit = 0)
        : m_limit(limit) {}

    // Takes `bytes` when they fit under the limit; false (and nothing taken) when they do not:
    // the caller refuses or closes the connection that asked.
    bool take(qint64 bytes);
    // Gives back bytes taken before (a message delivered, a connection closed).
    void give(qint64 bytes);

    qint64 limit() const { return m_limit; }
    qint64 used() const { return m_used; }
    qint64 peak() const { return m_peak; }
    // How many take() calls were refused: for /metrics and the tests.
    qint64 refusals() const { return m_refusals; }

private:
    qint64 m_limit;
    qint64 m_used = 0;
    qint64 m_peak = 0;
    qint64 m_refusals = 0;
};

} // namespace tessera::coordinator::http
