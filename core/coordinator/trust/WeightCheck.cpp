// SPDX-License-Identifier: Apache-2.0
#include "coordinator/trust/WeightCheck.h"

#include <QSet>

#include <algorithm>

namespace tessera::coordinator {

void WeightCheck::expect(int stage, qint64 step, const gpu::WeightFingerprint& reference,
                         const QStringList& nodes, qint64 deadlineMs) {
    const qint64 deadline = m_clock() + deadlineMs;
    for (const QString& node : nodes)
        m_expected[node].append(Expected{stage, step, reference, deadline});
}

void WeightCheck::onStepDone(const QString& node, const protocol::StepDone& done) {
    const auto it = m_expected.find(node);
    if (it == m_expected.end())
        return;
    QList<Expected>& list = it.value();
    const auto e =
        std::find_if(list.begin(), list.end(), [&](const Expected& x) { return x.step == done.step; });
    if (e == list.end())
        return;
    const Expected expected = *e;
    list.erase(e);
    if (list.isEmpty())
        m_expected.erase(it);
    if (!done.ok)
        return; // it could not apply the update: synced again, not judged
    gpu::WeightFingerprint answered;
    if (done.fingerprint.isEmpty())
        return judge(
            node, expected,
            QStringLiteral("its step_done of step %1 shows no fingerprint of its weights").arg(done.step));
    if (!gpu::WeightFingerprint::parse(done.fingerprint.toStdString(), expected.reference.seed(), answered))
        return judge(node, expected,
                     QStringLiteral("its fingerprint of step %1 does not read: \"%2\"")
                         .arg(done.step)
                         .arg(done.fingerprint.left(80)));
    if (!answered.agrees(expected.reference))
        return judge(node, expected,
                     answered.count() != expected.reference.count()
                         ? QStringLiteral("its fingerprint of step %1 covers %2 weights, the stage has %3")
                               .arg(done.step)
                               .arg(answered.count())
                               .arg(expected.reference.count())
                         : QStringLiteral("its weights after step %1 differ from its replicas' (the "
                                          "checkpoint's) by %2 of their norm")
                               .arg(done.step)
                               .arg(answered.relativeDifference(expected.reference), 0, 'g', 3));
    ++m_agreed;
    Q_EMIT weightsAgreed(node, expected.stage);
}

void WeightCheck::judge(const QString& node, const Expected& expected, const QString& why) {
    // The fingerprints it owes of later steps were asked of the same weights, before it is synced
    // again: one divergence, one judgement.
    m_expected.remove(node);
    ++m_diverged;
    qWarning("trust: node %s (stage %d): %s", qPrintable(node.left(12)), expected.stage, qPrintable(why));
    Q_EMIT weightsDiverged(node, expected.stage, why);
}

void WeightCheck::nodeGone(const QString& node) {
    m_expected.remove(node);
}

void WeightCheck::tick() {
    const qint64 now = m_clock();
    QList<std::pair<QString, Expected>> late;
    for (auto it = m_expected.begin(); it != m_expected.end();) {
        QList<Expected>& list = it.value();
        for (auto e = list.begin(); e != list.end();)
            if (now >= e->deadlineMs) {
                late.append({it.key(), *e});
                e = list.erase(e);
            } else {
                ++e;
            }
        it = list.isEmpty() ? m_expected.erase(it) : std::next(it);
    }
    QSet<QString> judged;
    for (const auto& [node, expected] : late) {
        if (judged.contains(node))
            continue;
        judged.insert(node);
        ++m_unanswered;
        judge(node, expected,
              QStringLiteral("it did not answer the fingerprint of its weights after step %1")
                  .arg(expected.step));
    }
}

QJsonObject WeightCheck::status() const {
    qint64 pending = 0;
    for (const QList<Expected>& list : m_expected)
        pending += list.size();
    return {{QStringLiteral("agreed"), m_agreed},
            {QStringLiteral("diverged"), m_diverged},
            {QStringLiteral("unanswered"), m_unanswered},
            {QStringLiteral("pending"), pending}};
}

} // namespace tessera::coordinator
