#include "node/NodeCommandLine.h"

#include "BenchCommand.h"
#include "common/Version.h"

#include <QCommandLineParser>

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
    return QStringLiteral("Usage: tessera-node <command> [options]\n"
                          "\n"
                          "Tessera's compute node: lends this machine's GPU (or CPU) to the training of a\n"
                          "large language model.\n"
                          "\n"
                          "Commands:\n"
                          "  bench     Measure this machine: GEMM throughput per dtype and memory bandwidth\n"
                          "            of the CPU and every CUDA GPU\n"
                          "            [--json] [--device cpu|cuda:N]... [--seconds S]\n"
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
        m_out << versionLine(kProgram) << "\n";
        return 0;
    }
    if (first == u"bench")
        return runBench(args);
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

} // namespace tessera::node
