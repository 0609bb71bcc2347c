// SPDX-License-Identifier: Apache-2.0
// Admission: /v1/info → key pinned → saved session or signed admission → signed manifest.
#include "node/session/Admission.h"

#include "common/Identity.h"
#include "common/Version.h"
#include "node/session/CoordinatorClient.h"
#include "node/shard/ManifestVersions.h"
#include "node/shard/ShardDownload.h"
#include "protocol/AdmissionClaims.h"
#include "protocol/ManifestSignature.h"

#include <QDateTime>
#include <QJsonDocument>

#include <algorithm>

namespace tessera::node {

namespace {

const QString kSessionFile = QStringLiteral("session.json");
const QString kCoordinatorFile = QStringLiteral("coordinator.json");

qint64 nowMs() {
    return QDateTime::currentMSecsSinceEpoch();
}

// 503 (the swarm is full, or the coordinator is still writing a new run's weights) and 429 (asked too
// often) mean "come back later", not a failure: the node waits as long as it is told.
bool asksToWait(const HttpReply& reply) {
    return reply.status == 503 || reply.status == 429;
}

// The wait a 503 or 429 asks for: its Retry-After header, else its retry_after, else a minute.
qint64 retryAfterSeconds(const HttpReply& reply) {
    bool ok = false;
    const qint64 header = reply.retryAfter.trimmed().toLongLong(&ok);
    return std::max<qint64>(1, ok ? header : reply.json().value(u"retry_after").toInteger(60));
}

// Why: the coordinator's words ("the swarm is full", "preparing this run's initial weights (37%
// written)"), or the status.
QString waitReason(const HttpReply& reply) {
    return reply.json().value(u"error").toString(reply.describe());
}

} // namespace

Admission::Admission(NodeFiles files, CoordinatorClient& client, const Identity& identity, QUrl coordinator,
                     QString pinnedKey, QObject* parent)
    : QObject(parent)
    , m_files(std::move(files))
    , m_client(client)
    , m_identity(identity)
    , m_coordinator(std::move(coordinator))
    , m_pinnedKey(std::move(pinnedKey)) {}

void Admission::setClaims(QJsonObject hardware, QJsonObject bench) {
    m_hardware = std::move(hardware);
    m_bench = std::move(bench);
}

void Admission::start() {
    Q_EMIT progress(QStringLiteral("contacting the coordinator"));
    m_client.get(QStringLiteral("/v1/info"), [this](const HttpReply& reply) {
        if (m_stopped)
            return;
        if (!reply.ok())
            return Q_EMIT retry(QStringLiteral("the coordinator did not answer /v1/info: ") +
                                reply.describe());
        const QJsonObject info = reply.json();
        if (!checkCoordinatorKey(info.value(u"coordinator_key").toString()))
            return;
        m_modelConfig = info.value(u"model").toObject();
        m_stageCount = info.value(u"stages").toInt(m_modelConfig.value(u"stages").toInt(0));
        // A token from an earlier run (a hard pause, a restart) is used again while it is valid.
        Result<QJsonObject> session = m_files.read(kSessionFile);
        const bool sameProfile = session && session->value(u"profile").toObject() == m_profile.toJson();
        if (session && !session->isEmpty() && !sameProfile)
            qInfo("node: the display name or team changed since the last admission: asking to join again");
        if (session && sameProfile &&
            session->value(u"coordinator_key").toString() == Identity::toBase64Url(m_coordinatorKey) &&
            !session->value(u"session_token").toString().isEmpty()) {
            m_sessionToken = session->value(u"session_token").toString();
            m_stage = session->value(u"stage").toInt(-1);
            qInfo("node: resuming the session from an earlier run (stage %d)", m_stage);
            return fetchManifest();
        }
        admit();
    });
}

bool Admission::checkCoordinatorKey(const QString& presented) {
    Result<QByteArray> key = Identity::fromBase64Url(presented, Identity::kPublicKeySize);
    if (!key) {
        Q_EMIT refused(protocol::RefusalKind::Other,
                       QStringLiteral("the coordinator's /v1/info has no valid coordinator_key"));
        return false;
    }
    QString pinned = m_pinnedKey;
    QString source = QStringLiteral("--coordinator-key");
    if (pinned.isEmpty()) {
        Result<QJsonObject> record = m_files.read(kCoordinatorFile);
        if (!record) {
            Q_EMIT failed(QString::fromStdString(record.message()));
            return false;
        }
        pinned = record->value(u"coordinator_key").toString();
        source = QStringLiteral("the key pinned on first use in %1").arg(m_files.path(kCoordinatorFile));
    }
    if (!pinned.isEmpty() && pinned != presented) {
        Q_EMIT refused(
            protocol::RefusalKind::CoordinatorKeyChanged,
            QStringLiteral("refusing the coordinator at %1: it presents the key %2, but %3 is %4. If its "
                           "operator really changed keys, start with --coordinator-key %2 (or delete %5).")
                .arg(m_coordinator.toString(), presented, source, pinned, m_files.path(kCoordinatorFile)));
        return false;
    }
    if (pinned.isEmpty() || !m_pinnedKey.isEmpty()) {
        const Status s =
            m_files.write(kCoordinatorFile, QJsonObject{{QStringLiteral("url"), m_coordinator.toString()},
                                                        {QStringLiteral("coordinator_key"), presented}});
        if (!s) {
            Q_EMIT failed(QString::fromStdString(s.message()));
            return false;
        }
        if (pinned.isEmpty())
            qInfo("node: pinned the coordinator key %s (first use)", qPrintable(presented));
    }
    m_coordinatorKey = *key;
    return true;
}

void Admission::admitAgain() {
    (void)m_files.remove(kSessionFile);
    admit();
}

void Admission::admit() {
    Q_EMIT progress(QStringLiteral("asking to join"));
    m_client.postJson(
        QStringLiteral("/v1/admission/challenge"),
        QJsonObject{{QStringLiteral("node_key"), m_identity.publicKeyBase64()}},
        [this](const HttpReply& challenge) {
            if (m_stopped)
                return;
            if (asksToWait(challenge))
                return Q_EMIT waitlisted(retryAfterSeconds(challenge), waitReason(challenge));
            if (!challenge.ok())
                return Q_EMIT retry(QStringLiteral("admission challenge: ") + challenge.describe());
            const QJsonObject body =
                protocol::makeAdmissionRequest(m_identity, challenge.json().value(u"nonce").toString(),
                                               m_hardware, m_bench, tesseraVersion(), m_profile);
            m_client.postJson(QStringLiteral("/v1/admission"), body,
                              [this](const HttpReply& r) { onAdmission(r); });
        });
}

void Admission::onAdmission(const HttpReply& reply) {
    if (m_stopped)
        return;
    const QJsonObject json = reply.json();
    if (reply.status == 403 || reply.status == 426 || reply.status == 400)
        return Q_EMIT refused(protocol::refusalKindFromName(json.value(u"reason").toString()),
                              QStringLiteral("the coordinator refused this node: ") + reply.describe());
    if (asksToWait(reply))
        return Q_EMIT waitlisted(retryAfterSeconds(reply), waitReason(reply));
    if (!reply.ok())
        return Q_EMIT retry(QStringLiteral("admission: ") + reply.describe());
    m_sessionToken = json.value(u"session_token").toString();
    m_stage = json.value(u"stage").toInt(-1);
    if (json.value(u"node_id").toString() != m_identity.nodeId() || m_sessionToken.isEmpty() || m_stage < 0)
        return Q_EMIT retry(QStringLiteral("admission: the coordinator's answer is incomplete"));
    const Status saved = m_files.write(
        kSessionFile,
        QJsonObject{{QStringLiteral("coordinator_key"), Identity::toBase64Url(m_coordinatorKey)},
                    {QStringLiteral("node_id"), m_identity.nodeId()},
                    {QStringLiteral("session_token"), m_sessionToken},
                    {QStringLiteral("stage"), m_stage},
                    {QStringLiteral("profile"), m_profile.toJson()},
                    {QStringLiteral("admitted_at_ms"), nowMs()}},
        true);
    if (!saved)
        qWarning("node: %s (the next start admits again)", saved.message().c_str());
    qInfo("node: admitted as %s for stage %d", qPrintable(m_identity.nodeId()), m_stage);
    useManifest(QJsonDocument(json.value(u"manifest").toObject()).toJson(QJsonDocument::Compact));
}

void Admission::moveTo(int stage) {
    m_stage = stage;
    // A restart from here on comes back on the new stage without a new admission (the
    // coordinator recorded the assignment before it asked).
    if (Result<QJsonObject> session = m_files.read(kSessionFile); session && !session->isEmpty()) {
        QJsonObject record = *session;
        record.insert(QStringLiteral("stage"), stage);
        record.insert(QStringLiteral("reassigned_at_ms"), nowMs());
        if (Status saved = m_files.write(kSessionFile, record, true); !saved)
            qWarning("node: %s (a restart would come back on stage %d)", saved.message().c_str(),
                     session->value(u"stage").toInt(-1));
    }
    fetchManifest();
}

void Admission::fetchManifest() {
    const int stage = m_stage;
    m_client.get(QStringLiteral("/v1/shards/%1/manifest").arg(stage), [this, stage](const HttpReply& reply) {
        // A reassign since it was asked: the answer is for a stage this node has left.
        if (m_stopped || stage != m_stage)
            return;
        if (reply.status == 404) // the run has no such stage any more: the old session is of no use
            return admitAgain();
        if (asksToWait(reply))
            return Q_EMIT waitlisted(retryAfterSeconds(reply), waitReason(reply));
        if (!reply.ok())
            return Q_EMIT retry(QStringLiteral("stage manifest: ") + reply.describe());
        useManifest(reply.body);
    });
}

void Admission::useManifest(const QByteArray& manifestJson) {
    Result<gpu::ShardManifest> manifest = protocol::parseSignedManifest(manifestJson, m_coordinatorKey);
    if (!manifest)
        return Q_EMIT retry(QString::fromStdString(manifest.message()));
    if (manifest->stage != m_stage)
        return Q_EMIT retry(
            QStringLiteral("the coordinator's manifest is for stage %1, not this node's stage %2")
                .arg(manifest->stage)
                .arg(m_stage));
    // Signed is not enough: an older version of this run is a rollback. The node keeps asking
    // (with back-off) until the coordinator serves its current version again.
    if (Status current = ManifestVersions(m_files).accept(*manifest, m_coordinatorKey); !current)
        return Q_EMIT retry(QString::fromStdString(current.message()));
    Q_EMIT granted(*manifest);
}

} // namespace tessera::node
