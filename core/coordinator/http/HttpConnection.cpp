// SPDX-License-Identifier: Apache-2.0
#include "HttpConnection.h"

#include "ByteRange.h"
#include "HttpRequestParser.h"
#include "HttpServer.h"

#include <QDateTime>
#include <QLocale>
#include <QSslSocket>
#include <QTcpSocket>

#include <exception>
#include <utility>

#include <sys/socket.h>
#include <sys/stat.h>

namespace tessera::coordinator::http {

namespace {

QByteArray httpDate() {
    return QLocale::c()
        .toString(QDateTime::currentDateTimeUtc(), QStringLiteral("ddd, dd MMM yyyy hh:mm:ss 'GMT'"))
        .toLatin1();
}

bool bodyless(int status) {
    return status == 204 || status == 304 || (status >= 100 && status < 200);
}

// The caller's tag says what content it believes is at the path; the opened file's size,
// modification time (ns) and inode are added, so a file replaced on disk (renamed over: a new
// inode) or rewritten in place (a new mtime) gets a new ETag while the caller's record still
// names the old content, and a resuming client never splices old and new bytes.
QByteArray servedEtag(const QByteArray& tag, const struct stat& st) {
    QByteArray opaque = tag;
    if (opaque.size() >= 2 && opaque.startsWith('"') && opaque.endsWith('"'))
        opaque = opaque.mid(1, opaque.size() - 2);
    const qint64 mtimeNs = qint64(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    return '"' + opaque + '-' + QByteArray::number(quint64(st.st_size), 16) + '-' +
           QByteArray::number(quint64(mtimeNs), 16) + '-' + QByteArray::number(quint64(st.st_ino), 16) + '"';
}

} // namespace

HttpConnection::HttpConnection(HttpServer& server, QTcpSocket* socket)
    : QObject(&server)
    , m_server(server)
    , m_socket(socket)
    , m_ssl(qobject_cast<QSslSocket*>(socket)) {
    m_socket->setParent(this);
    // Bounds what a client can make us buffer: a header block plus some pipelined bytes.
    m_socket->setReadBufferSize(server.config().maxHeaderBytes + 64 * 1024);
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &HttpConnection::onTimeout);
    connect(m_socket, &QAbstractSocket::disconnected, this, &HttpConnection::closeNow);
    connect(m_socket, &QIODevice::readyRead, this, &HttpConnection::onReadyRead);
    connect(m_socket, &QIODevice::bytesWritten, this, &HttpConnection::onWritten);
    if (m_ssl)
        connect(m_ssl, &QSslSocket::encryptedBytesWritten, this, &HttpConnection::onWritten);
    m_request.peerAddress = m_socket->peerAddress();
    m_request.peerPort = m_socket->peerPort();
}

void HttpConnection::start() {
    arm(Deadline::FirstRequest);
    if (m_socket->state() != QAbstractSocket::ConnectedState)
        QMetaObject::invokeMethod(this, &HttpConnection::closeNow, Qt::QueuedConnection);
    else if (m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::onReadyRead, Qt::QueuedConnection);
}

void HttpConnection::reject(int status, const QString& message) {
    m_state = State::Sending;
    HttpResponse response = HttpResponse::error(status, message);
    response.headers.set(QByteArrayLiteral("Retry-After"), QByteArrayLiteral("1"));
    m_closeAfter = true;
    send(std::move(response));
}

void HttpConnection::arm(Deadline deadline) {
    const HttpServerConfig& c = m_server.config();
    m_deadline = deadline;
    switch (deadline) {
    case Deadline::FirstRequest:
    case Deadline::Head:
        m_timer.start(c.headerTimeout);
        break;
    case Deadline::Idle:
        m_timer.start(c.idleTimeout);
        break;
    case Deadline::Body:
        m_timer.start(c.bodyTimeout);
        break;
    case Deadline::SendStall:
        m_timer.start(c.sendStallTimeout);
        break;
    case Deadline::Linger:
        m_timer.start(c.lingerTimeout);
        break;
    }
}

void HttpConnection::onTimeout() {
    switch (m_deadline) {
    case Deadline::FirstRequest:
    case Deadline::Idle:
        m_socket->abort();
        return closeNow(); // nothing was asked: nothing to answer
    case Deadline::Head:
    case Deadline::Body:
        return fail(408, QStringLiteral("the request took too long to arrive"));
    case Deadline::SendStall:
    case Deadline::Linger:
        m_socket->abort();
        return closeNow();
    }
}

void HttpConnection::onReadyRead() {
    switch (m_state) {
    case State::ReadingHead:
        return readHead();
    case State::ReadingBody:
        return readBody();
    case State::Lingering:
        m_socket->readAll();
        return;
    default:
        return; // pipelined bytes wait in the bounded read buffer
    }
}

void HttpConnection::readHead() {
    // RFC 9112 §2.2: ignore empty lines before a request line (some clients send one).
    while (m_socket->bytesAvailable() >= 2 && m_socket->peek(2) == "\r\n")
        m_socket->read(2);
    if (m_socket->bytesAvailable() == 0)
        return;
    if (m_deadline == Deadline::Idle)
        arm(Deadline::Head);
    else if (m_deadline == Deadline::FirstRequest)
        m_deadline = Deadline::Head; // the same deadline, counted from the connection's start

    const qsizetype limit = m_server.config().maxHeaderBytes;
    // Peek rather than read: an upgrade must find the request still in the socket.
    const QByteArray buffered = m_socket->peek(limit);
    const qsizetype end = buffered.indexOf("\r\n\r\n");
    if (end < 0) {
        if (m_socket->bytesAvailable() >= limit)
            fail(431, QStringLiteral("the request header block is larger than %1 bytes").arg(limit));
        return;
    }
    HttpRequestParser parser;
    if (Status s = parser.parse(buffered.left(end)); !s)
        return fail(parser.errorStatus(), QString::fromStdString(s.message()));
    const QHostAddress peer = m_request.peerAddress;
    const quint16 peerPort = m_request.peerPort;
    m_request = std::move(parser.request());
    m_request.peerAddress = peer;
    m_request.peerPort = peerPort;
    if (handOverUpgrade())
        return;
    m_socket->read(end + 4);
    beginBody();
}

bool HttpConnection::handOverUpgrade() {
    if (m_request.method != "GET" || !m_request.headers.hasToken("Upgrade", "websocket"))
        return false;
    const HttpServer::UpgradeHandler* handler = m_server.upgradeHandler(m_request.path);
    if (!handler)
        return false;
    m_timer.stop();
    m_state = State::Closed;
    disconnect(m_socket, nullptr, this, nullptr);
    QTcpSocket* socket = m_socket;
    socket->setParent(nullptr);
    socket->setReadBufferSize(0); // the new owner sets its own limits
    m_socket = nullptr;
    const HttpServer::UpgradeHandler call = *handler; // the server may drop it meanwhile
    Q_EMIT finished();
    deleteLater();
    call(socket);
    return true;
}

void HttpConnection::beginBody() {
    const HttpHeaders& h = m_request.headers;
    m_closeAfter = h.hasToken("Connection", "close");
    m_keepAlive10 = m_request.minorVersion == 0 && h.hasToken("Connection", "keep-alive");
    if (m_request.minorVersion == 0 && !m_keepAlive10)
        m_closeAfter = true;

    // We read Content-Length bodies only: a chunked request would need a second parser,
    // and RFC 9112 §6.1 has a server answer 501 to a transfer coding it does not implement.
    if (h.contains("Transfer-Encoding"))
        return fail(501,
                    QStringLiteral("Transfer-Encoding in requests is not supported; send Content-Length"));
    m_bodyLength = 0;
    const QByteArrayList lengths = h.values("Content-Length");
    if (lengths.size() > 1)
        return fail(400, QStringLiteral("more than one Content-Length field"));
    if (!lengths.isEmpty()) {
        const QByteArray& v = lengths.first();
        bool ok =
            v.size() <= 18 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
        m_bodyLength = ok ? v.toLongLong(&ok) : 0;
        if (!ok)
            return fail(400, QStringLiteral("malformed Content-Length"));
    }
    if (m_bodyLength > m_server.config().maxBodyBytes) {
        return fail(
            413,
            QStringLiteral("the request body is larger than %1 bytes").arg(m_server.config().maxBodyBytes));
    }
    if (h.contains("Expect")) {
        if (h.value("Expect").compare("100-continue", Qt::CaseInsensitive) != 0)
            return fail(417, QStringLiteral("only Expect: 100-continue is understood"));
        if (m_bodyLength > 0 && m_request.minorVersion == 1)
            m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (m_bodyLength == 0)
        return dispatch();
    // The whole body is reserved at once below, so it is taken from the budget whole, first.
    if (!m_server.byteBudget().take(m_bodyLength)) {
        return fail(503, QStringLiteral("the coordinator is receiving as much as it can hold at once; "
                                        "retry shortly"));
    }
    m_bodyBudget = m_bodyLength;
    m_state = State::ReadingBody;
    m_request.body.reserve(m_bodyLength);
    arm(Deadline::Body);
    readBody();
}

void HttpConnection::readBody() {
    m_request.body.append(m_socket->read(m_bodyLength - m_request.body.size()));
    if (m_request.body.size() == m_bodyLength)
        dispatch();
}

HttpResponse HttpConnection::callHandler() {
    const HttpRouter::Match match = m_server.router().match(m_request.method, m_request.segments);
    if (!match.handler && !match.pathKnown)
        return HttpResponse::error(404, QStringLiteral("no such resource: %1").arg(m_request.path));
    if (!match.handler) {
        HttpResponse r = HttpResponse::error(
            405, QStringLiteral("%1 is not allowed here").arg(QString::fromLatin1(m_request.method)));
        r.headers.set(QByteArrayLiteral("Allow"), match.allowed.join(", "));
        return r;
    }
    m_request.params = match.params;
    // Exceptions stop here: one bad handler must not take the coordinator down.
    try {
        return (*match.handler)(m_request);
    } catch (const std::exception& e) {
        qWarning("http: handler for %s %s threw: %s", m_request.method.constData(),
                 qUtf8Printable(m_request.path), e.what());
    } catch (...) {
        qWarning("http: handler for %s %s threw", m_request.method.constData(),
                 qUtf8Printable(m_request.path));
    }
    return HttpResponse::error(500, QStringLiteral("internal error"));
}

void HttpConnection::dispatch() {
    m_state = State::Sending;
    HttpResponse response = callHandler();
    giveBackBody();
    send(std::move(response));
}

void HttpConnection::giveBackBody() {
    m_server.byteBudget().give(std::exchange(m_bodyBudget, 0));
}

void HttpConnection::writeHead(const HttpResponse& response, qint64 contentLength) {
    QByteArray head = "HTTP/1.1 " + QByteArray::number(response.status) + ' ' +
                      HttpResponse::reasonPhrase(response.status) + "\r\n";
    head += "Date: " + httpDate() + "\r\n";
    for (const auto& [name, value] : response.headers.fields()) {
        if (name.compare("Content-Length", Qt::CaseInsensitive) != 0 &&
            name.compare("Connection", Qt::CaseInsensitive) != 0)
            head += name + ": " + value + "\r\n";
    }
    if (!bodyless(response.status))
        head += "Content-Length: " + QByteArray::number(contentLength) + "\r\n";
    if (m_closeAfter)
        head += "Connection: close\r\n";
    else if (m_keepAlive10)
        head += "Connection: keep-alive\r\n";
    head += "\r\n";
    m_socket->write(head);
}

void HttpConnection::send(HttpResponse response) {
    if (response.isFile())
        return sendFile(response);
    writeHead(response, response.body.size());
    if (m_request.method != "HEAD" && !bodyless(response.status))
        m_socket->write(response.body);
    afterResponse();
}

void HttpConnection::sendFile(HttpResponse& response) {
    auto file = std::make_unique<QFile>(response.filePath());
    if (!file->open(QIODevice::ReadOnly)) {
        qWarning("http: cannot open %s: %s", qUtf8Printable(response.filePath()),
                 qUtf8Printable(file->errorString()));
        return send(HttpResponse::error(404, QStringLiteral("no such file")));
    }
    // fstat of the open descriptor, not a stat of the path: a file renamed over the path between
    // the two would otherwise be sent under the other file's ETag.
    struct stat st {};
    if (::fstat(file->handle(), &st) != 0 || !S_ISREG(st.st_mode)) {
        qWarning("http: cannot stat %s", qUtf8Printable(response.filePath()));
        return send(HttpResponse::error(500, QStringLiteral("the file cannot be read")));
    }
    const qint64 size = st.st_size;
    const QByteArray etag = servedEtag(response.etag(), st);
    response.headers.set(QByteArrayLiteral("ETag"), etag);
    response.headers.set(QByteArrayLiteral("Accept-Ranges"), QByteArrayLiteral("bytes"));
    // RFC 9110 §14.2: range handling is defined for GET only; HEAD describes the whole file.
    const bool get = m_request.method == "GET";
    const HttpHeaders& h = m_request.headers;
    const ByteRange range = ByteRange::evaluate(get ? h.value("Range") : QByteArray(), h.contains("If-Range"),
                                                h.value("If-Range"), etag, size);
    if (range.kind == ByteRange::Kind::Unsatisfiable) {
        HttpResponse r =
            HttpResponse::error(416, QStringLiteral("the range is outside the file's %1 bytes").arg(size));
        r.headers.set(QByteArrayLiteral("Content-Range"), "bytes */" + QByteArray::number(size));
        r.headers.set(QByteArrayLiteral("ETag"), etag);
        r.headers.set(QByteArrayLiteral("Accept-Ranges"), QByteArrayLiteral("bytes"));
        return send(std::move(r));
    }
    if (range.kind == ByteRange::Kind::Partial) {
        response.status = 206;
        response.headers.set(QByteArrayLiteral("Content-Range"), "bytes " + QByteArray::number(range.first) +
                                                                     '-' + QByteArray::number(range.last) +
                                                                     '/' + QByteArray::number(size));
    }
    writeHead(response, range.length());
    if (!get || range.length() == 0)
        return afterResponse();
    if (!file->seek(range.first)) {
        m_socket->abort();
        return closeNow();
    }
    m_file = std::move(file);
    m_fileRemaining = range.length();
    arm(Deadline::SendStall);
    pump();
}

qint64 HttpConnection::queuedBytes() const {
    return m_socket->bytesToWrite() + (m_ssl ? m_ssl->encryptedBytesToWrite() : 0);
}

void HttpConnection::pump() {
    const HttpServerConfig& c = m_server.config();
    while (m_fileRemaining > 0) {
        const qint64 room = c.writeBufferBytes - queuedBytes();
        if (room <= 0)
            break;
        const qint64 n = qMin(qMin(c.chunkBytes, m_fileRemaining), room);
        const QByteArray chunk = m_file->read(n);
        if (chunk.size() != n) {
            // Truncated under us: the promised length cannot be kept, so end the connection.
            qWarning("http: %s shrank while being sent", qUtf8Printable(m_file->fileName()));
            m_socket->abort();
            return closeNow();
        }
        m_socket->write(chunk);
        m_fileRemaining -= n;
        m_server.noteQueuedBytes(queuedBytes());
    }
    if (m_fileRemaining == 0) {
        m_file.reset();
        afterResponse();
    }
}

void HttpConnection::onWritten() {
    if (m_state == State::Sending && m_file) {
        arm(Deadline::SendStall);
        return pump();
    }
    if (m_state == State::Flushing)
        afterResponse();
}

void HttpConnection::afterResponse() {
    m_state = State::Flushing;
    if (m_closeAfter) {
        if (queuedBytes() == 0)
            startLinger();
        else
            arm(Deadline::SendStall);
        return;
    }
    // Keep-alive: read the next request once this response is mostly out, so that a client
    // that never reads cannot make us queue responses without end.
    if (queuedBytes() > m_server.config().writeBufferBytes) {
        arm(Deadline::SendStall);
        return;
    }
    m_state = State::ReadingHead;
    HttpRequest next;
    next.peerAddress = m_request.peerAddress;
    next.peerPort = m_request.peerPort;
    m_request = std::move(next);
    arm(Deadline::Idle);
    // Queued, not called: pipelined requests must not recurse into each other.
    QMetaObject::invokeMethod(this, &HttpConnection::onReadyRead, Qt::QueuedConnection);
}

void HttpConnection::fail(int status, const QString& message) {
    giveBackBody();
    m_request.body = QByteArray();
    m_closeAfter = true;
    m_state = State::Sending;
    send(HttpResponse::error(status, message));
}

void HttpConnection::startLinger() {
    m_state = State::Lingering;
    arm(Deadline::Linger);
    // Half-close so the client sees the end at once, then drain what it still sends: closing
    // with unread bytes would reset the connection and could destroy the response in flight.
    if (!m_ssl)
        ::shutdown(int(m_socket->socketDescriptor()), SHUT_WR);
    m_socket->readAll();
}

void HttpConnection::closeNow() {
    if (m_state == State::Closed)
        return;
    m_state = State::Closed;
    m_timer.stop();
    m_file.reset();
    giveBackBody();
    Q_EMIT finished();
    deleteLater();
}

} // namespace tessera::coordinator::http
