// SPDX-License-Identifier: Apache-2.0
#pragma once
// ResponseCache: one route's last good answer, served again for a few seconds — the operator's page
// refreshes every few seconds in every open browser, and its figures (sums over every credit receipt,
// the loss history) need not be read again for each.

#include "coordinator/http/HttpResponse.h"

#include <chrono>
#include <functional>

namespace tessera::coordinator {

class ResponseCache final {
public:
    // maxAge 0: nothing is kept (tests that change the database between requests).
    explicit ResponseCache(std::chrono::milliseconds maxAge)
        : m_maxAgeMs(maxAge.count()) {}

    // The answer made within maxAge before nowMs, else make()'s; only a 200 is kept.
    http::HttpResponse get(qint64 nowMs, const std::function<http::HttpResponse()>& make);

private:
    qint64 m_maxAgeMs;
    qint64 m_madeAtMs = 0;
    bool m_valid = false;
    http::HttpResponse m_response;
};

} // namespace tessera::coordinator
