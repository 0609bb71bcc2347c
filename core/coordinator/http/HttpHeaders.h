// SPDX-License-Identifier: Apache-2.0
#pragma once
// HttpHeaders: an ordered list of header fields with case-insensitive lookup by name.

#include <QByteArray>
#include <QByteArrayList>
#include <QList>
#include <QPair>

namespace tessera::coordinator::http {

class HttpHeaders final {
public:
    void add(const QByteArray& name, const QByteArray& value) { m_fields.append({name, value}); }
    // Replaces every field called `name` with one.
    void set(const QByteArray& name, const QByteArray& value);
    void remove(const QByteArray& name);

    bool contains(const QByteArray& name) const { return count(name) > 0; }
    qsizetype count(const QByteArray& name) const;
    // The first value of `name`, or an empty array.
    QByteArray value(const QByteArray& name) const;
    QByteArrayList values(const QByteArray& name) const;
    // Whether a comma-separated field (Connection, Upgrade) lists `token`, ignoring case.
    bool hasToken(const QByteArray& name, const QByteArray& token) const;

    const QList<QPair<QByteArray, QByteArray>>& fields() const { return m_fields; }

private:
    QList<QPair<QByteArray, QByteArray>> m_fields;
};

} // namespace tessera::coordinator::http
