// SPDX-License-Identifier: Apache-2.0
#include "LedgerCommand.h"

#include "node/NodeFiles.h"
#include "node/ledger/LocalLedger.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QIODevice>
#include <QJsonDocument>
#include <QJsonObject>

#include <ostream>

namespace tessera::node {

namespace {

std::ostream& operator<<(std::ostream& os, const QString& s) {
    return os << s.toStdString();
}

// Lets LocalLedger::exportCsv, which writes to a QIODevice, write to the command's stream.
class OstreamDevice final : public QIODevice {
public:
    explicit OstreamDevice(std::ostream& out)
        : m_out(out) {
        open(QIODevice::WriteOnly);
    }

protected:
    qint64 readData(char*, qint64) override { return -1; }
    qint64 writeData(const char* data, qint64 size) override {
        m_out.write(data, std::streamsize(size));
        if (!m_out) {
            setErrorString(QStringLiteral("the output stream failed"));
            return -1;
        }
        return size;
    }

private:
    std::ostream& m_out;
};

const QString kUsage =
    QStringLiteral("Usage: tessera-node ledger <subcommand>\n"
                   "\n"
                   "The node's own copy of the credit receipts the coordinator granted it, checked offline.\n"
                   "\n"
                   "Subcommands:\n"
                   "  verify        Check the ledger file and every receipt's chain link, hash and\n"
                   "                coordinator signature; print the totals\n"
                   "  export --csv  Print every receipt as CSV (RFC 4180)\n");

int usageError(std::ostream& err, const QString& message) {
    err << "tessera-node: ledger: " << message << "\n"
        << "Try 'tessera-node ledger --help'.\n";
    return 2;
}

} // namespace

int runLedgerCommand(const QStringList& arguments, const QString& dataDir, std::ostream& out,
                     std::ostream& err) {
    if (arguments.isEmpty())
        return usageError(err, QStringLiteral("wants a subcommand: verify or export"));
    const QString& sub = arguments.first();
    if (sub == u"-h" || sub == u"--help" || sub == u"help") {
        out << kUsage;
        return 0;
    }
    if (sub != u"verify" && sub != u"export")
        return usageError(err, QStringLiteral("unknown subcommand '%1' (try: verify, export)").arg(sub));

    QCommandLineParser parser;
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const QCommandLineOption csv(QStringLiteral("csv"), QStringLiteral("Export as CSV (RFC 4180)."));
    parser.addOption(help);
    if (sub == u"export")
        parser.addOption(csv);
    // The parser takes its first argument for the program name: the subcommand plays that part.
    if (!parser.parse(arguments))
        return usageError(err, parser.errorText());
    if (parser.isSet(help)) {
        out << (sub == u"verify" ? QStringLiteral("Usage: tessera-node ledger verify\n")
                                 : QStringLiteral("Usage: tessera-node ledger export --csv\n"))
            << parser.helpText().section(u'\n', 1);
        return 0;
    }
    if (!parser.positionalArguments().isEmpty())
        return usageError(
            err,
            QStringLiteral("%1 takes no arguments, got '%2'").arg(sub, parser.positionalArguments().first()));
    if (sub == u"export" && !parser.isSet(csv))
        return usageError(err, QStringLiteral("export wants a format: --csv"));

    const auto fail = [&](const std::string& message) {
        err << "tessera-node: ledger " << sub << ": " << message << "\n";
        return 1;
    };
    const QString path = QDir(dataDir).filePath(kLedgerFileName);
    if (!QFileInfo::exists(path))
        return fail("no ledger at " + path.toStdString() +
                    " (a node creates it when it joins its stage: this one has not joined yet, so it holds "
                    "no credit)");
    Result<std::unique_ptr<LocalLedger>> ledger = LocalLedger::openExisting(path);
    if (!ledger)
        return fail(ledger.message());

    if (sub == u"export") {
        OstreamDevice device(out);
        if (Status s = (*ledger)->exportCsv(device); !s)
            return fail(s.message());
        out.flush();
        return 0;
    }
    Result<VerifyReport> report = (*ledger)->verify();
    if (!report)
        return fail(report.message());
    if (!report->ok()) {
        return fail(path.toStdString() + " is not valid: " + report->problem.toStdString() + " (" +
                    std::to_string(report->checked) + " receipts before it are valid)");
    }
    out << "ledger ok: " << report->totals.receipts << " receipts, "
        << formatCredits(report->totals.microCredits) << " credits\n";
    if ((*ledger)->unwritten())
        out << "(an empty ledger: the node stopped while creating it, before its first receipt; nothing was "
               "lost, and the node completes it when it starts again)\n";
    // Not credit yet (unsigned: the coordinator's last word, kept by the running node).
    QFile escrowFile(QDir(dataDir).filePath(NodeFiles::escrowFile()));
    if (escrowFile.open(QIODevice::ReadOnly)) {
        const QJsonObject e = QJsonDocument::fromJson(escrowFile.readAll()).object();
        out << "pending:   " << QString::number(e.value(u"credits_pending").toDouble(), 'f', 6).toStdString()
            << " credits (accepted work, granted once the coordinator's audit of this node covers it)\n";
        if (e.value(u"credits_forfeited").toDouble() > 0)
            out << "forfeited: "
                << QString::number(e.value(u"credits_forfeited").toDouble(), 'f', 6).toStdString()
                << " credits (" << e.value(u"last_forfeit_reason").toString().toStdString() << ")\n";
    }
    return 0;
}

} // namespace tessera::node
