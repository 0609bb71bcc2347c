// SPDX-License-Identifier: Apache-2.0
#pragma once
// Backoff: how long to wait before the next try after an error — exponential, capped, with
// jitter so that a thousand nodes cut off together do not come back together.

#include <QRandomGenerator>

#include <chrono>

namespace tessera {

class Backoff final {
public:
    Backoff(std::chrono::milliseconds first = std::chrono::seconds(1),
            std::chrono::milliseconds cap = std::chrono::minutes(5))
        : m_first(first)
        , m_cap(cap) {}

    // The next delay: uniformly random in [d/2, d] where d doubles from `first` up to `cap`.
    std::chrono::milliseconds next() {
        const qint64 base = std::min<qint64>(m_cap.count(), m_first.count() << std::min(m_failures, 30));
        ++m_failures;
        return std::chrono::milliseconds(base / 2 +
                                         qint64(QRandomGenerator::global()->bounded(double(base / 2 + 1))));
    }
    void reset() { m_failures = 0; }
    int failures() const { return m_failures; }

private:
    std::chrono::milliseconds m_first;
    std::chrono::milliseconds m_cap;
    int m_failures = 0;
};

} // namespace tessera
