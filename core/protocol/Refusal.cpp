// SPDX-License-Identifier: Apache-2.0
// Refusal: kind names and the record's two fields.
#include "protocol/Refusal.h"

#include <array>

namespace tessera::protocol {

namespace {

constexpr std::array<const char*, 5> kNames{"other", "client_too_old", "no_stage_fits",
                                            "coordinator_key_changed", "banned"};

} // namespace

QString refusalKindName(RefusalKind kind) {
    return QLatin1String(kNames[std::size_t(kind)]);
}

RefusalKind refusalKindFromName(const QString& name) {
    for (std::size_t i = 0; i < kNames.size(); ++i)
        if (name == QLatin1String(kNames[i]))
            return RefusalKind(i);
    return RefusalKind::Other;
}

QJsonObject toJson(const Refusal& refusal) {
    return QJsonObject{{QStringLiteral("kind"), refusalKindName(refusal.kind)},
                       {QStringLiteral("message"), refusal.message}};
}

std::optional<Refusal> parseRefusal(const QJsonObject& json) {
    if (!json.value(u"kind").isString() || !json.value(u"message").isString())
        return std::nullopt;
    return Refusal{refusalKindFromName(json.value(u"kind").toString()), json.value(u"message").toString()};
}

} // namespace tessera::protocol
