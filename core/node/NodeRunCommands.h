#pragma once
// NodeRunCommands: `tessera-node run` (the node itself) and the commands that talk to a running
// node through its control socket: status, pause, resume, stop, limit.

#include <QStringList>

#include <iosfwd>

namespace tessera::node {

// arguments start with the command name ("run", "status", ...). Returns the exit code.
int runNodeCommand(const QStringList& arguments, std::ostream& out, std::ostream& err);
int runControlCommand(const QStringList& arguments, std::ostream& out, std::ostream& err);

} // namespace tessera::node
