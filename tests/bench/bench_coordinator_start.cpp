// SPDX-License-Identifier: Apache-2.0
// bench_coordinator_start: a new run's coordinator, per model — how soon it answers, how soon it serves
// (its initial shards written in the background), its peak memory, how soon SIGTERM stops it, and the
// same run restarted (it answers at once and reads its checkpoints back before it serves; at 8b also
// stopped while it reads; as root, once more after the page cache is dropped: a cold disk).
//
// bench_coordinator_start [MODELS=tiny,small,8b] [DIR=a temporary directory]
// The 8b run writes ~32 GB of shards under DIR. Nothing is asserted; the figures go to BENCHMARKS.md.
#include "CoordinatorProcess.h"
#include "ProcessStats.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QTemporaryDir>
#include <QTimer>

#include <cstdio>
#include <unistd.h>

namespace {

// VmHWM (the kernel's peak of the resident set) in MiB; -1 when it cannot be read.
double peakRssMiB(qint64 pid) {
    QFile f(QStringLiteral("/proc/%1/status").arg(pid));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (line.startsWith("VmHWM:"))
            return line.mid(6).trimmed().split(' ').first().toDouble() / 1024;
    return -1;
}

// GET url/v1/status over TLS with the run's certificate; the JSON, or an empty object.
QJsonObject status(QNetworkAccessManager& net, const QString& url, const QString& runDir) {
    QNetworkRequest request(QUrl(url + u"/v1/status"_qs));
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    ssl.setCaCertificates(QSslCertificate::fromPath(runDir + u"/tls.crt"_qs, QSsl::Pem));
    request.setSslConfiguration(ssl);
    QNetworkReply* reply = net.get(request);
    QEventLoop loop;
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    QTimer::singleShot(10'000, &loop, &QEventLoop::quit);
    loop.exec();
    const QJsonObject out = QJsonDocument::fromJson(reply->readAll()).object();
    reply->deleteLater();
    return out;
}

struct Row {
    QString what;
    double answerS = -1, readyS = -1, peakMiB = -1, readyRssMiB = -1, exitS = -1;
    qint64 shardBytes = 0;
};

qint64 bytesUnder(const QString& dir) {
    qint64 n = 0;
    for (const QFileInfo& f : QDir(dir).entryInfoList(QDir::Files))
        n += f.size();
    return n;
}

// One start of the coordinator on runDir, labelled `what`: how soon it answers and serves, its memory,
// how soon SIGTERM stops it. With stopAfterS ≥ 0, SIGTERM that many seconds after its first answer
// instead of waiting for it to serve.
Row measure(const QString& what, const QString& runDir, const QStringList& extra, double stopAfterS) {
    Row row;
    row.what = what;
    const QByteArray name = what.toUtf8();
    QElapsedTimer clock;
    clock.start();
    CoordinatorProcess p(QStringList{u"--data-dir"_qs, runDir, u"--listen"_qs, u"127.0.0.1:0"_qs} + extra);
    if (!p.waitListening()) {
        std::printf("%s: did not start: %s\n", name.constData(), p.err().constData());
        return row;
    }
    const qint64 pid = p.pid();
    QNetworkAccessManager net;
    const QJsonObject first = status(net, p.url(), runDir);
    row.answerS = double(clock.elapsed()) / 1000;
    std::printf("  %s: answered after %.1f s (state %s)\n", name.constData(), row.answerS,
                qPrintable(first.value(u"state"_qs).toString()));
    if (stopAfterS < 0) {
        // Ready: waitReady() waits a bounded time; a large run takes several of those.
        while (!p.waitReady())
            if (p.pid() <= 0) {
                std::printf("%s: ended before it served: %s\n", name.constData(), p.err().constData());
                return row;
            }
        row.readyS = double(clock.elapsed()) / 1000;
        row.readyRssMiB = processRssMiB(pid);
    } else {
        QElapsedTimer wait;
        wait.start();
        while (wait.elapsed() < qint64(stopAfterS * 1000))
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 100);
        const QJsonObject during = status(net, p.url(), runDir);
        std::printf("  %s: after %.0f s: state %s %s\n", name.constData(), stopAfterS,
                    qPrintable(during.value(u"state"_qs).toString()),
                    QJsonDocument(during.value(u"preparing"_qs).toObject())
                        .toJson(QJsonDocument::Compact)
                        .constData());
    }
    row.peakMiB = peakRssMiB(pid);
    QElapsedTimer stop;
    stop.start();
    const int code = p.terminate(120'000);
    row.exitS = double(stop.elapsed()) / 1000;
    row.shardBytes = bytesUnder(runDir + u"/shards"_qs);
    std::printf("  %s: SIGTERM: exit code %d in %.1f s; %lld bytes of shards left\n", name.constData(), code,
                row.exitS, static_cast<long long>(row.shardBytes));
    return row;
}

// A new run of `model` (with stopAfterS ≥ 0: stopped while it prepares, in a directory of its own).
Row run(const QString& model, const QString& base, double stopAfterS) {
    const QString runDir = base + u"/"_qs + model + (stopAfterS >= 0 ? u"-stopped"_qs : QString());
    QDir(runDir).removeRecursively();
    return measure(model + (stopAfterS >= 0 ? u", SIGTERM while preparing"_qs : QString()), runDir,
                   {u"--model"_qs, model}, stopAfterS);
}

// Writes what is dirty and drops the page cache, so that the next start reads its checkpoints from
// the disk (root only: false elsewhere).
bool dropPageCache() {
    ::sync();
    QFile f(u"/proc/sys/vm/drop_caches"_qs);
    return f.open(QIODevice::WriteOnly) && f.write("3\n") == 2;
}

// The same run started again: it answers at once and reads (and verifies) its checkpoints before it
// serves. With stopAfterS ≥ 0: stopped while it reads.
Row restart(const QString& model, const QString& base, double stopAfterS, const QString& how = {}) {
    return measure(model + (stopAfterS >= 0 ? u", restarted, SIGTERM while opening"_qs : u", restarted"_qs) +
                       how,
                   base + u"/"_qs + model, {}, stopAfterS);
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const QStringList models =
        QString::fromLocal8Bit(argc > 1 ? argv[1] : "tiny,small,8b").split(u',', Qt::SkipEmptyParts);
    QTemporaryDir temporary;
    const QString base = argc > 2 ? QString::fromLocal8Bit(argv[2]) : temporary.path();
    std::printf("bench_coordinator_start: a new run per model in %s, SQLite, TLS on loopback\n",
                qPrintable(base));
    std::vector<Row> rows;
    for (const QString& m : models) {
        rows.push_back(run(m, base, -1));
        if (m == u"8b"_qs)
            rows.push_back(restart(m, base, 20));
        rows.push_back(restart(m, base, -1));
        if (dropPageCache())
            rows.push_back(restart(m, base, -1, u" cold"_qs));
        QDir(base + u"/"_qs + m).removeRecursively(); // 8b: 32 GB
        if (m == u"8b"_qs)
            rows.push_back(run(m, base, 60));
    }
    std::printf("\n%-34s %10s %10s %12s %12s %10s %10s\n", "run", "answer s", "ready s", "peak RSS MiB",
                "RSS ready MiB", "shards GB", "exit s");
    for (const Row& r : rows)
        std::printf("%-34s %10.1f %10.1f %12.0f %12.0f %10.2f %10.1f\n", qPrintable(r.what), r.answerS,
                    r.readyS, r.peakMiB, r.readyRssMiB, double(r.shardBytes) / 1e9, r.exitS);
    return 0;
}
