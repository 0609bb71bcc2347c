#pragma once
// CreditsPoller: fetches the node's new credit receipts from the coordinator (after the last one
// its ledger holds, a page at a time) and stores them, checked, in its LocalLedger. Runs when the
// coordinator says receipts are waiting, on the session's opening, and on a timer.

#include <QObject>
#include <QString>

#include <functional>

namespace tessera::node {

class CoordinatorClient;
class LocalLedger;

class CreditsPoller final : public QObject {
    Q_OBJECT

public:
    // ledger: the node's ledger now, or null (none open yet, or the node is stopping).
    CreditsPoller(CoordinatorClient& client, QString nodeId, std::function<LocalLedger*()> ledger,
                  QObject* parent = nullptr);

    void poll();

private:
    CoordinatorClient& m_client;
    QString m_nodeId;
    std::function<LocalLedger*()> m_ledger;
};

} // namespace tessera::node
