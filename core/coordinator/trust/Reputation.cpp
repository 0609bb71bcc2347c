// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/Reputation.h"

#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/ReputationStore.h"

#include <QDateTime>

namespace tessera::coordinator {

namespace {

QString until(qint64 ms) {
    return QDateTime::fromMSecsSinceEpoch(ms).toUTC().toString(Qt::ISODate);
}

} // namespace

QString Reputation::networkOf(const QHostAddress& address) {
    if (address.isNull())
        return {};
    bool v4 = false;
    const quint32 ip = address.toIPv4Address(&v4); // IPv4-mapped IPv6 addresses too
    if (v4)
        return QHostAddress(ip & 0xFFFFFF00u).toString() + QStringLiteral("/24");
    Q_IPV6ADDR v6 = address.toIPv6Address();
    for (int i = 6; i < 16; ++i)
        v6[i] = 0;
    return QHostAddress(v6).toString() + QStringLiteral("/48");
}

Result<std::optional<QString>> Reputation::banned(const QString& nodeId, const QString& network,
                                                  qint64 nowMs) {
    ReputationStore store(m_db);
    Result<ReputationRecord> node = store.get(ReputationStore::nodeSubject(nodeId));
    if (!node)
        return node.error();
    if (node->bannedUntilMs > nowMs)
        return std::optional<QString>(QStringLiteral("this node is banned until %1 (%2)")
                                          .arg(until(node->bannedUntilMs), node->banReason));
    if (network.isEmpty())
        return std::optional<QString>();
    Result<ReputationRecord> net = store.get(ReputationStore::networkSubject(network));
    if (!net)
        return net.error();
    if (net->bannedUntilMs > nowMs)
        return std::optional<QString>(QStringLiteral("the network %1 is banned until %2 (%3)")
                                          .arg(network, until(net->bannedUntilMs), net->banReason));
    return std::optional<QString>();
}

QString Reputation::networkOfNode(const QString& nodeId) {
    Result<std::optional<NodeRecord>> record = NodeRegistry(m_db).find(nodeId);
    return record && *record ? (*record)->network : QString();
}

Result<qint64> Reputation::strike(const QString& nodeId, const QString& reason, qint64 nowMs) {
    qint64 end = 0;
    Status s = m_db.writeTransaction([&]() -> Status {
        ReputationStore store(m_db);
        Result<ReputationRecord> r = store.get(ReputationStore::nodeSubject(nodeId));
        if (!r)
            return r.error();
        ++r->strikes;
        const int doublings = std::min(r->strikes - 1, 30);
        const qint64 ban = std::min(m_settings.strikeBanMaxMs, m_settings.strikeBanMs << doublings);
        end = std::max(r->bannedUntilMs, nowMs + ban);
        r->bannedUntilMs = end;
        r->banReason = reason;
        return store.put(*r, nowMs);
    });
    if (!s)
        return s.error();
    return end;
}

Result<qint64> Reputation::struckOut(const QString& nodeId, const QString& reason, qint64 nowMs) {
    return banOut(nodeId, reason, nowMs, false);
}

Result<qint64> Reputation::failedAudit(const QString& nodeId, const QString& reason, qint64 nowMs) {
    return banOut(nodeId, QStringLiteral("failed an audit: ") + reason, nowMs, true);
}

Result<qint64> Reputation::banOut(const QString& nodeId, const QString& reason, qint64 nowMs, bool audit) {
    const QString network = networkOfNode(nodeId);
    qint64 end = 0;
    Status s = m_db.writeTransaction([&]() -> Status {
        ReputationStore store(m_db);
        Result<ReputationRecord> r = store.get(ReputationStore::nodeSubject(nodeId));
        if (!r)
            return r.error();
        if (audit)
            ++r->auditsFailed;
        // Already out (a long ban: struck out or audit-banned before): its network counted it then.
        const bool already = r->bannedUntilMs >= nowMs + m_settings.auditBanMs / 2;
        end = std::max(r->bannedUntilMs, nowMs + m_settings.auditBanMs);
        r->bannedUntilMs = end;
        r->banReason = reason;
        if (Status put = store.put(*r, nowMs); !put)
            return put;
        if (network.isEmpty() || already)
            return {};
        Result<ReputationRecord> net = store.get(ReputationStore::networkSubject(network));
        if (!net)
            return net.error();
        ++net->bannedNodes;
        if (m_settings.networkBanNodes > 0 && net->bannedNodes >= m_settings.networkBanNodes) {
            net->bannedUntilMs = std::max(net->bannedUntilMs, nowMs + m_settings.networkBanMs);
            net->banReason = QStringLiteral("%1 of its nodes were caught lying").arg(net->bannedNodes);
        }
        return store.put(*net, nowMs);
    });
    if (!s)
        return s.error();
    return end;
}

Status Reputation::passedAudit(const QString& nodeId, qint64 coveredThroughMs, qint64 nowMs, bool forwards,
                               bool backwards) {
    return record(nodeId, coveredThroughMs, nowMs, true, forwards, backwards);
}

Status Reputation::cover(const QString& nodeId, qint64 throughMs, qint64 nowMs) {
    return record(nodeId, throughMs, nowMs, false, true, true);
}

Status Reputation::record(const QString& nodeId, qint64 coveredThroughMs, qint64 nowMs, bool audit,
                          bool forwards, bool backwards) {
    return m_db.writeTransaction([&]() -> Status {
        ReputationStore store(m_db);
        Result<ReputationRecord> r = store.get(ReputationStore::nodeSubject(nodeId));
        if (!r)
            return r.error();
        if (audit)
            ++r->auditsPassed;
        // Strikes decay with verified work: a judged check covering work accepted after the last strike's
        // ban ended forgives one; the ban's end moves to that work, so the next needs newer work.
        if (audit && r->strikes > 0 && coveredThroughMs > r->bannedUntilMs) {
            --r->strikes;
            r->bannedUntilMs = coveredThroughMs;
        }
        if (forwards)
            r->auditedThroughMs = std::max(r->auditedThroughMs, coveredThroughMs);
        if (backwards)
            r->backwardAuditedThroughMs = std::max(r->backwardAuditedThroughMs, coveredThroughMs);
        return store.put(*r, nowMs);
    });
}

} // namespace tessera::coordinator
