// SPDX-License-Identifier: Apache-2.0
// StageScheduler: least expected finish time over one stage's nodes, EMA speeds, bans, probes.
#include "coordinator/router/StageScheduler.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tessera::coordinator {

namespace {

// A task reported as taking no time (coarse clocks, tiny tasks) must not make a node look
// infinitely fast and draw every task.
constexpr double kMinSecondsPerToken = 1e-9;

} // namespace

StageScheduler::StageScheduler(StageSchedulerSettings settings)
    : m_settings(settings) {}

bool StageScheduler::addNode(const QString& node, std::optional<double> probeSecondsPerToken) {
    if (m_nodes.contains(node))
        return false;
    Node n;
    const bool probed =
        probeSecondsPerToken && std::isfinite(*probeSecondsPerToken) && *probeSecondsPerToken > 0;
    n.secondsPerToken = probed ? *probeSecondsPerToken : m_settings.priorSecondsPerToken;
    n.secondsPerToken = std::max(n.secondsPerToken, kMinSecondsPerToken);
    // Even a probe is only a prior: the coordinator times it from sending to answer, which may
    // include the node loading its stage; the first task it runs replaces it.
    n.fromPrior = true;
    m_nodes.insert(node, n);
    return true;
}

bool StageScheduler::removeNode(const QString& node) {
    return m_nodes.remove(node) > 0;
}

QStringList StageScheduler::nodes() const {
    return m_nodes.keys();
}

double StageScheduler::unverifiedFloor() const {
    if (!m_verified)
        return 0;
    std::vector<double> verified;
    std::vector<double> measured;
    for (auto it = m_nodes.cbegin(); it != m_nodes.cend(); ++it) {
        if (!it->measured)
            continue;
        measured.push_back(it->secondsPerToken);
        if (m_verified(it.key()))
            verified.push_back(it->secondsPerToken);
    }
    std::vector<double>& typical = verified.empty() ? measured : verified;
    if (typical.empty())
        return 0;
    const auto middle = typical.begin() + std::ptrdiff_t(typical.size() / 2);
    std::nth_element(typical.begin(), middle, typical.end());
    return *middle;
}

double StageScheduler::pace(const QString& id, const Node& n, double floor) const {
    if (floor <= n.secondsPerToken || !m_verified || m_verified(id))
        return n.secondsPerToken;
    return floor;
}

double StageScheduler::finishMs(const QString& id, const Node& n, qint64 tokens, qint64 nowMs,
                                double floor) const {
    const double freeAtMs = std::max(double(nowMs), n.busyUntilMs);
    return freeAtMs + double(std::max<qint64>(tokens, 0)) * pace(id, n, floor) * 1000.0;
}

int StageScheduler::probesInFlight() const {
    int count = 0;
    for (const Node& n : m_nodes)
        if (!n.measured)
            count += n.inFlight;
    return count;
}

// A simple scan rather than the min-heap DESIGN sketches: the key is free time + tokens × EMA,
// so the order depends on the task's size and no one heap order serves every task; bans also
// lapse with the clock and every completion moves a key. A stage has tens of nodes, so O(n)
// per pick is cheap and leaves no index to keep in step with the nodes.
std::optional<QString> StageScheduler::pick(qint64 tokens, qint64 nowMs) {
    const bool probing = probesInFlight() < m_settings.maxProbesInFlight;
    const double floor = unverifiedFloor();
    Node* best = nullptr;
    QString bestId;
    double bestFinish = 0;
    bool bestIsProbe = false;
    for (auto it = m_nodes.begin(); it != m_nodes.end(); ++it) {
        Node& n = it.value();
        if (nowMs < n.bannedUntilMs)
            continue;
        const bool isProbe = probing && !n.measured && n.inFlight == 0;
        const double finish = finishMs(it.key(), n, tokens, nowMs, floor);
        // Strict comparisons: on a tie the earlier (lower) id stays.
        if (best == nullptr || (isProbe && !bestIsProbe) || (isProbe == bestIsProbe && finish < bestFinish)) {
            best = &n;
            bestId = it.key();
            bestFinish = finish;
            bestIsProbe = isProbe;
        }
    }
    if (best == nullptr)
        return std::nullopt;
    best->busyUntilMs = bestFinish;
    best->queuedTokens += std::max<qint64>(tokens, 0);
    ++best->inFlight;
    return bestId;
}

bool StageScheduler::assign(const QString& node, qint64 tokens, qint64 nowMs) {
    const auto it = m_nodes.find(node);
    if (it == m_nodes.end() || nowMs < it->bannedUntilMs)
        return false;
    Node& n = it.value();
    n.busyUntilMs = finishMs(node, n, tokens, nowMs, unverifiedFloor());
    n.queuedTokens += std::max<qint64>(tokens, 0);
    ++n.inFlight;
    return true;
}

bool StageScheduler::complete(const QString& node, qint64 tokens, double seconds, qint64 nowMs) {
    const auto it = m_nodes.find(node);
    if (it == m_nodes.end())
        return false;
    Node& n = it.value();
    // A result with nothing in flight comes after a fail() (a missed deadline): its speed is
    // real, but it must not reset the back-off, or a node that always times out never escalates.
    if (n.inFlight > 0) {
        --n.inFlight;
        n.queuedTokens = std::max<qint64>(n.queuedTokens - std::max<qint64>(tokens, 0), 0);
        n.consecutiveFailures = 0;
    }
    if (tokens > 0 && std::isfinite(seconds) && seconds >= 0) {
        const double sample = std::max(seconds / double(tokens), kMinSecondsPerToken);
        // The prior (or probe) is a guess, so the first measurement replaces it.
        const double alpha = n.fromPrior ? 1.0 : m_settings.emaAlpha;
        n.secondsPerToken = alpha * sample + (1.0 - alpha) * n.secondsPerToken;
        n.fromPrior = false;
        n.measured = true;
    }
    // The node finished a task just now, so what is left starts now, at the updated speed — unless it
    // is held to the typical pace (unverified and faster): then it stays busy as long as the typical
    // node would have been, or finishing early would win it the next task all the same.
    const double floor = unverifiedFloor();
    const double left = double(nowMs) + double(n.queuedTokens) * pace(node, n, floor) * 1000.0;
    n.busyUntilMs = pace(node, n, floor) > n.secondsPerToken ? std::max(n.busyUntilMs, left) : left;
    return true;
}

qint64 StageScheduler::banDurationMs(int consecutiveFailures) const {
    qint64 ban = m_settings.banBaseMs;
    for (int i = 1; i < consecutiveFailures && ban < m_settings.banMaxMs; ++i)
        ban *= 2;
    return std::min(ban, m_settings.banMaxMs);
}

std::optional<qint64> StageScheduler::fail(const QString& node, qint64 nowMs) {
    const auto it = m_nodes.find(node);
    if (it == m_nodes.end())
        return std::nullopt;
    Node& n = it.value();
    n.inFlight = 0;
    n.queuedTokens = 0;
    n.busyUntilMs = double(nowMs);
    ++n.consecutiveFailures;
    n.bannedUntilMs = nowMs + banDurationMs(n.consecutiveFailures);
    return n.bannedUntilMs;
}

std::optional<qint64> StageScheduler::deadlineMs(const QString& node, qint64 tokens, qint64 nowMs) const {
    const auto it = m_nodes.constFind(node);
    if (it == m_nodes.constEnd())
        return std::nullopt;
    const double expectedMs =
        m_settings.deadlineFactor * double(std::max<qint64>(tokens, 0)) * it->secondsPerToken * 1000.0;
    return nowMs + std::max(m_settings.minDeadlineMs, qint64(std::ceil(expectedMs)));
}

int StageScheduler::inFlight(const QString& node) const {
    const auto it = m_nodes.constFind(node);
    return it == m_nodes.constEnd() ? 0 : it->inFlight;
}

std::optional<double> StageScheduler::secondsPerToken(const QString& node) const {
    const auto it = m_nodes.constFind(node);
    if (it == m_nodes.constEnd())
        return std::nullopt;
    return it->secondsPerToken;
}

} // namespace tessera::coordinator
