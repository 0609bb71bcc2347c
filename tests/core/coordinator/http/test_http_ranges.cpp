// SPDX-License-Identifier: Apache-2.0
// HttpServer file streaming: RFC 9110 byte ranges and If-Range against an ETag that follows the
// file on disk, bounded memory for a large file sent to a slow reader, and the real curl binary
// (ranges, resume, TLS verification).
#include "common/TlsCertificate.h"
#include "coordinator/http/HttpServer.h"

#include <QEventLoop>
#include <QFile>
#include <QProcess>
#include <QScopeGuard>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include "TestSupport.h"
#include <QTimer>

#include <cstdio>
#include <optional>

#include <sys/stat.h>

using namespace tessera;
using namespace tessera::coordinator::http;

namespace {

struct Response {
    int status = 0;
    HttpHeaders headers;
    QByteArray body;
};

// Sends one request on a new connection and parses the response by Content-Length.
std::optional<Response> exchange(quint16 port, const QByteArray& request, bool headOnly = false) {
    QTcpSocket socket;
    QByteArray buffer;
    QObject::connect(&socket, &QIODevice::readyRead, [&] { buffer += socket.readAll(); });
    socket.connectToHost(QHostAddress::LocalHost, port);
    socket.write(request);
    std::optional<Response> out;
    const bool done = QTest::qWaitFor(
        [&] {
            const qsizetype end = buffer.indexOf("\r\n\r\n");
            if (end < 0)
                return false;
            Response r;
            const QByteArrayList lines = buffer.left(end).split('\n');
            r.status = lines.first().split(' ').value(1).toInt();
            for (qsizetype i = 1; i < lines.size(); ++i) {
                const qsizetype colon = lines[i].indexOf(':');
                r.headers.add(lines[i].left(colon), lines[i].mid(colon + 1).trimmed());
            }
            const qint64 length = headOnly ? 0 : r.headers.value("Content-Length").toLongLong();
            if (buffer.size() < end + 4 + length)
                return false;
            r.body = buffer.mid(end + 4, length);
            out = r;
            return true;
        },
        10'000);
    return done ? out : std::nullopt;
}

QByteArray pattern(qint64 size, int seed) {
    QByteArray data(size, Qt::Uninitialized);
    quint32 x = 2463534242u + quint32(seed);
    for (char& c : data) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c = char(x);
    }
    return data;
}

using Run = tessera::test::ProcessRun;
using tessera::test::readFile;
using tessera::test::writeFile;

// Runs a program while the event loop keeps serving.
Run run(const QString& program, const QStringList& arguments) {
    return tessera::test::runProcess(program, arguments,
                                     {QProcessEnvironment::systemEnvironment(), true, 20'000});
}

// The ETag the server must send, by the documented rule: the route's tag plus the file's size,
// modification time in ns and inode, in hex, inside the quotes.
QByteArray expectedEtag(const QByteArray& tag, const QString& path) {
    struct stat st {};
    if (::stat(QFile::encodeName(path).constData(), &st) != 0)
        return {};
    const quint64 mtimeNs = quint64(st.st_mtim.tv_sec) * 1'000'000'000u + quint64(st.st_mtim.tv_nsec);
    return tag.chopped(1) + '-' + QByteArray::number(quint64(st.st_size), 16) + '-' +
           QByteArray::number(mtimeNs, 16) + '-' + QByteArray::number(quint64(st.st_ino), 16) + '"';
}

// Replaces `path` the way a publisher or an operator's restore does: a temp file renamed over it.
bool replaceFile(const QString& path, const QByteArray& data) {
    const QString temp = path + QStringLiteral(".tmp");
    return writeFile(temp, data) &&
           std::rename(QFile::encodeName(temp).constData(), QFile::encodeName(path).constData()) == 0;
}

qint64 residentBytes() {
    QFile f(QStringLiteral("/proc/self/status"));
    if (!f.open(QIODevice::ReadOnly))
        return -1;
    for (const QByteArray& line : f.readAll().split('\n')) {
        if (line.startsWith("VmRSS:"))
            return line.mid(6).trimmed().split(' ').first().toLongLong() * 1024;
    }
    return -1;
}

} // namespace

class TestHttpRanges : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QByteArray m_data;
    QByteArray m_etag;
    std::unique_ptr<HttpServer> m_server;
    QString m_curl;

    QString path(const QString& name) const { return m_dir.filePath(name); }
    QByteArray served() const { return expectedEtag(m_etag, path(QStringLiteral("shard.bin"))); }

    void serve(HttpServer& server) {
        server.route("GET", QStringLiteral("/v1/shards/{stage}/{version}/{file}"),
                     [this](const HttpRequest& r) {
                         return HttpResponse::file(path(r.param(QStringLiteral("file"))),
                                                   "application/octet-stream", m_etag);
                     });
    }

    std::optional<Response> request(const QByteArray& headers, const QByteArray& method = "GET") {
        return exchange(m_server->port(),
                        method + " /v1/shards/0/1/shard.bin HTTP/1.1\r\nHost: x\r\n" + headers + "\r\n",
                        method == "HEAD");
    }

    QString url() const {
        return QStringLiteral("http://127.0.0.1:%1/v1/shards/0/1/shard.bin").arg(m_server->port());
    }

    void requireCurl() {
        if (m_curl.isEmpty())
            QSKIP("the curl binary is not installed");
    }

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_data = pattern(1'000'000, 1);
        m_etag = QByteArrayLiteral("\"v1\"");
        QVERIFY(writeFile(path(QStringLiteral("shard.bin")), m_data));
        m_server = std::make_unique<HttpServer>();
        serve(*m_server);
        const Status s = m_server->listen(QHostAddress::LocalHost);
        QVERIFY2(s, s ? "" : s.message().c_str());
        m_curl = QStandardPaths::findExecutable(QStringLiteral("curl"));
    }

    void wholeFile() {
        auto r = request({});
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->headers.value("ETag"), served());
        QVERIFY(r->headers.value("ETag").startsWith("\"v1-"));
        QCOMPARE(r->headers.value("Accept-Ranges"), QByteArrayLiteral("bytes"));
        QCOMPARE(r->headers.value("Content-Type"), QByteArrayLiteral("application/octet-stream"));
        QVERIFY(r->body == m_data);
    }

    void head() {
        auto r = request({}, "HEAD");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->headers.value("Content-Length"), QByteArray::number(m_data.size()));
        QCOMPARE(r->headers.value("ETag"), served());
    }

    void ranges_data() {
        QTest::addColumn<QByteArray>("range");
        QTest::addColumn<int>("status");
        QTest::addColumn<qint64>("first");
        QTest::addColumn<qint64>("last");
        const qint64 n = 1'000'000;
        QTest::newRow("middle") << QByteArrayLiteral("bytes=100-199") << 206 << qint64(100) << qint64(199);
        QTest::newRow("suffix") << QByteArrayLiteral("bytes=-500") << 206 << n - 500 << n - 1;
        QTest::newRow("open-ended") << QByteArrayLiteral("bytes=999000-") << 206 << qint64(999000) << n - 1;
        QTest::newRow("past the end clamps")
            << QByteArrayLiteral("bytes=10-99999999") << 206 << qint64(10) << n - 1;
        QTest::newRow("suffix longer than file")
            << QByteArrayLiteral("bytes=-5000000") << 206 << qint64(0) << n - 1;
        QTest::newRow("several ranges: whole")
            << QByteArrayLiteral("bytes=0-1,5-6") << 200 << qint64(0) << n - 1;
        QTest::newRow("invalid: whole") << QByteArrayLiteral("bytes=9-3") << 200 << qint64(0) << n - 1;
        QTest::newRow("other unit: whole") << QByteArrayLiteral("items=0-3") << 200 << qint64(0) << n - 1;
        QTest::newRow("unsatisfiable")
            << QByteArrayLiteral("bytes=1000000-") << 416 << qint64(0) << qint64(-1);
        QTest::newRow("empty suffix") << QByteArrayLiteral("bytes=-0") << 416 << qint64(0) << qint64(-1);
    }
    void ranges() {
        QFETCH(QByteArray, range);
        QFETCH(int, status);
        QFETCH(qint64, first);
        QFETCH(qint64, last);
        auto r = request("Range: " + range + "\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, status);
        QCOMPARE(r->headers.value("ETag"), served());
        if (status == 416) {
            QCOMPARE(r->headers.value("Content-Range"), QByteArrayLiteral("bytes */1000000"));
            return;
        }
        QVERIFY(r->body == m_data.mid(first, last - first + 1));
        if (status == 206) {
            QCOMPARE(r->headers.value("Content-Range"),
                     "bytes " + QByteArray::number(first) + '-' + QByteArray::number(last) + "/1000000");
        } else {
            QVERIFY(!r->headers.contains("Content-Range"));
        }
    }

    void ifRange() {
        auto r = request("Range: bytes=10-19\r\nIf-Range: " + served() + "\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, 206);
        QVERIFY(r->body == m_data.mid(10, 10));

        r = request("Range: bytes=10-19\r\nIf-Range: W/" + served() + "\r\n");
        QCOMPARE(r->status, 200);
        // The route's own tag is not the served ETag: it does not name the file's bytes.
        r = request("Range: bytes=10-19\r\nIf-Range: " + m_etag + "\r\n");
        QCOMPARE(r->status, 200);
        r = request("Range: bytes=10-19\r\nIf-Range: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
        QCOMPARE(r->status, 200);
    }

    void staleIfRangeGetsTheNewFile() {
        const QByteArray oldEtag = served();
        const QByteArray fresh = pattern(300'000, 2);
        // Back for the next tests, whatever happens here.
        const auto restore = qScopeGuard([this] {
            (void)replaceFile(path(QStringLiteral("shard.bin")), m_data);
            m_etag = QByteArrayLiteral("\"v1\"");
        });
        // The file is replaced on disk the way a publisher would, and the route's tag changes.
        QVERIFY(replaceFile(path(QStringLiteral("shard.bin")), fresh));
        m_etag = QByteArrayLiteral("\"v2\"");
        auto r = request("Range: bytes=500000-\r\nIf-Range: " + oldEtag + "\r\n");
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(r->headers.value("ETag"), served());
        QVERIFY(r->body == fresh);
    }

    // The case the route's tag cannot see: the database still names the old hash while an
    // operator restored another file of the same size. The served ETag changes all the same.
    void sameTagFileReplacedWithSameSizeGetsWholeNewFile() {
        auto first = request("Range: bytes=0-499999\r\n");
        QVERIFY(first);
        QCOMPARE(first->status, 206);
        const QByteArray oldEtag = first->headers.value("ETag");
        QCOMPARE(oldEtag, served());

        const QByteArray fresh = pattern(m_data.size(), 3);
        const auto restore =
            qScopeGuard([this] { (void)replaceFile(path(QStringLiteral("shard.bin")), m_data); });
        QVERIFY(replaceFile(path(QStringLiteral("shard.bin")), fresh));
        auto rest = request("Range: bytes=500000-\r\nIf-Range: " + oldEtag + "\r\n");
        QVERIFY(rest);
        QCOMPARE(rest->status, 200);
        QVERIFY(rest->body == fresh);
        const QByteArray newEtag = rest->headers.value("ETag");
        QVERIFY(newEtag != oldEtag);
        QCOMPARE(newEtag, served());
        QVERIFY(newEtag.startsWith("\"v1-"));
        // The new ETag resumes the new file.
        rest = request("Range: bytes=500000-\r\nIf-Range: " + newEtag + "\r\n");
        QCOMPARE(rest->status, 206);
        QVERIFY(rest->body == fresh.mid(500000));
    }

    void largeFileToSlowReaderStaysBounded() {
        const qint64 size = 64ll * 1024 * 1024;
        {
            QFile f(path(QStringLiteral("big.bin")));
            QVERIFY(f.open(QIODevice::WriteOnly) && f.resize(size)); // sparse: zeros
        }
        HttpServerConfig config;
        HttpServer server(config);
        serve(server);
        QVERIFY(server.listen(QHostAddress::LocalHost).ok());
        const qint64 rssBefore = residentBytes();

        QTcpSocket client;
        client.setReadBufferSize(64 * 1024); // Qt stops reading the kernel when this is full
        client.connectToHost(QHostAddress::LocalHost, server.port());
        client.write("GET /v1/shards/0/1/big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
        // Read nothing for a while: the kernel buffers fill and the server must stop queueing.
        QTest::qWait(500);
        QVERIFY(server.peakQueuedBytes() > 0);
        QVERIFY2(server.peakQueuedBytes() <= config.writeBufferBytes,
                 qPrintable(QString::number(server.peakQueuedBytes())));
        const qint64 rssStalled = residentBytes();

        // Now read at full speed: an event loop, not qWaitFor, which sleeps 10 ms per poll.
        client.setReadBufferSize(4 * 1024 * 1024);
        qint64 received = 0;
        qint64 nonZero = 0;
        QEventLoop loop;
        const auto drain = [&] {
            while (client.bytesAvailable() > 0) {
                const QByteArray chunk = client.read(1 << 20);
                received += chunk.size();
                nonZero += chunk.size() - chunk.count('\0');
            }
            if (received >= size + 100)
                loop.quit();
        };
        connect(&client, &QIODevice::readyRead, &loop, drain);
        QTimer::singleShot(20'000, &loop, &QEventLoop::quit);
        drain();
        if (received < size + 100)
            loop.exec();
        const bool done = received >= size + 100;
        QVERIFY(done);
        // Everything but the head is zeros; the head is a few hundred non-zero bytes.
        QVERIFY(nonZero > 50 && nonZero < 500);
        QVERIFY(received > size && received < size + 500);
        QVERIFY(server.peakQueuedBytes() <= config.writeBufferBytes);
        if (rssBefore > 0)
            QVERIFY2(rssStalled - rssBefore < 32ll * 1024 * 1024,
                     qPrintable(QString::number(rssStalled - rssBefore)));
    }

    void curlRange() {
        requireCurl();
        const QString out = path(QStringLiteral("curl-range.bin"));
        const Run r = run(m_curl, {QStringLiteral("-sS"), QStringLiteral("-r"), QStringLiteral("100-199"),
                                   QStringLiteral("-o"), out, QStringLiteral("-w"),
                                   QStringLiteral("%{http_code}"), url()});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, QByteArrayLiteral("206"));
        QVERIFY(readFile(out) == m_data.mid(100, 100));
    }

    void curlResumes() {
        requireCurl();
        const QString out = path(QStringLiteral("curl-resume.bin"));
        QVERIFY(writeFile(out, m_data.left(333'333)));
        const Run r = run(m_curl, {QStringLiteral("-sS"), QStringLiteral("-C"), QStringLiteral("-"),
                                   QStringLiteral("-o"), out, QStringLiteral("-w"),
                                   QStringLiteral("%{http_code}"), url()});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(r.out, QByteArrayLiteral("206"));
        QVERIFY(readFile(out) == m_data);
    }

    void curlOverTls() {
        requireCurl();
        if (!QSslSocket::supportsSsl())
            QSKIP("Qt has no TLS backend here");
        const QString cert = path(QStringLiteral("tls/tls.crt"));
        Result<TlsCertificate> tls = TlsCertificate::loadOrCreate(cert, path(QStringLiteral("tls/tls.key")));
        QVERIFY2(tls, tls ? "" : tls.message().c_str());
        HttpServer server;
        server.useTls(*tls);
        serve(server);
        QVERIFY(server.listen(QHostAddress::LocalHost).ok());
        const QString https =
            QStringLiteral("https://127.0.0.1:%1/v1/shards/0/1/shard.bin").arg(server.port());
        const QString out = path(QStringLiteral("curl-tls.bin"));

        Run r = run(m_curl, {QStringLiteral("-sS"), QStringLiteral("--cacert"), cert, QStringLiteral("-o"),
                             out, QStringLiteral("-w"), QStringLiteral("%{http_code}"), https});
        QVERIFY2(r.exitCode == 0, r.out.constData());
        QCOMPARE(r.out, QByteArrayLiteral("200"));
        QVERIFY(readFile(out) == m_data);

        r = run(m_curl, {QStringLiteral("-sS"), QStringLiteral("-o"), QStringLiteral("/dev/null"), https});
        QCOMPARE(r.exitCode, 60); // CURLE_PEER_FAILED_VERIFICATION
    }
};

QTEST_GUILESS_MAIN(TestHttpRanges)
#include "test_http_ranges.moc"
