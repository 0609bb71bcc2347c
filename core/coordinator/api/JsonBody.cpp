// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/JsonBody.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QRegularExpression>

namespace tessera::coordinator {

Result<QJsonObject> parseJsonObject(const QByteArray& body) {
    if (body.isEmpty())
        return makeError("body: missing (expected a JSON object)");
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(body, &error);
    if (error.error != QJsonParseError::NoError)
        return makeError("body: not valid JSON at offset " + std::to_string(error.offset) + " (" +
                         error.errorString().toStdString() + ")");
    if (!doc.isObject())
        return makeError("body: must be a JSON object");
    return doc.object();
}

qint64 parseIdSegment(const QString& text) {
    // anchoredPattern, not ^...$: "$" also matches before a final newline ("17\n").
    static const QRegularExpression id(
        QRegularExpression::anchoredPattern(QStringLiteral("0|[1-9][0-9]{0,8}")));
    return id.match(text).hasMatch() ? text.toLongLong() : -1;
}

} // namespace tessera::coordinator
