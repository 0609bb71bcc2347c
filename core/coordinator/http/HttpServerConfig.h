// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpServerConfig: the limits and timeouts that keep one client from exhausting the server.

#include <QtGlobal>

#include <chrono>

namespace tessera::coordinator::http {

struct HttpServerConfig {
    // Connections served at once, upgraded WebSockets included; one more is accepted only to be
    // told 503 and closed.
    int maxConnections = 512;
    // Connections open at once from one address (AddressCounter: an IPv4 address or an IPv6 /64),
    // counted from the TCP accept, so TLS handshakes not yet finished count too; one more is
    // closed at once, unanswered. 0: no limit.
    int maxConnectionsPerAddress = 32;
    // Bytes of partially received messages (HTTP bodies, WebSocket messages) held across all
    // connections (ByteBudget); the connection whose bytes would pass it is refused (503) or
    // closed. 0: no limit.
    qint64 maxBytesInFlight = qint64(512) << 20;
    // The request line and all header fields, up to and including the blank line (else 431).
    qsizetype maxHeaderBytes = 16 * 1024;
    // A larger Content-Length gets 413 before any of the body is read.
    qint64 maxBodyBytes = 1024 * 1024;
    // Deadlines for a whole header block and a whole body from their first byte: a deadline
    // rather than an inactivity timer, so a client trickling a byte a second is still cut off
    // (408). A new connection must deliver its first header block within headerTimeout.
    std::chrono::milliseconds headerTimeout{10'000};
    std::chrono::milliseconds bodyTimeout{30'000};
    // A keep-alive connection with no request for this long is closed silently.
    std::chrono::milliseconds idleTimeout{60'000};
    std::chrono::milliseconds tlsHandshakeTimeout{10'000};
    // A response that makes no progress for this long (the client stopped reading) is aborted.
    std::chrono::milliseconds sendStallTimeout{60'000};
    // After a response that closes the connection, unread request bytes are drained for at
    // most this long, so that closing does not reset the connection under the response.
    std::chrono::milliseconds lingerTimeout{2'000};
    // File streaming: read in chunks of chunkBytes and keep at most writeBufferBytes queued
    // in the socket, so memory per download stays bounded whatever the file's size.
    qint64 chunkBytes = 256 * 1024;
    qint64 writeBufferBytes = 1024 * 1024;
};

} // namespace tessera::coordinator::http
