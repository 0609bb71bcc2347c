// CreditsPoller: GET /v1/nodes/{id}/credits?after=N → checked receipts → the ledger.
#include "node/session/CreditsPoller.h"

#include "node/ledger/LocalLedger.h"
#include "node/session/CoordinatorClient.h"
#include "protocol/CreditsPage.h"

namespace tessera::node {

namespace {

constexpr std::size_t kPageSize = 1000; // the coordinator's page: a full one means there may be more

} // namespace

CreditsPoller::CreditsPoller(CoordinatorClient& client, QString nodeId, std::function<LocalLedger*()> ledger,
                             QObject* parent)
    : QObject(parent)
    , m_client(client)
    , m_nodeId(std::move(nodeId))
    , m_ledger(std::move(ledger)) {}

void CreditsPoller::poll() {
    LocalLedger* ledger = m_ledger();
    if (!ledger)
        return;
    Result<LedgerTotals> totals = ledger->totals();
    const qint64 after = totals ? totals->lastSeq : 0;
    m_client.get(QStringLiteral("/v1/nodes/%1/credits?after=%2").arg(m_nodeId).arg(after),
                 [this](const HttpReply& reply) {
                     LocalLedger* ledger = m_ledger();
                     if (!ledger)
                         return;
                     if (!reply.ok()) {
                         qWarning("node: credits: %s", qPrintable(reply.describe()));
                         return;
                     }
                     Result<std::vector<protocol::CreditReceipt>> receipts =
                         protocol::parseCreditsPage(reply.json(), m_nodeId);
                     if (!receipts) {
                         qWarning("node: credits: %s", receipts.message().c_str());
                         return;
                     }
                     if (receipts->empty())
                         return;
                     Result<IngestResult> stored = ledger->ingest(*receipts);
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
