// SPDX-License-Identifier: Apache-2.0
#include "protocol/PublicProfile.h"

namespace tessera::protocol {

namespace {

const QString kDisplayName = QStringLiteral("display_name");
const QString kTeam = QStringLiteral("team");

bool printable(char32_t c) {
    switch (QChar::category(c)) {
    case QChar::Other_Control:       // C0, C1, DEL: a name must not move the cursor or ring a bell
    case QChar::Other_Format:        // bidi overrides, zero-width joiners: text that lies about itself
    case QChar::Other_Surrogate:     // a lone surrogate ("\ud800" in JSON) is no character at all
    case QChar::Other_PrivateUse:    // no font agrees on what these look like
    case QChar::Other_NotAssigned:   // unknown to this Unicode version
    case QChar::Separator_Line:      // U+2028
    case QChar::Separator_Paragraph: // U+2029
        return false;
    default:
        return true;
    }
}

Result<QString> profileText(const QJsonObject& profile, const QString& key, const char* field) {
    const QJsonValue v = profile.value(key);
    if (v.isUndefined() || v.isNull())
        return QString();
    if (!v.isString())
        return makeError(std::string(field) + ": must be a string");
    const ProfileTextProblem problem = checkProfileText(v.toString());
    if (problem != ProfileTextProblem::None)
        return makeError(std::string(field) + ": " + profileTextProblemText(problem));
    return cleanProfileText(v.toString());
}

} // namespace

ProfileTextProblem checkProfileText(const QString& text) {
    // Every character, the ones trimming would drop included: "\nAlice" is refused, not cleaned.
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text.at(i);
        char32_t code = c.unicode();
        if (c.isHighSurrogate() && i + 1 < text.size() && text.at(i + 1).isLowSurrogate())
            code = QChar::surrogateToUcs4(c, text.at(++i));
        if (!printable(code)) // a lone surrogate stays one, and is refused as such
            return ProfileTextProblem::NotPrintable;
    }
    if (text.trimmed().normalized(QString::NormalizationForm_C).toUcs4().size() > kMaxProfileTextChars)
        return ProfileTextProblem::TooLong;
    return ProfileTextProblem::None;
}

QString cleanProfileText(const QString& text) {
    return text.trimmed().normalized(QString::NormalizationForm_C);
}

std::string profileTextProblemText(ProfileTextProblem problem) {
    switch (problem) {
    case ProfileTextProblem::None:
        return "fine";
    case ProfileTextProblem::TooLong:
        return "must be at most " + std::to_string(kMaxProfileTextChars) + " characters";
    case ProfileTextProblem::NotPrintable:
        return "must be printable text (no control, format or private-use characters, no line breaks)";
    }
    return "is not valid";
}

QJsonObject PublicProfile::toJson() const {
    QJsonObject o;
    if (!displayName.isEmpty())
        o.insert(kDisplayName, displayName);
    if (!team.isEmpty())
        o.insert(kTeam, team);
    return o;
}

Result<PublicProfile> parsePublicProfile(const QJsonValue& value) {
    if (!value.isObject())
        return makeError("profile: must be an object with display_name and/or team");
    const QJsonObject o = value.toObject();
    for (auto it = o.begin(); it != o.end(); ++it)
        if (it.key() != kDisplayName && it.key() != kTeam)
            return makeError("profile." + it.key().left(64).toStdString() +
                             ": unknown field (expected display_name, team)");
    Result<QString> name = profileText(o, kDisplayName, "profile.display_name");
    if (!name)
        return name.error();
    Result<QString> team = profileText(o, kTeam, "profile.team");
    if (!team)
        return team.error();
    return PublicProfile{*name, *team};
}

Result<PublicProfile> makePublicProfile(const QString& displayName, const QString& team) {
    for (const auto& [text, option] : {std::pair{&displayName, "--display-name"}, std::pair{&team, "--team"}})
        if (const ProfileTextProblem p = checkProfileText(*text); p != ProfileTextProblem::None)
            return makeError(std::string(option) + " " + profileTextProblemText(p));
    return PublicProfile{cleanProfileText(displayName), cleanProfileText(team)};
}

} // namespace tessera::protocol
