// SPDX-License-Identifier: Apache-2.0
#include "manager/PausePolicy.h"

#include <QCoreApplication>
#include <QDateTime>

#include <algorithm>

namespace tessera::manager {

namespace {

// The cause the user reads first: a game before the user's own pause before everything else.
int priority(const PauseCause& cause) {
    if (cause.game)
        return 0;
    if (cause.rule == u"manual" || cause.rule == u"snooze")
        return 1;
    return 2;
}

bool userPause(const PauseCause& cause) {
    return cause.rule == u"manual" || cause.rule == u"snooze";
}

// A grace period's countdown changes the reason every second; that alone is not a new decision.
bool sameDecision(const PauseDecision& a, const PauseDecision& b) {
    return a.kind == b.kind && a.causes == b.causes && a.resumeAtMs == b.resumeAtMs &&
           a.snoozeUntilMs == b.snoozeUntilMs;
}

} // namespace

QString pauseKindName(PauseKind kind) {
    switch (kind) {
    case PauseKind::None:
        return QStringLiteral("none");
    case PauseKind::Soft:
        return QStringLiteral("soft");
    case PauseKind::Hard:
        return QStringLiteral("hard");
    }
    return {};
}

PausePolicy::PausePolicy(QObject* parent)
    : QObject(parent) {}

PausePolicy::~PausePolicy() = default;

void PausePolicy::setDetectors(std::vector<std::unique_ptr<PauseDetector>> detectors) {
    m_detectors = std::move(detectors);
}

void PausePolicy::snoozeUntil(qint64 nowMs, qint64 untilMs) {
    m_snoozeUntilMs = untilMs;
    m_skipGrace = false;
    evaluate(nowMs);
}

void PausePolicy::resume(qint64 nowMs) {
    m_snoozeUntilMs = 0;
    // The user asked: no grace period for their own pause (a rule still true keeps pausing).
    m_skipGrace = true;
    evaluate(nowMs);
}

const PauseDecision& PausePolicy::evaluate(qint64 nowMs) {
    QList<PauseCause> causes;
    for (const auto& detector : m_detectors) {
        if (std::optional<PauseCause> cause = detector->check())
            causes.append(*cause);
    }
    const bool game = std::any_of(causes.cbegin(), causes.cend(), [](const PauseCause& c) { return c.game; });

    // The user's own pause. A snooze that ends while a game runs lasts until the game has gone.
    if (m_snoozeUntilMs == -1) {
        causes.append(PauseCause{QStringLiteral("manual"),
                                 QCoreApplication::translate("PauseReason", "you paused it until you resume"),
                                 false});
    } else if (m_snoozeUntilMs > 0) {
        if (nowMs < m_snoozeUntilMs) {
            const QString until =
                QDateTime::fromMSecsSinceEpoch(m_snoozeUntilMs).toString(QStringLiteral("HH:mm"));
            causes.append(PauseCause{
                QStringLiteral("snooze"),
                QCoreApplication::translate("PauseReason", "you paused it until %1").arg(until), false});
        } else if (game) {
            causes.append(PauseCause{
                QStringLiteral("snooze"),
                QCoreApplication::translate("PauseReason", "your pause is over, but a game is still running"),
                false});
        } else {
            m_snoozeUntilMs = 0;
        }
    }
    std::stable_sort(causes.begin(), causes.end(),
                     [](const PauseCause& a, const PauseCause& b) { return priority(a) < priority(b); });

    PauseDecision next;
    next.snoozeUntilMs = m_snoozeUntilMs;
    if (!causes.isEmpty()) {
        if (!m_decision.paused())
            m_pausedSinceMs = nowMs;
        m_clearSinceMs = 0;
        m_skipGrace = false;
        const bool hard = m_hardLatched || game || std::any_of(causes.cbegin(), causes.cend(), userPause) ||
                          nowMs - m_pausedSinceMs >= kSoftToHard.count();
        m_hardLatched = hard;
        next.kind = hard ? PauseKind::Hard : PauseKind::Soft;
        next.causes = causes;
        next.reason = causes.first().reason;
    } else if (m_decision.paused()) {
        if (m_clearSinceMs == 0)
            m_clearSinceMs = nowMs;
        const qint64 resumeAt = m_clearSinceMs + m_grace.count();
        if (m_skipGrace || nowMs >= resumeAt) {
            m_hardLatched = false;
            m_clearSinceMs = 0;
            m_skipGrace = false;
        } else {
            next.kind = m_decision.kind;
            if (nowMs - m_pausedSinceMs >= kSoftToHard.count())
                next.kind = PauseKind::Hard;
            next.resumeAtMs = resumeAt;
            next.reason = QCoreApplication::translate("PauseReason", "resuming in %1 s")
                              .arg((resumeAt - nowMs + 999) / 1000);
        }
    }

    const bool changed = !sameDecision(next, m_decision);
    m_decision = std::move(next);
    if (changed)
        Q_EMIT decisionChanged(m_decision);
    return m_decision;
}

} // namespace tessera::manager
