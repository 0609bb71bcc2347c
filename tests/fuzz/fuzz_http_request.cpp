// SPDX-License-Identifier: Apache-2.0
// HttpRequestParser: a request's header block as HttpConnection hands it over (everything before the
// blank line; the coordinator's port is open to anyone), then what the connection and a file route
// read of the parsed request: Connection and Content-Length, and the Range a GET is answered with.
#include "FuzzCheck.h"
#include "RangeCheck.h"
#include "coordinator/http/HttpRequestParser.h"

#include <limits>

using namespace tessera::coordinator::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QByteArray head(reinterpret_cast<const char*>(data), qsizetype(size));
    HttpRequestParser parser;
    const tessera::Status s = parser.parse(head);
    tessera::fuzz::verdict("request", s);
    if (!s) {
        FUZZ_CHECK(parser.errorStatus() == 400 || parser.errorStatus() == 505);
        FUZZ_CHECK(!s.message().empty());
        return 0;
    }
    const HttpRequest& r = parser.request();
    FUZZ_CHECK(!r.method.isEmpty() && !r.method.contains(' '));
    FUZZ_CHECK(r.target.startsWith('/') && !r.target.contains('#'));
    FUZZ_CHECK(r.minorVersion == 0 || r.minorVersion == 1);
    FUZZ_CHECK(r.headers.count("Host") <= 1);
    FUZZ_CHECK(r.minorVersion == 0 || r.headers.count("Host") == 1);
    // A {file} parameter can never climb out of its folder.
    FUZZ_CHECK(!r.segments.isEmpty());
    for (const QString& segment : r.segments)
        FUZZ_CHECK(segment != u"." && segment != u".." && !segment.contains(u'/') &&
                   !segment.contains(QChar()));
    // No field smuggles a line break or a NUL into what a handler reads or echoes.
    for (const auto& [name, value] : r.headers.fields()) {
        FUZZ_CHECK(!name.isEmpty() && !name.contains(':') && !name.contains(' '));
        FUZZ_CHECK(!value.contains('\r') && !value.contains('\n') && !value.contains('\0'));
        FUZZ_CHECK(value == value.trimmed()); // optional whitespace around it is not the value
    }

    // What HttpConnection::beginBody reads next.
    (void)r.headers.hasToken("Connection", "close");
    (void)r.headers.hasToken("Upgrade", "websocket");
    for (const QByteArray& length : r.headers.values("Content-Length")) {
        bool ok = false;
        (void)length.toLongLong(&ok);
    }
    // A GET of a file: the range it is answered with, for an empty, a small and a huge file.
    const QByteArray etag = "\"3-a1b2\"";
    for (qint64 fileSize : {qint64(0), qint64(1), qint64(4096), std::numeric_limits<qint64>::max()}) {
        const ByteRange range = ByteRange::evaluate(r.header("Range"), r.headers.contains("If-Range"),
                                                    r.header("If-Range"), etag, fileSize);
        tessera::fuzz::checkRange(range, fileSize);
    }
    return 0;
}
