// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/Averager.h"

#include "common/MonotonicClock.h"
#include "coordinator/trust/RobustCombine.h"

#include <QDateTime>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

QByteArray partitionMessage(const protocol::SessionMessage& header, const std::vector<float>& values) {
    const QByteArrayView payload = protocol::partitionPayload(values);
    return protocol::TaskMessageBuilder(protocol::toJson(header), payload.size())
        .add(protocol::TaskFrameType::Partition, payload)
        .take();
}

} // namespace

Averager::Averager(int stages, PartitionSize partitionSize, AveragingSettings settings, SendText sendText,
                   SendBinary sendBinary, QObject* parent)
    : QObject(parent)
    , m_stages(stages)
    , m_partitionSize(std::move(partitionSize))
    , m_settings(settings)
    , m_sendText(std::move(sendText))
    , m_sendBinary(std::move(sendBinary))
    // Round deadlines are durations: a wall clock stepping back must not stretch them.
    , m_clock([] { return MonotonicClock::nowMs(); }) {}

void Averager::startRound(int stage, qint64 step, const QStringList& replicas) {
    if (stage < 0 || stage >= m_stages)
        return;
    if (m_rounds.contains(stage))
        closeRound(stage);
    Round round;
    round.id = m_nextRound++;
    round.partition = partitionForStep(step);
    round.deadlineMs = m_clock() + m_settings.deadlineMs;
    const protocol::Average request{round.id, round.partition, m_settings.partitions, step};
    for (const QString& node : replicas)
        if (m_sendText(node, request))
            round.waiting.insert(node);
    if (round.waiting.isEmpty())
        return;
    m_rounds.insert(stage, std::move(round));
}

bool Averager::onShare(const QString& node, const protocol::AverageShare& share,
                       const protocol::TaskMessage& message) {
    const qint64 id = share.round;
    const int partition = share.partition;
    const protocol::TaskFrame* frame = message.frame(protocol::TaskFrameType::Partition);
    if (frame == nullptr)
        return false;
    for (auto it = m_rounds.begin(); it != m_rounds.end(); ++it) {
        Round& round = it.value();
        if (round.id != id || partition != round.partition || !round.waiting.contains(node))
            continue;
        Result<std::vector<float>> values = protocol::partitionValues(*frame);
        if (!values || qint64(values->size()) != m_partitionSize(it.key(), partition)) {
            qWarning("averager: node %s sent a share of the wrong size for stage %d",
                     qPrintable(shortId(node)), it.key());
            round.waiting.remove(node);
        } else {
            round.waiting.remove(node);
            round.shares.insert(node, std::move(*values));
            ++m_sharesReceived;
        }
        if (round.waiting.isEmpty())
            closeRound(it.key());
        return true;
    }
    return false;
}

void Averager::closeRound(int stage) {
    const auto it = m_rounds.find(stage);
    if (it == m_rounds.end())
        return;
    Round round = std::move(it.value());
    m_rounds.erase(it);
    if (round.shares.isEmpty())
        return;
    // Shares of nodes on probation do not count while any trusted replica's does.
    std::vector<Share> counted, all;
    for (auto s = round.shares.begin(); s != round.shares.end(); ++s) {
        Share share{s.key(), std::move(s.value())};
        if (!m_trusted || m_trusted(share.node))
            counted.push_back(share);
        all.push_back(std::move(share));
    }
    const std::vector<Share>& used = counted.empty() ? all : counted;
    const std::vector<float> reference =
        m_reference ? m_reference(stage, round.partition) : std::vector<float>();
    const Combined combined = robustCombine(used, reference);
    for (const QString& node : combined.dropped)
        Q_EMIT shareRefused(
            node, stage,
            QStringLiteral("its share of partition %1 is not finite or far beyond any training")
                .arg(round.partition));
    // Outvoted, not struck: an honest replica can be far from the others too (a joiner that started
    // from the checkpoint, which lags them).
    for (const QString& node : combined.outliers)
        qInfo("averager: node %s's share of partition %d of stage %d is far from the others' (outvoted)",
              qPrintable(shortId(node)), round.partition, stage);
    if (combined.used == 0)
        return;
    const QByteArray message =
        partitionMessage(protocol::AverageResult{round.id, round.partition, combined.used}, combined.values);
    for (const Share& share : all)
        if (!combined.dropped.contains(share.node) && m_sendBinary(share.node, message))
            Q_EMIT weightsSent(share.node);
    ++m_roundsCompleted;
    Q_EMIT averaged(stage, round.partition, combined.values, combined.used);
}

void Averager::nodeGone(const QString& node) {
    QList<int> done;
    for (auto it = m_rounds.begin(); it != m_rounds.end(); ++it) {
        it->shares.remove(node);
        if (it->waiting.remove(node) && it->waiting.isEmpty())
            done << it.key();
    }
    for (int stage : done)
        closeRound(stage);
    if (m_syncs.contains(node))
        endSync(node, false);
}

void Averager::startSync(const QString& ghost, int stage) {
    Sync sync;
    sync.id = m_nextRound++;
    sync.stage = stage;
    sync.deadlineMs = m_clock() + m_settings.syncDeadlineMs;
    m_syncs.insert(ghost, sync);
    const std::vector<float> weights = m_reference ? m_reference(stage, -1) : std::vector<float>();
    if (weights.empty() || qint64(weights.size()) != m_partitionSize(stage, -1) ||
        !m_sendBinary(ghost, partitionMessage(protocol::Sync{sync.id, m_settings.partitions}, weights)))
        return endSync(ghost, false);
    Q_EMIT weightsSent(ghost);
}

void Averager::onSyncDone(const QString& ghost, qint64 round) {
    const auto it = m_syncs.constFind(ghost);
    if (it == m_syncs.constEnd() || it->id != round)
        return;
    endSync(ghost, true);
}

bool Averager::syncing(const QString& ghost) const {
    return m_syncs.contains(ghost);
}

void Averager::endSync(const QString& ghost, bool ok) {
    const auto it = m_syncs.find(ghost);
    if (it == m_syncs.end())
        return;
    const int stage = it->stage;
    m_syncs.erase(it);
    Q_EMIT synced(ghost, stage, ok);
}

void Averager::tick() {
    const qint64 now = m_clock();
    QList<int> late;
    for (auto it = m_rounds.cbegin(); it != m_rounds.cend(); ++it)
        if (now >= it->deadlineMs)
            late << it.key();
    for (int stage : late)
        closeRound(stage);
    QStringList lateSyncs;
    for (auto it = m_syncs.cbegin(); it != m_syncs.cend(); ++it)
        if (now >= it->deadlineMs)
            lateSyncs << it.key();
    for (const QString& ghost : lateSyncs) {
        qWarning("averager: syncing %s timed out; it starts from the checkpoint", qPrintable(shortId(ghost)));
        endSync(ghost, false);
    }
}

} // namespace tessera::coordinator
