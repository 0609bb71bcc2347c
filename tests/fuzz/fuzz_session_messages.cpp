// SPDX-License-Identifier: Apache-2.0
// SessionMessages: a /v1/session text message as either side reads it (QWebSocket hands over a
// QString), and the same JSON as a binary message's header. A message that parses is of a type that
// travels that way, and its own encoding (toText) parses back to the same JSON.
#include "FuzzCheck.h"
#include "protocol/SessionMessages.h"

#include <QJsonDocument>

using namespace tessera;
using namespace tessera::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QString text = QString::fromUtf8(reinterpret_cast<const char*>(data), qsizetype(size));
    for (Direction direction : {Direction::ToNode, Direction::ToCoordinator}) {
        const Result<SessionMessage> parsed = parseSessionText(text, direction, kSessionTextMaxBytes);
        tessera::fuzz::verdict(direction == Direction::ToNode ? "to a node" : "to the coordinator", parsed);
        if (!parsed) {
            FUZZ_CHECK(parsed.kind() == ErrorKind::InvalidInput);
            continue;
        }
        const MessageType type = typeOf(*parsed);
        FUZZ_CHECK(directionOf(type) == direction);
        FUZZ_CHECK(int(transportOf(type)) & int(Transport::Text));
        const QJsonObject json = toJson(*parsed);
        FUZZ_CHECK(json.value(u"type").toString() == messageTypeName(type));
        // One message, one meaning: what a peer sends back parses to the same fields.
        const Result<SessionMessage> again =
            parseSessionText(toText(*parsed), direction, kSessionTextMaxBytes);
        FUZZ_CHECK(again);
        FUZZ_CHECK(typeOf(*again) == type);
        FUZZ_CHECK(toJson(*again) == json);
    }

    // The same JSON as the header of a binary message.
    const QJsonDocument doc =
        QJsonDocument::fromJson(QByteArray(reinterpret_cast<const char*>(data), qsizetype(size)));
    if (doc.isObject()) {
        for (Direction direction : {Direction::ToNode, Direction::ToCoordinator}) {
            const Result<SessionMessage> parsed =
                parseSessionMessage(doc.object(), direction, Transport::Binary);
            if (parsed)
                FUZZ_CHECK(int(transportOf(typeOf(*parsed))) & int(Transport::Binary));
        }
        if (const std::optional<qint64> id = readableTaskId(doc.object()))
            FUZZ_CHECK(*id >= 0);
    }
    return 0;
}
