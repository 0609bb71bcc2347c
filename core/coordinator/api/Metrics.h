// SPDX-License-Identifier: Apache-2.0
#pragma once
// Metrics: the coordinator's counters since start and its live session gauge, for /metrics
// (the other gauges are read from the database when scraped).

#include <QMap>
#include <QString>

namespace tessera::coordinator {

class Metrics final {
public:
    // route: the route's pattern, e.g. "/v1/shards/{stage}/manifest" (bounded label values).
    void countRequest(const QString& route) { ++m_requests[route]; }
    // outcome: admitted, denied, unauthorized, waitlisted, bad_request, error.
    void countAdmission(const QString& outcome) { ++m_admissions[outcome]; }

    // event: opened, rejected, timed_out.
    void countSession(const QString& event) { ++m_sessions[event]; }
    void setSessionsConnected(qint64 n) { m_sessionsConnected = n; }

    const QMap<QString, quint64>& sessions() const { return m_sessions; }
    qint64 sessionsConnected() const { return m_sessionsConnected; }
    const QMap<QString, quint64>& requests() const { return m_requests; }
    const QMap<QString, quint64>& admissions() const { return m_admissions; }

private:
    QMap<QString, quint64> m_requests;
    QMap<QString, quint64> m_admissions;
    QMap<QString, quint64> m_sessions;
    qint64 m_sessionsConnected = 0;
};

} // namespace tessera::coordinator
