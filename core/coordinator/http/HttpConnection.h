// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpConnection: one client connection's state machine, from request bytes to the response
// (streamed from a file when it is one) and on to the next request or the close.

#include "HttpRequest.h"
#include "HttpResponse.h"

#include <QFile>
#include <QObject>
#include <QTimer>

#include <memory>

class QTcpSocket;
class QSslSocket;

namespace tessera::coordinator::http {

class HttpServer;

class HttpConnection final : public QObject {
    Q_OBJECT

public:
    // Takes ownership of `socket`.
    HttpConnection(HttpServer& server, QTcpSocket* socket);

    void start();
    // Answers `status` without reading any request, then closes (the connection limit).
    void reject(int status, const QString& message);

Q_SIGNALS:
    // The connection is closed or handed over; it deletes itself.
    void finished();

private:
    // ReadingHead → [ReadingBody] → Sending → Flushing → ReadingHead (keep-alive) or Lingering.
    enum class State { ReadingHead, ReadingBody, Sending, Flushing, Lingering, Closed };
    // What the single timer is counting down to.
    enum class Deadline { FirstRequest, Idle, Head, Body, SendStall, Linger };

    void onReadyRead();
    void readHead();
    void readBody();
    bool handOverUpgrade();
    void beginBody();
    void dispatch();
    HttpResponse callHandler();
    void send(HttpResponse response);
    void sendFile(HttpResponse& response);
    void writeHead(const HttpResponse& response, qint64 contentLength);
    void pump();
    void onWritten();
    void afterResponse();
    void fail(int status, const QString& message);
    void startLinger();
    void onTimeout();
    void arm(Deadline deadline);
    void closeNow();
    void giveBackBody();
    qint64 queuedBytes() const;

    HttpServer& m_server;
    QTcpSocket* m_socket;
    QSslSocket* m_ssl; // m_socket when serving TLS
    QTimer m_timer;
    Deadline m_deadline = Deadline::FirstRequest;
    State m_state = State::ReadingHead;
    HttpRequest m_request;
    qint64 m_bodyLength = 0;
    qint64 m_bodyBudget = 0;       // bytes of the server's ByteBudget this body holds
    bool m_closeAfter = false;     // this response ends the connection
    bool m_keepAlive10 = false;    // an HTTP/1.0 client asked for keep-alive
    std::unique_ptr<QFile> m_file; // the file being streamed
    qint64 m_fileRemaining = 0;
};

} // namespace tessera::coordinator::http
