// SPDX-License-Identifier: Apache-2.0
#include "NodeRunCommands.h"

#include "common/ShutdownSignals.h"
#include "node/Node.h"
#include "node/NodeLog.h"
#include "control/ControlClient.h"
#include "protocol/SessionMessages.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QJsonDocument>

#include <cmath>
#include <ostream>
#include <variant>

namespace tessera::node {

namespace {

const QString kProgram = QStringLiteral("tessera-node");

std::ostream& operator<<(std::ostream& os, const QString& s) {
    return os << s.toStdString();
}

QCommandLineOption valueOption(const char* name, const char* description, const char* valueName) {
    return QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(description),
                              QString::fromLatin1(valueName));
}

int usage(std::ostream& err, const QString& command, const QString& message) {
    err << kProgram << " " << command << ": " << message << "\nTry 'tessera-node " << command
        << " --help'.\n";
    return ExitUsage;
}

QString humanBytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        ++u;
    }
    return QStringLiteral("%1 %2").arg(bytes, 0, 'f', u == 0 ? 0 : 1).arg(QString::fromLatin1(units[u]));
}

QString statusText(const QJsonObject& s) {
    QString text;
    text += QStringLiteral("state:         %1%2\n")
                .arg(s.value(u"state").toString(), s.value(u"detail").toString().isEmpty()
                                                       ? QString()
                                                       : u" — "_qs + s.value(u"detail").toString());
    text += QStringLiteral("node:          %1\n").arg(s.value(u"node_id").toString());
    text += QStringLiteral("coordinator:   %1\n").arg(s.value(u"coordinator").toString());
    text += QStringLiteral("device:        %1\n").arg(s.value(u"device").toString());
    const int stage = s.value(u"stage").toInt(-1);
    text += QStringLiteral("stage:         %1\n")
                .arg(stage < 0 ? QStringLiteral("not assigned yet") : QString::number(stage));
    const QJsonObject d = s.value(u"download").toObject();
    const double total = d.value(u"total").toDouble();
    if (total > 0) {
        const double bytes = d.value(u"bytes").toDouble();
        text += QStringLiteral("download:      %1 of %2 (%3%)")
                    .arg(humanBytes(bytes), humanBytes(total))
                    .arg(std::floor(bytes / total * 100));
        if (d.contains(u"bytes_per_second"))
            text += QStringLiteral(", %1/s, ETA %2 s")
                        .arg(humanBytes(d.value(u"bytes_per_second").toDouble()))
                        .arg(std::lround(d.value(u"eta_s").toDouble()));
        text += u'\n';
    }
    text += QStringLiteral("compute:       %1% of wall time (limit %2%)%3\n")
                .arg(std::lround(s.value(u"compute_share").toDouble() * 100))
                .arg(std::lround(s.value(u"compute_limit").toDouble() * 100))
                .arg(s.value(u"paused").toBool() ? QStringLiteral(", paused") : QString());
    if (s.contains(u"training")) {
        const QJsonObject t = s.value(u"training").toObject();
        // Tasks are counted under their kinds' names.
        const auto done = [&t](protocol::TaskKind kind) {
            return t.value(protocol::taskKindName(kind)).toInteger();
        };
        const qint64 both = done(protocol::TaskKind::ForwardBackward);
        text += QStringLiteral(
                    "tasks:         %1 forward, %2 backward, %3 failed; step %4; %5 averaging rounds%6\n")
                    .arg(done(protocol::TaskKind::Forward) + both)
                    .arg(done(protocol::TaskKind::Backward) + both)
                    .arg(t.value(u"failed").toInteger())
                    .arg(t.value(u"step").toInteger())
                    .arg(t.value(u"averaging_rounds").toInteger())
                    .arg(t.contains(u"last_loss")
                             ? QStringLiteral("; loss %1").arg(t.value(u"last_loss").toDouble(), 0, 'f', 3)
                             : QString());
    }
    text += QStringLiteral("credits:       %1 (%2 receipts)\n")
                .arg(s.value(u"credits_total").toDouble(), 0, 'f', 6)
                .arg(s.value(u"ledger_receipts").toInteger());
    if (s.contains(u"credits_pending"))
        text += QStringLiteral("pending:       %1 (accepted, granted once an audit of this node covers it)\n")
                    .arg(s.value(u"credits_pending").toDouble(), 0, 'f', 6);
    if (s.value(u"credits_forfeited").toDouble() > 0)
        text += QStringLiteral("forfeited:     %1 (%2)\n")
                    .arg(s.value(u"credits_forfeited").toDouble(), 0, 'f', 6)
                    .arg(s.value(u"last_forfeit_reason").toString());
    if (s.contains(u"retry_in_s"))
        text += QStringLiteral("next try in:   %1 s\n").arg(std::lround(s.value(u"retry_in_s").toDouble()));
    if (s.contains(u"last_error"))
        text += QStringLiteral("last error:    %1\n").arg(s.value(u"last_error").toString());
    return text;
}

// The options of `run`, registered in the order --help lists them.
struct RunCommandLine {
    QCommandLineParser parser;
    const QCommandLineOption help{{QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help.")};
    const QCommandLineOption coordinator =
        valueOption("coordinator", "The coordinator's URL (required): https://HOST:PORT.", "URL");
    const QCommandLineOption dataDir =
        valueOption("data-dir", "This node's folder (one per GPU) [the platform's app-data folder].", "DIR");
    const QCommandLineOption device = valueOption("device", "What computes: cpu or cuda:N [cpu].", "DEVICE");
    const QCommandLineOption limit =
        valueOption("gpu-limit", "Share of the time spent computing, 1-100 [70].", "PCT");
    const QCommandLineOption key = valueOption(
        "coordinator-key",
        "The coordinator's Ed25519 key (base64url), pinned instead of trusting the first one seen.", "KEY");
    const QCommandLineOption ca = valueOption(
        "coordinator-ca", "Trust this certificate (PEM) for the coordinator's TLS, e.g. its self-signed one.",
        "FILE");
    const QCommandLineOption rate =
        valueOption("max-download-rate", "Cap shard downloads at this many KiB/s [no cap].", "KIBPS");
    const QCommandLineOption bench = valueOption("bench-seconds", "The admission benchmark's time budget [3].", "S");
    const QCommandLineOption heartbeat = valueOption("heartbeat-ms", "Session heartbeat interval [10000].", "MS");
    const QCommandLineOption credits =
        valueOption("credits-poll-ms", "How often to fetch new credit receipts [60000].", "MS");
    const QCommandLineOption displayName =
        valueOption("display-name",
                    "Show this node on the coordinator's public leaderboard by this name (at most 32 "
                    "characters) [none: anonymous].",
                    "NAME");
    const QCommandLineOption team =
        valueOption("team", "Count this node's credits for this team on the leaderboard [none].", "NAME");

    RunCommandLine() {
        parser.addOptions({help, coordinator, dataDir, device, limit, key, ca, rate, bench, heartbeat, credits,
                           displayName, team});
    }

    // The option's number within lo..hi into `into` (left as it is when the option is not given);
    // false when it is not a number in range.
    bool number(const QCommandLineOption& option, double lo, double hi, double& into) const {
        if (!parser.isSet(option))
            return true;
        bool ok = false;
        const double v = parser.value(option).toDouble(&ok);
        if (!ok || v < lo || v > hi)
            return false;
        into = v;
        return true;
    }
};

// The node's options from a parsed command line, or what is wrong with it.
std::variant<NodeOptions, QString> readRunOptions(const RunCommandLine& c) {
    const QCommandLineParser& parser = c.parser;
    NodeOptions o;
    o.coordinator = QUrl(parser.value(c.coordinator));
    if (!parser.isSet(c.coordinator))
        return QStringLiteral("--coordinator is required");
    o.dataDir = parser.isSet(c.dataDir) ? parser.value(c.dataDir) : NodeFiles::defaultDataDir();
    if (parser.isSet(c.device)) {
        o.device = parser.value(c.device);
        bool ok = o.device == u"cpu";
        if (o.device.startsWith(u"cuda:"))
            o.device.mid(5).toInt(&ok);
        if (!ok)
            return QStringLiteral("--device wants cpu or cuda:N, got '%1'").arg(o.device);
    }
    double pct = 70, kib = 0, seconds = 3, heartbeatMs = 10'000, creditsMs = 60'000;
    if (!c.number(c.limit, 1, 100, pct))
        return QStringLiteral("--gpu-limit must be a percentage from 1 to 100");
    if (!c.number(c.rate, 1, 1e9, kib))
        return QStringLiteral("--max-download-rate must be a positive number of KiB/s");
    if (!c.number(c.bench, 0.5, 600, seconds))
        return QStringLiteral("--bench-seconds must be from 0.5 to 600");
    if (!c.number(c.heartbeat, 100, 600'000, heartbeatMs) || !c.number(c.credits, 100, 86'400'000, creditsMs))
        return QStringLiteral("--heartbeat-ms / --credits-poll-ms out of range");
    o.computeLimit = pct / 100;
    o.maxDownloadBytesPerSecond = qint64(kib * 1024);
    o.benchSeconds = seconds;
    o.heartbeatInterval = std::chrono::milliseconds(qint64(heartbeatMs));
    o.creditsPollInterval = std::chrono::milliseconds(qint64(creditsMs));
    o.coordinatorKey = parser.value(c.key);
    o.coordinatorCa = parser.value(c.ca);
    Result<protocol::PublicProfile> profile =
        protocol::makePublicProfile(parser.value(c.displayName), parser.value(c.team));
    if (!profile)
        return QString::fromStdString(profile.message());
    o.profile = *profile;
    return o;
}

// Runs the node until it finishes or a signal stops it: the process's exit code.
int runNode(const NodeOptions& o, std::ostream& err) {
    if (Status s = NodeFiles(o.dataDir).ensureExists(); !s) {
        err << kProgram << ": " << s.message() << "\n";
        return ExitError;
    }
    installNodeLog(LogSettings{NodeFiles(o.dataDir).logPath()});
    Result<std::unique_ptr<ShutdownSignals>> signals = ShutdownSignals::install();
    if (!signals) {
        err << kProgram << ": " << signals.message() << "\n";
        return ExitError;
    }
    Node node(o);
    QObject::connect(&node, &Node::finished, [](int code) { QCoreApplication::exit(code); });
    QObject::connect(signals->get(), &ShutdownSignals::received, &node,
                     [&node](int signal) { node.stop(QStringLiteral("signal %1").arg(signal)); });
    if (Status s = node.start(); !s) {
        qCritical("%s", s.message().c_str());
        return ExitError;
    }
    return QCoreApplication::exec();
}

} // namespace

int runNodeCommand(const QStringList& arguments, std::ostream& out, std::ostream& err) {
    RunCommandLine commandLine;
    QCommandLineParser& parser = commandLine.parser;
    if (!parser.parse(arguments))
        return usage(err, QStringLiteral("run"), parser.errorText());
    if (parser.isSet(commandLine.help)) {
        out << QStringLiteral("Usage: tessera-node run --coordinator URL [options]\n\nJoin the swarm and "
                              "compute until stopped.\n")
            << parser.helpText().section(u'\n', 1);
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return usage(err, QStringLiteral("run"),
                     QStringLiteral("unexpected argument '%1'").arg(parser.positionalArguments().first()));
    std::variant<NodeOptions, QString> options = readRunOptions(commandLine);
    if (const QString* error = std::get_if<QString>(&options))
        return usage(err, QStringLiteral("run"), *error);
    return runNode(std::get<NodeOptions>(options), err);
}

std::optional<protocol::ControlCommand> controlVerb(const QString& verb) {
    if (verb == u"limit")
        return protocol::ControlCommand::SetLimit;
    const qsizetype index = protocol::controlCommandNames().indexOf(verb);
    if (index < 0 || protocol::ControlCommand(index) == protocol::ControlCommand::SetLimit)
        return std::nullopt;
    return protocol::ControlCommand(index);
}

int runControlCommand(const QStringList& arguments, std::ostream& out, std::ostream& err) {
    using protocol::ControlCommand;
    const QString command = arguments.first();
    protocol::ControlRequest request;
    request.command = controlVerb(command).value_or(ControlCommand::Status);
    QCommandLineParser parser;
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const auto dataDir =
        valueOption("data-dir", "The running node's folder [the platform's app-data folder].", "DIR");
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Print the status as JSON."));
    const QCommandLineOption hard(
        QStringLiteral("hard"),
        QStringLiteral("Exit the node so that all GPU memory is freed; it resumes on the next start."));
    parser.addOptions({help, dataDir});
    if (request.command == ControlCommand::Status)
        parser.addOption(json);
    if (request.command == ControlCommand::Pause)
        parser.addOption(hard);
    if (!parser.parse(arguments))
        return usage(err, command, parser.errorText());
    if (parser.isSet(help)) {
        out << QStringLiteral("Usage: tessera-node %1 [options]%2\n")
                   .arg(command,
                        request.command == ControlCommand::SetLimit ? QStringLiteral(" PCT") : QString())
            << parser.helpText().section(u'\n', 1);
        return 0;
    }
    if (request.command == ControlCommand::SetLimit) {
        bool ok = false;
        request.percent = parser.positionalArguments().value(0).toDouble(&ok);
        if (parser.positionalArguments().size() != 1 || !ok || request.percent < 1 || request.percent > 100)
            return usage(err, command, QStringLiteral("wants one percentage from 1 to 100"));
    } else if (!parser.positionalArguments().isEmpty()) {
        return usage(err, command,
                     QStringLiteral("unexpected argument '%1'").arg(parser.positionalArguments().first()));
    }
    request.hard = request.command == ControlCommand::Pause && parser.isSet(hard);
    const QString dir = parser.isSet(dataDir) ? parser.value(dataDir) : NodeFiles::defaultDataDir();
    Result<QJsonObject> reply = ControlClient::call(dir, request);
    if (!reply) {
        err << kProgram << " " << command << ": " << reply.message() << "\n";
        return ExitError;
    }
    if (reply->contains(u"error")) {
        err << kProgram << " " << command << ": " << reply->value(u"error").toString() << "\n";
        return ExitError;
    }
    if (request.command == ControlCommand::Status && parser.isSet(json))
        out << QJsonDocument(*reply).toJson(QJsonDocument::Indented).toStdString();
    else if (request.command != ControlCommand::Stop && !request.hard)
        out << statusText(*reply);
    else
        out << "state: " << reply->value(u"state").toString() << "\n";
    return 0;
}

} // namespace tessera::node
