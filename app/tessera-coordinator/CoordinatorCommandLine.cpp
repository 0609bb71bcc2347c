// SPDX-License-Identifier: Apache-2.0
#include "CoordinatorCommandLine.h"

#include "common/ShutdownSignals.h"
#include "common/Version.h"
#include "coordinator/Coordinator.h"
#include "device/BuildInfo.h"
#include "protocol/PartitionChunks.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QHash>

#include <cmath>
#include <functional>
#include <limits>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace tessera::coordinator {

namespace {

const QString kProgram = QStringLiteral("tessera-coordinator");
// Ends a usage error that is about the command line as a whole rather than one option's value.
constexpr const char* kTryHelp = "\nTry 'tessera-coordinator --help'.\n";

std::ostream& operator<<(std::ostream& os, const QString& s) {
    return os << s.toStdString();
}

// A value an option refuses: "--NAME must be ...", without the program's name.
Error refused(std::string message) {
    return makeError(std::move(message), ErrorKind::InvalidInput);
}

// One row of the option table: the option's name, how --help shows it, and how its value, when
// given, is checked and stored into CoordinatorOptions.
struct OptionRow {
    const char* name;
    const char* valueName; // nullptr: a flag, without a value
    const char* description;
    std::function<Status(const QString& value, CoordinatorOptions& o)> apply;
    bool required = false; // left out or empty: a usage error
};

// A text stored as given (a path, a URL, a spec the coordinator checks when it starts).
OptionRow textOption(const char* name, const char* valueName, const char* description,
                     QString CoordinatorOptions::*member, bool required = false) {
    return {name, valueName, description,
            [member](const QString& value, CoordinatorOptions& o) {
                o.*member = value;
                return Status();
            },
            required};
}

// A flag: given, the member is true.
OptionRow flagOption(const char* name, const char* description, bool CoordinatorOptions::*member) {
    return {name, nullptr, description, [member](const QString&, CoordinatorOptions& o) {
                o.*member = true;
                return Status();
            }};
}

// A whole number in [min, max], or a refusal naming the option and `range` (how --help words it).
OptionRow wholeNumberOption(const char* name, const char* valueName, const char* description, qint64 min,
                            qint64 max, std::string range,
                            std::function<void(CoordinatorOptions&, qint64)> store) {
    return {name, valueName, description,
            [name, min, max, range = std::move(range), store = std::move(store)](const QString& value,
                                                                                 CoordinatorOptions& o) {
                bool ok = false;
                const qint64 n = value.toLongLong(&ok);
                if (!ok || n < min || n > max)
                    return Status(refused("--" + std::string(name) + " must be a whole number " + range));
                store(o, n);
                return Status();
            }};
}

// A data-plane setting: a whole number N in [min, max], written into TrainerSettings.
OptionRow trainingOption(const char* name, const char* description, qint64 min, qint64 max,
                         std::function<void(TrainerSettings&, qint64)> store) {
    return wholeNumberOption(
        name, "N", description, min, max, "from " + std::to_string(min) + " to " + std::to_string(max),
        [store = std::move(store)](CoordinatorOptions& o, qint64 n) { store(o.training, n); });
}

// A finite number X in [min, max], or a refusal naming the option and the range.
OptionRow realOption(const char* name, const char* description, double min, double max,
                     std::function<void(CoordinatorOptions&, double)> store) {
    return {name, "X", description,
            [name, min, max, store = std::move(store)](const QString& value, CoordinatorOptions& o) {
                bool ok = false;
                const double x = value.toDouble(&ok);
                if (!ok || !std::isfinite(x) || x < min || x > max) {
                    std::ostringstream message; // the bounds written as a stream writes a double
                    message << "--" << name << " must be a number from " << min << " to " << max;
                    return Status(refused(message.str()));
                }
                store(o, x);
                return Status();
            }};
}

Status applyStages(const QString& value, CoordinatorOptions& o) {
    bool ok = false;
    const int s = value.toInt(&ok);
    if (!ok || s < 1)
        return refused("--stages must be a positive whole number");
    o.stages = s;
    return {};
}

Status applyCodec(const QString& value, CoordinatorOptions& o) {
    Result<gpu::CodecKind> c = gpu::parseCodec(value.toStdString());
    if (!c)
        return refused("--codec: " + c.message());
    o.codec = *c;
    return {};
}

Status applyMomentBits(const QString& value, CoordinatorOptions& o) {
    if (value != u"32" && value != u"8")
        return refused("--moment-bits must be 32 or 8");
    o.momentBits = value.toInt();
    return {};
}

Status applyMinClientVersion(const QString& value, CoordinatorOptions& o) {
    Result<protocol::ClientVersion> v = protocol::ClientVersion::parse(value);
    if (!v)
        return refused("--min-client-version " + value.toStdString() + ": " + v.message());
    o.minClientVersion = *v;
    return {};
}

Status applyPipeline(const QString& value, CoordinatorOptions& o) {
    // The pipeline's depth: how many steps' microbatches may be under way at once.
    const QHash<QString, int> depths{{QStringLiteral("sync"), 1}, {QStringLiteral("async"), 2}};
    const int depth = depths.value(value, 0);
    if (depth == 0)
        return refused("--pipeline must be sync or async");
    o.training.loop.pipelineDepth = depth;
    return {};
}

Status applyLrDecay(const QString& value, CoordinatorOptions& o) {
    if (!gpu::parseDecay(value.toStdString().c_str(), o.training.gradients.schedule.decay))
        return refused("--lr-decay must be none, cosine or linear");
    return {};
}

// Every option after --help and --version, in the order --help lists them (and their values are
// checked in). The defaults in brackets are CoordinatorOptions' and TrainerSettings'.
const std::vector<OptionRow> kOptions{
    textOption("data-dir", "DIR", "Folder of the run, its keys and SQLite database (required).",
               &CoordinatorOptions::dataDir, true),
    textOption("listen", "HOST:PORT", "Address to serve on [127.0.0.1:8443]; port 0 picks one.",
               &CoordinatorOptions::listen),
    textOption("tls-cert", "FILE", "TLS certificate chain (PEM); default: self-signed in DIR.",
               &CoordinatorOptions::tlsCert),
    textOption("tls-key", "FILE", "TLS private key (PEM) of --tls-cert.", &CoordinatorOptions::tlsKey),
    flagOption("insecure-loopback", "Serve plain HTTP; only on a loopback address.",
               &CoordinatorOptions::insecureLoopback),
    textOption("db", "URL", "sqlite:PATH [DIR/coordinator.sqlite] or postgresql://user@host/db.",
               &CoordinatorOptions::dbUrl),
    textOption("model", "MODEL", "New run's model: tiny, small, 8b or CONFIG.json [tiny].",
               &CoordinatorOptions::model),
    {"stages", "S", "New run's pipeline stage count (overrides the model's).", applyStages},
    textOption(
        "dataset", "SPEC",
        "New run's data: synthetic[:order=N,...], text:PATH, tokens16:PATH, tokens32:PATH or dataset:DIR "
        "(tessera-data build; pinned by its manifest's hash) [synthetic].",
        &CoordinatorOptions::dataset),
    wholeNumberOption(
        "heartbeat-timeout-ms", "MS", "A node silent this long on /v1/session is offline [30000].", 100,
        3'600'000, "from 100 to 3600000",
        [](CoordinatorOptions& o, qint64 n) { o.heartbeatTimeout = std::chrono::milliseconds(n); }),
    wholeNumberOption("max-nodes", "N", "Nodes online at once; more are waitlisted (503) [0: no limit].", 0,
                      1'000'000, "from 0 (no limit) to 1000000",
                      [](CoordinatorOptions& o, qint64 n) { o.maxNodes = int(n); }),
    wholeNumberOption("max-nodes-per-stage", "N",
                      "Nodes online per stage; more are waitlisted [0: no limit].", 0, 1'000'000,
                      "from 0 (no limit) to 1000000",
                      [](CoordinatorOptions& o, qint64 n) { o.maxNodesPerStage = int(n); }),
    wholeNumberOption(
        "waitlist-retry-after", "SECONDS", "Seconds a waitlisted node is told to wait (Retry-After) [300].",
        1, 86'400, "of seconds from 1 to 86400",
        [](CoordinatorOptions& o, qint64 n) { o.waitlistRetryAfter = std::chrono::seconds(n); }),
    {"min-client-version", "X.Y.Z",
     "Oldest node release admitted; older ones get 403 [0.2.0, the oldest that speaks this protocol].",
     applyMinClientVersion},
    wholeNumberOption("max-connections", "N",
                      "HTTP connections served at once; one more is told 503 and closed [512].", 1, 100'000,
                      "from 1 to 100000", [](CoordinatorOptions& o, qint64 n) { o.maxConnections = int(n); }),
    wholeNumberOption(
        "request-timeout-ms", "MS",
        "Deadline for a request's header block and for its body, each from its first byte; a "
        "slower client gets 408 [10000 header, 30000 body].",
        100, 3'600'000, "from 100 to 3600000",
        [](CoordinatorOptions& o, qint64 n) { o.requestTimeout = std::chrono::milliseconds(n); }),
    {"codec", "CODEC",
     "A new run's boundary codec between stages: none, int8 or subspace "
     "(~ratio x smaller activations) [the model's].",
     applyCodec},
    {"moment-bits", "BITS",
     "A new run's AdamW moments on every node and the checkpoint: 32, or 8 (2 bytes a parameter "
     "instead of 8: what lets an 8b middle stage fit a 24 GB GPU) [the model's: 32].",
     applyMomentBits},
    {"pipeline", "MODE",
     "sync: a step's microbatches start after the previous step's update (the pipeline drains at "
     "every step); async: the next step's start while a step finishes and its update is exchanged "
     "(each gradient at most one update stale; needs gradient averaging) [sync].",
     applyPipeline},
    realOption("lr", "Peak learning rate of AdamW [0.003].", 1e-9, 1.0,
               [](CoordinatorOptions& o, double x) { o.training.gradients.schedule.peak = x; }),
    // Its default depends on --pipeline: see applyPipelineMode.
    realOption("look-ahead",
               "With --pipeline async: the nodes' weights run ahead of the optimizer's by X times its last "
               "update, so that a gradient one update stale is taken where the weights will be [2; sync: 0].",
               0.0, 4.0, [](CoordinatorOptions& o, double x) { o.training.gradients.lookAhead = x; }),
    realOption("clip-norm", "Global gradient-norm clip over every stage's averaged gradient [1.0; 0: none].",
               0.0, 1e9, [](CoordinatorOptions& o, double x) { o.training.gradients.clipNorm = x; }),
    {"lr-decay", "KIND",
     "Learning-rate decay after the warm-up: none, cosine or linear, ending at --decay-steps [none].",
     applyLrDecay},
    realOption("min-lr-ratio", "The learning rate at the decay's end, as a fraction of the peak [0.1].", 0.0,
               1.0, [](CoordinatorOptions& o, double x) { o.training.gradients.schedule.minRatio = x; }),
    wholeNumberOption(
        "max-connections-per-address", "N",
        "Connections open at once from one IPv4 address or IPv6 /64 (TLS handshakes and sessions "
        "included); one more is closed unanswered [32; 0: no limit].",
        0, 100'000, "from 0 to 100000",
        [](CoordinatorOptions& o, qint64 n) { o.maxConnectionsPerAddress = int(n); }),
    wholeNumberOption("max-admissions-per-address", "N",
                      "Admission challenges, and admissions, each, per address per minute; one more gets 429 "
                      "[60; 0: no limit].",
                      0, 1'000'000, "from 0 to 1000000",
                      [](CoordinatorOptions& o, qint64 n) { o.maxAdmissionsPerAddress = int(n); }),
    wholeNumberOption("max-inflight-mib", "MIB",
                      "MiB of partly received request bodies and session messages held at once across all "
                      "connections; the one that would pass it is refused or closed [512; 0: no limit].",
                      0, 1'048'576, "from 0 to 1048576",
                      [](CoordinatorOptions& o, qint64 n) { o.maxBytesInFlight = n << 20; }),
    // The data plane's settings, each a whole number N.
    trainingOption("batch", "Sequences per microbatch [8].", 1, 4096,
                   [](TrainerSettings& t, qint64 n) { t.loop.batch = int(n); }),
    trainingOption("seq", "Tokens per sequence [64].", 1, 65536,
                   [](TrainerSettings& t, qint64 n) { t.loop.seq = int(n); }),
    trainingOption("microbatches-per-step", "Microbatches in one global batch: one optimizer step [8].", 1,
                   100'000, [](TrainerSettings& t, qint64 n) { t.loop.microbatchesPerStep = int(n); }),
    trainingOption("window", "Microbatches in flight at once [8].", 1, 100'000,
                   [](TrainerSettings& t, qint64 n) { t.router.window = int(n); }),
    trainingOption("averaging-interval",
                   "Steps between two SPARTA averaging rounds [20 without gradient averaging; none with it: "
                   "replicas take the same step on the same state].",
                   1, 1'000'000, [](TrainerSettings& t, qint64 n) { t.averaging.interval = int(n); }),
    trainingOption("averaging-partitions", "The weights are averaged 1/N at a time [20, i.e. 5%].", 1, 1000,
                   [](TrainerSettings& t, qint64 n) { t.averaging.partitions = int(n); }),
    trainingOption("partition-chunk-values",
                   "Weights one averaging, reclaim, audit or sync message carries [4194304].", 1,
                   protocol::kMaxPartitionChunkValues,
                   [](TrainerSettings& t, qint64 n) { t.averaging.chunkValues = n; }),
    trainingOption("checkpoint-every", "Steps between published stage checkpoints [50].", 1, 1'000'000,
                   [](TrainerSettings& t, qint64 n) { t.loop.checkpointEvery = int(n); }),
    trainingOption("credit-interval-ms", "How often accepted work becomes signed credit receipts [60000].",
                   100, 86'400'000,
                   [](TrainerSettings& t, qint64 n) { t.creditInterval = std::chrono::milliseconds(n); }),
    trainingOption("task-timeout-ms",
                   "The least time a node gets for one task before it is retried elsewhere [10000].", 100,
                   3'600'000, [](TrainerSettings& t, qint64 n) { t.router.scheduler.minDeadlineMs = n; }),
    trainingOption("microbatch-timeout-ms", "A microbatch not completed in this time is abandoned [120000].",
                   1000, 86'400'000, [](TrainerSettings& t, qint64 n) { t.router.microbatchTimeoutMs = n; }),
    trainingOption("max-steps", "Stop issuing microbatches after this step [0: never].", 0,
                   std::numeric_limits<int>::max(),
                   [](TrainerSettings& t, qint64 n) { t.loop.maxSteps = n; }),
    trainingOption("credit-escrow-ms",
                   "Accepted work stays pending credit at least this long, and until a later audit of "
                   "its node passed [600000].",
                   0, 30LL * 86'400'000,
                   [](TrainerSettings& t, qint64 n) { t.creditEscrow = std::chrono::milliseconds(n); }),
    trainingOption("audit-percent-new", "Percent of a new or suspect node's results kept for an audit [25].",
                   0, 100, [](TrainerSettings& t, qint64 n) { t.checks.probationRate = double(n) / 100; }),
    trainingOption("audit-percent-trusted", "Percent of a trusted node's results kept for an audit [3].", 0,
                   100, [](TrainerSettings& t, qint64 n) { t.checks.trustedRate = double(n) / 100; }),
    trainingOption("recompute-limit",
                   "Stages of at most this many parameters are audited by recomputing them here; larger "
                   "ones only by re-execution on another replica [200000000; 0: every stage re-executed, "
                   "as at 8b].",
                   0, 1'000'000'000'000LL, [](TrainerSettings& t, qint64 n) { t.audits.maxParameters = n; }),
    trainingOption("share-check-percent",
                   "Percent of steps whose gradient shares are checked against their senders' work on "
                   "another replica of the stage (dense exchange, replicas that agree) [25; 0: never].",
                   0, 100, [](TrainerSettings& t, qint64 n) { t.shareCheck.percent = double(n); }),
    trainingOption("result-checks",
                   "Check and audit every result before it is relayed or credited [1]; 0 only to "
                   "measure what the checks cost.",
                   0, 1, [](TrainerSettings& t, qint64 n) { t.checks.enabled = n != 0; }),
    trainingOption("outlier-deviations",
                   "Audit at once a node whose result lies more than this many robust deviations from "
                   "its stage's recent accepted results [8; 0: no statistical check].",
                   0, 1000, [](TrainerSettings& t, qint64 n) { t.checks.monitorSettings.k = double(n); }),
    trainingOption("warmup-steps", "Steps of linear learning-rate warm-up [20].", 0, 100'000'000,
                   [](TrainerSettings& t, qint64 n) { t.gradients.schedule.warmupSteps = n; }),
    trainingOption("decay-steps",
                   "The step the learning-rate decay ends at (with --lr-decay) [0: --max-steps].", 0,
                   std::numeric_limits<int>::max(),
                   [](TrainerSettings& t, qint64 n) { t.gradients.schedule.decaySteps = n; }),
    trainingOption(
        "gradient-averaging",
        "Average the replicas' gradients within each stage at every step [1]; 0: every node steps on "
        "its own gradients (replicas drift apart; SPARTA alone pulls them together).",
        0, 1, [](TrainerSettings& t, qint64 n) { t.gradients.enabled = n != 0; }),
    trainingOption(
        "gradient-rank",
        "Rank of the low-rank gradient exchange (PowerSGD's two rounds a step, with error feedback, in "
        "fp32) [0: dense, in --gradient-bits; 16 sends 165x fewer bytes than fp32 at an 8b middle stage].",
        0, 1024, [](TrainerSettings& t, qint64 n) { t.gradients.rank = int(n); }),
    trainingOption(
        "gradient-bits",
        "What the dense gradient exchange travels in: 8 or 4 bits a value with a scale per 256 (3.9x "
        "or 7.8x fewer bytes than fp32; what rounding loses is carried to the next step), or 32 (fp32, "
        "exact) [8].",
        4, 32, [](TrainerSettings& t, qint64 n) { t.gradients.bits = int(n); }),
    trainingOption("gradient-deadline-ms",
                   "A replica whose gradient share is later than this is left out of the step [30000].", 100,
                   3'600'000, [](TrainerSettings& t, qint64 n) { t.gradients.deadlineMs = n; }),
    trainingOption("max-nodes-per-network",
                   "Nodes admitted from one network (IPv4 /24, IPv6 /48) at once [64; 0: no "
                   "limit].",
                   0, 1'000'000,
                   [](TrainerSettings& t, qint64 n) { t.reputation.maxNodesPerNetwork = int(n); }),
};

QCommandLineOption commandLineOption(const OptionRow& row) {
    const QString name = QString::fromLatin1(row.name);
    const QString description = QString::fromLatin1(row.description);
    if (!row.valueName)
        return QCommandLineOption(name, description);
    return QCommandLineOption(name, description, QString::fromLatin1(row.valueName));
}

// "--NAME is required" for the first required option left out or given empty; empty when none is.
std::string missingRequiredOption(const QCommandLineParser& parser) {
    for (const OptionRow& row : kOptions)
        if (row.required && parser.value(QString::fromLatin1(row.name)).isEmpty())
            return "--" + std::string(row.name) + " is required";
    return {};
}

// Checks and stores every option given, in the table's order; the first refusal stops it.
Status applyOptions(const QCommandLineParser& parser, CoordinatorOptions& o) {
    for (const OptionRow& row : kOptions) {
        const QString name = QString::fromLatin1(row.name);
        if (!parser.isSet(name))
            continue;
        if (Status applied = row.apply(parser.value(name), o); !applied)
            return applied;
    }
    return {};
}

// The asynchronous pipeline needs the replicas' gradients averaged; it also sets the router's mode
// and the look-ahead's default (2 updates ahead when pipelined, none when not).
Status applyPipelineMode(CoordinatorOptions& o, bool lookAheadGiven) {
    if (o.training.loop.pipelineDepth > 1 && !o.training.gradients.enabled)
        return refused("--pipeline async needs gradient averaging (--gradient-averaging 1)");
    o.training.router.pipelined = o.training.loop.pipelineDepth > 1;
    if (!lookAheadGiven)
        o.training.gradients.lookAhead = o.training.router.pipelined ? 2.0 : 0.0;
    return {};
}

// The decay ends at the last step unless told otherwise.
Status endDecay(CoordinatorOptions& o) {
    gpu::LearningRateSchedule& schedule = o.training.gradients.schedule;
    if (schedule.decay == gpu::LearningRateSchedule::Decay::None || schedule.decaySteps != 0)
        return {};
    if (o.training.loop.maxSteps <= 0)
        return refused("--lr-decay needs --decay-steps or --max-steps (where the decay ends)");
    schedule.decaySteps = o.training.loop.maxSteps;
    return {};
}

} // namespace

CoordinatorCommandLine::CoordinatorCommandLine(std::ostream& out, std::ostream& err)
    : m_out(out)
    , m_err(err) {}

std::optional<CoordinatorOptions> CoordinatorCommandLine::parse(const QStringList& arguments, int& exitCode) {
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Tessera's coordinator: admits volunteer nodes, assigns pipeline stages and serves\n"
                       "their signed stage shards over HTTPS."));
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")},
                                  QStringLiteral("Show this help."));
    const QCommandLineOption version({QStringLiteral("v"), QStringLiteral("version")},
                                     QStringLiteral("Show the version."));
    parser.addOptions({help, version});
    for (const OptionRow& row : kOptions)
        parser.addOption(commandLineOption(row));

    exitCode = 2;
    if (!parser.parse(arguments)) {
        m_err << kProgram << ": " << parser.errorText() << kTryHelp;
        return std::nullopt;
    }
    if (parser.isSet(help)) {
        m_out << parser.helpText();
        exitCode = 0;
        return std::nullopt;
    }
    if (parser.isSet(version)) {
        m_out << versionLine(kProgram, gpu::buildDescription()) << "\n";
        exitCode = 0;
        return std::nullopt;
    }
    if (!parser.positionalArguments().isEmpty()) {
        m_err << kProgram << ": unexpected argument '" << parser.positionalArguments().first() << "'"
              << kTryHelp;
        return std::nullopt;
    }
    if (const std::string missing = missingRequiredOption(parser); !missing.empty()) {
        m_err << kProgram << ": " << missing << kTryHelp;
        return std::nullopt;
    }
    CoordinatorOptions o;
    Status applied = applyOptions(parser, o);
    if (applied)
        applied = applyPipelineMode(o, parser.isSet(QStringLiteral("look-ahead")));
    if (applied)
        applied = endDecay(o);
    if (!applied) {
        m_err << kProgram << ": " << applied.message() << "\n";
        return std::nullopt;
    }
    exitCode = 0;
    return o;
}

int CoordinatorCommandLine::run(const QStringList& arguments) {
    int exitCode = 0;
    const std::optional<CoordinatorOptions> options = parse(arguments, exitCode);
    if (!options)
        return exitCode;

    // Installed before the start so that a signal during it is held until the loop runs.
    Result<std::unique_ptr<ShutdownSignals>> shutdownSignals = ShutdownSignals::install();
    if (!shutdownSignals) {
        m_err << kProgram << ": " << shutdownSignals.message() << std::endl;
        return 1;
    }
    // The start runs without an event loop (the database, a migration): a signal then stops the process
    // at once. Nothing it leaves is trusted by the next start — a run's shards count once their versions
    // are recorded; a dead process's lock is taken over. Shards are written and checkpoints read after
    // the start, while the loop runs (Coordinator: Preparing).
    ShutdownSignals::setExitAtOnce(true, "tessera-coordinator: stopped while starting; a run being created "
                                         "is created again at the next start\n");
    Result<std::unique_ptr<Coordinator>> started = Coordinator::start(*options);
    ShutdownSignals::setExitAtOnce(false);
    if (!started) {
        m_err << kProgram << ": " << started.message() << std::endl;
        return 1;
    }
    Coordinator& c = **started;
    const gpu::ModelConfig& model = c.model();
    m_out << kProgram << " " << tesseraVersion() << ": "
          << (c.runCreated() ? "creating the run" : "resumed the run") << " of model '" << model.name << "' ("
          << model.parameterCount() << " parameters, " << model.stages << " stages) in " << options->dataDir
          << "\n"
          << "dataset: " << c.dataset() << "\n"
          << "database: " << c.databaseName() << "\n"
          << "coordinator key: " << c.coordinatorKey() << "\n";
    if (c.tls())
        m_out << "TLS certificate: " << c.tlsCertPath() << "\n"
              << "TLS SHA-256 fingerprint: " << c.tlsFingerprint() << "\n";
    else
        m_out << "warning: plain HTTP (--insecure-loopback): for local testing only\n";
    // Tests and scripts wait for these lines: the URL (with the port chosen for port 0), then "ready".
    m_out << "listening on " << c.url() << std::endl
          << "preparing: "
          << (c.runCreated() ? "writing the initial weights, then checking them"
                             : "checking every stage's checkpoint against its manifest")
          << ", and the training data (/v1/status shows how far); admission waits" << std::endl;
    QElapsedTimer preparing;
    preparing.start();
    c.onPrepared([this, &c, &preparing, created = c.runCreated(), name = model.name](const Status& prepared) {
        if (!prepared) {
            m_err << kProgram << ": " << prepared.message() << std::endl;
            return c.stop([] { QCoreApplication::exit(1); });
        }
        m_out << "ready: " << (created ? "created" : "opened") << " the run of model '" << name << "' in "
              << double(preparing.elapsed()) / 1000 << " s; admitting nodes" << std::endl;
    });
    QObject::connect((*shutdownSignals).get(), &ShutdownSignals::received, [this, &c](int signalNumber) {
        m_out << kProgram << ": signal " << signalNumber << ", shutting down" << std::endl;
        c.stop([] { QCoreApplication::exit(0); });
    });
    return QCoreApplication::exec();
}

} // namespace tessera::coordinator
