// SPDX-License-Identifier: Apache-2.0
#include "coordinator/admission/AdmissionService.h"

#include "common/Identity.h"
#include "coordinator/store/AssignmentLog.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/NonceStore.h"
#include "coordinator/store/SessionStore.h"

#include <QCryptographicHash>
#include <QJsonDocument>
#include <QRandomGenerator>

#include <array>

namespace tessera::coordinator {

namespace {

// 32 bytes from the operating system's CSPRNG, base64url: nonces and session tokens.
QString randomToken() {
    std::array<quint32, 8> words{};
    QRandomGenerator::system()->fillRange(words.data(), words.size());
    return Identity::toBase64Url(
        QByteArray(reinterpret_cast<const char*>(words.data()), qsizetype(words.size() * sizeof(quint32))));
}

QString compact(const QJsonObject& o) {
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

} // namespace

AdmissionService::AdmissionService(Database& db, AssignmentPolicy policy, AdmissionSettings settings)
    : m_db(db)
    , m_policy(std::move(policy))
    , m_settings(settings)
    , m_nonces(settings.nonceSecret) {}

QString AdmissionService::sessionTokenHash(const QString& token) {
    return QString::fromLatin1(QCryptographicHash::hash(token.toUtf8(), QCryptographicHash::Sha256).toHex());
}

Result<QString> AdmissionService::challenge(const QString& nodeKey, qint64 nowMs) {
    if (!Identity::fromBase64Url(nodeKey, Identity::kPublicKeySize))
        return makeError("node_key: must be base64url (unpadded) of " +
                         std::to_string(Identity::kPublicKeySize) + " bytes");
    return m_nonces.issue(nodeKey, nowMs + qint64(m_settings.nonceTtl.count()));
}

Result<std::vector<StageLoad>> AdmissionService::stageLoads(const QString& except) {
    Result<std::vector<StageTotals>> totals = NodeRegistry(m_db).stageTotals(except);
    if (!totals)
        return totals.error();
    std::vector<StageLoad> loads(std::size_t(m_policy.config().stages));
    for (const StageTotals& t : *totals)
        if (t.stage >= 0 && t.stage < int(loads.size()))
            loads[std::size_t(t.stage)] = StageLoad{int(t.nodes), t.gflops};
    return loads;
}

Result<AdmissionOutcome> AdmissionService::admit(const protocol::AdmissionClaims& claims, qint64 nowMs,
                                                 const QString& network) {
    if (!claims.signatureValid())
        return AdmissionOutcome(
            Unauthorized{"signature: does not verify with node_key over the admission payload"});
    const ChallengeNonce::Checked nonce = m_nonces.check(claims.nonce, claims.nodeKey, nowMs);
    if (nonce.verdict != NonceVerdict::Spent)
        return AdmissionOutcome(Unauthorized{"nonce: " + nonceRefusalText(nonce.verdict)});
    AdmissionOutcome outcome;
    Status s =
        m_db.writeTransaction([&] { return decide(claims, nowMs, nonce.expiresAtMs, network, outcome); });
    if (!s)
        return s.error();
    return outcome;
}

Status AdmissionService::decide(const protocol::AdmissionClaims& claims, qint64 nowMs,
                                qint64 nonceExpiresAtMs, const QString& network, AdmissionOutcome& outcome) {
    Result<NonceVerdict> nonce = NonceStore(m_db).spend(claims.nonce, claims.nodeKey, nonceExpiresAtMs);
    if (!nonce)
        return nonce.error(); // the database failed, not the client: 500, not 401
    if (*nonce != NonceVerdict::Spent) {
        outcome = Unauthorized{"nonce: " + nonceRefusalText(*nonce)};
        return {};
    }
    if (claims.clientVersion < m_settings.minimumClientVersion) {
        outcome = Denied{"client_version: " + claims.clientVersionText.toStdString() +
                             " is older than the oldest this coordinator accepts (" +
                             m_settings.minimumClientVersion.toString().toStdString() + "); update Tessera",
                         protocol::RefusalKind::ClientTooOld};
        return {};
    }

    const QString nodeId = claims.nodeId();
    Reputation reputation(m_db, m_settings.reputation);
    Result<std::optional<QString>> banned = reputation.banned(nodeId, network, nowMs);
    if (!banned)
        return banned.error();
    if (*banned) {
        outcome = Denied{(**banned).toStdString(), protocol::RefusalKind::Banned};
        return {};
    }
    if (const int most = m_settings.reputation.maxNodesPerNetwork; most > 0 && !network.isEmpty()) {
        Result<qint64> online = NodeRegistry(m_db).onlineFromNetwork(network, nodeId);
        if (!online)
            return online.error();
        if (*online >= most) {
            outcome =
                Waitlisted{300, QStringLiteral("%1 nodes are online from your network (%2), as many as this "
                                               "coordinator admits from one network")
                                    .arg(*online)
                                    .arg(network)
                                    .toStdString()};
            return {};
        }
    }
    Result<std::vector<StageLoad>> loads = stageLoads(nodeId);
    if (!loads)
        return loads.error();
    const Assignment a = m_policy.choose(*loads, NodeCapacity{claims.memoryBytes,
                                                              claims.deviceKind == protocol::DeviceKind::Cuda,
                                                              claims.computeDtype});
    if (const auto* no = std::get_if<DoesNotFit>(&a)) {
        outcome = Denied{"hardware.memory_bytes: " + no->reason, protocol::RefusalKind::NoStageFits};
        return {};
    }
    if (const auto* full = std::get_if<SwarmFull>(&a)) {
        outcome = Waitlisted{full->retryAfterSeconds, full->reason};
        return {};
    }
    const int stage = std::get<StageChosen>(a).stage;

    NodeRegistry registry(m_db);
    SessionStore sessions(m_db);
    if (Status r =
            registry.admit(NodeAdmission{nodeId, claims.nodeKey, compact(claims.hardware),
                                         compact(claims.bench), claims.clientVersionText, claims.gflops,
                                         network, claims.profile.displayName, claims.profile.team},
                           nowMs);
        !r)
        return r;
    if (Status r = registry.setStage(nodeId, stage); !r)
        return r;
    if (Status r = AssignmentLog(m_db).assign(nodeId, stage, nowMs); !r)
        return r;
    // A re-admitted node starts over: whatever session it held before is no longer its own.
    if (Result<int> revoked = sessions.revokeNode(nodeId); !revoked)
        return revoked.error();
    const QString token = randomToken();
    if (Status r = sessions.create(sessionTokenHash(token), nodeId, nowMs, m_settings.sessionTtl); !r)
        return r;
    outcome = Admitted{nodeId, token, stage};
    return {};
}

} // namespace tessera::coordinator
