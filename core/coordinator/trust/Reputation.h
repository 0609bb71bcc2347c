// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reputation: how the coordinator's memory of nodes and networks turns into bans and probation.
//
//   a refused result (ResultCheck)  → a strike: banned strikeBanMs, doubled per strike (≤ strikeBanMaxMs);
//                                      honest hardware can fail once, a liar fails again
//   a failed audit (Auditor)        → a proven lie: banned auditBanMs, its pending credit forfeited;
//                                      its network counts one more banned node
//   networkBanNodes banned nodes     → the network is banned from admission networkBanMs (keys are
//   from one network                   free, addresses are not)
//   a passed audit                  → its work accepted before the audit's evidence was kept is covered
//                                      (auditedThroughMs): credit for it can leave escrow; covering work
//                                      done after the last strike's ban, it forgives one strike (strikes
//                                      decay with verified work: three glitches a month apart are no liar)
// Bans are checked at admission (node and network), when a session opens and when a node says
// `ready` — so `unavailable` then `ready`, a reconnect, or a restart of the coordinator clears
// nothing. A new key starts on probation (audited most) with no credit until it passes an audit.

#include "base/Result.h"

#include <QHostAddress>
#include <QString>

#include <chrono>
#include <optional>

namespace tessera::coordinator {

class Database;

struct ReputationSettings {
    qint64 strikeBanMs = 30'000;
    qint64 strikeBanMaxMs = 3'600'000;
    qint64 auditBanMs = 7 * 24 * 3'600'000LL;
    int networkBanNodes = 3;
    qint64 networkBanMs = 24 * 3'600'000LL;
    int maxNodesPerNetwork = 64; // online at once (0: no limit)
};

class Reputation final {
public:
    Reputation(Database& db, ReputationSettings settings = {})
        : m_db(db)
        , m_settings(settings) {}

    const ReputationSettings& settings() const { return m_settings; }
    // The network an address belongs to for reputation: an IPv4 /24 or an IPv6 /48 ("" when null).
    static QString networkOf(const QHostAddress& address);

    // Why the node (or its network, "" for none known) may not take part now; none when it may.
    Result<std::optional<QString>> banned(const QString& nodeId, const QString& network, qint64 nowMs);
    // The node's network as recorded at its admission.
    QString networkOfNode(const QString& nodeId);

    // Returns when the ban ends.
    Result<qint64> strike(const QString& nodeId, const QString& reason, qint64 nowMs);
    Result<qint64> failedAudit(const QString& nodeId, const QString& reason, qint64 nowMs);
    // Out of the swarm for results refused again and again (the trainer's third strike): banned as
    // long as a failed audit bans, and counted against its network the same way (a liar caught on
    // arrival is no less a liar than one caught by an audit).
    Result<qint64> struckOut(const QString& nodeId, const QString& reason, qint64 nowMs);
    // `coveredThroughMs`: when the oldest evidence the audit judged was accepted. It covers the kinds
    // of work it judged: forwards, backwards (backward and forward_backward results), or both.
    Status passedAudit(const QString& nodeId, qint64 coveredThroughMs, qint64 nowMs, bool forwards = true,
                       bool backwards = true);
    // Work of a node no audit can judge (its stage is too large to recompute here, or audits are
    // off) leaves escrow by time alone: covered through `throughMs` without an audit.
    Status cover(const QString& nodeId, qint64 throughMs, qint64 nowMs);

private:
    // Banned as long as a failed audit bans, counted once against its network (audit: a failed one).
    Result<qint64> banOut(const QString& nodeId, const QString& reason, qint64 nowMs, bool audit);
    Status record(const QString& nodeId, qint64 coveredThroughMs, qint64 nowMs, bool audit, bool forwards,
                  bool backwards);

    Database& m_db;
    ReputationSettings m_settings;
};

} // namespace tessera::coordinator
