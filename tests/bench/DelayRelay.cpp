// SPDX-License-Identifier: Apache-2.0
#include "DelayRelay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Reads are split into pieces of this size, so a large read leaves the serializer in steps of
// ~1.3 ms at 100 Mbit/s rather than as one block.
constexpr std::size_t kPiece = 16 * 1024;
// A direction stops reading while this much waits in it: the sender's TCP then backs off, as it
// would behind a full router queue (~335 ms of a 100 Mbit/s link).
constexpr std::size_t kMaxQueued = 4 * 1024 * 1024;

struct Chunk {
    std::vector<char> bytes; // empty with eof: the sender shut its side down
    std::size_t offset = 0;
    Clock::time_point deliverAt;
    bool eof = false;
};

// One direction of one connection: a serializer (the link's rate) followed by a delay line.
struct Direction {
    int from = -1;
    int to = -1;
    std::deque<Chunk> queue;
    std::size_t queued = 0;
    Clock::time_point linkFreeAt{}; // when the serializer has sent everything read so far
    bool readDone = false;          // `from` reached its end
    bool writeDone = false;         // that end was passed on to `to`
    bool blocked = false;           // `to` would block: wait until it is writable
    std::atomic<std::int64_t>* bytes = nullptr;
};

struct Connection {
    int client = -1;
    int upstream = -1;
    Direction up;   // client -> upstream
    Direction down; // upstream -> client
    bool dead = false;
};

void setNoDelay(int fd) {
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void setNonBlocking(int fd) {
    (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

void readFrom(Direction& d, Connection& c, Clock::time_point now, const DelayRelay::Link& link) {
    char buffer[64 * 1024];
    const ssize_t n = ::read(d.from, buffer, sizeof buffer);
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            c.dead = true;
        return;
    }
    if (n == 0) {
        d.readDone = true;
        d.queue.push_back(Chunk{{}, 0, std::max(now, d.linkFreeAt) + link.oneWayDelay, true});
        return;
    }
    *d.bytes += n;
    for (ssize_t at = 0; at < n; at += ssize_t(kPiece)) {
        const std::size_t size = std::min<std::size_t>(kPiece, std::size_t(n - at));
        const Clock::time_point start = std::max(now, d.linkFreeAt);
        const auto sending =
            link.bitsPerSecond > 0
                ? std::chrono::nanoseconds(std::int64_t(double(size) * 8e9 / link.bitsPerSecond))
                : std::chrono::nanoseconds(0);
        d.linkFreeAt = start + sending;
        d.queue.push_back(Chunk{std::vector<char>(buffer + at, buffer + at + std::ptrdiff_t(size)), 0,
                                d.linkFreeAt + link.oneWayDelay, false});
        d.queued += size;
    }
}

// Writes out, in order, everything whose time has come.
void deliver(Direction& d, Connection& c, Clock::time_point now) {
    while (!d.queue.empty() && !d.blocked && !c.dead) {
        Chunk& head = d.queue.front();
        if (head.deliverAt > now)
            return;
        if (head.eof) {
            (void)::shutdown(d.to, SHUT_WR);
            d.writeDone = true;
            d.queue.pop_front();
            continue;
        }
        const ssize_t n =
            ::send(d.to, head.bytes.data() + head.offset, head.bytes.size() - head.offset, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                d.blocked = true;
            else if (errno != EINTR)
                c.dead = true;
            return;
        }
        head.offset += std::size_t(n);
        if (head.offset == head.bytes.size()) {
            d.queued -= head.bytes.size();
            d.queue.pop_front();
        }
    }
}

short wanted(const Direction& reading, const Direction& writing) {
    short events = 0;
    if (!reading.readDone && reading.queued < kMaxQueued)
        events |= POLLIN;
    if (writing.blocked)
        events |= POLLOUT;
    return events;
}

} // namespace

DelayRelay::DelayRelay(std::uint16_t upstreamPort, Link link)
    : m_upstreamPort(upstreamPort)
    , m_link(link) {}

DelayRelay::~DelayRelay() {
    if (m_thread.joinable()) {
        m_stop.store(true);
        const std::uint64_t one = 1;
        (void)!::write(m_wakeFd, &one, sizeof one);
        m_thread.join();
    }
    if (m_listenFd >= 0)
        ::close(m_listenFd);
    if (m_wakeFd >= 0)
        ::close(m_wakeFd);
}

std::string DelayRelay::start() {
    m_listenFd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (m_listenFd < 0 || ::bind(m_listenFd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(m_listenFd, 128) != 0 ||
        ::getsockname(m_listenFd, reinterpret_cast<sockaddr*>(&address), &length) != 0)
        return std::string("relay: cannot listen on 127.0.0.1: ") + std::strerror(errno);
    m_port = ntohs(address.sin_port);
    m_wakeFd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m_wakeFd < 0)
        return std::string("relay: eventfd: ") + std::strerror(errno);
    m_thread = std::thread([this] { run(); });
    return {};
}

void DelayRelay::run() {
    std::vector<std::unique_ptr<Connection>> connections;
    std::vector<pollfd> fds;
    const auto closeConnection = [](Connection& c) {
        ::close(c.client);
        ::close(c.upstream);
    };
    while (!m_stop.load()) {
        if (m_cut.load()) {
            pollfd wake{m_wakeFd, POLLIN, 0};
            (void)::poll(&wake, 1, 50);
            continue;
        }
        Clock::time_point now = Clock::now();
        for (auto& c : connections) {
            deliver(c->up, *c, now);
            deliver(c->down, *c, now);
        }
        std::erase_if(connections, [&](const std::unique_ptr<Connection>& c) {
            const bool finished = c->dead || (c->up.writeDone && c->down.writeDone);
            if (finished)
                closeConnection(*c);
            return finished;
        });

        fds.assign({{m_listenFd, POLLIN, 0}, {m_wakeFd, POLLIN, 0}});
        Clock::time_point next = now + std::chrono::milliseconds(100);
        for (auto& c : connections) {
            // A socket with nothing to wait for is left out: a hung-up peer would wake poll at once.
            const short clientEvents = wanted(c->up, c->down);
            const short upstreamEvents = wanted(c->down, c->up);
            fds.push_back({clientEvents ? c->client : -1, clientEvents, 0});
            fds.push_back({upstreamEvents ? c->upstream : -1, upstreamEvents, 0});
            for (const Direction* d : {&c->up, &c->down})
                if (!d->blocked && !d->queue.empty())
                    next = std::min(next, d->queue.front().deliverAt);
        }
        const auto wait = std::max<Clock::duration>(Clock::duration::zero(), next - now);
        const timespec timeout{
            std::time_t(std::chrono::duration_cast<std::chrono::seconds>(wait).count()),
            long(std::chrono::duration_cast<std::chrono::nanoseconds>(wait).count() % 1'000'000'000)};
        if (::ppoll(fds.data(), fds.size(), &timeout, nullptr) < 0 && errno != EINTR)
            break;
        now = Clock::now();

        if (fds[0].revents & POLLIN) {
            for (;;) {
                const int client = ::accept4(m_listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (client < 0)
                    break;
                const int upstream = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                sockaddr_in to{};
                to.sin_family = AF_INET;
                to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                to.sin_port = htons(m_upstreamPort);
                // A loopback connect completes at once; blocking keeps the bookkeeping simple.
                if (upstream < 0 || ::connect(upstream, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
                    ::close(client);
                    if (upstream >= 0)
                        ::close(upstream);
                    continue;
                }
                setNonBlocking(upstream);
                setNoDelay(client);
                setNoDelay(upstream);
                auto c = std::make_unique<Connection>();
                c->client = client;
                c->upstream = upstream;
                c->up.from = c->down.to = client;
                c->up.to = c->down.from = upstream;
                c->up.bytes = &m_bytesUp;
                c->down.bytes = &m_bytesDown;
                connections.push_back(std::move(c));
                ++m_connections;
            }
        }
        // fds[2 + 2i] is connection i's client socket, fds[3 + 2i] its upstream socket (accepted
        // connections were appended after them).
        for (std::size_t i = 0; 2 + 2 * i + 1 < fds.size(); ++i) {
            Connection& c = *connections[i];
            const short clientEvents = fds[2 + 2 * i].revents;
            const short upstreamEvents = fds[3 + 2 * i].revents;
            if (clientEvents & POLLOUT || (clientEvents & (POLLERR | POLLHUP) && c.down.blocked))
                c.down.blocked = false;
            if (upstreamEvents & POLLOUT || (upstreamEvents & (POLLERR | POLLHUP) && c.up.blocked))
                c.up.blocked = false;
            if (clientEvents & (POLLIN | POLLERR | POLLHUP) && !c.up.readDone)
                readFrom(c.up, c, now, m_link);
            if (upstreamEvents & (POLLIN | POLLERR | POLLHUP) && !c.down.readDone)
                readFrom(c.down, c, now, m_link);
        }
    }
    for (auto& c : connections)
        closeConnection(*c);
}
