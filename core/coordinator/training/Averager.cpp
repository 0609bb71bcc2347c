// SPDX-License-Identifier: Apache-2.0
#include "coordinator/training/Averager.h"

#include "common/MonotonicClock.h"
#include "coordinator/trust/RobustCombine.h"

#include <QDateTime>

#include <algorithm>

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
    const protocol::Average request{round.id, round.partition, m_settings.partitions, step,
                                    m_settings.chunkValues};
    for (const QString& node : replicas)
        if (m_sendText(node, request))
            round.waiting.insert(node);
    if (round.waiting.isEmpty())
        return;
    m_rounds.insert(stage, std::move(round));
}

bool Averager::awaitsShare(const QString& node, qint64 round) const {
    return std::any_of(m_rounds.cbegin(), m_rounds.cend(),
                       [&](const Round& r) { return r.id == round && r.waiting.contains(node); });
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
    // In chunks where the partition is larger than one (8b: ~230 MB), each node's in order.
    const std::vector<QByteArray> messages =
        protocol::partitionMessages(protocol::AverageResult{round.id, round.partition, combined.used, 0, 0},
                                    std::span(combined.values), m_settings.chunkValues);
    for (const Share& share : all)
        if (!combined.dropped.contains(share.node) &&
            protocol::sendInOrder(messages, [&](const QByteArray& m) { return m_sendBinary(share.node, m); }))
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

void Averager::startSync(const QString& ghost, int stage, qint64 heldRound, qint64 heldReceived) {
    Sync sync;
    const auto cut = m_cut.constFind(ghost);
    if (cut != m_cut.constEnd() && cut->stage == stage && cut->id == heldRound && !cut->stale &&
        heldReceived > 0 && heldReceived <= cut->sent && heldReceived < cut->total) {
        sync = *cut; // resumed where the ghost's weights stop
        sync.sent = sync.acked = heldReceived;
        ++m_syncsResumed;
        qInfo("averager: resuming the sync of %s at %lld of %lld weights", qPrintable(shortId(ghost)),
              qlonglong(heldReceived), qlonglong(sync.total));
    } else {
        sync.id = m_nextRound++;
        sync.stage = stage;
        sync.total = m_syncShape ? m_syncShape(stage).total : m_partitionSize(stage, -1);
    }
    m_cut.remove(ghost);
    sync.deadlineMs = m_clock() + m_settings.syncDeadlineMs;
    m_syncs.insert(ghost, sync);
    if (sync.total <= 0 || !m_weights)
        return endSync(ghost, false);
    sendChunks(ghost);
}

void Averager::sendChunks(const QString& ghost) {
    const auto it = m_syncs.find(ghost);
    if (it == m_syncs.end())
        return;
    Sync& sync = it.value();
    const qint64 chunk = protocol::partitionChunkValues(m_settings.chunkValues);
    const bool first = sync.sent == 0;
    while (sync.sent < sync.total && sync.sent - sync.acked < chunk * std::max(1, m_settings.syncWindow)) {
        const qint64 count = std::min(chunk, sync.total - sync.sent);
        const std::vector<float> values = m_weights(sync.stage, sync.sent, count);
        // AdamW's steps as the checkpoint holds them when this chunk is read (an update sent after it
        // counts on the ghost as on the checkpoint).
        const qint64 steps = m_syncShape ? m_syncShape(sync.stage).optimizerSteps : -1;
        if (qint64(values.size()) != count ||
            !m_sendBinary(ghost,
                          partitionMessage(protocol::Sync{sync.id, sync.sent, sync.total, steps}, values))) {
            qWarning("averager: could not send weights %lld+%lld of stage %d to %s", qlonglong(sync.sent),
                     qlonglong(count), sync.stage, qPrintable(shortId(ghost)));
            return endSync(ghost, false);
        }
        sync.sent += count;
        ++m_syncChunksSent;
    }
    if (first)
        Q_EMIT weightsSent(ghost);
}

void Averager::onSyncDone(const QString& ghost, const protocol::SyncDone& done) {
    const auto it = m_syncs.find(ghost);
    if (it == m_syncs.end() || it->id != done.round)
        return;
    Sync& sync = it.value();
    // The ghost's weights take chunks in order: an answer says how far, never past what was sent.
    if (!done.ok || done.received <= sync.acked || done.received > sync.sent) {
        qWarning("averager: the sync of %s ends at %lld of %lld weights: %s", qPrintable(shortId(ghost)),
                 qlonglong(sync.acked), qlonglong(sync.total),
                 done.ok ? "an answer out of order" : qPrintable(done.error));
        return endSync(ghost, false);
    }
    sync.acked = done.received;
    sync.deadlineMs = m_clock() + m_settings.syncDeadlineMs;
    if (sync.acked == sync.total)
        return endSync(ghost, true);
    sendChunks(ghost);
}

bool Averager::syncing(const QString& ghost) const {
    return m_syncs.contains(ghost);
}

QStringList Averager::syncingOf(int stage) const {
    QStringList out;
    for (auto it = m_syncs.cbegin(); it != m_syncs.cend(); ++it)
        if (it->stage == stage && it->sent > 0)
            out << it.key();
    return out;
}

void Averager::stepApplied(int stage) {
    for (Sync& cut : m_cut)
        if (cut.stage == stage)
            cut.stale = true;
}

void Averager::endSync(const QString& ghost, bool ok) {
    const auto it = m_syncs.find(ghost);
    if (it == m_syncs.end())
        return;
    const int stage = it->stage;
    if (!ok && it->acked > 0 && it->acked < it->total)
        m_cut.insert(ghost, *it); // to resume if the ghost comes back holding what it took
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
