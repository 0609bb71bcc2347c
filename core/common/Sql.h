// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sql: runs one statement with bound values and turns Qt SQL errors into Result messages.

#include "base/Result.h"

#include <QSqlDatabase>
#include <QSqlQuery>
#include <QString>
#include <QVariant>
#include <QVariantList>

#include <optional>

namespace tessera::sql {

// Runs sql on db. With values, the statement is prepared and the values bound to its '?'
// placeholders in order: user data never becomes SQL text. Without values it runs as is,
// because PostgreSQL cannot prepare DDL or BEGIN/COMMIT.
// The error carries the driver's text and the statement (which holds no user data).
Result<QSqlQuery> exec(const QSqlDatabase& db, const QString& sql, const QVariantList& values = {});

// The first column of the first row, or nothing when there is no row.
Result<std::optional<QVariant>> scalar(const QSqlDatabase& db, const QString& sql,
                                       const QVariantList& values = {});

Error error(const QString& what, const QSqlError& e);

// A bound value for an optional integer column: SQL NULL when absent.
QVariant nullable(const std::optional<int>& value);
std::optional<int> optionalInt(const QVariant& value);

} // namespace tessera::sql
