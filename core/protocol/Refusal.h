// SPDX-License-Identifier: Apache-2.0
#pragma once
// Refusal: why a node cannot take part, for good (not "try again later") — what the coordinator's
// admission answers with a 403 ("reason"), and what a node that exits refused records for the
// desktop app (refusal.json in its data folder), so that the app explains it by kind, never by
// reading the words.

#include <QJsonObject>
#include <QString>
#include <QtGlobal>

#include <optional>

namespace tessera::protocol {

enum class RefusalKind : quint8 {
    Other,                 // the message says why
    ClientTooOld,          // this Tessera is older than the coordinator accepts
    NoStageFits,           // no stage of the model fits this machine's memory
    CoordinatorKeyChanged, // the coordinator at this address is not the one pinned on first use
    Banned,                // this node (or its network) failed the coordinator's checks of its work
};

struct Refusal {
    RefusalKind kind = RefusalKind::Other;
    QString message;
};

QString
refusalKindName(RefusalKind kind); // "other", "client_too_old", "no_stage_fits", "coordinator_key_changed"
RefusalKind refusalKindFromName(const QString& name); // Other for a name this build does not know

// {"kind": …, "message": …}
QJsonObject toJson(const Refusal& refusal);
std::optional<Refusal> parseRefusal(const QJsonObject& json);

} // namespace tessera::protocol
