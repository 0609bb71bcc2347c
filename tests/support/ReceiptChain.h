// SPDX-License-Identifier: Apache-2.0
#pragma once
// ReceiptChain: valid signed credit receipts, built by the coordinator's chain rules, for the
// node's ledger tests and the ledger_writer they start.

#include "common/Identity.h"
#include "protocol/CreditReceipt.h"

#include <vector>

namespace tessera::test {

class ReceiptChain final {
public:
    // Continues the chain after (lastSeq, lastHash); from the start by default.
    ReceiptChain(Identity key, QString nodeId, qint64 lastSeq = 0, QString lastHash = protocol::kGenesisHash)
        : m_key(std::move(key))
        , m_nodeId(std::move(nodeId))
        , m_lastSeq(lastSeq)
        , m_lastHash(std::move(lastHash)) {}

    // Fills in hash and signature, as the coordinator does (also to re-sign a tampered copy).
    static protocol::CreditReceipt sign(protocol::CreditReceipt r, const Identity& key) {
        r.hash = r.computeHash();
        r.signature = key.sign(r.payload());
        return r;
    }

    // The next receipt: one 8B-model stage step's worth of FLOP, varying with seq.
    protocol::CreditReceipt next() {
        protocol::CreditReceipt r;
        r.nodeId = m_nodeId;
        r.seq = m_lastSeq + 1;
        r.issuedAtMs = 1'700'000'000'000 + r.seq * 60'000;
        r.flop = 6LL * 1'200'000'000 * 16'384 * (1 + r.seq % 3);
        r.microCredits = r.flop / protocol::kFlopPerMicroCredit;
        r.prevHash = m_lastHash;
        r = sign(std::move(r), m_key);
        m_lastSeq = r.seq;
        m_lastHash = r.hash;
        return r;
    }

    std::vector<protocol::CreditReceipt> take(int count) {
        std::vector<protocol::CreditReceipt> receipts;
        for (int i = 0; i < count; ++i)
            receipts.push_back(next());
        return receipts;
    }

    const Identity& key() const { return m_key; }

private:
    Identity m_key;
    QString m_nodeId;
    qint64 m_lastSeq;
    QString m_lastHash;
};

} // namespace tessera::test
