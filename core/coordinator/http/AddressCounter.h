// SPDX-License-Identifier: Apache-2.0
#pragma once
// AddressCounter: connections open per client address, so that one host holding idle or half-open
// connections uses up its own share and not everyone's. An address is an IPv4 address (IPv4-mapped
// IPv6 included) or an IPv6 /64: one subscriber's prefix counts as one host, as it usually is one.

#include <QHash>
#include <QHostAddress>
#include <QString>

namespace tessera::coordinator::http {

class AddressCounter final {
public:
    // limit <= 0: no limit (only counted).
    explicit AddressCounter(int limit = 0)
        : m_limit(limit) {}

    // "203.0.113.7" or "2001:db8:1:2::/64"; empty for a null address.
    static QString keyOf(const QHostAddress& address);

    // One more connection from `key`; false (nothing counted) when it already has `limit`.
    bool acquire(const QString& key);
    void release(const QString& key);
    int count(const QString& key) const { return m_counts.value(key, 0); }
    int limit() const { return m_limit; }
    // Connections refused for their address since the start.
    qint64 refusals() const { return m_refusals; }

private:
    int m_limit;
    QHash<QString, int> m_counts;
    qint64 m_refusals = 0;
};

} // namespace tessera::coordinator::http
