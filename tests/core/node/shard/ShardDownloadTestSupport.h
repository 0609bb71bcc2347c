// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the shard download tests share: shards and manifests made here, a relay that can drop the connection,
// and the coordinator's run.
#include "CoordinatorProcess.h"
#include "common/Identity.h"
#include "node/shard/ShardDownload.h"
#include "node/shard/ShardProgress.h"
#include "node/shard/ShardStore.h"
#include "protocol/ManifestSignature.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QPointer>
#include <QProcess>
#include <QSslCertificate>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <cstdio>
#include <memory>
#include <optional>

#include <sys/socket.h>

using namespace tessera;
using namespace tessera::node;
using gpu::ShardManifest;

namespace {

constexpr std::uint64_t kSmallChunk = 256 << 10;
constexpr int kStage = 1;

// A coordinator the test can SIGKILL (CoordinatorProcess only stops it politely).
class KillableCoordinator final {
public:
    explicit KillableCoordinator(const QString& dataDir) {
        m_process.start(coordinatorProgram(),
                        {QStringLiteral("--data-dir"), dataDir, QStringLiteral("--listen"),
                         QStringLiteral("127.0.0.1:0"), QStringLiteral("--model"), QStringLiteral("tiny"),
                         QStringLiteral("--stages"), QStringLiteral("2")});
    }
    ~KillableCoordinator() {
        m_process.kill();
        m_process.waitForFinished(5'000);
    }
    bool waitReady() {
        QByteArray out;
        (void)QTest::qWaitFor(
            [&] {
                out += m_process.readAllStandardOutput();
                // "ready": the run's shards are written and served (a new run prepares them first).
                return (out.contains("\nready: ") && out.endsWith('\n')) ||
                       m_process.state() == QProcess::NotRunning;
            },
            120'000);
        const qsizetype at = out.indexOf("listening on ");
        if (at < 0 || !out.contains("\nready: "))
            return false;
        m_url = QString::fromUtf8(out.mid(at + 13, out.indexOf('\n', at) - at - 13));
        return true;
    }
    void kill() {
        m_process.kill(); // SIGKILL: no goodbye to the connection
        m_process.waitForFinished(5'000);
    }
    bool running() const { return m_process.state() == QProcess::Running; }
    quint16 port() const { return quint16(QUrl(m_url).port()); }
    const QString& url() const { return m_url; }
    QByteArray err() { return m_process.readAllStandardError(); }

private:
    QProcess m_process;
    QString m_url;
};

// The network path between node and coordinator, a TCP relay: on loopback a killed process's
// kernel still delivers every byte it had queued (measured: the whole 3.3 MB shard was queued
// by 30%), so a vanished machine also needs its in-flight bytes lost — cut() resets every
// connection.
class Relay final : public QObject {
public:
    explicit Relay(quint16 upstream)
        : m_upstream(upstream) {
        m_server.listen(QHostAddress::LocalHost);
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket* in = m_server.nextPendingConnection()) {
                auto* out = new QTcpSocket(in);
                connect(in, &QTcpSocket::readyRead, out, [in, out] { out->write(in->readAll()); });
                connect(out, &QTcpSocket::readyRead, in, [in, out] { in->write(out->readAll()); });
                connect(out, &QTcpSocket::disconnected, in, [in] { in->disconnectFromHost(); });
                connect(out, &QTcpSocket::errorOccurred, in, [in] { in->abort(); });
                connect(in, &QTcpSocket::disconnected, in, &QObject::deleteLater);
                m_sockets << in;
                out->connectToHost(QHostAddress::LocalHost, m_upstream);
            }
        });
    }
    QString url() const { return QStringLiteral("https://127.0.0.1:%1").arg(m_server.serverPort()); }
    void cut() {
        m_server.close();
        for (const QPointer<QTcpSocket>& s : std::as_const(m_sockets)) {
            if (!s)
                continue;
            // Linger 0: close() sends a reset and drops what the kernel still queues for the node.
            const ::linger reset{1, 0};
            ::setsockopt(int(s->socketDescriptor()), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
            s->abort();
        }
    }

private:
    QTcpServer m_server;
    quint16 m_upstream;
    QList<QPointer<QTcpSocket>> m_sockets;
};

inline QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

inline bool writeAll(const QString& path, const QByteArray& data) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(data) == data.size();
}

const char* why(const Status& s) {
    return s ? "" : s.message().c_str();
}

} // namespace
