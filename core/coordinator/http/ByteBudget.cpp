// SPDX-License-Identifier: Apache-2.0
#include "ByteBudget.h"

namespace tessera::coordinator::http {

bool ByteBudget::take(qint64 bytes) {
    if (bytes <= 0)
        return true;
    if (m_limit > 0 && m_used + bytes > m_limit) {
        ++m_refusals;
        return false;
    }
    m_used += bytes;
    m_peak = qMax(m_peak, m_used);
    return true;
}

void ByteBudget::give(qint64 bytes) {
    m_used = qMax<qint64>(0, m_used - qMax<qint64>(0, bytes));
}

} // namespace tessera::coordinator::http
