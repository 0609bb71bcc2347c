// SPDX-License-Identifier: Apache-2.0
#include "ByteRange.h"

#include <QByteArrayList>

#include <limits>

namespace tessera::coordinator::http {

namespace {

constexpr qint64 kHuge = std::numeric_limits<qint64>::max();

// Non-empty ASCII digits; values past qint64 saturate (a range past any file is still valid).
bool parseNumber(const QByteArray& text, qint64* out) {
    if (text.isEmpty())
        return false;
    qint64 v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return false;
        const int d = c - '0';
        v = v > (kHuge - d) / 10 ? kHuge : v * 10 + d;
    }
    *out = v;
    return true;
}

} // namespace

ByteRange ByteRange::evaluate(const QByteArray& range, bool hasIfRange, const QByteArray& ifRange,
                              const QByteArray& etag, qint64 size) {
    ByteRange whole{Kind::Whole, 0, size - 1};
    if (range.isEmpty())
        return whole;
    if (hasIfRange && (ifRange.trimmed() != etag || etag.startsWith("W/")))
        return whole;

    const qsizetype eq = range.indexOf('=');
    if (eq < 0 || range.left(eq).trimmed().compare("bytes", Qt::CaseInsensitive) != 0)
        return whole;
    QByteArrayList specs;
    for (const QByteArray& s : range.mid(eq + 1).split(',')) {
        if (!s.trimmed().isEmpty())
            specs.append(s.trimmed());
    }
    if (specs.size() != 1)
        return whole;

    const QByteArray& spec = specs.first();
    const qsizetype dash = spec.indexOf('-');
    if (dash < 0)
        return whole;
    const QByteArray a = spec.left(dash);
    const QByteArray b = spec.mid(dash + 1);
    qint64 first = 0;
    qint64 last = 0;
    if (a.isEmpty()) { // suffix: the last n bytes
        qint64 n = 0;
        if (!parseNumber(b, &n))
            return whole;
        if (n == 0 || size == 0)
            return {Kind::Unsatisfiable, 0, -1};
        return {Kind::Partial, n >= size ? 0 : size - n, size - 1};
    }
    if (!parseNumber(a, &first))
        return whole;
    if (b.isEmpty()) {
        last = kHuge;
    } else if (!parseNumber(b, &last) || last < first) {
        return whole;
    }
    if (first >= size)
        return {Kind::Unsatisfiable, 0, -1};
    return {Kind::Partial, first, qMin(last, size - 1)};
}

} // namespace tessera::coordinator::http
