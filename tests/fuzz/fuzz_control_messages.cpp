// SPDX-License-Identifier: Apache-2.0
// ControlMessages: one request line of a node's local control socket, read as ControlServer reads it
// (JSON object, then parseControlRequest; the token is compared before). A request that parses
// survives its own encoding (requestLine) unchanged.
#include "FuzzCheck.h"
#include "protocol/ControlMessages.h"

#include <QJsonDocument>

using namespace tessera;
using namespace tessera::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray line(reinterpret_cast<const char*>(data), qsizetype(size));
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(line, &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return 0;
    const Result<ControlRequest> request = parseControlRequest(document.object());
    tessera::fuzz::verdict("request", request);
    if (!request) {
        FUZZ_CHECK(request.kind() == ErrorKind::InvalidInput && !request.message().empty());
        return 0;
    }
    FUZZ_CHECK(controlCommandNames().contains(controlCommandName(request->command)));
    if (request->command == ControlCommand::SetLimit)
        FUZZ_CHECK(request->percent >= 1 && request->percent <= 100);

    const QByteArray sent = requestLine(*request, "0123456789abcdef");
    FUZZ_CHECK(sent.endsWith('\n') && sent.count('\n') == 1);
    const QJsonDocument back = QJsonDocument::fromJson(sent);
    FUZZ_CHECK(back.isObject() && back.object().value(u"token").toString() == u"0123456789abcdef");
    const Result<ControlRequest> again = parseControlRequest(back.object());
    FUZZ_CHECK(again);
    FUZZ_CHECK(again->command == request->command);
    FUZZ_CHECK(again->hard == (request->command == ControlCommand::Pause && request->hard));
    FUZZ_CHECK(again->percent == (request->command == ControlCommand::SetLimit ? request->percent : 0));
    return 0;
}
