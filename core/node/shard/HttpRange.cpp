// SPDX-License-Identifier: Apache-2.0
// HttpRange: Content-Range and error bodies, read strictly.
#include "node/shard/HttpRange.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace tessera::node {

// "bytes FIRST-LAST/SIZE": the first byte and the size; false when malformed.
bool parseContentRange(const QByteArray& value, qint64& first, qint64& size) {
    if (!value.startsWith("bytes "))
        return false;
    const QByteArray spec = value.mid(6).trimmed();
    const qsizetype dash = spec.indexOf('-');
    const qsizetype slash = spec.indexOf('/');
    if (dash <= 0 || slash <= dash)
        return false;
    bool ok1 = false;
    bool ok2 = false;
    bool ok3 = false;
    first = spec.left(dash).toLongLong(&ok1);
    const qint64 last = spec.mid(dash + 1, slash - dash - 1).toLongLong(&ok2);
    size = spec.mid(slash + 1).toLongLong(&ok3);
    return ok1 && ok2 && ok3 && first <= last && last == size - 1;
}

// What the coordinator said in an error body: its JSON "error", else printable text only (it
// comes from the network and ends up in a log and on a screen).
QString errorText(const QByteArray& body) {
    const QJsonValue error = QJsonDocument::fromJson(body).object().value(u"error");
    QString text = error.isString() ? error.toString() : QString::fromUtf8(body).trimmed();
    for (QChar& c : text) {
        if (!c.isPrint())
            c = u'?';
    }
    return text.left(300);
}

} // namespace tessera::node
