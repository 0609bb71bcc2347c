// SPDX-License-Identifier: Apache-2.0
#pragma once
// PublicProfile: what a volunteer chooses to show of themselves on the coordinator's leaderboard — a
// display name and a team, both optional (opt-in: a node that sends neither is "anonymous") — and
// the rules each such text follows wherever it is typed or received (the app's settings, the node's
// command line, the coordinator's admission): at most kMaxProfileTextChars characters once trimmed,
// printable, no control, format or private-use characters. The coordinator stores the checked text,
// not what was sent.

#include "base/Result.h"

#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace tessera::protocol {

inline constexpr qsizetype kMaxProfileTextChars = 32; // Unicode code points, after trimming

enum class ProfileTextProblem {
    None,
    TooLong,      // more than kMaxProfileTextChars once trimmed
    NotPrintable, // a control, format, private-use, unassigned or line-separator character
};

// What is wrong with a text as a display name or team; None for an empty one (nothing shown).
ProfileTextProblem checkProfileText(const QString& text);
// The text as stored and shown: trimmed and in Unicode's composed form (NFC). Only for a text
// checkProfileText accepts.
QString cleanProfileText(const QString& text);
// "must be at most 32 characters", "must be printable (no control characters)": for the
// coordinator's 400 and the node's usage error (the app words it through tr()).
std::string profileTextProblemText(ProfileTextProblem problem);

struct PublicProfile {
    QString displayName; // cleaned; empty: not shown by name
    QString team;        // cleaned; empty: no team

    bool isEmpty() const { return displayName.isEmpty() && team.isEmpty(); }
    // {"display_name": …, "team": …}, each member only when set; {} when neither is.
    QJsonObject toJson() const;
    bool operator==(const PublicProfile&) const = default;
};

// The admission request's "profile" member: an object with at most display_name and team, each a
// string that checkProfileText accepts; an error names the field ("profile.team: must be ...").
// The texts come back cleaned.
Result<PublicProfile> parsePublicProfile(const QJsonValue& value);
// Checks and cleans what the node was started with; an error names the option.
Result<PublicProfile> makePublicProfile(const QString& displayName, const QString& team);

} // namespace tessera::protocol
