#include "coordinator/training/Averager.h"

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
    , m_clock([] { return QDateTime::currentMSecsSinceEpoch(); }) {}

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
    // A sync: the source's whole weights, relayed to the ghost.
    for (auto it = m_syncs.begin(); it != m_syncs.end(); ++it) {
        Sync& sync = it.value();
        if (sync.id != id || sync.source != node || partition != -1 || sync.sent)
            continue;
        Result<std::vector<float>> values = protocol::partitionValues(*frame);
        if (!values || qint64(values->size()) != m_partitionSize(sync.stage, -1)) {
            qWarning("averager: node %s sent a sync of the wrong size", qPrintable(shortId(node)));
            endSync(it.key(), false);
            return false;
        }
        const QString ghost = it.key();
        if (!m_sendBinary(ghost, partitionMessage(protocol::Sync{id, m_settings.partitions}, *values))) {
            endSync(ghost, false);
            return true;
        }
        sync.sent = true;
        ++m_sharesReceived;
        Q_EMIT averaged(sync.stage, -1, *values, 1);
        return true;
    }
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
    const std::size_t n = round.shares.cbegin()->size();
    std::vector<double> sum(n, 0.0);
    for (const std::vector<float>& share : round.shares)
        for (std::size_t i = 0; i < n; ++i)
            sum[i] += share[i];
    std::vector<float> average(n);
    const double count = double(round.shares.size());
    for (std::size_t i = 0; i < n; ++i)
        average[i] = float(sum[i] / count);
    const QByteArray message = partitionMessage(
        protocol::AverageResult{round.id, round.partition, int(round.shares.size())}, average);
    for (auto s = round.shares.cbegin(); s != round.shares.cend(); ++s)
        if (m_sendBinary(s.key(), message))
            Q_EMIT weightsSent(s.key());
    ++m_roundsCompleted;
    Q_EMIT averaged(stage, round.partition, average, int(round.shares.size()));
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
    QStringList orphaned;
    for (auto it = m_syncs.cbegin(); it != m_syncs.cend(); ++it)
        if (it->source == node && !it->sent)
            orphaned << it.key();
    for (const QString& ghost : orphaned)
        endSync(ghost, false);
}

void Averager::startSync(const QString& ghost, int stage, const QString& source) {
    Sync sync;
    sync.id = m_nextRound++;
    sync.stage = stage;
    sync.source = source;
    sync.deadlineMs = m_clock() + m_settings.syncDeadlineMs;
    m_syncs.insert(ghost, sync);
    if (!m_sendText(source, protocol::SyncRequest{sync.id, m_settings.partitions}))
        endSync(ghost, false);
}

void Averager::onSyncDone(const QString& ghost, qint64 round) {
    const auto it = m_syncs.constFind(ghost);
    if (it == m_syncs.constEnd() || it->id != round || !it->sent)
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
