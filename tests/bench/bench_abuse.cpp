// SPDX-License-Identifier: Apache-2.0
// bench_abuse: one abusive host against a real swarm (tessera-coordinator and honest tessera-node
// processes, tiny, 2 stages, on loopback), measured side by side in one run: the honest nodes'
// tokens/s and the coordinator's peak resident memory over a quiet window, then over a window of
// the same length while a host at another loopback address (127.0.0.2, so the coordinator sees a
// second host) abuses it with the coordinator's default limits (more than 12 honest nodes, all on 127.0.0.1,
// get a larger per-address connection limit: 2 per node + 16):
//   - half-open connections (from 127.0.0.2): it keeps 200 TCP connections open that never start their TLS
//     handshake (each closed one is opened again);
//   - sessions (from 127.0.0.3): admitted once, it opens a new /v1/session with its token every 100 ms (each
//     replaces the one before) and asks for a challenge every 100 ms;
//   - oversized messages: each session sends a 17 KiB text message or a 64 MiB binary one, in
//     512 KiB frames, as fast as the socket takes them, until it is cut off.
// The abuser runs in this process (its CPU is printed: on a small machine it competes with the
// nodes for the cores, which is not the coordinator's doing).
//
// bench_abuse [HONEST_NODES=6] [WINDOW_S=60]. Everything is printed; nothing is asserted.
#include "BenchSwarm.h"

#include "common/Identity.h"
#include "protocol/AdmissionClaims.h"

#include <QPointer>
#include <QSslCertificate>
#include <QSslSocket>
#include <QTcpSocket>
#include <QTimer>

#include <sys/resource.h>

using namespace tessera;
using namespace tessera::bench;

namespace {

const QHostAddress kAbuser(QStringLiteral("127.0.0.2"));
// Its sessions and oversized messages come from a second address: from the first, the half-open
// connections hold every connection the per-address limit allows, and nothing else gets in.
const QHostAddress kSessionAbuser(QStringLiteral("127.0.0.3"));

double selfCpuSeconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A TLS connection from the abuser's address, trusting the coordinator's certificate.
QSslSocket* tlsFrom(quint16 port, const QString& caFile, QObject* parent,
                    const QHostAddress& from = kAbuser) {
    auto* s = new QSslSocket(parent);
    QSslConfiguration ssl = QSslConfiguration::defaultConfiguration();
    ssl.setCaCertificates(QSslCertificate::fromPath(caFile, QSsl::Pem));
    s->setSslConfiguration(ssl);
    s->bind(from, 0);
    s->connectToHostEncrypted(QStringLiteral("127.0.0.1"), port);
    return s;
}

// One HTTPS request from the abuser's address; the response's body (empty on failure).
QByteArray httpsFrom(quint16 port, const QString& caFile, const QByteArray& method, const QByteArray& path,
                     const QByteArray& body) {
    QObject owner;
    QSslSocket* s = tlsFrom(port, caFile, &owner);
    if (!s->waitForEncrypted(10'000))
        return {};
    s->write(method + ' ' + path +
             " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
             "application/json\r\nContent-Length: " +
             QByteArray::number(body.size()) + "\r\n\r\n" + body);
    QByteArray response;
    QElapsedTimer t;
    t.start();
    while (s->state() != QAbstractSocket::UnconnectedState && t.elapsed() < 10'000) {
        s->waitForReadyRead(200);
        response += s->readAll();
    }
    response += s->readAll();
    return response.mid(response.indexOf("\r\n\r\n") + 4);
}

// A client WebSocket frame (masked with a zero key: the payload goes as it is).
QByteArray frame(quint8 opcode, bool fin, qint64 length) {
    QByteArray h;
    h.append(char((fin ? 0x80 : 0) | opcode));
    if (length < 126) {
        h.append(char(0x80 | length));
    } else if (length < 65536) {
        h.append(char(0x80 | 126));
        h.append(char(length >> 8));
        h.append(char(length & 0xff));
    } else {
        h.append(char(0x80 | 127));
        for (int i = 7; i >= 0; --i)
            h.append(char((length >> (8 * i)) & 0xff));
    }
    h.append(QByteArray(4, '\0'));
    return h;
}

struct Abuse {
    int halfOpenHeld = 0;      // at the end
    qint64 halfOpenOpened = 0; // connections opened
    qint64 sessionsOpened = 0; // upgrades sent
    qint64 sessionsCut = 0;    // closed by the coordinator
    qint64 bytesSent = 0;      // oversized message bytes written
    qint64 challenges = 0, challengesRefused = 0;
    double cpuSeconds = 0;
};

class Abuser {
public:
    Abuser(quint16 port, QString caFile, QString token)
        : m_port(port)
        , m_ca(std::move(caFile))
        , m_token(std::move(token)) {}

    void start() {
        QObject::connect(&m_halfOpen, &QTimer::timeout, [this] { refillHalfOpen(); });
        m_halfOpen.start(200);
        QObject::connect(&m_sessions, &QTimer::timeout, [this] { openSession(); });
        m_sessions.start(100);
        QObject::connect(&m_challenges, &QTimer::timeout, [this] { challenge(); });
        m_challenges.start(100);
    }
    void stop() {
        m_halfOpen.stop();
        m_sessions.stop();
        m_challenges.stop();
        m_result.halfOpenHeld = int(m_held.size());
        m_root.reset();
    }
    const Abuse& result() const { return m_result; }
    Abuse& result() { return m_result; }

private:
    void refillHalfOpen() {
        m_held.erase(std::remove_if(m_held.begin(), m_held.end(),
                                    [](const QPointer<QTcpSocket>& s) {
                                        return !s || s->state() == QAbstractSocket::UnconnectedState;
                                    }),
                     m_held.end());
        while (m_held.size() < 200) {
            auto* s = new QTcpSocket(m_root.get());
            s->bind(kAbuser, 0);
            s->connectToHost(QStringLiteral("127.0.0.1"), m_port);
            QObject::connect(s, &QAbstractSocket::disconnected, s, &QObject::deleteLater);
            m_held.push_back(s);
            ++m_result.halfOpenOpened;
        }
    }
    void challenge() {
        // One raw request a tick, without waiting on it (the answer is read when it comes).
        QSslSocket* s = tlsFrom(m_port, m_ca, m_root.get());
        const QByteArray body =
            "{\"node_key\":\"" + Identity::generate()->publicKeyBase64().toLatin1() + "\"}";
        QObject::connect(s, &QSslSocket::encrypted, s, [s, body] {
            s->write("POST /v1/admission/challenge HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nContent-Length: " +
                     QByteArray::number(body.size()) + "\r\n\r\n" + body);
        });
        auto got = std::make_shared<QByteArray>();
        QObject::connect(s, &QIODevice::readyRead, s, [s, got] { *got += s->readAll(); });
        QObject::connect(s, &QAbstractSocket::disconnected, s, [this, s, got] {
            ++m_result.challenges;
            if (!got->startsWith("HTTP/1.1 200"))
                ++m_result.challengesRefused;
            s->deleteLater();
        });
    }
    void openSession() {
        QSslSocket* s = tlsFrom(m_port, m_ca, m_root.get(), kSessionAbuser);
        const bool text = (m_result.sessionsOpened % 2) == 0;
        ++m_result.sessionsOpened;
        auto upgraded = std::make_shared<bool>(false);
        auto sent = std::make_shared<qint64>(0);
        QObject::connect(s, &QSslSocket::encrypted, s, [this, s] {
            s->write(
                "GET /v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                "Authorization: Bearer " +
                m_token.toLatin1() + "\r\n\r\n");
        });
        const auto pump = [this, s, text, sent] {
            constexpr qint64 kFrame = 512 * 1024, kMessage = qint64(64) << 20;
            if (text) {
                if (*sent == 0) {
                    s->write(frame(0x1, true, 17 * 1024) + QByteArray(17 * 1024, 'x'));
                    *sent = 17 * 1024;
                    m_result.bytesSent += *sent;
                }
                return;
            }
            while (*sent < kMessage && s->encryptedBytesToWrite() + s->bytesToWrite() < 2 * kFrame) {
                s->write(frame(*sent == 0 ? 0x2 : 0x0, *sent + kFrame >= kMessage, kFrame) +
                         QByteArray(kFrame, 'z'));
                *sent += kFrame;
                m_result.bytesSent += kFrame;
            }
        };
        QObject::connect(s, &QIODevice::readyRead, s, [s, upgraded, pump] {
            const QByteArray got = s->readAll();
            if (!*upgraded && got.startsWith("HTTP/1.1 101")) {
                *upgraded = true;
                pump();
            }
        });
        QObject::connect(s, &QSslSocket::encryptedBytesWritten, s, [upgraded, pump] {
            if (*upgraded)
                pump();
        });
        QObject::connect(s, &QAbstractSocket::disconnected, s, [this, s, upgraded] {
            if (*upgraded)
                ++m_result.sessionsCut;
            s->deleteLater();
        });
    }

    quint16 m_port;
    QString m_ca;
    QString m_token;
    std::unique_ptr<QObject> m_root = std::make_unique<QObject>();
    std::vector<QPointer<QTcpSocket>> m_held;
    QTimer m_halfOpen, m_sessions, m_challenges;
    Abuse m_result;
};

struct Window {
    double tokensPerSecond = 0;
    double peakRssMiB = 0;
    double coordinatorCpu = 0;
};

// Steps made over windowS seconds (each kTokensPerStep tokens), sampling the coordinator's RSS.
Window measure(LocalSwarm& swarm, int windowS) {
    Window w;
    const qint64 pid = swarm.coordinatorPid();
    const qint64 step0 = swarm.get(QStringLiteral("/v1/status")).value(u"step").toInteger();
    const double cpu0 = processCpuSeconds(pid);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < windowS * 1000) {
        w.peakRssMiB = std::max(w.peakRssMiB, processRssMiB(pid));
        sleepWithEvents(250);
    }
    const qint64 step1 = swarm.get(QStringLiteral("/v1/status")).value(u"step").toInteger();
    const double seconds = double(t.elapsed()) / 1000;
    w.tokensPerSecond = double((step1 - step0) * kTokensPerStep) / seconds;
    w.coordinatorCpu = (processCpuSeconds(pid) - cpu0) / seconds;
    return w;
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    const int honest = args.size() > 1 ? std::max(2, args.at(1).toInt()) : 6;
    const int windowS = args.size() > 2 ? std::max(10, args.at(2).toInt()) : 60;
    QTemporaryDir temp;
    std::printf("bench_abuse: %d honest nodes (tiny, %d stages, batch %d x %d, %d microbatches/step), "
                "windows of %d s; load %s\n",
                honest, kStages, kBatch, kSeq, kMicrobatches, windowS, qPrintable(loadAverage()));
    // The honest nodes all come from 127.0.0.1: beyond the default 32 connections an address may
    // hold (a session and a credits poll or download each), the limit is raised for them — as an
    // operator would for a site where many volunteers share one address. The abuser's addresses get
    // the same, larger allowance.
    QStringList arguments = coordinatorArguments(Flow(), 0);
    if (honest > 12)
        arguments << QStringLiteral("--max-connections-per-address") << QString::number(2 * honest + 16);
    LocalSwarm swarm(temp.path(), arguments);
    if (!startCoordinator(swarm) || !addNodesAndWait(swarm, honest)) {
        temp.setAutoRemove(false);
        std::printf("%d of %d nodes running; kept %s\n", int(swarm.runningNodes().size()), honest,
                    qPrintable(temp.path()));
        return 1;
    }
    std::printf("coordinator: %s (default limits otherwise)\n", qPrintable(swarm.coordinatorCommand()));

    // The abuser is admitted once, from its own address.
    const Identity abuserId = *Identity::generate();
    const QByteArray keyBody = "{\"node_key\":\"" + abuserId.publicKeyBase64().toLatin1() + "\"}";
    const QJsonObject challenge = QJsonDocument::fromJson(httpsFrom(swarm.port(), swarm.caFile(), "POST",
                                                                    "/v1/admission/challenge", keyBody))
                                      .object();
    const QJsonObject claims = protocol::makeAdmissionRequest(
        abuserId, challenge.value(u"nonce").toString(),
        QJsonObject{{QStringLiteral("device"), QStringLiteral("cpu")},
                    {QStringLiteral("name"), QStringLiteral("Abuser CPU")},
                    {QStringLiteral("memory_bytes"), qint64(8) << 30}},
        QJsonObject{{QStringLiteral("gflops"), 50.0}, {QStringLiteral("dtype"), QStringLiteral("fp32")}},
        QStringLiteral("0.2.0"));
    const QString token =
        QJsonDocument::fromJson(httpsFrom(swarm.port(), swarm.caFile(), "POST", "/v1/admission",
                                          QJsonDocument(claims).toJson(QJsonDocument::Compact)))
            .object()
            .value(u"session_token")
            .toString();
    if (token.isEmpty())
        std::printf("warning: the abuser was not admitted: its sessions are refused at once\n");

    note(QStringLiteral("quiet window..."));
    const Window quiet = measure(swarm, windowS);
    note(QStringLiteral("abused window..."));
    Abuser abuser(swarm.port(), swarm.caFile(), token);
    const double cpu0 = selfCpuSeconds();
    abuser.start();
    const Window abused = measure(swarm, windowS);
    abuser.result().cpuSeconds = selfCpuSeconds() - cpu0;
    abuser.stop();
    const Abuse& a = abuser.result();

    std::printf("\n%-34s %14s %14s\n", "", "quiet", "abused");
    std::printf("%-34s %14.0f %14.0f  (%.0f%%)\n", "honest tokens/s", quiet.tokensPerSecond,
                abused.tokensPerSecond,
                quiet.tokensPerSecond > 0 ? 100 * abused.tokensPerSecond / quiet.tokensPerSecond : 0);
    std::printf("%-34s %14.1f %14.1f\n", "coordinator peak RSS (MiB)", quiet.peakRssMiB, abused.peakRssMiB);
    std::printf("%-34s %13.0f%% %13.0f%%\n", "coordinator CPU", 100 * quiet.coordinatorCpu,
                100 * abused.coordinatorCpu);
    std::printf("\nabuser (127.0.0.2): %lld half-open connections opened (%d held at the end), %lld sessions "
                "opened, %lld cut off, %.1f MiB of oversized messages written, %lld challenges (%lld "
                "refused), its CPU %.0f%% of one core\n",
                qlonglong(a.halfOpenOpened), a.halfOpenHeld, qlonglong(a.sessionsOpened),
                qlonglong(a.sessionsCut), double(a.bytesSent) / (1 << 20), qlonglong(a.challenges),
                qlonglong(a.challengesRefused), 100 * a.cpuSeconds / windowS);
    std::printf("honest nodes still working: %d of %d\n", int(swarm.runningNodes().size()), honest);
    swarm.stop();
    return 0;
}
