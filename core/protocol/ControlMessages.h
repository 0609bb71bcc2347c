// SPDX-License-Identifier: Apache-2.0
#pragma once
// ControlMessages: the commands of a node's local control socket, typed. One request line each way:
// {"token":"…","command":"<name>","arguments":{…}} answered by {"ok":true,…} or
// {"ok":false,"error":"…"} (see node/control/ControlServer). The command names appear here and
// nowhere else.

#include "base/Result.h"

#include <QByteArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QtGlobal>

namespace tessera::protocol {

enum class ControlCommand : quint8 {
    Status,   // the node's state, download, training, credits
    Pause,    // soft pause (compute stops after the running microbatch); hard: the process exits
    Resume,   // undo a soft pause
    Stop,     // the process exits cleanly
    SetLimit, // the share of time the engine may compute, in percent (1..100), kept across restarts
};

struct ControlRequest {
    ControlCommand command = ControlCommand::Status;
    bool hard = false;  // Pause
    double percent = 0; // SetLimit
};

QString controlCommandName(ControlCommand command); // "status", "pause", "resume", "stop", "set-limit"
QStringList controlCommandNames();

// {"command": …, "arguments": {…}}: the request line without its token.
QJsonObject toJson(const ControlRequest& request);
// The line a client sends: {"token": …, "command": …, "arguments": {…}} and a newline.
QByteArray requestLine(const ControlRequest& request, const QByteArray& token);
// Reads "command" and "arguments" of a request line. Errors (ErrorKind::InvalidInput) name what is
// wrong: an unknown command with the known ones, arguments that are not an object, a percent out of
// range.
Result<ControlRequest> parseControlRequest(const QJsonObject& request);

} // namespace tessera::protocol
