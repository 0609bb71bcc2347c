// SPDX-License-Identifier: Apache-2.0
#include "HttpRequestParser.h"

#include <algorithm>
#include <cctype>

namespace tessera::coordinator::http {

namespace {

// RFC 9110 §5.6.2 tchar.
bool isTokenChar(char c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return QByteArrayView("!#$%&'*+-.^_`|~").contains(c);
}

bool isToken(const QByteArray& s) {
    return !s.isEmpty() && std::all_of(s.begin(), s.end(), isTokenChar);
}

// Field values: visible ASCII, obs-text, SP and HTAB; never other controls.
bool isFieldValue(const QByteArray& s) {
    return std::all_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u == '\t' || (u >= 0x20 && u != 0x7f);
    });
}

QByteArray trimOws(const QByteArray& s) {
    qsizetype b = 0;
    qsizetype e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t'))
        ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
        --e;
    return s.mid(b, e - b);
}

} // namespace

Status HttpRequestParser::fail(int status, std::string message) {
    m_errorStatus = status;
    return makeError(std::move(message));
}

Status HttpRequestParser::parse(const QByteArray& head) {
    // Lines end in CRLF only: a bare CR or LF is how request smuggling starts.
    for (qsizetype i = 0; i < head.size(); ++i) {
        if (head[i] == '\r' && (i + 1 >= head.size() || head[i + 1] != '\n'))
            return fail(400, "bare CR in the header block");
        if (head[i] == '\n' && (i == 0 || head[i - 1] != '\r'))
            return fail(400, "bare LF in the header block");
    }
    QByteArrayList lines = head.split('\n');
    for (QByteArray& l : lines)
        l.chop(l.endsWith('\r') ? 1 : 0);
    if (Status s = parseRequestLine(lines.first()); !s)
        return s;

    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QByteArray& line = lines[i];
        if (line.startsWith(' ') || line.startsWith('\t'))
            return fail(400, "obsolete line folding in a header field");
        const qsizetype colon = line.indexOf(':');
        const QByteArray name = line.left(colon);
        if (colon < 0 || !isToken(name)) // also refuses whitespace before the colon
            return fail(400, "malformed header field");
        const QByteArray value = trimOws(line.mid(colon + 1));
        if (!isFieldValue(value))
            return fail(400, "control character in a header field");
        m_request.headers.add(name, value);
    }

    const qsizetype hosts = m_request.headers.count("Host");
    if (hosts > 1 || (m_request.minorVersion == 1 && hosts == 0))
        return fail(400, "an HTTP/1.1 request needs exactly one Host field");
    return parseTarget();
}

Status HttpRequestParser::parseRequestLine(const QByteArray& line) {
    const QByteArrayList parts = line.split(' ');
    if (parts.size() != 3 || !isToken(parts[0]) || parts[1].isEmpty())
        return fail(400, "malformed request line");
    m_request.method = parts[0];
    m_request.target = parts[1];
    const QByteArray& version = parts[2];
    const bool wellFormed = version.size() == 8 && version.startsWith("HTTP/") && version[6] == '.' &&
                            std::isdigit(static_cast<unsigned char>(version[5])) &&
                            std::isdigit(static_cast<unsigned char>(version[7]));
    if (!wellFormed)
        return fail(400, "malformed HTTP version");
    if (version[5] != '1' || (version[7] != '0' && version[7] != '1'))
        return fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
    m_request.minorVersion = version[7] - '0';
    return {};
}

Status HttpRequestParser::parseTarget() {
    const QByteArray& target = m_request.target;
    // Origin form only: we are no proxy, and "*" (OPTIONS) has no use here.
    if (!target.startsWith('/') || !isFieldValue(target) || target.contains('#') || target.contains('\t'))
        return fail(400, "the request target must be an absolute path");
    const qsizetype q = target.indexOf('?');
    const QByteArray rawPath = q < 0 ? target : target.left(q);
    if (q >= 0)
        m_request.query = QUrlQuery(QString::fromUtf8(target.mid(q + 1)));
    m_request.path = QString::fromUtf8(QByteArray::fromPercentEncoding(rawPath));
    // Segments are decoded one by one so that "%2F" cannot forge a separator, and dot
    // segments are refused so that a {file} parameter can never climb out of a directory.
    for (const QByteArray& raw : rawPath.mid(1).split('/')) {
        const QByteArray seg = QByteArray::fromPercentEncoding(raw);
        if (seg == "." || seg == ".." || seg.contains('/') || seg.contains('\0'))
            return fail(400, "dot segments and encoded separators are not allowed in the path");
        m_request.segments.append(QString::fromUtf8(seg));
    }
    return {};
}

} // namespace tessera::coordinator::http
