// SPDX-License-Identifier: Apache-2.0
// bench_coordinator: the real coordinator on loopback: admissions/s, wss sessions, downloads vs nginx.
//
// bench_coordinator [SESSIONS=10000] [WINDOW_S=30]
// Everything is measured side by side in one run and printed; nothing is asserted.
#include "BenchCoordinatorSupport.h"

using namespace tessera;

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0); // progress shows while a long run goes on
    const int sessionCount = argc > 1 ? std::max(1, atoi(argv[1])) : 10'000;
    const int windowS = argc > 2 ? std::max(10, atoi(argv[2])) : 30;

    // Each session is one descriptor here and one in the coordinator, which inherits the limit.
    rlimit nofile{};
    getrlimit(RLIMIT_NOFILE, &nofile);
    const rlim_t defaultSoft = nofile.rlim_cur;
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
    std::printf("RLIMIT_NOFILE: soft %llu raised to the hard limit %llu\n", (unsigned long long)defaultSoft,
                (unsigned long long)nofile.rlim_cur);
    if (rlim_t(sessionCount) + 512 > nofile.rlim_cur)
        std::printf("warning: %d sessions may not fit in %llu descriptors\n", sessionCount,
                    (unsigned long long)nofile.rlim_cur);

    QTemporaryDir dir;
    const QString runDir = dir.filePath(u"run"_qs);
    auto server = std::make_unique<CoordinatorProcess>(
        QStringList{u"--data-dir"_qs, runDir, u"--listen"_qs, u"127.0.0.1:0"_qs, u"--model"_qs, u"tiny"_qs,
                    u"--stages"_qs, u"2"_qs,
                    // Every client here is one loopback
                    // address, and sessions count as
                    // connections: the limits that hold
                    // one host back are lifted.
                    u"--max-connections"_qs, u"100000"_qs, u"--max-connections-per-address"_qs, u"0"_qs,
                    u"--max-admissions-per-address"_qs, u"0"_qs});
    if (!server->waitReady()) {
        std::fprintf(stderr, "tessera-coordinator did not start: %s\n", server->err().constData());
        return 1;
    }
    const qint64 pid = childCoordinatorPid();
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    ssl.setCaCertificates(QSslCertificate::fromPath(runDir + u"/tls.crt"_qs, QSsl::Pem));
    const QString base = server->url();
    std::printf("coordinator %s (pid %lld), model tiny, 2 stages, SQLite; client: Qt %s in this process\n\n",
                qPrintable(base), pid, qVersion());

    // --- (a) admissions: challenge + signed admission, each with a fresh identity, over TLS.
    std::printf("(a) admissions over TLS on loopback (challenge + admission = one admission)\n");
    // Sequential again after the concurrent run: the same work with 2,200 nodes already known
    // tells a cost that grows with the registry from one that comes from concurrency.
    int known = 0;
    for (const auto& [n, workers] :
         {std::pair{kSequentialAdmissions, 1}, std::pair{kConcurrentAdmissions, kAdmissionWorkers},
          std::pair{kSequentialAdmissions, 1}}) {
        const std::vector<Identity> ids = identities(n);
        const double cpu0 = processCpuSeconds(pid);
        const double self0 = selfCpuSeconds();
        const AdmissionRun r = admitAll(base, ssl, ids, workers, {});
        const double share = (processCpuSeconds(pid) - cpu0) / r.seconds;
        const double selfShare = (selfCpuSeconds() - self0) / r.seconds;
        std::printf("    %-12s %5d admitted %3d failed (%5d known before) %7.1f admissions/s  p50 %6.2f ms  "
                    "p99 %6.2f ms  CPU: coordinator %3.0f%% client %3.0f%%\n",
                    workers == 1 ? "sequential" : qPrintable(u"%1 in flight"_qs.arg(workers)), r.admitted,
                    r.failed, known, r.admitted / r.seconds, percentile(r.latenciesMs, 50),
                    percentile(r.latenciesMs, 99), 100 * share, 100 * selfShare);
        known += r.admitted;
    }

    // --- (b) sessions: admitted nodes hold wss /v1/session and heartbeat every 10 s, staggered.
    std::printf("\n(b) %d node sessions (wss), heartbeat every %d s, measured over %d s\n", sessionCount,
                kHeartbeatPeriodMs / 1000, windowS);
    std::vector<std::unique_ptr<Session>> sessions;
    sessions.reserve(size_t(sessionCount));
    const QUrl wsUrl(QString(base).replace(u"https://"_qs, u"wss://"_qs) + u"/v1/session"_qs);
    QElapsedTimer clock;
    clock.start();
    std::vector<double> heartbeatMs;
    int wsFailed = 0;
    // Heartbeats start as each session opens (the coordinator drops a node silent for 30 s, and
    // setting up 10,000 takes longer than that): a wheel of 10 ms slots over the 10 s period,
    // session i in slot i % slots, so the load is spread evenly.
    constexpr int kSlotMs = 10;
    std::vector<std::vector<Session*>> wheel(kHeartbeatPeriodMs / kSlotMs);
    qint64 slotDone = 0; // slots processed since the clock started
    int skipped = 0;     // due while the previous one was still unanswered
    QTimer ticker;
    QObject::connect(&ticker, &QTimer::timeout, [&] {
        for (const qint64 now = clock.elapsed() / kSlotMs; slotDone < now; ++slotDone) {
            for (Session* s : wheel[size_t(slotDone) % wheel.size()]) {
                if (s->socket.state() != QAbstractSocket::ConnectedState)
                    continue;
                if (s->sentNs >= 0) {
                    ++skipped;
                    continue;
                }
                s->sentNs = clock.nsecsElapsed();
                s->socket.sendTextMessage(u"{\"type\":\"heartbeat\"}"_qs);
            }
        }
    });
    ticker.start(kSlotMs);
    {
        const std::vector<Identity> ids = identities(sessionCount);
        const AdmissionRun r = admitAll(
            base, ssl, ids, kAdmissionWorkers, [&](const QString& token, std::function<void()> resume) {
                auto s = std::make_unique<Session>();
                Session* raw = s.get();
                sessions.push_back(std::move(s));
                raw->socket.setSslConfiguration(ssl);
                // Either ends this node's setup, once; an error after connecting is not a setup failure.
                auto settled = std::make_shared<bool>(false);
                const size_t slot = (sessions.size() - 1) % wheel.size();
                QObject::connect(&raw->socket, &QWebSocket::connected, &raw->socket,
                                 [resume, settled, raw, slot, &wheel] {
                                     if (std::exchange(*settled, true))
                                         return;
                                     wheel[slot].push_back(raw);
                                     resume();
                                 });
                QObject::connect(&raw->socket, qOverload<QAbstractSocket::SocketError>(&QWebSocket::error),
                                 &raw->socket, [resume, settled, &wsFailed](QAbstractSocket::SocketError) {
                                     if (std::exchange(*settled, true))
                                         return;
                                     ++wsFailed;
                                     resume();
                                 });
                QObject::connect(&raw->socket, &QWebSocket::textMessageReceived, &raw->socket,
                                 [raw, &clock, &heartbeatMs](const QString&) {
                                     if (raw->sentNs < 0)
                                         return;
                                     heartbeatMs.push_back(double(clock.nsecsElapsed() - raw->sentNs) / 1e6);
                                     raw->sentNs = -1;
                                 });
                QNetworkRequest request(wsUrl);
                request.setRawHeader("Authorization", "Bearer " + token.toLatin1());
                raw->socket.open(request);
            });
        int open = 0;
        for (const auto& s : sessions)
            open += s->socket.state() == QAbstractSocket::ConnectedState;
        std::printf("    setup: %d admitted (%d failed), %d sessions open (%d failed) in %.1f s\n",
                    r.admitted, r.failed, open, wsFailed, r.seconds);
    }

    int open0 = 0;
    for (const auto& s : sessions)
        open0 += s->socket.state() == QAbstractSocket::ConnectedState;
    // A first full period brings every session into its rhythm before the window opens.
    waitFor([] { return false; }, kHeartbeatPeriodMs);
    heartbeatMs.clear();
    skipped = 0;

    std::vector<double> statusMs;
    int statusFailed = 0;
    QNetworkAccessManager statusNet;
    QTimer statusTimer;
    bool statusInFlight = false;
    QObject::connect(&statusTimer, &QTimer::timeout, [&] {
        if (statusInFlight)
            return;
        statusInFlight = true;
        QNetworkRequest request(QUrl(base + u"/v1/status"_qs));
        request.setSslConfiguration(ssl);
        const qint64 t0 = clock.nsecsElapsed();
        QNetworkReply* reply = statusNet.get(request);
        QObject::connect(reply, &QNetworkReply::finished, reply, [&, reply, t0] {
            reply->deleteLater();
            statusInFlight = false;
            if (reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() == 200)
                statusMs.push_back(double(clock.nsecsElapsed() - t0) / 1e6);
            else
                ++statusFailed;
        });
    });
    statusTimer.start(250);

    const double cpu0 = processCpuSeconds(pid);
    const double self0 = selfCpuSeconds();
    const qint64 w0 = clock.nsecsElapsed();
    waitFor([] { return false; }, windowS * 1000);
    const double wall = double(clock.nsecsElapsed() - w0) / 1e9;
    const double share = (processCpuSeconds(pid) - cpu0) / wall;
    const double selfShare = (selfCpuSeconds() - self0) / wall;
    ticker.stop();
    statusTimer.stop();
    int open = 0;
    for (const auto& s : sessions)
        open += s->socket.state() == QAbstractSocket::ConnectedState;
    std::printf("    sessions open: %d at the window's start, %d at its end, of %zu\n", open0, open,
                sessions.size());
    std::printf("    heartbeat -> ack   %7zu acks   p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%d skipped: "
                "previous still unanswered)\n",
                heartbeatMs.size(), percentile(heartbeatMs, 50), percentile(heartbeatMs, 99),
                percentile(heartbeatMs, 100), skipped);
    std::printf("    GET /v1/status     %7zu replies p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (%d failed)\n",
                statusMs.size(), percentile(statusMs, 50), percentile(statusMs, 99),
                percentile(statusMs, 100), statusFailed);
    std::printf("    coordinator CPU %.1f%% of one core; this client process %.1f%%\n", 100 * share,
                100 * selfShare);
    std::printf("    target p99 < 50 ms on one core: %s\n",
                std::max(percentile(heartbeatMs, 99), percentile(statusMs, 99)) < 50 && share < 1
                    ? "met"
                    : "NOT met");
    sessions.clear();
    server.reset();

    // --- (c) one shard file over plain HTTP on loopback: the coordinator's shard route vs nginx.
    std::printf("\n(c) download of one %lld MiB shard over plain HTTP on loopback, curl as the client\n",
                kShardBytes >> 20);
    const QString curl = QStandardPaths::findExecutable(u"curl"_qs);
    QString nginx = QStandardPaths::findExecutable(u"nginx"_qs);
    if (nginx.isEmpty())
        nginx = QStandardPaths::findExecutable(u"nginx"_qs, {u"/usr/sbin"_qs, u"/usr/local/sbin"_qs});
    if (curl.isEmpty()) {
        std::printf("    curl not found: skipped\n");
        return 0;
    }
    const QString plainDir = dir.filePath(u"plain"_qs);
    CoordinatorProcess plain(QStringList{u"--data-dir"_qs, plainDir, u"--listen"_qs, u"127.0.0.1:0"_qs,
                                         u"--insecure-loopback"_qs, u"--model"_qs, u"tiny"_qs, u"--stages"_qs,
                                         u"2"_qs});
    if (!plain.waitReady()) {
        std::fprintf(stderr, "tessera-coordinator --insecure-loopback did not start: %s\n",
                     plain.err().constData());
        return 1;
    }
    // The route streams whatever file the run's manifest names; a shard of this size stands in
    // for a real stage (the content does not matter to throughput, only its size).
    const QString shardDir = plainDir + u"/shards"_qs;
    const QString shardName = u"stage-0-v1.safetensors"_qs;
    {
        QFile f(shardDir + u'/' + shardName);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
            return 1;
        QByteArray block(1 << 20, Qt::Uninitialized);
        QRandomGenerator::global()->fillRange(reinterpret_cast<quint32*>(block.data()), block.size() / 4);
        for (qint64 i = 0; i < kShardBytes >> 20; ++i)
            f.write(block);
    }
    const QString coordinatorUrl = plain.url() + u"/v1/shards/0/1/"_qs + shardName;

    QString nginxVersion;
    if (!nginx.isEmpty()) {
        QProcess v; // "nginx version: nginx/1.22.1" on stderr
        v.start(nginx, {u"-v"_qs});
        v.waitForFinished();
        nginxVersion = QString::fromUtf8(v.readAllStandardError()).section(u'/', 1).trimmed();
    }
    std::unique_ptr<QProcess> nginxProcess;
    QString nginxUrl;
    if (nginx.isEmpty()) {
        std::printf("    nginx not found (apt-get install nginx-light): the comparison is skipped\n");
    } else {
        const int port = freePort();
        const QString ngDir = dir.filePath(u"nginx"_qs);
        QDir().mkpath(ngDir);
        // Debian's own nginx.conf settings for static files (sendfile, tcp_nopush), one worker as
        // the coordinator is one event loop; root may run it as itself.
        const QString conf =
            QStringLiteral(
                "%1daemon off; worker_processes 1; pid %2/nginx.pid; error_log %2/error.log;\n"
                "events { worker_connections 64; }\n"
                "http { access_log off; sendfile on; tcp_nopush on;\n"
                "  client_body_temp_path %2/body; proxy_temp_path %2/proxy;\n"
                "  fastcgi_temp_path %2/fastcgi; uwsgi_temp_path %2/uwsgi; scgi_temp_path %2/scgi;\n"
                "  server { listen 127.0.0.1:%3; root %4; } }\n")
                .arg(geteuid() == 0 ? u"user root; "_qs : QString(), ngDir)
                .arg(port)
                .arg(shardDir);
        QFile cf(ngDir + u"/nginx.conf"_qs);
        cf.open(QIODevice::WriteOnly);
        cf.write(conf.toUtf8());
        cf.close();
        nginxProcess = std::make_unique<QProcess>();
        nginxProcess->start(nginx, {u"-p"_qs, ngDir, u"-c"_qs, ngDir + u"/nginx.conf"_qs});
        nginxUrl = u"http://127.0.0.1:%1/"_qs.arg(port) + shardName;
        const bool up = waitFor(
            [&] {
                QProcess probe;
                probe.start(curl, {u"-s"_qs, u"-o"_qs, u"/dev/null"_qs, u"-r"_qs, u"0-0"_qs, u"-w"_qs,
                                   u"%{http_code}"_qs, nginxUrl});
                probe.waitForFinished();
                return probe.readAllStandardOutput() == "206";
            },
            10'000);
        if (!up) {
            std::printf("    nginx (%s) did not serve the file: the comparison is skipped\n%s\n",
                        qPrintable(nginx), nginxProcess->readAllStandardError().constData());
            nginxUrl.clear();
        }
    }

    // curl's own figure: bytes over the transfer's time, written to /dev/null.
    auto fetch = [&](const QString& url) -> double {
        QProcess p;
        p.start(curl, {u"-s"_qs, u"-o"_qs, u"/dev/null"_qs, u"-w"_qs,
                       u"%{http_code} %{size_download} %{speed_download}"_qs, url});
        p.waitForFinished(300'000);
        const QList<QByteArray> f = p.readAllStandardOutput().split(' ');
        if (f.size() != 3 || f.at(0) != "200" || f.at(1).toLongLong() != kShardBytes)
            return 0;
        return f.at(2).toDouble() / 1e6;
    };
    std::vector<double> ours, theirs;
    for (int round = 0; round < 3; ++round) {
        ours.push_back(fetch(coordinatorUrl));
        if (!nginxUrl.isEmpty())
            theirs.push_back(fetch(nginxUrl));
    }
    auto list = [](const std::vector<double>& v) {
        QString s;
        for (double x : v)
            s += u"%1 "_qs.arg(x, 7, 'f', 0);
        return s;
    };
    std::printf("    tessera-coordinator  MB/s: %s median %.0f\n", qPrintable(list(ours)),
                percentile(ours, 50));
    if (!theirs.empty()) {
        std::printf("    nginx %-14s MB/s: %s median %.0f\n", qPrintable(nginxVersion),
                    qPrintable(list(theirs)), percentile(theirs, 50));
        const double ratio = percentile(ours, 50) / percentile(theirs, 50);
        std::printf("    coordinator / nginx: %.1f%% (target >= 70%%: %s)\n", 100 * ratio,
                    ratio >= 0.7 ? "met" : "NOT met");
    }
    if (nginxProcess) {
        nginxProcess->terminate();
        nginxProcess->waitForFinished(5'000);
    }
    return 0;
}
