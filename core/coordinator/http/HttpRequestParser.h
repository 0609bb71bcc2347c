// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpRequestParser: strict RFC 9112 parsing of a request's header block (request line and
// fields); the connection decides about the body.

#include "HttpRequest.h"
#include "base/Result.h"

#include <QByteArray>

namespace tessera::coordinator::http {

class HttpRequestParser final {
public:
    // `head` is everything before the blank line that ends the header block. On failure the
    // message says what was wrong and errorStatus() is the status to answer with: 400, or
    // 505 for an HTTP version other than 1.0 and 1.1.
    Status parse(const QByteArray& head);

    int errorStatus() const { return m_errorStatus; }
    HttpRequest& request() { return m_request; }

private:
    Status fail(int status, std::string message);
    Status parseRequestLine(const QByteArray& line);
    Status parseTarget();

    HttpRequest m_request;
    int m_errorStatus = 0;
};

} // namespace tessera::coordinator::http
