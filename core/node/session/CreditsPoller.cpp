// SPDX-License-Identifier: Apache-2.0
// CreditsPoller: GET /v1/nodes/{id}/credits?after=N → checked receipts → the ledger.
#include "node/session/CreditsPoller.h"

#include "node/NodeFiles.h"
#include "node/ledger/LocalLedger.h"
#include "node/session/CoordinatorClient.h"
#include "protocol/CreditsPage.h"

namespace tessera::node {

namespace {

constexpr std::size_t kPageSize = 1000; // the coordinator's page: a full one means there may be more

} // namespace

CreditsPoller::CreditsPoller(CoordinatorClient& client, QString nodeId, std::function<LocalLedger*()> ledger,
                             const NodeFiles& files, QObject* parent)
    : QObject(parent)
    , m_client(client)
    , m_nodeId(std::move(nodeId))
    , m_ledger(std::move(ledger))
    , m_files(files) {}

void CreditsPoller::addEscrowTo(QJsonObject& status) const {
    status.insert(QStringLiteral("credits_pending"), double(m_escrow.pendingFlop) / 1e15);
    status.insert(QStringLiteral("credits_forfeited"), double(m_escrow.forfeitedFlop) / 1e15);
    if (!m_escrow.lastForfeitReason.isEmpty())
        status.insert(QStringLiteral("last_forfeit_reason"), m_escrow.lastForfeitReason);
}

void CreditsPoller::poll() {
    LocalLedger* ledger = m_ledger();
    if (!ledger)
        return;
    // One request at a time: a coordinator that answers slowly must not have a minute's poll
    // pile up on the last one's (each holds a page in memory).
    if (m_inFlight)
        return;
    Result<LedgerTotals> totals = ledger->totals();
    const qint64 after = totals ? totals->lastSeq : 0;
    m_inFlight = true;
    m_client.get(QStringLiteral("/v1/nodes/%1/credits?after=%2").arg(m_nodeId).arg(after),
                 [this](const HttpReply& reply) {
                     m_inFlight = false;
                     LocalLedger* current = m_ledger(); // the ledger may have gone while the reply came
                     if (!current)
                         return;
                     if (!reply.ok()) {
                         qWarning("node: credits: %s", qPrintable(reply.describe()));
                         return;
                     }
                     protocol::CreditsPageInfo info;
                     Result<std::vector<protocol::CreditReceipt>> receipts =
                         protocol::parseCreditsPage(reply.json(), m_nodeId, &info);
                     if (!receipts) {
                         qWarning("node: credits: %s", receipts.message().c_str());
                         return;
                     }
                     if (info.pendingFlop != m_escrow.pendingFlop ||
                         info.forfeitedFlop != m_escrow.forfeitedFlop ||
                         info.lastForfeitReason != m_escrow.lastForfeitReason) {
                         if (info.forfeitedFlop > m_escrow.forfeitedFlop)
                             qWarning("node: the coordinator forfeited pending credit: %s",
                                      qPrintable(info.lastForfeitReason));
                         m_escrow = info;
                         QJsonObject record;
                         addEscrowTo(record);
                         if (Status s = m_files.write(NodeFiles::escrowFile(), record); !s)
                             qWarning("node: %s", s.message().c_str());
                         Q_EMIT escrowChanged();
                     }
                     if (receipts->empty())
                         return;
                     Result<IngestResult> stored = current->ingest(*receipts);
                     if (!stored) {
                         qWarning("node: ledger: %s", stored.message().c_str());
                         return;
                     }
                     // Printed only after the commit: what is acknowledged here is on disk.
                     qInfo("ledger: stored receipts through #%lld", qlonglong(stored->lastSeq));
                     if (receipts->size() >= kPageSize)
                         poll();
                 });
}

} // namespace tessera::node
