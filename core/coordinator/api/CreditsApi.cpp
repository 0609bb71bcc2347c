// SPDX-License-Identifier: Apache-2.0
#include "coordinator/api/CreditsApi.h"

#include "coordinator/store/TrainingStore.h"

#include "common/Identity.h"
#include "coordinator/api/JsonBody.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/NodeRegistry.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace tessera::coordinator {

using http::HttpRequest;
using http::HttpResponse;

namespace {

HttpResponse storageError(const std::string& message) {
    qWarning("coordinator: reading credits failed: %s", message.c_str());
    return HttpResponse::error(500,
                               QStringLiteral("the coordinator failed to read credits; try again later"));
}

QJsonObject receiptJson(const CreditReceipt& r) {
    return QJsonObject{{QStringLiteral("seq"), r.seq},
                       {QStringLiteral("issued_at"), r.issuedAtMs},
                       {QStringLiteral("flop"), r.flop},
                       {QStringLiteral("micro_credits"), r.microCredits},
                       {QStringLiteral("prev_hash"), r.prevHash},
                       {QStringLiteral("hash"), r.hash},
                       {QStringLiteral("signature"), Identity::toBase64Url(r.signature)}};
}

} // namespace

HttpResponse CreditsApi::credits(const HttpRequest& request) {
    const QString nodeId = request.param(QStringLiteral("node_id"));
    qint64 after = 0;
    if (request.query.hasQueryItem(QStringLiteral("after"))) {
        after = parseIdSegment(request.query.queryItemValue(QStringLiteral("after")));
        if (after < 0)
            return HttpResponse::error(400, QStringLiteral("after: must be a receipt seq (0 or more)"));
    }
    Result<std::optional<NodeRecord>> node = NodeRegistry(m_db).find(nodeId);
    if (!node)
        return storageError(node.message());
    if (!*node)
        return HttpResponse::error(404, QStringLiteral("node_id: no such node"));

    CreditLedger ledger(m_db);
    Result<std::vector<CreditReceipt>> receipts = ledger.list(nodeId, after, kPageSize);
    if (!receipts)
        return storageError(receipts.message());
    Result<CreditTotals> totals = ledger.totals(nodeId);
    if (!totals)
        return storageError(totals.message());
    Result<CreditEscrow> escrow = TrainingStore(m_db).escrow(nodeId);
    if (!escrow)
        return storageError(escrow.message());
    QJsonArray list;
    for (const CreditReceipt& r : *receipts)
        list.append(receiptJson(r));
    // Work accepted but not yet in a receipt (in escrow until an audit covers it), and what failed
    // audits forfeited. Unsigned: only receipts are credit.
    QJsonObject escrowJson{{QStringLiteral("pending_flop"), escrow->pendingFlop},
                           {QStringLiteral("forfeited_flop"), escrow->forfeitedFlop}};
    if (escrow->lastForfeitAtMs > 0) {
        escrowJson.insert(QStringLiteral("last_forfeit_at"), escrow->lastForfeitAtMs);
        escrowJson.insert(QStringLiteral("last_forfeit_reason"), escrow->lastForfeitReason);
    }
    return HttpResponse::json(200, QJsonDocument(QJsonObject{
                                       {QStringLiteral("node_id"), nodeId},
                                       {QStringLiteral("receipts"), list},
                                       // Exact; total_credits is the same in credits, for display.
                                       {QStringLiteral("total_micro_credits"), totals->microCredits},
                                       {QStringLiteral("total_credits"),
                                        double(totals->microCredits) / protocol::kMicroCreditsPerCredit},
                                       {QStringLiteral("last_seq"), totals->lastSeq},
                                       {QStringLiteral("coordinator_key"), m_coordinatorKey},
                                       {QStringLiteral("escrow"), escrowJson},
                                   }));
}

} // namespace tessera::coordinator
