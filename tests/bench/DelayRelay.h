// SPDX-License-Identifier: Apache-2.0
#pragma once
// DelayRelay: a TCP forwarder on 127.0.0.1 that makes loopback look like a home link — every byte,
// in each direction, is serialized at a fixed rate and then delayed by a fixed one-way latency,
// order preserved. For benchmarks where `tc netem` is not available; bytes pass through untouched
// (TLS included), so clients only change the port they connect to.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

class DelayRelay final {
public:
    struct Link {
        std::chrono::microseconds oneWayDelay{50'000};
        double bitsPerSecond = 100e6; // per direction; 0: no rate limit
    };

    DelayRelay(std::uint16_t upstreamPort, Link link);
    ~DelayRelay(); // stops the relay thread and closes every connection
    DelayRelay(const DelayRelay&) = delete;
    DelayRelay& operator=(const DelayRelay&) = delete;

    // Listens on 127.0.0.1 (a free port) and starts the relay thread; an error message or "".
    std::string start();
    std::uint16_t port() const { return m_port; }

    // The link cut (true) and restored (false), from any thread: while cut nothing passes either way
    // and new connections wait unanswered; what was sent waits too and arrives after the restore, as
    // TCP's retransmissions would bring it (unless an end gave up and closed meanwhile).
    void cut(bool cut) { m_cut.store(cut); }

    // Totals since start, readable from any thread.
    std::int64_t connections() const { return m_connections.load(); }
    std::int64_t bytesToUpstream() const { return m_bytesUp.load(); }
    std::int64_t bytesFromUpstream() const { return m_bytesDown.load(); }

private:
    void run();

    std::uint16_t m_upstreamPort;
    Link m_link;
    int m_listenFd = -1;
    int m_wakeFd = -1; // eventfd: tells the thread to stop
    std::uint16_t m_port = 0;
    std::thread m_thread;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_cut{false};
    std::atomic<std::int64_t> m_connections{0};
    std::atomic<std::int64_t> m_bytesUp{0};
    std::atomic<std::int64_t> m_bytesDown{0};
};
