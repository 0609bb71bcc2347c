// SPDX-License-Identifier: Apache-2.0
#include "AddressCounter.h"

namespace tessera::coordinator::http {

QString AddressCounter::keyOf(const QHostAddress& address) {
    if (address.isNull())
        return {};
    bool v4 = false;
    const quint32 ip = address.toIPv4Address(&v4);
    if (v4)
        return QHostAddress(ip).toString();
    Q_IPV6ADDR v6 = address.toIPv6Address();
    for (int i = 8; i < 16; ++i)
        v6[i] = 0;
    return QHostAddress(v6).toString() + QStringLiteral("/64");
}

bool AddressCounter::acquire(const QString& key) {
    int& n = m_counts[key];
    if (m_limit > 0 && n >= m_limit) {
        if (n == 0)
            m_counts.remove(key);
        ++m_refusals;
        return false;
    }
    ++n;
    return true;
}

void AddressCounter::release(const QString& key) {
    const auto it = m_counts.find(key);
    if (it == m_counts.end())
        return;
    if (--it.value() <= 0)
        m_counts.erase(it);
}

} // namespace tessera::coordinator::http
