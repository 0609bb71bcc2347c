// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/ResponseCache.h"

namespace tessera::coordinator {

http::HttpResponse ResponseCache::get(qint64 nowMs, const std::function<http::HttpResponse()>& make) {
    // A clock that stepped back does not keep an old answer alive.
    if (m_valid && nowMs >= m_madeAtMs && nowMs - m_madeAtMs < m_maxAgeMs)
        return m_response;
    http::HttpResponse fresh = make();
    m_valid = fresh.status == 200 && m_maxAgeMs > 0;
    if (m_valid) {
        m_response = fresh;
        m_madeAtMs = nowMs;
    }
    return fresh;
}

} // namespace tessera::coordinator
