// SPDX-License-Identifier: Apache-2.0
// ControlMessages: command names, the request line, and its checks.
#include "protocol/ControlMessages.h"

#include <QJsonDocument>

#include <array>

namespace tessera::protocol {

namespace {

constexpr std::array<const char*, 5> kNames{"status", "pause", "resume", "stop", "set-limit"};
// An echoed unknown command is cut to this many characters.
constexpr qsizetype kEchoedChars = 64;

Error invalid(const QString& what) {
    return makeError(what.toStdString(), ErrorKind::InvalidInput);
}

} // namespace

QString controlCommandName(ControlCommand command) {
    return QLatin1String(kNames[std::size_t(command)]);
}

QStringList controlCommandNames() {
    QStringList names;
    for (const char* name : kNames)
        names << QLatin1String(name);
    return names;
}

QJsonObject toJson(const ControlRequest& request) {
    QJsonObject arguments;
    if (request.command == ControlCommand::Pause && request.hard)
        arguments.insert(QStringLiteral("hard"), true);
    if (request.command == ControlCommand::SetLimit)
        arguments.insert(QStringLiteral("percent"), request.percent);
    return QJsonObject{{QStringLiteral("command"), controlCommandName(request.command)},
                       {QStringLiteral("arguments"), arguments}};
}

QByteArray requestLine(const ControlRequest& request, const QByteArray& token) {
    QJsonObject line = toJson(request);
    line.insert(QStringLiteral("token"), QString::fromLatin1(token));
    return QJsonDocument(line).toJson(QJsonDocument::Compact) + '\n';
}

Result<ControlRequest> parseControlRequest(const QJsonObject& request) {
    const QJsonValue command = request.value(u"command");
    if (!command.isString())
        return invalid(QStringLiteral("a request needs a \"command\" string"));
    ControlRequest out;
    const qsizetype index = controlCommandNames().indexOf(command.toString());
    if (index < 0)
        return invalid(QStringLiteral("unknown command \"%1\" (expected one of: %2)")
                           .arg(command.toString().left(kEchoedChars), controlCommandNames().join(u", ")));
    out.command = ControlCommand(index);
    const QJsonValue arguments = request.value(u"arguments");
    if (!arguments.isUndefined() && !arguments.isNull() && !arguments.isObject())
        return invalid(QStringLiteral("\"arguments\" must be a JSON object"));
    const QJsonObject args = arguments.toObject();
    if (out.command == ControlCommand::Pause) {
        const QJsonValue hard = args.value(u"hard");
        if (!hard.isUndefined() && !hard.isBool())
            return invalid(QStringLiteral("hard: must be true or false"));
        out.hard = hard.toBool();
    }
    if (out.command == ControlCommand::SetLimit) {
        out.percent = args.value(u"percent").toDouble(-1);
        if (!(out.percent >= 1 && out.percent <= 100))
            return invalid(QStringLiteral("percent: must be from 1 to 100"));
    }
    return out;
}

} // namespace tessera::protocol
