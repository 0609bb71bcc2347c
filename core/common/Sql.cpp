// SPDX-License-Identifier: Apache-2.0
#include "common/Sql.h"

#include <QSqlError>

namespace tessera::sql {

Error error(const QString& what, const QSqlError& e) {
    // databaseText() is the server's own words ("UNIQUE constraint failed: ..."); driverText()
    // only says which call failed.
    QString text = e.databaseText().trimmed();
    if (text.isEmpty())
        text = e.text().trimmed();
    return makeError(QString(what + QStringLiteral(": ") + text).toStdString());
}

Result<QSqlQuery> exec(const QSqlDatabase& db, const QString& sql, const QVariantList& values) {
    if (!db.isOpen())
        return makeError("database connection is closed");
    QSqlQuery query(db);
    query.setForwardOnly(true);
    if (values.isEmpty()) {
        if (!query.exec(sql))
            return error(QStringLiteral("SQL failed [") + sql + u']', query.lastError());
        return query;
    }
    if (!query.prepare(sql))
        return error(QStringLiteral("SQL prepare failed [") + sql + u']', query.lastError());
    for (const QVariant& v : values)
        query.addBindValue(v);
    if (!query.exec())
        return error(QStringLiteral("SQL failed [") + sql + u']', query.lastError());
    return query;
}

Result<std::optional<QVariant>> scalar(const QSqlDatabase& db, const QString& sql,
                                       const QVariantList& values) {
    Result<QSqlQuery> q = exec(db, sql, values);
    if (!q)
        return q.error();
    if (!q->next())
        return std::optional<QVariant>();
    return std::optional<QVariant>(q->value(0));
}

QVariant nullable(const std::optional<int>& value) {
    return value ? QVariant(*value) : QVariant(QMetaType::fromType<int>());
}

std::optional<int> optionalInt(const QVariant& value) {
    if (value.isNull())
        return std::nullopt;
    return value.toInt();
}

} // namespace tessera::sql
