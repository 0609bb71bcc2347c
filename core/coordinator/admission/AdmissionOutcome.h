// SPDX-License-Identifier: Apache-2.0
#pragma once
// AdmissionOutcome: what POST /v1/admission answers, one alternative per HTTP status.

#include "protocol/Refusal.h"

#include <QString>

#include <string>
#include <variant>

namespace tessera::coordinator {

// 200: the node may open its session and fetch its stage's shard.
struct Admitted {
    QString nodeId;
    QString sessionToken; // base64url of 32 random bytes; the coordinator keeps only its hash
    int stage = 0;
};
// 403: retrying the same request cannot help (too old a client, too little memory).
struct Denied {
    std::string reason;
    protocol::RefusalKind kind = protocol::RefusalKind::Other;
    int httpStatus = 403;
};
// 401: the request does not prove the key (signature) or is not fresh (nonce).
struct Unauthorized {
    std::string reason;
};
// 503 with Retry-After: the node fits, but there is no room for it now.
struct Waitlisted {
    qint64 retryAfterSeconds = 0;
    std::string reason;
};

using AdmissionOutcome = std::variant<Admitted, Denied, Unauthorized, Waitlisted>;

inline int httpStatusOf(const AdmissionOutcome& outcome) {
    struct Visitor {
        int operator()(const Admitted&) const { return 200; }
        int operator()(const Denied& d) const { return d.httpStatus; }
        int operator()(const Unauthorized&) const { return 401; }
        int operator()(const Waitlisted&) const { return 503; }
    };
    return std::visit(Visitor{}, outcome);
}

} // namespace tessera::coordinator
