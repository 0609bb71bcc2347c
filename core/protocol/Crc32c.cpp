// SPDX-License-Identifier: Apache-2.0
// Crc32c: slicing-by-8 over eight 256-entry tables derived from the polynomial at compile time.
#include "protocol/Crc32c.h"

#include <QtEndian>

#include <array>

namespace tessera::protocol {

namespace {

using Tables = std::array<std::array<quint32, 256>, 8>;

constexpr Tables makeTables() {
    Tables t{};
    for (quint32 i = 0; i < 256; ++i) {
        quint32 crc = i;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc & 1u) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        t[0][i] = crc;
    }
    // t[k][i]: the CRC of byte i followed by k zero bytes.
    for (int k = 1; k < 8; ++k)
        for (quint32 i = 0; i < 256; ++i)
            t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFu];
    return t;
}

constexpr Tables kTables = makeTables();

} // namespace

quint32 crc32c(QByteArrayView data) {
    quint32 crc = 0xFFFFFFFFu;
    const auto* p = reinterpret_cast<const uchar*>(data.data());
    qsizetype n = data.size();
    for (; n >= 8; n -= 8, p += 8) {
        const quint32 lo = qFromLittleEndian<quint32>(p) ^ crc;
        const quint32 hi = qFromLittleEndian<quint32>(p + 4);
        crc = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^ kTables[5][(lo >> 16) & 0xFFu] ^
              kTables[4][lo >> 24] ^ kTables[3][hi & 0xFFu] ^ kTables[2][(hi >> 8) & 0xFFu] ^
              kTables[1][(hi >> 16) & 0xFFu] ^ kTables[0][hi >> 24];
    }
    for (; n > 0; --n, ++p)
        crc = kTables[0][(crc ^ *p) & 0xFFu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

} // namespace tessera::protocol
