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
#include <vector>

namespace tessera::coordinator {

namespace {

const QString kProgram = QStringLiteral("tessera-coordinator");

std::ostream& operator<<(std::ostream& os, const QString& s) {
    return os << s.toStdString();
}

QCommandLineOption valueOption(const char* name, const char* description, const char* valueName) {
    return QCommandLineOption(QString::fromLatin1(name), QString::fromLatin1(description),
                              QString::fromLatin1(valueName));
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
    const auto dataDir =
        valueOption("data-dir", "Folder of the run, its keys and SQLite database (required).", "DIR");
    const auto listen =
        valueOption("listen", "Address to serve on [127.0.0.1:8443]; port 0 picks one.", "HOST:PORT");
    const auto tlsCert =
        valueOption("tls-cert", "TLS certificate chain (PEM); default: self-signed in DIR.", "FILE");
    const auto tlsKey = valueOption("tls-key", "TLS private key (PEM) of --tls-cert.", "FILE");
    const QCommandLineOption insecure(QStringLiteral("insecure-loopback"),
                                      QStringLiteral("Serve plain HTTP; only on a loopback address."));
    const auto db =
        valueOption("db", "sqlite:PATH [DIR/coordinator.sqlite] or postgresql://user@host/db.", "URL");
    const auto model =
        valueOption("model", "New run's model: tiny, small, 8b or CONFIG.json [tiny].", "MODEL");
    const auto stages = valueOption("stages", "New run's pipeline stage count (overrides the model's).", "S");
    const auto dataset = valueOption(
        "dataset",
        "New run's data: synthetic[:order=N,...], text:PATH, tokens16:PATH, tokens32:PATH or dataset:DIR "
        "(tessera-data build; pinned by its manifest's hash) [synthetic].",
        "SPEC");
    const auto codec = valueOption("codec",
                                   "A new run's boundary codec between stages: none, int8 or subspace "
                                   "(~ratio x smaller activations) [the model's].",
                                   "CODEC");
    const auto momentBits = valueOption(
        "moment-bits",
        "A new run's AdamW moments on every node and the checkpoint: 32, or 8 (2 bytes a parameter "
        "instead of 8: what lets an 8b middle stage fit a 24 GB GPU) [the model's: 32].",
        "BITS");
    const auto heartbeat = valueOption("heartbeat-timeout-ms",
                                       "A node silent this long on /v1/session is offline [30000].", "MS");
    const auto maxNodes =
        valueOption("max-nodes", "Nodes online at once; more are waitlisted (503) [0: no limit].", "N");
    const auto maxNodesPerStage =
        valueOption("max-nodes-per-stage", "Nodes online per stage; more are waitlisted [0: no limit].", "N");
    const auto retryAfter = valueOption(
        "waitlist-retry-after", "Seconds a waitlisted node is told to wait (Retry-After) [300].", "SECONDS");
    const auto minClient = valueOption(
        "min-client-version",
        "Oldest node release admitted; older ones get 403 [0.2.0, the oldest that speaks this protocol].",
        "X.Y.Z");
    const auto maxConnections = valueOption(
        "max-connections", "HTTP connections served at once; one more is told 503 and closed [512].", "N");
    const auto perAddress =
        valueOption("max-connections-per-address",
                    "Connections open at once from one IPv4 address or IPv6 /64 (TLS handshakes and sessions "
                    "included); one more is closed unanswered [32; 0: no limit].",
                    "N");
    const auto admissionsPerAddress =
        valueOption("max-admissions-per-address",
                    "Admission challenges, and admissions, each, per address per minute; one more gets 429 "
                    "[60; 0: no limit].",
                    "N");
    const auto inFlight =
        valueOption("max-inflight-mib",
                    "MiB of partly received request bodies and session messages held at once across all "
                    "connections; the one that would pass it is refused or closed [512; 0: no limit].",
                    "MIB");
    const auto requestTimeout =
        valueOption("request-timeout-ms",
                    "Deadline for a request's header block and for its body, each from its first byte; a "
                    "slower client gets 408 [10000 header, 30000 body].",
                    "MS");
    const auto pipeline = valueOption(
        "pipeline",
        "sync: a step's microbatches start after the previous step's update (the pipeline drains at "
        "every step); async: the next step's start while a step finishes and its update is exchanged "
        "(each gradient at most one update stale; needs gradient averaging) [sync].",
        "MODE");
    const auto learningRate = valueOption("lr", "Peak learning rate of AdamW [0.003].", "X");
    const auto lookAhead = valueOption(
        "look-ahead",
        "With --pipeline async: the nodes' weights run ahead of the optimizer's by X times its last "
        "update, so that a gradient one update stale is taken where the weights will be [2; sync: 0].",
        "X");
    const auto clipNorm = valueOption(
        "clip-norm", "Global gradient-norm clip over every stage's averaged gradient [1.0; 0: none].", "X");
    const auto lrDecay = valueOption(
        "lr-decay",
        "Learning-rate decay after the warm-up: none, cosine or linear, ending at --decay-steps [none].",
        "KIND");
    const auto minLrRatio = valueOption(
        "min-lr-ratio", "The learning rate at the decay's end, as a fraction of the peak [0.1].", "X");
    parser.addOptions({help,           version,          dataDir,    listen,
                       tlsCert,        tlsKey,           insecure,   db,
                       model,          stages,           dataset,    heartbeat,
                       maxNodes,       maxNodesPerStage, retryAfter, minClient,
                       maxConnections, requestTimeout,   codec,      momentBits,
                       pipeline,       learningRate,     lookAhead,  clipNorm,
                       lrDecay,        minLrRatio,       perAddress, admissionsPerAddress,
                       inFlight});

    // The data plane's settings: each a whole number in a range, written into TrainerSettings.
    struct TrainingOption {
        const char* name;
        const char* description;
        qint64 min, max;
        std::function<void(TrainerSettings&, qint64)> apply;
    };
    const std::vector<TrainingOption> trainingOptions{
        {"batch", "Sequences per microbatch [8].", 1, 4096,
         [](TrainerSettings& t, qint64 n) { t.loop.batch = int(n); }},
        {"seq", "Tokens per sequence [64].", 1, 65536,
         [](TrainerSettings& t, qint64 n) { t.loop.seq = int(n); }},
        {"microbatches-per-step", "Microbatches in one global batch: one optimizer step [8].", 1, 100'000,
         [](TrainerSettings& t, qint64 n) { t.loop.microbatchesPerStep = int(n); }},
        {"window", "Microbatches in flight at once [8].", 1, 100'000,
         [](TrainerSettings& t, qint64 n) { t.router.window = int(n); }},
        {"averaging-interval", "Steps between two SPARTA averaging rounds [20].", 1, 1'000'000,
         [](TrainerSettings& t, qint64 n) { t.averaging.interval = int(n); }},
        {"averaging-partitions", "The weights are averaged 1/N at a time [20, i.e. 5%].", 1, 1000,
         [](TrainerSettings& t, qint64 n) { t.averaging.partitions = int(n); }},
        {"partition-chunk-values", "Weights one averaging, reclaim, audit or sync message carries [4194304].",
         1, protocol::kMaxPartitionChunkValues,
         [](TrainerSettings& t, qint64 n) { t.averaging.chunkValues = n; }},
        {"checkpoint-every", "Steps between published stage checkpoints [50].", 1, 1'000'000,
         [](TrainerSettings& t, qint64 n) { t.loop.checkpointEvery = int(n); }},
        {"credit-interval-ms", "How often accepted work becomes signed credit receipts [60000].", 100,
         86'400'000, [](TrainerSettings& t, qint64 n) { t.creditInterval = std::chrono::milliseconds(n); }},
        {"task-timeout-ms", "The least time a node gets for one task before it is retried elsewhere [10000].",
         100, 3'600'000, [](TrainerSettings& t, qint64 n) { t.router.scheduler.minDeadlineMs = n; }},
        {"microbatch-timeout-ms", "A microbatch not completed in this time is abandoned [120000].", 1000,
         86'400'000, [](TrainerSettings& t, qint64 n) { t.router.microbatchTimeoutMs = n; }},
        {"max-steps", "Stop issuing microbatches after this step [0: never].", 0,
         std::numeric_limits<int>::max(), [](TrainerSettings& t, qint64 n) { t.loop.maxSteps = n; }},
        {"credit-escrow-ms",
         "Accepted work stays pending credit at least this long, and until a later audit of "
         "its node passed [600000].",
         0, 30LL * 86'400'000,
         [](TrainerSettings& t, qint64 n) { t.creditEscrow = std::chrono::milliseconds(n); }},
        {"audit-percent-new", "Percent of a new or suspect node's results kept for an audit [25].", 0, 100,
         [](TrainerSettings& t, qint64 n) { t.checks.probationRate = double(n) / 100; }},
        {"audit-percent-trusted", "Percent of a trusted node's results kept for an audit [3].", 0, 100,
         [](TrainerSettings& t, qint64 n) { t.checks.trustedRate = double(n) / 100; }},
        {"result-checks",
         "Check and audit every result before it is relayed or credited [1]; 0 only to "
         "measure what the checks cost.",
         0, 1, [](TrainerSettings& t, qint64 n) { t.checks.enabled = n != 0; }},
        {"outlier-deviations",
         "Audit at once a node whose result lies more than this many robust deviations from "
         "its stage's recent accepted results [8; 0: no statistical check].",
         0, 1000, [](TrainerSettings& t, qint64 n) { t.checks.monitorSettings.k = double(n); }},
        {"warmup-steps", "Steps of linear learning-rate warm-up [20].", 0, 100'000'000,
         [](TrainerSettings& t, qint64 n) { t.gradients.schedule.warmupSteps = n; }},
        {"decay-steps", "The step the learning-rate decay ends at (with --lr-decay) [0: --max-steps].", 0,
         std::numeric_limits<int>::max(),
         [](TrainerSettings& t, qint64 n) { t.gradients.schedule.decaySteps = n; }},
        {"gradient-averaging",
         "Average the replicas' gradients within each stage at every step [1]; 0: every node steps on "
         "its own gradients (replicas drift apart; SPARTA alone pulls them together).",
         0, 1, [](TrainerSettings& t, qint64 n) { t.gradients.enabled = n != 0; }},
        {"gradient-rank",
         "Rank of the low-rank gradient exchange (PowerSGD's two rounds a step, with error feedback, in "
         "fp32) [0: dense, in --gradient-bits; 16 sends 165x fewer bytes than fp32 at an 8b middle stage].",
         0, 1024, [](TrainerSettings& t, qint64 n) { t.gradients.rank = int(n); }},
        {"gradient-bits",
         "What the dense gradient exchange travels in: 8 or 4 bits a value with a scale per 256 (3.9x "
         "or 7.8x fewer bytes than fp32; what rounding loses is carried to the next step), or 32 (fp32, "
         "exact) [8].",
         4, 32, [](TrainerSettings& t, qint64 n) { t.gradients.bits = int(n); }},
        {"gradient-deadline-ms",
         "A replica whose gradient share is later than this is left out of the step [30000].", 100, 3'600'000,
         [](TrainerSettings& t, qint64 n) { t.gradients.deadlineMs = n; }},
        {"max-nodes-per-network",
         "Nodes admitted from one network (IPv4 /24, IPv6 /48) at once [64; 0: no "
         "limit].",
         0, 1'000'000, [](TrainerSettings& t, qint64 n) { t.reputation.maxNodesPerNetwork = int(n); }},
    };
    std::vector<QCommandLineOption> trainingParsed;
    for (const TrainingOption& t : trainingOptions) {
        trainingParsed.push_back(valueOption(t.name, t.description, "N"));
        parser.addOption(trainingParsed.back());
    }

    exitCode = 2;
    if (!parser.parse(arguments)) {
        m_err << kProgram << ": " << parser.errorText() << "\nTry 'tessera-coordinator --help'.\n";
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
        m_err << kProgram << ": unexpected argument '" << parser.positionalArguments().first()
              << "'\nTry 'tessera-coordinator --help'.\n";
        return std::nullopt;
    }
    CoordinatorOptions o;
    o.dataDir = parser.value(dataDir);
    if (o.dataDir.isEmpty()) {
        m_err << kProgram << ": --data-dir is required\nTry 'tessera-coordinator --help'.\n";
        return std::nullopt;
    }
    if (parser.isSet(listen))
        o.listen = parser.value(listen);
    o.tlsCert = parser.value(tlsCert);
    o.tlsKey = parser.value(tlsKey);
    o.insecureLoopback = parser.isSet(insecure);
    o.dbUrl = parser.value(db);
    o.model = parser.value(model);
    o.dataset = parser.value(dataset);
    if (parser.isSet(stages)) {
        bool ok = false;
        const int s = parser.value(stages).toInt(&ok);
        if (!ok || s < 1) {
            m_err << kProgram << ": --stages must be a positive whole number\n";
            return std::nullopt;
        }
        o.stages = s;
    }
    if (parser.isSet(codec)) {
        Result<gpu::CodecKind> c = gpu::parseCodec(parser.value(codec).toStdString());
        if (!c) {
            m_err << kProgram << ": --codec: " << c.message() << "\n";
            return std::nullopt;
        }
        o.codec = *c;
    }
    if (parser.isSet(momentBits)) {
        const QString b = parser.value(momentBits);
        if (b != u"32" && b != u"8") {
            m_err << kProgram << ": --moment-bits must be 32 or 8\n";
            return std::nullopt;
        }
        o.momentBits = b.toInt();
    }
    if (parser.isSet(heartbeat)) {
        bool ok = false;
        const qint64 ms = parser.value(heartbeat).toLongLong(&ok);
        if (!ok || ms < 100 || ms > 3'600'000) {
            m_err << kProgram << ": --heartbeat-timeout-ms must be a whole number from 100 to 3600000\n";
            return std::nullopt;
        }
        o.heartbeatTimeout = std::chrono::milliseconds(ms);
    }
    // A whole number in [min, max] or a usage error naming the option and the range.
    const auto number = [&](const QCommandLineOption& option, qint64 min, qint64 max,
                            const char* range) -> std::optional<qint64> {
        bool ok = false;
        const qint64 n = parser.value(option).toLongLong(&ok);
        if (ok && n >= min && n <= max)
            return n;
        m_err << kProgram << ": --" << option.names().first() << " must be a whole number " << range << "\n";
        return std::nullopt;
    };
    if (parser.isSet(maxNodes)) {
        const std::optional<qint64> n = number(maxNodes, 0, 1'000'000, "from 0 (no limit) to 1000000");
        if (!n)
            return std::nullopt;
        o.maxNodes = int(*n);
    }
    if (parser.isSet(maxNodesPerStage)) {
        const std::optional<qint64> n =
            number(maxNodesPerStage, 0, 1'000'000, "from 0 (no limit) to 1000000");
        if (!n)
            return std::nullopt;
        o.maxNodesPerStage = int(*n);
    }
    if (parser.isSet(retryAfter)) {
        const std::optional<qint64> n = number(retryAfter, 1, 86'400, "of seconds from 1 to 86400");
        if (!n)
            return std::nullopt;
        o.waitlistRetryAfter = std::chrono::seconds(*n);
    }
    if (parser.isSet(minClient)) {
        Result<protocol::ClientVersion> v = protocol::ClientVersion::parse(parser.value(minClient));
        if (!v) {
            m_err << kProgram << ": --min-client-version " << parser.value(minClient) << ": " << v.message()
                  << "\n";
            return std::nullopt;
        }
        o.minClientVersion = *v;
    }
    if (parser.isSet(maxConnections)) {
        const std::optional<qint64> n = number(maxConnections, 1, 100'000, "from 1 to 100000");
        if (!n)
            return std::nullopt;
        o.maxConnections = int(*n);
    }
    if (parser.isSet(perAddress)) {
        const std::optional<qint64> n = number(perAddress, 0, 100'000, "from 0 to 100000");
        if (!n)
            return std::nullopt;
        o.maxConnectionsPerAddress = int(*n);
    }
    if (parser.isSet(admissionsPerAddress)) {
        const std::optional<qint64> n = number(admissionsPerAddress, 0, 1'000'000, "from 0 to 1000000");
        if (!n)
            return std::nullopt;
        o.maxAdmissionsPerAddress = int(*n);
    }
    if (parser.isSet(inFlight)) {
        const std::optional<qint64> n = number(inFlight, 0, 1'048'576, "from 0 to 1048576");
        if (!n)
            return std::nullopt;
        o.maxBytesInFlight = *n << 20;
    }
    if (parser.isSet(requestTimeout)) {
        const std::optional<qint64> n = number(requestTimeout, 100, 3'600'000, "from 100 to 3600000");
        if (!n)
            return std::nullopt;
        o.requestTimeout = std::chrono::milliseconds(*n);
    }
    if (parser.isSet(pipeline)) {
        // The pipeline's depth: how many steps' microbatches may be under way at once.
        const QHash<QString, int> depths{{QStringLiteral("sync"), 1}, {QStringLiteral("async"), 2}};
        const int depth = depths.value(parser.value(pipeline), 0);
        if (depth == 0) {
            m_err << kProgram << ": --pipeline must be sync or async\n";
            return std::nullopt;
        }
        o.training.loop.pipelineDepth = depth;
    }
    // A number in [min, max] or a usage error naming the option and the range.
    const auto real = [&](const QCommandLineOption& option, double min, double max) -> std::optional<double> {
        bool ok = false;
        const double x = parser.value(option).toDouble(&ok);
        if (ok && std::isfinite(x) && x >= min && x <= max)
            return x;
        m_err << kProgram << ": --" << option.names().first() << " must be a number from " << min << " to "
              << max << "\n";
        return std::nullopt;
    };
    gpu::LearningRateSchedule& schedule = o.training.gradients.schedule;
    if (parser.isSet(learningRate)) {
        const std::optional<double> x = real(learningRate, 1e-9, 1.0);
        if (!x)
            return std::nullopt;
        schedule.peak = *x;
    }
    if (parser.isSet(clipNorm)) {
        const std::optional<double> x = real(clipNorm, 0.0, 1e9);
        if (!x)
            return std::nullopt;
        o.training.gradients.clipNorm = *x;
    }
    if (parser.isSet(minLrRatio)) {
        const std::optional<double> x = real(minLrRatio, 0.0, 1.0);
        if (!x)
            return std::nullopt;
        schedule.minRatio = *x;
    }
    if (parser.isSet(lrDecay) &&
        !gpu::parseDecay(parser.value(lrDecay).toStdString().c_str(), schedule.decay)) {
        m_err << kProgram << ": --lr-decay must be none, cosine or linear\n";
        return std::nullopt;
    }
    for (std::size_t i = 0; i < trainingOptions.size(); ++i) {
        if (!parser.isSet(trainingParsed[i]))
            continue;
        const TrainingOption& t = trainingOptions[i];
        const std::optional<qint64> n =
            number(trainingParsed[i], t.min, t.max,
                   ("from " + std::to_string(t.min) + " to " + std::to_string(t.max)).c_str());
        if (!n)
            return std::nullopt;
        t.apply(o.training, *n);
    }
    if (o.training.loop.pipelineDepth > 1 && !o.training.gradients.enabled) {
        m_err << kProgram << ": --pipeline async needs gradient averaging (--gradient-averaging 1)\n";
        return std::nullopt;
    }
    o.training.router.pipelined = o.training.loop.pipelineDepth > 1;
    o.training.gradients.lookAhead = o.training.router.pipelined ? 2.0 : 0.0;
    if (parser.isSet(lookAhead)) {
        const std::optional<double> x = real(lookAhead, 0.0, 4.0);
        if (!x)
            return std::nullopt;
        o.training.gradients.lookAhead = *x;
    }
    // The decay ends at the last step unless told otherwise.
    if (schedule.decay != gpu::LearningRateSchedule::Decay::None && schedule.decaySteps == 0) {
        if (o.training.loop.maxSteps <= 0) {
            m_err << kProgram << ": --lr-decay needs --decay-steps or --max-steps (where the decay ends)\n";
            return std::nullopt;
        }
        schedule.decaySteps = o.training.loop.maxSteps;
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
