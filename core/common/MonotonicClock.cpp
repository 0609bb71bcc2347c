// SPDX-License-Identifier: Apache-2.0
#include "common/MonotonicClock.h"

#include <chrono>

namespace tessera {

qint64 MonotonicClock::nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace tessera
