// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeRunCommands: `tessera-node run` (the node itself) and the commands that talk to a running
// node through its control socket: status, pause, resume, stop, limit.

#include "protocol/ControlMessages.h"

#include <QStringList>

#include <iosfwd>
#include <optional>

namespace tessera::node {

// arguments start with the command name ("run", "status", ...). Returns the exit code.
int runNodeCommand(const QStringList& arguments, std::ostream& out, std::ostream& err);
int runControlCommand(const QStringList& arguments, std::ostream& out, std::ostream& err);
// The control command a command-line verb stands for: the command's own name, or "limit" for
// set-limit; nullopt for any other word.
std::optional<protocol::ControlCommand> controlVerb(const QString& verb);

} // namespace tessera::node
