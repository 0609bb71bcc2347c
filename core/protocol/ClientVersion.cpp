// SPDX-License-Identifier: Apache-2.0
#include "protocol/ClientVersion.h"

#include <QRegularExpression>

namespace tessera::protocol {

Result<ClientVersion> ClientVersion::parse(const QString& text) {
    // anchoredPattern: the whole text (a "$" would also match before a final newline, so "0.2.0\n"
    // would pass and be signed and stored as another spelling of 0.2.0).
    static const QRegularExpression pattern(QRegularExpression::anchoredPattern(
        QStringLiteral("(0|[1-9][0-9]{0,5})\\.(0|[1-9][0-9]{0,5})\\.(0|[1-9][0-9]{0,5})")));
    const QRegularExpressionMatch m = pattern.match(text);
    if (!m.hasMatch())
        return makeError("must be MAJOR.MINOR.PATCH (e.g. 0.1.0)");
    return ClientVersion{m.captured(1).toInt(), m.captured(2).toInt(), m.captured(3).toInt()};
}

QString ClientVersion::toString() const {
    return QStringLiteral("%1.%2.%3").arg(major).arg(minor).arg(patch);
}

} // namespace tessera::protocol
