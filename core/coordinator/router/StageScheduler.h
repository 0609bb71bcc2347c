// SPDX-License-Identifier: Apache-2.0
#pragma once
// StageScheduler: which node of one pipeline stage runs the next task, by expected finish time.

#include <QMap>
#include <QString>
#include <QStringList>
#include <QtGlobal>

#include <functional>
#include <optional>

namespace tessera::coordinator {

struct StageSchedulerSettings {
    // Weight of the newest sample in a node's seconds-per-token average (DESIGN: α ≈ 0.1).
    double emaAlpha = 0.1;
    // A node admitted without a probe result starts here; its first completed task replaces it.
    double priorSecondsPerToken = 1e-3;
    // A task's deadline is now + max(minDeadlineMs, deadlineFactor × tokens × EMA): slack for
    // a node that is merely having a slow moment, a floor for tiny tasks and clock jitter.
    double deadlineFactor = 3.0;
    qint64 minDeadlineMs = 10'000;
    // A failing node sits out banBaseMs, doubled per consecutive failure up to banMaxMs.
    qint64 banBaseMs = 30'000;
    qint64 banMaxMs = 600'000;
    // Tasks that may be in flight at once on nodes that have not completed one yet: each new
    // node is tried once early so its real speed gets measured, but a wave of newcomers cannot
    // take over the stage on guesses. 0 turns the preference off.
    int maxProbesInFlight = 1;
};

class StageScheduler final {
public:
    explicit StageScheduler(StageSchedulerSettings settings = {});

    const StageSchedulerSettings& settings() const { return m_settings; }

    // Set: a node whose work has not been verified (an audit or a re-execution passed since its last
    // strike) is scheduled no faster than the stage's typical node — the median speed of its verified
    // nodes, or of all its measured ones while none is verified — so answering fast wins tasks only
    // once the answers are shown to be real work (a node skipping the work it is paid for is fastest).
    using Verified = std::function<bool(const QString& node)>;
    void setVerified(Verified verified) { m_verified = std::move(verified); }

    // probeSecondsPerToken: the node's benchmark, if it ran one (non-positive counts as none).
    // False when the node is already here (its state is kept).
    bool addNode(const QString& node, std::optional<double> probeSecondsPerToken = std::nullopt);
    // Drops the node and its work in flight: the caller retries that work elsewhere.
    bool removeNode(const QString& node);
    QStringList nodes() const; // sorted by id

    // The node with the least expected finish time for a task of `tokens`, ties to the lowest
    // id; an unmeasured node is preferred once (see maxProbesInFlight). The task is assigned to
    // it. None when every node is banned or there are none.
    std::optional<QString> pick(qint64 tokens, qint64 nowMs);
    // Assigns a task to this very node (a backward to the node that holds its forward's graph),
    // as pick() would. False when the node is unknown or banned.
    bool assign(const QString& node, qint64 tokens, qint64 nowMs);
    // A task of `tokens` finished on `node` after `seconds` of work. False for an unknown node.
    bool complete(const QString& node, qint64 tokens, double seconds, qint64 nowMs);
    // The node erred or missed a deadline: its work is dropped (the caller retries it
    // elsewhere) and it is banned. Returns when the ban ends; none for an unknown node.
    std::optional<qint64> fail(const QString& node, qint64 nowMs);

    // When a task of `tokens` given to `node` now should be given up on.
    std::optional<qint64> deadlineMs(const QString& node, qint64 tokens, qint64 nowMs) const;
    int inFlight(const QString& node) const; // 0 for an unknown node
    std::optional<double> secondsPerToken(const QString& node) const;

private:
    struct Node {
        double secondsPerToken = 0; // the EMA
        bool fromPrior = false;     // the EMA is still the prior, not a measurement
        bool measured = false;      // has completed a task
        int inFlight = 0;
        qint64 queuedTokens = 0;
        double busyUntilMs = 0; // end of the work assigned to it, as expected
        int consecutiveFailures = 0;
        qint64 bannedUntilMs = 0;
    };

    // The seconds a token the node is scheduled at: its own, or `floor` when it is faster and unverified.
    double pace(const QString& id, const Node& n, double floor) const;
    // The typical node's seconds a token (see setVerified); 0 without a predicate or measured nodes.
    double unverifiedFloor() const;
    double finishMs(const QString& id, const Node& n, qint64 tokens, qint64 nowMs, double floor) const;
    int probesInFlight() const;
    qint64 banDurationMs(int consecutiveFailures) const;

    StageSchedulerSettings m_settings;
    Verified m_verified;
    // Ordered by id, so a scan meets ties lowest id first.
    QMap<QString, Node> m_nodes;
};

} // namespace tessera::coordinator
