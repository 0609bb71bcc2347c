// SPDX-License-Identifier: Apache-2.0
#pragma once
// What bench_coordinator measures with: raw HTTP clients, WebSocket sessions, nginx for the download
// comparison.
#include "CoordinatorProcess.h"
#include "ProcessStats.h"
#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QRandomGenerator>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTimer>
#include <QWebSocket>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

using namespace tessera;

namespace {

constexpr int kHeartbeatPeriodMs = 10'000;
constexpr int kAdmissionWorkers = 32; // concurrent admissions, one HTTPS connection each
constexpr int kSequentialAdmissions = 200;
constexpr int kConcurrentAdmissions = 2'000;
constexpr qint64 kShardBytes = qint64(256) << 20;

// Runs the event loop until done() or the deadline. QTest::qWaitFor would sleep 10 ms between
// polls, which would show up in every latency measured here.
inline bool waitFor(const std::function<bool()>& done, int ms) {
    QElapsedTimer t;
    t.start();
    QTimer wake; // the loop never blocks longer than this without looking at done()
    wake.start(20);
    while (!done()) {
        if (t.elapsed() > ms)
            return false;
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    }
    return true;
}

inline double percentile(std::vector<double> v, double p) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())))];
}

inline double selfCpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// CoordinatorProcess does not say its pid: it is our child named tessera-coordinator.
inline qint64 childCoordinatorPid() {
    const QStringList entries = QDir(QStringLiteral("/proc")).entryList(QDir::Dirs);
    for (const QString& e : entries) {
        bool ok = false;
        const qint64 pid = e.toLongLong(&ok);
        if (!ok)
            continue;
        QFile f(QStringLiteral("/proc/%1/stat").arg(pid));
        if (!f.open(QIODevice::ReadOnly))
            continue;
        const QByteArray s = f.readAll();
        const QList<QByteArray> after = s.mid(s.lastIndexOf(')') + 2).split(' ');
        if (s.contains("(tessera-coordin") && after.size() > 1 && after.at(1).toLongLong() == getpid())
            return pid;
    }
    return -1;
}

inline int freePort() {
    QTcpServer s;
    s.listen(QHostAddress::LocalHost, 0);
    return s.serverPort();
}

inline QJsonObject hardware() {
    return QJsonObject{{QStringLiteral("device"), QStringLiteral("cpu")},
                       {QStringLiteral("name"), QStringLiteral("Bench CPU")},
                       {QStringLiteral("memory_bytes"), qint64(8) << 30}};
}

inline QJsonObject benchClaims() {
    return QJsonObject{{QStringLiteral("gflops"), 50.0}, {QStringLiteral("dtype"), QStringLiteral("fp32")}};
}

// One node's admission, asynchronous: challenge → signed admission → done(session token or empty).
class Admitter final {
public:
    Admitter(const QString& base, const QSslConfiguration& ssl)
        : m_base(base)
        , m_ssl(ssl) {}

    void admit(const Identity* id, std::function<void(QString)> done) {
        post(u"/v1/admission/challenge"_qs, QJsonObject{{u"node_key"_qs, id->publicKeyBase64()}},
             [this, id, done](const QJsonObject& challenge) {
                 const QString nonce = challenge.value(u"nonce").toString();
                 if (nonce.isEmpty())
                     return done(QString());
                 post(u"/v1/admission"_qs,
                      protocol::makeAdmissionRequest(*id, nonce, hardware(), benchClaims(), u"0.2.0"_qs),
                      [done](const QJsonObject& admitted) {
                          done(admitted.value(u"session_token").toString());
                      });
             });
    }

private:
    void post(const QString& path, const QJsonObject& body, std::function<void(QJsonObject)> then) {
        QNetworkRequest request(QUrl(m_base + path));
        request.setSslConfiguration(m_ssl);
        request.setHeader(QNetworkRequest::ContentTypeHeader, u"application/json"_qs);
        QNetworkReply* reply = m_net.post(request, QJsonDocument(body).toJson(QJsonDocument::Compact));
        QObject::connect(reply, &QNetworkReply::finished, reply, [reply, then] {
            reply->deleteLater();
            then(QJsonDocument::fromJson(reply->readAll()).object());
        });
    }

    QString m_base;
    QSslConfiguration m_ssl;
    QNetworkAccessManager m_net; // one per admitter: QNAM opens at most 6 connections per host
};

inline std::vector<Identity> identities(int n) {
    std::vector<Identity> ids;
    ids.reserve(size_t(n));
    for (int i = 0; i < n; ++i)
        ids.push_back(*Identity::generate());
    return ids;
}

// Admits every id with `workers` in flight. With `after`, a worker hands each admitted node's
// token to it and takes its next id only when `after` calls back.
struct AdmissionRun {
    int admitted = 0;
    int failed = 0;
    double seconds = 0;
    std::vector<double> latenciesMs;
};

inline AdmissionRun admitAll(const QString& base, const QSslConfiguration& ssl,
                             const std::vector<Identity>& ids, int workers,
                             const std::function<void(const QString&, std::function<void()>)>& after) {
    AdmissionRun run;
    std::vector<std::unique_ptr<Admitter>> admitters;
    for (int w = 0; w < workers; ++w)
        admitters.push_back(std::make_unique<Admitter>(base, ssl));
    size_t next = 0;
    int finished = 0;
    QElapsedTimer clock;
    clock.start();
    std::function<void(int)> start = [&](int w) {
        if (next >= ids.size())
            return;
        const Identity* id = &ids[next++];
        const qint64 t0 = clock.nsecsElapsed();
        admitters[size_t(w)]->admit(id, [&, w, t0](const QString& token) {
            run.latenciesMs.push_back(double(clock.nsecsElapsed() - t0) / 1e6);
            ++(token.isEmpty() ? run.failed : run.admitted);
            auto resume = [&, w] {
                ++finished;
                start(w);
            };
            if (after && !token.isEmpty())
                after(token, resume);
            else
                resume();
        });
    };
    for (int w = 0; w < workers; ++w)
        start(w);
    waitFor([&] { return finished == int(ids.size()); }, 3'600'000);
    run.seconds = double(clock.nsecsElapsed()) / 1e9;
    return run;
}

// One simulated node's /v1/session: heartbeats when told, the time to each ack recorded.
struct Session {
    QWebSocket socket;
    qint64 sentNs = -1; // the heartbeat in flight; -1 when none
};

} // namespace
