// SPDX-License-Identifier: Apache-2.0
#pragma once
// PartitionChunks: weights too many for one bounded message — a SPARTA share or its round's result
// at 8b (~230 MB a partition), all of a stage's weights for a reclaim or an audit — travel as
// chunks, in order: each message carries values [offset, offset + n) of `total` in its Partition
// frame, and the receiver puts them back together (PartitionAssembly) before anything reads them,
// so whoever reads a share or a result sees one whole message, as before (a restart's reclaim on
// the coordinator writes its chunks to disk as they come instead). A share or result that
// fits one chunk travels whole, with offset and total 0 (what a peer that predates chunks sends).
//
// Not resumable: a chunk lost with its session loses the round, as a whole message would; the
// next round (SPARTA), the window's end (reclaim) or the deadline (audit) deals with it. A ghost's
// sync, which is resumable, has its own messages (Sync, SyncDone).

#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QByteArray>
#include <QJsonObject>

#include <algorithm>
#include <span>
#include <vector>

namespace tessera::protocol {

// Values a message carries by default: 16 MiB of fp32, as a sync's chunk.
inline constexpr qint64 kPartitionChunkValues = qint64(4) << 20;
// The most any message can carry (the frame and the JSON header within kTaskMessageMaxBytes).
inline constexpr qint64 kMaxPartitionChunkValues =
    (kTaskMessageMaxBytes - kTaskMessageMaxJsonBytes - kTaskFrameHeaderBytes - kTaskMessagePrefixBytes) / 4;

// A requested chunk size made sane: 0 (unset) is the default, the rest within [1, the most].
inline qint64 partitionChunkValues(qint64 requested) {
    return requested <= 0 ? kPartitionChunkValues : std::min(requested, kMaxPartitionChunkValues);
}

// The messages that carry a Partition `payload` (4-byte words: fp32 values, or a gradient's
// BlockQuant payload, which is padded to them) under `header` (an AverageShare, AverageResult,
// GradientShare, GradientResult or GradientBasis, whose offset and total — in words — are set here):
// one whole message when it fits `chunk` words, else one per chunk.
template <class M>
std::vector<QByteArray> partitionMessages(M header, QByteArrayView payload, qint64 chunk) {
    chunk = partitionChunkValues(chunk);
    const qint64 n = payload.size() / qint64(sizeof(float));
    std::vector<QByteArray> out;
    for (qint64 offset = 0; offset < n || out.empty(); offset += chunk) {
        const qint64 count = std::min(chunk, n - offset);
        header.offset = n <= chunk ? 0 : offset;
        header.total = n <= chunk ? 0 : n;
        const QByteArrayView part =
            payload.sliced(offset * qint64(sizeof(float)), count * qint64(sizeof(float)));
        out.push_back(
            TaskMessageBuilder(toJson(header), part.size()).add(TaskFrameType::Partition, part).take());
    }
    return out;
}
template <class M>
std::vector<QByteArray> partitionMessages(M header, std::span<const float> values, qint64 chunk) {
    return partitionMessages(std::move(header), partitionPayload(values), chunk);
}

// Sends each message in order; false (the rest not sent) once `send` says one could not be.
template <class Send>
bool sendInOrder(const std::vector<QByteArray>& messages, Send&& send) {
    return std::all_of(messages.begin(), messages.end(), [&](const QByteArray& m) { return send(m); });
}

// One sender's chunks put back together: one partition at a time (a chunk at offset 0 starts a new
// one, dropping any unfinished one).
class PartitionAssembly {
public:
    // maxValues: the most a whole may hold (a stage's parameters); a chunk announcing more is refused.
    explicit PartitionAssembly(qint64 maxValues)
        : m_maxValues(maxValues) {}

    // A chunk of partition `partition` of round `round`: its message, and the offset and total its
    // header says. Once it completes the partition: the whole, as one message (this header without
    // offset and total, one Partition frame of every value). nullopt while more are to come. An
    // error, and what was gathered dropped, when the chunk does not continue it: no Partition frame,
    // another round or partition, a gap or an overlap, values past `total`, a total above maxValues
    // or not positive.
    Result<std::optional<TaskMessage>> add(const TaskMessage& message, qint64 round, int partition,
                                           qint64 offset, qint64 total);
    bool active() const { return m_total > 0; }
    void clear();

private:
    qint64 m_maxValues;
    qint64 m_round = 0;
    int m_partition = 0;
    qint64 m_total = 0; // 0: nothing gathered
    QByteArray m_bytes;
};

} // namespace tessera::protocol
