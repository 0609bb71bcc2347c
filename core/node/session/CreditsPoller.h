// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditsPoller: fetches the node's new credit receipts from the coordinator (after the last one
// its ledger holds, a page at a time) and stores them, checked, in its LocalLedger. Runs when the
// coordinator says receipts are waiting, on the session's opening, and on a timer.

#include "protocol/CreditsPage.h"

#include <QJsonObject>
#include <QObject>
#include <QString>

#include <functional>

namespace tessera::node {

class NodeFiles;

class CoordinatorClient;
class LocalLedger;

class CreditsPoller final : public QObject {
    Q_OBJECT

public:
    // ledger: the node's ledger now, or null (none open yet, or the node is stopping).
    // files: where the escrow is kept for `tessera-node ledger` (escrow.json).
    CreditsPoller(CoordinatorClient& client, QString nodeId, std::function<LocalLedger*()> ledger,
                  const NodeFiles& files, QObject* parent = nullptr);

    void poll();
    // The coordinator's last word on this node's credit in escrow (its credits page).
    const protocol::CreditsPageInfo& escrow() const { return m_escrow; }
    // credits_pending, credits_forfeited (in credits) and last_forfeit_reason, for the node's status.
    void addEscrowTo(QJsonObject& status) const;

Q_SIGNALS:
    void escrowChanged();

private:
    CoordinatorClient& m_client;
    QString m_nodeId;
    std::function<LocalLedger*()> m_ledger;
    const NodeFiles& m_files;
    protocol::CreditsPageInfo m_escrow;
    bool m_inFlight = false; // a credits request is out
};

} // namespace tessera::node
