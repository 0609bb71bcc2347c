// SPDX-License-Identifier: Apache-2.0
// CreditGranter: pending FLOPs into signed receipts, and a word to each node that got one.
#include "coordinator/training/CreditGranter.h"

#include "common/Identity.h"
#include "coordinator/store/TrainingStore.h"

namespace tessera::coordinator {

int CreditGranter::grant(qint64 nowMs) {
    if (m_store.hasPending())
        return 0; // the accounting must be in before credit is granted from it
    const Identity& key = m_key;
    Result<QStringList> granted = m_store.grantCredits(
        [&key](const QByteArray& payload) -> Result<QByteArray> { return key.sign(payload); }, nowMs,
        nowMs - m_escrowMs);
    if (!granted) {
        qWarning("trainer: %s", granted.message().c_str());
        return 0;
    }
    for (const QString& node : *granted)
        m_sendText(node, protocol::Credits{});
    return int(granted->size());
}

void CreditGranter::forfeit(const QString& node, const QString& reason, qint64 nowMs) {
    Result<qint64> lost = m_store.forfeit(node, reason, nowMs);
    if (!lost) {
        qWarning("trainer: %s", lost.message().c_str());
        return;
    }
    qWarning("trust: node %s forfeits %lld pending FLOPs: %s", qPrintable(node.left(12)), qlonglong(*lost),
             qPrintable(reason));
    m_sendText(node, protocol::Credits{});
}

} // namespace tessera::coordinator
