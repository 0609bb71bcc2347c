#pragma once
// ClientVersion: a node's "MAJOR.MINOR.PATCH" release, compared to the coordinator's minimum.

#include "Result.h"

#include <QString>

#include <compare>

namespace tessera::coordinator {

struct ClientVersion {
    int major = 0;
    int minor = 0;
    int patch = 0;

    // Strict: three dot-separated decimal numbers without signs or leading zeros, each at most
    // six digits, so one version has one spelling.
    static Result<ClientVersion> parse(const QString& text);
    QString toString() const;

    auto operator<=>(const ClientVersion&) const = default;
};

} // namespace tessera::coordinator
