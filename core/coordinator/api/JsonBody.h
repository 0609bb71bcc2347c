// SPDX-License-Identifier: Apache-2.0
#pragma once
// JsonBody: a request body that must be one JSON object, and the 400 a client gets otherwise.

#include "base/Result.h"

#include <QByteArray>
#include <QJsonObject>

namespace tessera::coordinator {

// The error reads "body: ..." (where the JSON breaks, or what it is instead of an object).
Result<QJsonObject> parseJsonObject(const QByteArray& body);

// A path segment holding a decimal id ("0", "17"; no sign, no leading zero, at most 9 digits),
// or -1.
qint64 parseIdSegment(const QString& text);

} // namespace tessera::coordinator
