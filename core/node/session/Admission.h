// SPDX-License-Identifier: Apache-2.0
#pragma once
// Admission: the node's way in — the coordinator's /v1/info, its key pinned on first use, then the
// session saved by an earlier run or a challenge and a signed admission, and the signed manifest of
// the stage it is given. It owns session.json (the token and stage a restart resumes with) and
// coordinator.json (the pinned key).
//
// Each step ends in one signal: granted (the stage's verified manifest), waitlisted (ask again
// later), retry (a transient failure: the node backs off), refused (for good: the kind says why),
// failed (this node's own files). `progress` says what it is doing, for the node's status.

#include "base/ShardManifest.h"
#include "node/NodeFiles.h"
#include "protocol/PublicProfile.h"
#include "protocol/Refusal.h"

#include <QByteArray>
#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QUrl>

namespace tessera {
class Identity;
}

namespace tessera::node {

class CoordinatorClient;
struct HttpReply;

class Admission final : public QObject {
    Q_OBJECT

public:
    // pinnedKey: the operator's --coordinator-key (base64url), or empty to pin on first use.
    Admission(NodeFiles files, CoordinatorClient& client, const Identity& identity, QUrl coordinator,
              QString pinnedKey, QObject* parent = nullptr);

    // What the admission request claims (the benchmark's result).
    void setClaims(QJsonObject hardware, QJsonObject bench);
    // The opt-in display name and team sent with the admission. A saved session admitted with
    // another profile is not resumed: the node asks to join again, so the leaderboard follows.
    void setProfile(protocol::PublicProfile profile) { m_profile = std::move(profile); }
    // /v1/info, the key check, then a saved session or a new admission.
    void start();
    // A new admission (the session was revoked or expired; the saved one is forgotten).
    void admitAgain();
    // The signed manifest of `stage` (the coordinator moved the node there): recorded in session.json
    // so that a restart comes back on it, then fetched.
    void moveTo(int stage);
    // After this, nothing is signalled.
    void stop() { m_stopped = true; }

    const QByteArray& coordinatorKey() const { return m_coordinatorKey; } // raw 32 bytes, once pinned
    const QJsonObject& modelConfig() const { return m_modelConfig; }
    const QJsonObject& hardware() const { return m_hardware; } // the claims admission signs
    const QJsonObject& bench() const { return m_bench; }       // from /v1/info
    int stageCount() const { return m_stageCount; }            // 0 while unknown
    const QString& sessionToken() const { return m_sessionToken; }
    int stage() const { return m_stage; } // -1 until assigned

Q_SIGNALS:
    void progress(const QString& detail);
    void granted(const tessera::gpu::ShardManifest& manifest);
    void waitlisted(qint64 retryAfterSeconds, const QString& reason);
    void retry(const QString& why);
    void refused(tessera::protocol::RefusalKind kind, const QString& message);
    void failed(const QString& message);

private:
    bool checkCoordinatorKey(const QString& presented);
    void admit();
    void onAdmission(const HttpReply& reply);
    void fetchManifest();
    void useManifest(const QByteArray& manifestJson);

    NodeFiles m_files;
    CoordinatorClient& m_client;
    const Identity& m_identity;
    QUrl m_coordinator;
    QString m_pinnedKey;
    QJsonObject m_hardware;
    QJsonObject m_bench;
    protocol::PublicProfile m_profile;
    QByteArray m_coordinatorKey;
    QJsonObject m_modelConfig;
    int m_stageCount = 0;
    QString m_sessionToken;
    int m_stage = -1;
    bool m_stopped = false;
};

} // namespace tessera::node
