// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionLimits: the arithmetic of SessionApi's limits on what a node sends, on its own.

#include <QStringView>
#include <QtGlobal>

#include <algorithm>

namespace tessera::coordinator {

// UTF-8 bytes of UTF-16 text, without encoding it.
inline qint64 utf8Bytes(QStringView text) {
    qint64 n = 0;
    for (const QChar c : text) {
        const char16_t u = c.unicode();
        n += u < 0x80 ? 1 : u < 0x800 ? 2 : c.isSurrogate() ? 2 : 3; // a surrogate pair: 4
    }
    return n;
}

// A token bucket: refills at `rate` per second up to `burst`; one message spends one token.
inline bool spendToken(double& allowance, qint64& atMs, qint64 nowMs, double rate, double burst) {
    const double refill = double(nowMs - atMs) / 1000.0 * rate;
    allowance = std::min(burst, allowance + std::max(0.0, refill));
    atMs = nowMs;
    if (allowance < 1)
        return false;
    allowance -= 1;
    return true;
}

} // namespace tessera::coordinator
