// SPDX-License-Identifier: Apache-2.0
#pragma once
// AdmissionService: issues admission challenges and decides admissions (no HTTP: parsed claims in,
// an outcome out).
//
// admit() in order, so that what costs nothing to check is checked before state changes:
//   1. signature over the claims (AdmissionClaims::signingPayload) → else Unauthorized; the nonce
//      is left alone, so a forged request cannot burn a genuine node's challenge;
//   2. the nonce checked without the database (ChallengeNonce: its MAC for this node key, its
//      expiry) → else Unauthorized, and nothing was read or written;
//   2b. inside one write transaction: spend the nonce (one INSERT: already spent → Unauthorized;
//      of two replays exactly one gets past here; a failing database is an error, never
//      Unauthorized);
//   3. client version >= minimum → else Denied; the node or its network banned (Reputation) →
//      Denied (banned); as many nodes online from its network as allowed → Waitlisted;
//   4. AssignmentPolicy on the online nodes' loads → Denied (fits no stage) or Waitlisted;
//   5. record the node (online, stage, its opt-in display name and team — none sent: anonymous),
//      the assignment and a new session, revoking the node's older sessions → Admitted.
// A nonce is spent by every request that gets past step 1, whatever the outcome: each retry
// asks for a new challenge. SQLite's write lock serialises steps 2–5 across connections, so
// two admissions never both take the last seat.

#include "base/Result.h"
#include "coordinator/admission/AdmissionOutcome.h"
#include "coordinator/admission/AssignmentPolicy.h"
#include "coordinator/admission/ChallengeNonce.h"
#include "coordinator/trust/Reputation.h"
#include "protocol/AdmissionClaims.h"
#include "protocol/ClientVersion.h"

#include <QString>

#include <chrono>
#include <vector>

namespace tessera::coordinator {

class Database;

struct AdmissionSettings {
    // Raised to protocol::kOldestCompatibleClient when lower.
    protocol::ClientVersion minimumClientVersion = protocol::kOldestCompatibleClient;
    std::chrono::milliseconds nonceTtl{std::chrono::seconds(120)};
    // The nonces' MAC key (ChallengeNonce::secretFrom the coordinator's key); empty: a random one,
    // so nonces do not outlive the process.
    QByteArray nonceSecret;
    std::chrono::milliseconds sessionTtl{std::chrono::hours(24)};
    ReputationSettings reputation; // bans by node and network, the limit per network
};

class AdmissionService final {
public:
    AdmissionService(Database& db, AssignmentPolicy policy, AdmissionSettings settings = {});

    // A fresh nonce (base64url of 32 bytes, ChallengeNonce) bound to nodeKey, valid for nonceTtl;
    // nothing is written. An error names node_key when it is not a base64url Ed25519 key.
    Result<QString> challenge(const QString& nodeKey, qint64 nowMs);
    // An error is the coordinator's own failure (SQL): the HTTP layer answers 500.
    // `network`: what the request came from (Reputation::networkOf), "" when unknown.
    Result<AdmissionOutcome> admit(const protocol::AdmissionClaims& claims, qint64 nowMs,
                                   const QString& network = {});

    // One entry per stage: the online nodes assigned to it, except `except` (a node being
    // re-admitted does not compete with itself).
    Result<std::vector<StageLoad>> stageLoads(const QString& except = {});

    // SHA-256 of the token's text, lowercase hex: what SessionStore keeps.
    static QString sessionTokenHash(const QString& token);

private:
    Status decide(const protocol::AdmissionClaims& claims, qint64 nowMs, qint64 nonceExpiresAtMs,
                  const QString& network, AdmissionOutcome& outcome);

    Database& m_db;
    AssignmentPolicy m_policy;
    AdmissionSettings m_settings;
    ChallengeNonce m_nonces;
};

} // namespace tessera::coordinator
