// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpRange: what a shard download reads of the coordinator's HTTP answers — the range a 206
// carries, and the words of an error body fit for a log and a screen.

#include <QByteArray>
#include <QString>

namespace tessera::node {

// "bytes FIRST-LAST/SIZE": the first byte and the size; false when malformed.
bool parseContentRange(const QByteArray& value, qint64& first, qint64& size);

// What the coordinator said in an error body: its JSON "error", else printable text only (it
// comes from the network and ends up in a log and on a screen), at most 300 characters.
QString errorText(const QByteArray& body);

} // namespace tessera::node
