// SPDX-License-Identifier: Apache-2.0
#pragma once
// PrivateSocketDir: where this user's local sockets live — a directory no other local user can
// create names in — and who is listening on the other end of a local socket.
//
// A name in the shared temporary folder can be taken first by any local user (a socket they
// listen on, or a file): the owner of that name then decides whether our program starts. So
// sockets go under $XDG_RUNTIME_DIR (systemd's per-user 0700 tmpfs) and, where it is unset or
// unusable, under <temp>/tessera-<uid>, created 0700 and refused when it is not ours.

#include "base/Result.h"

#include <QString>

#include <optional>

namespace tessera {

class PrivateSocketDir final {
public:
    // $XDG_RUNTIME_DIR/tessera when XDG_RUNTIME_DIR is an absolute directory this user owns with
    // no access for others; otherwise <temp>/tessera-<uid>. Created (0700) when missing. An
    // error names the directory, its owner and the way out, e.g. when another user created
    // <temp>/tessera-<uid> first.
    static Result<QString> path();
    // What path() would return, without creating or checking anything (a name to show or to
    // compare with; use path() before trusting it).
    static QString candidate();

    // The uid of the process that listens on the other end of a connected local socket
    // (SO_PEERCRED), or nullopt where the system cannot tell.
    static std::optional<unsigned> peerUid(qintptr socketDescriptor);
    // This process's effective uid.
    static unsigned ownUid();
};

} // namespace tessera
