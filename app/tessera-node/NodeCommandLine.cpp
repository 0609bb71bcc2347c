// SPDX-License-Identifier: Apache-2.0
#include "NodeCommandLine.h"

#include "LedgerCommand.h"
#include "NodeRunCommands.h"
#include "ShardInspect.h"
#include "common/Version.h"
#include "device/BenchCommand.h"
#include "device/BuildInfo.h"
#include "node/NodeFiles.h"

#include <QCommandLineParser>
#include <QJsonDocument>

#include <ostream>

namespace tessera::node {

namespace {

const QString kProgram = QStringLiteral("tessera-node");

std::ostream& operator<<(std::ostream& os, const QString& s) {
    return os << s.toStdString();
}

} // namespace

NodeCommandLine::NodeCommandLine(std::ostream& out, std::ostream& err)
    : m_out(out)
    , m_err(err) {}

QString NodeCommandLine::usage() const {
    return QStringLiteral(
        "Usage: tessera-node <command> [options]\n"
        "\n"
        "Tessera's compute node: lends this machine's GPU (or CPU) to the training of a\n"
        "large language model.\n"
        "\n"
        "Commands:\n"
        "  run       Join a coordinator's swarm and compute until stopped\n"
        "            --coordinator URL [--data-dir DIR] [--device cpu|cuda:N] [--gpu-limit PCT]\n"
        "            [--coordinator-key KEY] [--coordinator-ca FILE] [--max-download-rate KIBPS]\n"
        "            [--display-name NAME] [--team NAME]  (shown on the coordinator's leaderboard)\n"
        "  status    What the node on --data-dir is doing [--json]\n"
        "  pause     Stop computing within a microbatch; --hard exits to free all GPU memory\n"
        "  resume    Compute again\n"
        "  stop      Leave the swarm and exit\n"
        "  limit PCT Change the share of time spent computing (1-100) while it runs; the\n"
        "            next start takes run's --gpu-limit (the desktop app sends its own again)\n"
        "  ledger verify | export --csv\n"
        "            Check the local credit ledger offline, or print it as CSV [--data-dir DIR]\n"
        "  bench     Measure this machine: GEMM throughput per dtype and memory bandwidth\n"
        "            of the CPU and every CUDA GPU\n"
        "            [--json] [--device cpu|cuda:N]... [--seconds S]\n"
        "  shard inspect FILE\n"
        "            Validate a stage shard (a safetensors file, and its manifest when\n"
        "            given) and list its tensors and metadata [--manifest M] [--json]\n"
        "\n"
        "Options:\n"
        "  -h, --help     Show this help (tessera-node <command> --help for a command)\n"
        "  -v, --version  Show the version\n");
}

int NodeCommandLine::usageError(const QString& message) {
    m_err << kProgram << ": " << message << "\n"
          << "Try 'tessera-node --help'.\n";
    return 2;
}

int NodeCommandLine::run(const QStringList& arguments) {
    const QStringList args = arguments.mid(1);
    if (args.isEmpty())
        return usageError(QStringLiteral("no command given"));
    const QString& first = args.first();
    if (first == u"-h" || first == u"--help" || first == u"help") {
        m_out << usage();
        return 0;
    }
    if (first == u"-v" || first == u"--version") {
        m_out << versionLine(kProgram, gpu::buildDescription()) << "\n";
        return 0;
    }
    if (first == u"bench")
        return runBench(args);
    if (first == u"shard")
        return runShard(args);
    if (first == u"run")
        return runNodeCommand(args, m_out, m_err);
    if (controlVerb(first))
        return runControlCommand(args, m_out, m_err);
    if (first == u"ledger")
        return runLedger(args);
    return usageError(QStringLiteral("unknown command '%1'").arg(first));
}

int NodeCommandLine::runBench(const QStringList& arguments) {
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Measure this machine's CPU and CUDA GPUs."));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const QCommandLineOption json(QStringLiteral("json"),
                                  QStringLiteral("Print one JSON document instead of the table."));
    const QCommandLineOption device(QStringLiteral("device"),
                                    QStringLiteral("Measure only this device (repeatable); default: all."),
                                    QStringLiteral("cpu|cuda:N"));
    const QCommandLineOption seconds(QStringLiteral("seconds"),
                                     QStringLiteral("Time budget for the whole benchmark [10]."),
                                     QStringLiteral("S"), QStringLiteral("10"));
    parser.addOptions({help, json, device, seconds});
    if (!parser.parse(arguments))
        return usageError(parser.errorText());
    if (parser.isSet(help)) {
        m_out << QStringLiteral("Usage: tessera-node bench [options]\n")
              << parser.helpText().section(u'\n', 1);
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return usageError(
            QStringLiteral("bench takes no arguments, got '%1'").arg(parser.positionalArguments().first()));

    gpu::BenchOptions options;
    bool ok = false;
    options.seconds = parser.value(seconds).toDouble(&ok);
    if (!ok || !(options.seconds > 0) || options.seconds > 3600)
        return usageError(QStringLiteral("--seconds wants a number of seconds between 0 and 3600, got '%1'")
                              .arg(parser.value(seconds)));
    for (const QString& d : parser.values(device)) {
        if (d != u"cpu" && !d.startsWith(u"cuda:"))
            return usageError(QStringLiteral("--device wants cpu or cuda:N, got '%1'").arg(d));
        options.devices.push_back(d.toStdString());
    }
    return gpu::runBenchCommand(std::move(options), parser.isSet(json), m_out, m_err);
}

int NodeCommandLine::runLedger(const QStringList& arguments) {
    // --data-dir DIR anywhere after "ledger"; the rest is the ledger command's.
    QStringList rest = arguments.mid(1);
    QString dataDir = NodeFiles::defaultDataDir();
    for (qsizetype i = 0; i < rest.size(); ++i) {
        if (rest.at(i) == u"--data-dir" && i + 1 < rest.size()) {
            dataDir = rest.at(i + 1);
            rest.remove(i, 2);
            break;
        }
        if (rest.at(i).startsWith(u"--data-dir=")) {
            dataDir = rest.at(i).mid(11);
            rest.remove(i);
            break;
        }
    }
    return runLedgerCommand(rest, dataDir, m_out, m_err);
}

int NodeCommandLine::runShard(const QStringList& arguments) {
    if (arguments.size() < 2)
        return usageError(QStringLiteral("shard wants a subcommand: inspect"));
    if (arguments.at(1) != u"inspect")
        return usageError(
            QStringLiteral("unknown shard subcommand '%1' (try: inspect)").arg(arguments.at(1)));
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("Validate a stage shard and list its tensors."));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const QCommandLineOption json(QStringLiteral("json"),
                                  QStringLiteral("Print one JSON document instead of the listing."));
    const QCommandLineOption manifest(QStringLiteral("manifest"),
                                      QStringLiteral("Also verify FILE against this shard manifest."),
                                      QStringLiteral("M"));
    parser.addOptions({help, json, manifest});
    // The parser takes its first argument for the program name: "inspect" plays that part.
    if (!parser.parse(arguments.mid(1)))
        return usageError(parser.errorText());
    if (parser.isSet(help)) {
        m_out << QStringLiteral("Usage: tessera-node shard inspect FILE [options]\n")
              << parser.helpText().section(u'\n', 1);
        return 0;
    }
    if (parser.positionalArguments().size() != 1)
        return usageError(QStringLiteral("shard inspect wants exactly one FILE"));

    const auto inspect = [&]() -> Result<ShardInspect> {
        try {
            return ShardInspect::run(parser.positionalArguments().first(), parser.value(manifest));
        } catch (const std::exception& e) { // e.g. out of memory: still one line, never a crash
            return makeError(e.what());
        }
    };
    const Result<ShardInspect> inspection = inspect();
    if (!inspection) {
        // One line, whatever the file put into the message.
        QString reason = QString::fromStdString(inspection.message());
        for (QChar& c : reason) {
            if (c.category() == QChar::Other_Control)
                c = u'?';
        }
        m_err << kProgram << ": shard inspect: " << reason << "\n";
        return 1;
    }
    if (parser.isSet(json))
        m_out << QJsonDocument(inspection->toJson()).toJson(QJsonDocument::Indented).toStdString();
    else
        m_out << inspection->toText();
    return 0;
}

} // namespace tessera::node
