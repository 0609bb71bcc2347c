// SPDX-License-Identifier: Apache-2.0
#pragma once
// PausePolicy: decides, from the pause rules' detectors and the user's own pauses, whether the
// node may compute now, and how deeply to pause it. Pure logic on a clock the caller gives (the
// Manager's timer, or a test), so every rule of the state machine below is tested without waiting.
//
//   Running ──any cause──▶ Paused (at once)
//   Paused  ──every cause gone for the grace period──▶ Running
//
// - Kind: Hard (the node exits, all GPU memory freed) while a game-like cause or a manual pause
//   is present or a soft pause has lasted kSoftToHard; Soft (the node stops between microbatches
//   and keeps its memory) otherwise: short interruptions (user active, temperature, battery).
//   Once Hard, a pause stays Hard until it ends.
// - A snooze ("pause for 1 hour") ends at its time only if no game-like cause is present then;
//   otherwise it lasts until the game has gone (the grace period then applies as always).
// - "Pause until I resume" lasts until resume(); resume() also ends a snooze, but never overrides
//   a rule that is still true (a game is still running): the reason shown then is the rule's.

#include "manager/PauseDetector.h"

#include <QList>
#include <QObject>
#include <QString>

#include <chrono>
#include <memory>
#include <vector>

namespace tessera::manager {

enum class PauseKind { None, Soft, Hard };

struct PauseDecision {
    PauseKind kind = PauseKind::None; // None: run
    QList<PauseCause> causes;         // present now (empty during a grace period)
    // What the user reads after "Paused — ": the first present cause's reason, else "resuming
    // in 12 s" during the grace period.
    QString reason;
    qint64 resumeAtMs = 0;    // during the grace period: when it resumes; else 0
    qint64 snoozeUntilMs = 0; // a snooze's end (or -1 for "until I resume"); 0: none

    bool paused() const { return kind != PauseKind::None; }
    friend bool operator==(const PauseDecision&, const PauseDecision&) = default;
};

QString pauseKindName(PauseKind kind); // "none", "soft", "hard"

class PausePolicy final : public QObject {
    Q_OBJECT

public:
    static constexpr std::chrono::milliseconds kDefaultGrace{15'000};
    static constexpr std::chrono::milliseconds kSoftToHard{10 * 60'000};

    explicit PausePolicy(QObject* parent = nullptr);
    ~PausePolicy() override;

    // Replaces the detectors (settings changed); the decision is re-evaluated on the next tick.
    void setDetectors(std::vector<std::unique_ptr<PauseDetector>> detectors);
    const std::vector<std::unique_ptr<PauseDetector>>& detectors() const { return m_detectors; }
    void setGracePeriod(std::chrono::milliseconds grace) { m_grace = grace; }
    std::chrono::milliseconds gracePeriod() const { return m_grace; }

    // The user's own pauses. untilMs: the snooze's end; -1: until resume().
    void snoozeUntil(qint64 nowMs, qint64 untilMs);
    void resume(qint64 nowMs);
    qint64 snoozeUntilMs() const { return m_snoozeUntilMs; }

    // Asks every detector and moves the state machine; emits decisionChanged() when the decision
    // differs from the last one (a grace period's countdown alone does not count).
    const PauseDecision& evaluate(qint64 nowMs);
    const PauseDecision& decision() const { return m_decision; }

Q_SIGNALS:
    void decisionChanged(const tessera::manager::PauseDecision& decision);

private:
    std::vector<std::unique_ptr<PauseDetector>> m_detectors;
    std::chrono::milliseconds m_grace = kDefaultGrace;
    qint64 m_snoozeUntilMs = 0;
    qint64 m_pausedSinceMs = 0; // when the current pause began
    qint64 m_clearSinceMs = 0;  // when the last cause went away (grace period start); 0: a cause is present
    bool m_hardLatched = false;
    bool m_skipGrace = false; // resume(): the user's own pause ends without a grace period
    PauseDecision m_decision;
};

} // namespace tessera::manager
