// SPDX-License-Identifier: Apache-2.0
#pragma once
// ClientVersion: a node's "MAJOR.MINOR.PATCH" release, compared to the coordinator's minimum.

#include "base/Result.h"

#include <QString>

#include <compare>

namespace tessera::protocol {

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

// The oldest release that speaks this build's session protocol (frames of version 2: see
// TaskFrame.h). A coordinator admits nothing older, whatever its --min-client-version, and closes
// the session of an older node admitted before an upgrade, saying why.
inline constexpr ClientVersion kOldestCompatibleClient{0, 2, 0};

} // namespace tessera::protocol
