// SPDX-License-Identifier: Apache-2.0
#include "coordinator/store/StageVersionStore.h"

#include "common/Sql.h"
#include "coordinator/store/Database.h"

namespace tessera::coordinator {

namespace {

const QString kSelect = QStringLiteral("SELECT stage, version, step, file, file_size, sha256, manifest_json, "
                                       "created_at FROM stage_versions WHERE stage = ? AND refused = '' ");

Result<std::optional<StageVersion>> readOne(Result<QSqlQuery> q) {
    if (!q)
        return q.error();
    if (!q->next())
        return std::optional<StageVersion>();
    StageVersion v;
    v.stage = q->value(0).toInt();
    v.version = q->value(1).toLongLong();
    v.step = q->value(2).toLongLong();
    v.file = q->value(3).toString();
    v.fileSize = q->value(4).toLongLong();
    v.sha256 = q->value(5).toString();
    v.manifestJson = q->value(6).toString();
    v.createdAtMs = q->value(7).toLongLong();
    return std::optional<StageVersion>(v);
}

} // namespace

Status StageVersionStore::add(const StageVersion& v) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("INSERT INTO stage_versions (stage, version, step, file, file_size, "
                                 "sha256, manifest_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                  {v.stage, v.version, v.step, v.file, v.fileSize, v.sha256, v.manifestJson, v.createdAtMs});
    return q ? Status() : Status(q.error());
}

Result<std::optional<StageVersion>> StageVersionStore::latest(int stage, std::optional<qint64> below) {
    if (below)
        return readOne(sql::exec(m_db.connection(),
                                 kSelect + QStringLiteral("AND version < ? ORDER BY version DESC LIMIT 1"),
                                 {stage, *below}));
    return readOne(
        sql::exec(m_db.connection(), kSelect + QStringLiteral("ORDER BY version DESC LIMIT 1"), {stage}));
}

Status StageVersionStore::refuse(int stage, qint64 version, const QString& reason) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("UPDATE stage_versions SET refused = ? WHERE stage = ? AND version = ?"),
                  {reason.isEmpty() ? QStringLiteral("damaged") : reason, stage, version});
    return q ? Status() : Status(q.error());
}

Result<qint64> StageVersionStore::highestVersion(int stage) {
    Result<QSqlQuery> q =
        sql::exec(m_db.connection(),
                  QStringLiteral("SELECT MAX(version) FROM stage_versions WHERE stage = ?"), {stage});
    if (!q)
        return q.error();
    return q->next() ? q->value(0).toLongLong() : qint64(0);
}

Result<std::optional<StageVersion>> StageVersionStore::find(int stage, qint64 version) {
    return readOne(
        sql::exec(m_db.connection(), kSelect + QStringLiteral("AND version = ?"), {stage, version}));
}

} // namespace tessera::coordinator
