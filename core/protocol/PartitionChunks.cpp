// SPDX-License-Identifier: Apache-2.0
#include "protocol/PartitionChunks.h"

namespace tessera::protocol {

void PartitionAssembly::clear() {
    m_total = 0;
    m_bytes = QByteArray();
}

Result<std::optional<TaskMessage>> PartitionAssembly::add(const TaskMessage& message, qint64 round,
                                                          int partition, qint64 offset, qint64 total) {
    const auto refuse = [this](const QString& why) {
        clear();
        return makeError(why.toStdString(), ErrorKind::InvalidInput);
    };
    const TaskFrame* frame = message.frame(TaskFrameType::Partition);
    if (!frame)
        return refuse(QStringLiteral("a chunk without its Partition frame"));
    const qint64 count = frame->payload.size() / qint64(sizeof(float));
    if (total <= 0 || total > m_maxValues)
        return refuse(
            QStringLiteral("a chunked partition of %1 values (at most %2 here)").arg(total).arg(m_maxValues));
    if (offset == 0) { // a new partition (an unfinished one is dropped)
        clear();
        m_round = round;
        m_partition = partition;
        m_total = total;
    } else if (!active() || round != m_round || partition != m_partition || total != m_total ||
               offset != m_bytes.size() / qint64(sizeof(float))) {
        return refuse(
            QStringLiteral("a chunk at %1 of round %2 partition %3 that does not continue what came "
                           "before (expected offset %4)")
                .arg(offset)
                .arg(round)
                .arg(partition)
                .arg(active() ? m_bytes.size() / qint64(sizeof(float)) : 0));
    }
    if (count == 0 || offset + count > total)
        return refuse(QStringLiteral("a chunk of %1 values at %2 of a partition of %3")
                          .arg(count)
                          .arg(offset)
                          .arg(total));
    m_bytes.append(frame->payload.data(), frame->payload.size());
    if (offset + count < total)
        return std::optional<TaskMessage>();
    TaskMessage whole;
    whole.header = message.header;
    whole.header.remove(QStringLiteral("offset"));
    whole.header.remove(QStringLiteral("total"));
    whole.bytes = std::move(m_bytes);
    // Each chunk's CRC was checked as it arrived; the whole has no frame CRC of its own.
    whole.frames = {TaskFrame{TaskFrameType::Partition, QByteArrayView(whole.bytes), 0}};
    clear();
    return std::optional<TaskMessage>(std::move(whole));
}

} // namespace tessera::protocol
