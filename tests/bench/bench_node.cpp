// SPDX-License-Identifier: Apache-2.0
// bench_node: the real node against the real coordinator on loopback — shard download speed of
// the node's ShardDownload against curl on the same file from the same coordinator, and the CPU
// and memory of a real tessera-node process while working (idle) and while paused.
//
// bench_node [ROUNDS=3] [WINDOW_S=15]
// Everything is measured side by side in one run and printed; nothing is asserted.
#include "CoordinatorProcess.h"
#include "ProcessStats.h"
#include "common/Identity.h"
#include "control/ControlClient.h"
#include "node/shard/ShardDownload.h"
#include "node/shard/ShardStore.h"
#include "protocol/ManifestSignature.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QSslCertificate>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <vector>

using namespace tessera;
using namespace tessera::node;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

QByteArray fetch(QNetworkAccessManager& net, const QSslConfiguration& ssl, const QString& url) {
    QNetworkRequest request{QUrl(url)};
    request.setSslConfiguration(ssl);
    QNetworkReply* reply = net.get(request);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    loop.exec();
    reply->deleteLater();
    return reply->readAll();
}

void sleepWithEvents(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

QString nodeState(const QString& dataDir) {
    Result<QJsonObject> s = ControlClient::call(dataDir, {protocol::ControlCommand::Status}, 2000);
    return s ? s->value(u"state").toString() : QString();
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const int rounds = argc > 1 ? std::max(1, atoi(argv[1])) : 3;
    const int windowS = argc > 2 ? std::max(5, atoi(argv[2])) : 15;
    QTemporaryDir dir;
    const QString binDir = QFileInfo(coordinatorProgram()).absolutePath();

    // --- (a) download: curl vs ShardDownload, same file, same coordinator, interleaved.
    const QString runDir = dir.filePath(QStringLiteral("small"));
    std::printf(
        "(a) stage-0 shard of the 'small' model over HTTPS on loopback (coordinator's own certificate)\n");
    std::fflush(stdout);
    CoordinatorProcess coordinator(QStringList{
        QStringLiteral("--data-dir"), runDir, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
        QStringLiteral("--model"), QStringLiteral("small"), QStringLiteral("--stages"), QStringLiteral("2")});
    if (!coordinator.waitReady()) {
        std::fprintf(stderr, "the coordinator did not start: %s\n", coordinator.err().constData());
        return 1;
    }
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    ssl.addCaCertificates(QSslCertificate::fromPath(runDir + QStringLiteral("/tls.crt")));
    QNetworkAccessManager net;
    const QJsonObject info =
        QJsonDocument::fromJson(fetch(net, ssl, coordinator.url() + QStringLiteral("/v1/info"))).object();
    const Result<QByteArray> key = Identity::fromBase64Url(info.value(u"coordinator_key").toString(), 32);
    Result<gpu::ShardManifest> manifest = protocol::parseSignedManifest(
        fetch(net, ssl, coordinator.url() + QStringLiteral("/v1/shards/0/manifest")),
        key ? *key : QByteArray());
    if (!manifest) {
        std::fprintf(stderr, "manifest: %s\n", manifest.message().c_str());
        return 1;
    }
    const double mb = double(manifest->fileSize) / 1e6;
    const QString url = coordinator.url() + QStringLiteral("/v1/shards/0/%1/%2")
                                                .arg(manifest->version)
                                                .arg(QString::fromStdString(manifest->file));
    auto compare = [&](const char* link) {
        std::vector<double> curlRates, nodeRates;
        for (int round = 0; round < rounds; ++round) {
            const QString curlOut = dir.filePath(QStringLiteral("curl.bin"));
            QElapsedTimer t;
            t.start();
            const int rc =
                QProcess::execute(QStringLiteral("curl"),
                                  {QStringLiteral("-sS"), QStringLiteral("--cacert"),
                                   runDir + QStringLiteral("/tls.crt"), QStringLiteral("-o"), curlOut, url});
            if (rc == 0)
                curlRates.push_back(mb / (double(t.nsecsElapsed()) / 1e9));
            QFile::remove(curlOut);

            const QString storeDir = dir.filePath(QStringLiteral("store-%1").arg(round));
            ShardStore store(storeDir);
            (void)store.ensureDir();
            ShardDownload download(&net, ssl, QUrl(coordinator.url()), *manifest, store);
            QEventLoop loop;
            Status result;
            QObject::connect(&download, &ShardDownload::finished, &loop, [&](const Status& s) {
                result = s;
                loop.quit();
            });
            t.restart();
            download.start();
            loop.exec();
            if (result)
                nodeRates.push_back(mb / (double(t.nsecsElapsed()) / 1e9));
            else
                std::fprintf(stderr, "ShardDownload: %s\n", result.message().c_str());
            QDir(storeDir).removeRecursively();
        }
        auto row = [](const char* name, const std::vector<double>& rates) {
            std::printf("    %-48s MB/s:", name);
            for (double r : rates)
                std::printf(" %7.0f", r);
            std::printf("  median %.0f\n", median(rates));
        };
        std::printf("  %s: %.1f MB file, %d interleaved rounds, MB = 10^6 B, both write the file\n", link, mb,
                    rounds);
        row("curl --cacert -o FILE", curlRates);
        row("ShardDownload (hash per chunk, fsync, install)", nodeRates);
        std::printf("    ShardDownload / curl: %.1f%% (target >= 90%%)\n",
                    100 * median(nodeRates) / median(curlRates));
        std::fflush(stdout);
    };
    compare("loopback, unshaped (CPU-bound: server, client and TLS share 2 cores)");
    // A home link is the real limit: shape loopback with a token bucket when allowed (root + tc).
    if (QProcess::execute(QStringLiteral("tc"),
                          {QStringLiteral("qdisc"), QStringLiteral("add"), QStringLiteral("dev"),
                           QStringLiteral("lo"), QStringLiteral("root"), QStringLiteral("tbf"),
                           QStringLiteral("rate"), QStringLiteral("1gbit"), QStringLiteral("burst"),
                           QStringLiteral("1mb"), QStringLiteral("latency"), QStringLiteral("50ms")}) == 0) {
        compare("loopback shaped to 1 Gbit/s (tc tbf)");
        QProcess::execute(QStringLiteral("tc"),
                          {QStringLiteral("qdisc"), QStringLiteral("del"), QStringLiteral("dev"),
                           QStringLiteral("lo"), QStringLiteral("root")});
    } else {
        std::printf("  (tc could not shape loopback here: run as root for the 1 Gbit/s comparison)\n");
    }
    std::printf("\n");
    coordinator.stop();

    // --- (b) a real tessera-node: CPU and memory working (no tasks) and paused.
    const QString tinyDir = dir.filePath(QStringLiteral("tiny"));
    CoordinatorProcess tiny(QStringList{
        QStringLiteral("--data-dir"), tinyDir, QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
        QStringLiteral("--model"), QStringLiteral("tiny"), QStringLiteral("--stages"), QStringLiteral("2")});
    if (!tiny.waitReady())
        return 1;
    const QString nodeDir = dir.filePath(QStringLiteral("node"));
    QProcess node;
    node.setProgram(binDir + QStringLiteral("/tessera-node"));
    node.setArguments({QStringLiteral("run"), QStringLiteral("--coordinator"), tiny.url(),
                       QStringLiteral("--data-dir"), nodeDir, QStringLiteral("--coordinator-ca"),
                       tinyDir + QStringLiteral("/tls.crt")});
    node.setStandardErrorFile(QProcess::nullDevice());
    node.start();
    QElapsedTimer waited;
    waited.start();
    while (nodeState(nodeDir) != u"Working" && waited.elapsed() < 120'000)
        sleepWithEvents(200);
    if (nodeState(nodeDir) != u"Working") {
        std::fprintf(stderr, "the node did not reach Working\n");
        return 1;
    }
    const qint64 pid = node.processId();
    sleepWithEvents(3000); // its probe task and start-up settle
    auto measure = [&](const char* label) {
        const double c0 = processCpuSeconds(pid);
        QElapsedTimer t;
        t.start();
        sleepWithEvents(windowS * 1000);
        const double share = (processCpuSeconds(pid) - c0) / (double(t.nsecsElapsed()) / 1e9);
        std::printf("    %-30s CPU %6.3f%% of one core   RSS %6.1f MiB\n", label, 100 * share,
                    processRssMiB(pid));
        std::fflush(stdout);
        return share;
    };
    std::printf(
        "(b) tessera-node on the tiny model (stage loaded, session heartbeats every 10 s), %d s windows\n",
        windowS);
    measure("working, no tasks");
    (void)ControlClient::call(nodeDir, {protocol::ControlCommand::Pause});
    QElapsedTimer p;
    p.start();
    while (nodeState(nodeDir) != u"Paused" && p.elapsed() < 10'000)
        sleepWithEvents(20);
    std::printf("    pause command -> state Paused seen by `status`: %lld ms\n", p.elapsed());
    const double paused = measure("paused");
    std::printf("    paused node: %.3f%% of one core (target < 0.5%%)\n", 100 * paused);
    (void)ControlClient::call(nodeDir, {protocol::ControlCommand::Stop});
    node.waitForFinished(15'000);
    return 0;
}
