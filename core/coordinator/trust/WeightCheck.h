// SPDX-License-Identifier: Apache-2.0
#pragma once
// WeightCheck: after every averaged step, each replica of a stage shows it holds the weights the
// coordinator's checkpoint holds (issue 41, item 2). Where replicas agree (gradient averaging,
// synchronous steps, 32-bit moments: docs/ARCHITECTURE.md, "Replicas that agree") every node that
// took a step's gradient_result holds, to the bit, what the checkpoint holds after the same update.
// The result asks each node (GradientAverager::setFingerprinted) for a fingerprint of its weights
// under a seed drawn for that step (base/WeightFingerprint); the checkpoint computes its own in the
// pass that applies the update; the node answers in its step_done.
//
//   agree     counted, and `weightsAgreed`: the node may re-execute its replicas' work (Router::mayVerify)
//   differ    the node's weights are not its replicas' — zeroed, never updated, edited, or a bug of
//             ours: `diverged` (the trainer strikes it and syncs it again — the strike because a liar
//             could otherwise diverge forever at no cost, the sync because an honest node's weights
//             would come back right)
//   silent    a step_done that carries no fingerprint, or none before the deadline: `diverged` as well
//             (the node that cannot show its weights is treated as one whose weights differ)
//   not ok    the node said it could not apply the update: no judgement (it is synced again as it says)
//   gone      the session ended: forgotten (a node back is synced anew)
// Once judged, what the node owes of later steps is forgotten: those were asked of the same weights,
// before the sync that follows (one divergence, one strike).
//
// Single-threaded (the coordinator's thread); a few numbers per node and step.

#include "base/WeightFingerprint.h"
#include "protocol/SessionMessages.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QStringList>

#include <functional>

namespace tessera::coordinator {

class WeightCheck final : public QObject {
    Q_OBJECT

public:
    using Clock = std::function<qint64()>;
    explicit WeightCheck(Clock clock)
        : m_clock(std::move(clock)) {}

    // Step `step`'s result asked `nodes` of `stage` for their fingerprint; `reference` is the
    // checkpoint's after the same update. They must answer within deadlineMs.
    void expect(int stage, qint64 step, const gpu::WeightFingerprint& reference, const QStringList& nodes,
                qint64 deadlineMs);
    void onStepDone(const QString& node, const protocol::StepDone& done);
    void nodeGone(const QString& node);
    void tick(); // the deadlines

    qint64 agreed() const { return m_agreed; }
    qint64 diverged() const { return m_diverged; }
    // {"agreed", "diverged", "unanswered", "pending"}
    QJsonObject status() const;

Q_SIGNALS:
    void weightsDiverged(const QString& node, int stage, const QString& why);
    // Its fingerprint agreed: it holds the checkpoint's weights (what makes a replica a verifier).
    void weightsAgreed(const QString& node, int stage);

private:
    struct Expected {
        int stage = 0;
        qint64 step = 0;
        gpu::WeightFingerprint reference;
        qint64 deadlineMs = 0;
    };
    void judge(const QString& node, const Expected& expected, const QString& why);

    Clock m_clock;
    QHash<QString, QList<Expected>> m_expected; // by node, oldest first
    qint64 m_agreed = 0;
    qint64 m_diverged = 0;
    qint64 m_unanswered = 0;
};

} // namespace tessera::coordinator
