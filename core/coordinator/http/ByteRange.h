// SPDX-License-Identifier: Apache-2.0
#pragma once
// ByteRange: how a GET with Range/If-Range is answered for a representation of known size
// and strong ETag (RFC 9110 §13.1.5, §14).

#include <QByteArray>
#include <QtGlobal>

namespace tessera::coordinator::http {

struct ByteRange {
    enum class Kind {
        Whole,         // 200 with the whole representation
        Partial,       // 206 with [first, last]
        Unsatisfiable, // 416 with Content-Range: bytes */size
    };

    Kind kind = Kind::Whole;
    qint64 first = 0;
    qint64 last = -1; // inclusive

    qint64 length() const { return last - first + 1; }

    // One range is honoured: "a-b", "a-" and "-n". A syntactically invalid Range, or one with
    // several ranges, gets the whole representation (RFC 9110 allows ignoring Range), which
    // spares us multipart/byteranges. If-Range must be the exact strong ETag: a weak tag or
    // an HTTP date (we send no Last-Modified) counts as a mismatch, so the whole file is sent.
    static ByteRange evaluate(const QByteArray& range, bool hasIfRange, const QByteArray& ifRange,
                              const QByteArray& etag, qint64 size);
};

} // namespace tessera::coordinator::http
