// SPDX-License-Identifier: Apache-2.0
// bench_capacity: how far one coordinator process carries the data plane. Synthetic nodes
// (SyntheticNode: correctly shaped codec frames after a modelled delay, no engine) drive the real
// tessera-coordinator over TLS at a model's boundary shapes (default 8b, 7 stages, subspace codec,
// 4,096-token microbatches); measured side by side with the result checks on (the default) and off
// (--result-checks 0, which only a measurement uses): microbatches, tokens, tasks and MB relayed per
// second, and the same per second of coordinator CPU — per coordinator core — with the cores
// Agora's 170,000 tokens/s would take.
//
// bench_capacity [MODEL=8b] [SECONDS=60] [RUN_DIR] [WINDOW=64] [CODEC=subspace]
// RUN_DIR keeps the run between invocations (an 8b run's shards take ~9 minutes and 32 GB to write
// once; a restart opens them in ~75 s). Nothing is asserted.
#include "BenchCoordinatorSupport.h"
#include "SyntheticNode.h"

#include <QJsonArray>

#include <cmath>

using namespace tessera;
using bench::SyntheticCounters;

namespace {

constexpr double kAgoraTokensPerSecond = 170'000;
constexpr qint64 kMicrobatchTokens = 4096;

QJsonObject syntheticHardware() {
    return QJsonObject{{QStringLiteral("device"), QStringLiteral("cuda:0")},
                       {QStringLiteral("name"), QStringLiteral("Synthetic 80 GB GPU")},
                       {QStringLiteral("memory_bytes"), qint64(80) << 30}};
}

// One node admitted: its token, stage and the stage's version (from the manifest it was given).
struct Admitted {
    QString token;
    int stage = -1;
    qint64 version = 0;
};

std::optional<Admitted> admitOne(QNetworkAccessManager& net, const QString& base,
                                 const QSslConfiguration& ssl, const Identity& id) {
    auto post = [&](const QString& path, const QJsonObject& body) {
        QNetworkRequest request(QUrl(base + path));
        request.setSslConfiguration(ssl);
        request.setHeader(QNetworkRequest::ContentTypeHeader, u"application/json"_qs);
        QNetworkReply* reply = net.post(request, QJsonDocument(body).toJson(QJsonDocument::Compact));
        waitFor([reply] { return reply->isFinished(); }, 60'000);
        reply->deleteLater();
        return QJsonDocument::fromJson(reply->readAll()).object();
    };
    const QJsonObject challenge =
        post(u"/v1/admission/challenge"_qs, {{u"node_key"_qs, id.publicKeyBase64()}});
    const QJsonObject admitted =
        post(u"/v1/admission"_qs,
             protocol::makeAdmissionRequest(id, challenge.value(u"nonce").toString(), syntheticHardware(),
                                            QJsonObject{{u"gflops"_qs, 400'000.0}, {u"dtype"_qs, u"bf16"_qs}},
                                            u"0.2.0"_qs));
    Admitted a{admitted.value(u"session_token").toString(), admitted.value(u"stage").toInt(-1),
               admitted.value(u"manifest").toObject().value(u"version").toInteger()};
    if (a.token.isEmpty() || a.stage < 0) {
        std::fprintf(stderr, "admission refused: %s\n", QJsonDocument(admitted).toJson().constData());
        return std::nullopt;
    }
    return a;
}

struct Phase {
    double seconds = 0;
    double coordinatorCpu = 0; // seconds
    double clientCpu = 0;
    double rssMiB = 0;
    SyntheticCounters delta;
    qint64 completed = 0; // microbatches whose last stage answered
};

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const QString model = argc > 1 ? QString::fromLocal8Bit(argv[1]) : u"8b"_qs;
    const int windowS = argc > 2 ? std::max(10, atoi(argv[2])) : 60;
    QTemporaryDir scratch;
    const QString runDir =
        argc > 3 && *argv[3] ? QString::fromLocal8Bit(argv[3]) : scratch.filePath(u"run"_qs);
    const int window = argc > 4 ? std::max(1, atoi(argv[4])) : 64;
    const QString codecName = argc > 5 ? QString::fromLocal8Bit(argv[5]) : u"subspace"_qs;

    Result<gpu::ModelConfig> preset = gpu::ModelConfig::preset(model.toStdString());
    if (!preset) {
        std::fprintf(stderr, "%s\n", preset.message().c_str());
        return 2;
    }
    Result<gpu::CodecKind> codec = gpu::parseCodec(codecName.toStdString());
    if (!codec) {
        std::fprintf(stderr, "%s\n", codec.message().c_str());
        return 2;
    }
    gpu::ModelConfig config = *preset;
    config.codec = *codec;
    const int seq = std::min<int>(config.maxSeqLen, int(kMicrobatchTokens));
    const int batch = int(std::max<qint64>(1, kMicrobatchTokens / seq));
    QElapsedTimer made;
    made.start();
    const bench::SyntheticFrames frames = bench::makeSyntheticFrames(config, batch, seq);
    std::printf("model %s: %d stages, d=%d, vocab %d, codec %s; microbatch %d x %d tokens\n",
                qPrintable(model), config.stages, config.dModel, config.vocabSize,
                std::string(gpu::codecName(config.codec)).c_str(), batch, seq);
    std::printf("synthetic frames (made in %.1f s): activation %lld B, gradient %lld B, %d-byte token ids\n",
                double(made.elapsed()) / 1000, qlonglong(frames.stages[0].activation.size()),
                qlonglong(frames.stages[0].gradient.size()), frames.tokenBytes);
    std::printf("one node per stage, each answering every task after %d ms (forward) / %d ms (backward) "
                "on its own timer; window %d microbatches, %d per step, no gradient exchange, no SPARTA\n\n",
                bench::SyntheticDelays{}.forwardMs, bench::SyntheticDelays{}.backwardMs, window, 4 * window);

    std::vector<Phase> phases;
    for (const int checks : {1, 0}) {
        CoordinatorProcess server(QStringList{u"--data-dir"_qs,
                                              runDir,
                                              u"--listen"_qs,
                                              u"127.0.0.1:0"_qs,
                                              u"--model"_qs,
                                              model,
                                              u"--stages"_qs,
                                              QString::number(config.stages),
                                              u"--codec"_qs,
                                              codecName,
                                              u"--batch"_qs,
                                              QString::number(batch),
                                              u"--seq"_qs,
                                              QString::number(seq),
                                              u"--window"_qs,
                                              QString::number(window),
                                              u"--microbatches-per-step"_qs,
                                              QString::number(4 * window),
                                              u"--gradient-averaging"_qs,
                                              u"0"_qs,
                                              u"--averaging-interval"_qs,
                                              u"1000000"_qs,
                                              u"--checkpoint-every"_qs,
                                              u"1000000"_qs,
                                              u"--result-checks"_qs,
                                              QString::number(checks),
                                              u"--task-timeout-ms"_qs,
                                              u"60000"_qs,
                                              u"--microbatch-timeout-ms"_qs,
                                              u"600000"_qs,
                                              u"--max-connections-per-address"_qs,
                                              u"0"_qs,
                                              u"--max-admissions-per-address"_qs,
                                              u"0"_qs,
                                              u"--max-nodes-per-network"_qs,
                                              u"0"_qs});
        QElapsedTimer startClock;
        startClock.start();
        bool ready = false;
        while (!(ready = server.waitReady()) && server.pid() > 0 && startClock.elapsed() < 30 * 60'000)
            std::printf("  ... the coordinator prepares the run (%.0f s)\n",
                        double(startClock.elapsed()) / 1000);
        if (!ready) {
            std::fprintf(stderr, "tessera-coordinator did not become ready: %s\n", server.err().constData());
            return 1;
        }
        const qint64 pid = childCoordinatorPid();
        std::printf("result checks %s: coordinator ready in %.1f s (pid %lld)\n", checks ? "on" : "off",
                    double(startClock.elapsed()) / 1000, pid);
        QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
        ssl.setCaCertificates(QSslCertificate::fromPath(runDir + u"/tls.crt"_qs, QSsl::Pem));
        const QString base = server.url();
        const QUrl wsUrl(QString(base).replace(u"https://"_qs, u"wss://"_qs) + u"/v1/session"_qs);

        SyntheticCounters counters;
        QNetworkAccessManager net;
        std::vector<std::unique_ptr<bench::SyntheticNode>> nodes;
        std::vector<bool> covered(size_t(config.stages), false);
        for (int attempt = 0;
             attempt < 4 * config.stages && std::count(covered.begin(), covered.end(), true) < config.stages;
             ++attempt) {
            const std::optional<Admitted> a = admitOne(net, base, ssl, *Identity::generate());
            if (!a)
                return 1;
            if (covered[size_t(a->stage)])
                continue; // a second replica would be a ghost, synced first: one node per stage here
            covered[size_t(a->stage)] = true;
            nodes.push_back(std::make_unique<bench::SyntheticNode>(frames, bench::SyntheticDelays{}, counters,
                                                                   a->stage, config.stages, a->version));
            nodes.back()->open(wsUrl, ssl, a->token);
        }
        // Warm-up: the pipeline fills and the router learns each node's speed.
        const bool flowing = waitFor([&] { return counters.lastStageForwards >= 2 * window; }, 300'000);
        if (!flowing) {
            std::fprintf(stderr, "no microbatches flowed (%lld tasks, %lld refusals): %s\n",
                         qlonglong(counters.tasks), qlonglong(counters.refusals),
                         QByteArray(server.out() + server.err()).right(6000).constData());
            return 1;
        }
        const SyntheticCounters before = counters;
        const double cpu0 = processCpuSeconds(pid);
        const double self0 = selfCpuSeconds();
        QElapsedTimer clock;
        clock.start();
        waitFor([] { return false; }, windowS * 1000);
        Phase p;
        p.seconds = double(clock.nsecsElapsed()) / 1e9;
        p.coordinatorCpu = processCpuSeconds(pid) - cpu0;
        p.clientCpu = selfCpuSeconds() - self0;
        p.rssMiB = processRssMiB(pid);
        p.delta.tasks = counters.tasks - before.tasks;
        p.delta.bytesIn = counters.bytesIn - before.bytesIn;
        p.delta.bytesOut = counters.bytesOut - before.bytesOut;
        p.delta.steps = counters.steps - before.steps;
        p.delta.refusals = counters.refusals - before.refusals;
        p.completed = counters.lastStageForwards - before.lastStageForwards;
        phases.push_back(p);
        nodes.clear();
        server.terminate(60'000);
    }

    std::printf("\n%-22s %8s %9s %8s %9s %7s %9s | per coordinator core: %8s %8s %8s | %s\n", "result checks",
                "mb/s", "tokens/s", "tasks/s", "MB/s", "coord", "client", "tasks/s", "MB/s", "tokens/s",
                "cores for 170k tokens/s");
    for (size_t i = 0; i < phases.size(); ++i) {
        const Phase& p = phases[i];
        const double tokens = double(p.completed) * double(frames.tokens) / p.seconds;
        const double mb = double(p.delta.bytesIn + p.delta.bytesOut) / 1e6 / p.seconds;
        const double tasks = double(p.delta.tasks) / p.seconds;
        const double core = p.coordinatorCpu / p.seconds; // cores busy
        std::printf("%-22s %8.2f %9.0f %8.1f %9.1f %6.0f%% %8.0f%% | %22.1f %8.1f %8.0f | %.1f\n",
                    i == 0 ? "on (default)" : "off (measurement only)", double(p.completed) / p.seconds,
                    tokens, tasks, mb, 100 * core, 100 * p.clientCpu / p.seconds, tasks / core, mb / core,
                    tokens / core, kAgoraTokensPerSecond / (tokens / core));
    }
    for (size_t i = 0; i < phases.size(); ++i)
        std::printf(
            "checks %s: %lld steps, %lld refusals in the window; coordinator RSS %.0f MiB at its end\n",
            i == 0 ? "on" : "off", qlonglong(phases[i].delta.steps / config.stages),
            qlonglong(phases[i].delta.refusals), phases[i].rssMiB);
    std::printf("MB/s: the coordinator's data-plane traffic (tasks it sent + results it received, the\n"
                "messages' bytes before TLS). Per core: divided by the coordinator's CPU (utime+stime from\n"
                "/proc over the window); this process's own share is printed beside it.\n");
    return 0;
}
