// SPDX-License-Identifier: Apache-2.0
#include "HttpHeaders.h"

namespace tessera::coordinator::http {

namespace {

bool sameName(const QByteArray& a, const QByteArray& b) {
    return a.compare(b, Qt::CaseInsensitive) == 0;
}

} // namespace

void HttpHeaders::set(const QByteArray& name, const QByteArray& value) {
    remove(name);
    add(name, value);
}

void HttpHeaders::remove(const QByteArray& name) {
    m_fields.removeIf([&](const QPair<QByteArray, QByteArray>& f) { return sameName(f.first, name); });
}

qsizetype HttpHeaders::count(const QByteArray& name) const {
    qsizetype n = 0;
    for (const auto& f : m_fields)
        n += sameName(f.first, name) ? 1 : 0;
    return n;
}

QByteArray HttpHeaders::value(const QByteArray& name) const {
    for (const auto& f : m_fields) {
        if (sameName(f.first, name))
            return f.second;
    }
    return {};
}

QByteArrayList HttpHeaders::values(const QByteArray& name) const {
    QByteArrayList out;
    for (const auto& f : m_fields) {
        if (sameName(f.first, name))
            out.append(f.second);
    }
    return out;
}

bool HttpHeaders::hasToken(const QByteArray& name, const QByteArray& token) const {
    for (const QByteArray& v : values(name)) {
        for (const QByteArray& t : v.split(',')) {
            if (sameName(t.trimmed(), token))
                return true;
        }
    }
    return false;
}

} // namespace tessera::coordinator::http
