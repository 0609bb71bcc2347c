// SPDX-License-Identifier: Apache-2.0
// CreditsPage: a page of GET /v1/nodes/{id}/credits as the node's CreditsPoller reads it, for the
// node the page names (so that the fuzzer reaches past the node_id check) and for another. What
// parses is a strictly increasing run of receipts within last_seq, each of them hashable.
#include "FuzzCheck.h"
#include "common/Identity.h"
#include "protocol/CreditsPage.h"

#include <QJsonDocument>
#include <QRegularExpression>

using namespace tessera;
using namespace tessera::protocol;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const QJsonDocument doc =
        QJsonDocument::fromJson(QByteArray(reinterpret_cast<const char*>(data), qsizetype(size)));
    if (!doc.isObject())
        return 0;
    const QJsonObject page = doc.object();
    const QString named = page.value(u"node_id").toString();
    static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
    for (const QString& node : {named, QString(64, u'e')}) {
        CreditsPageInfo info;
        const Result<std::vector<CreditReceipt>> receipts = parseCreditsPage(page, node, &info);
        tessera::fuzz::verdict("page", receipts);
        if (!receipts)
            continue;
        FUZZ_CHECK(node == named);
        FUZZ_CHECK(info.lastSeq >= 0 && info.totalMicroCredits >= 0);
        FUZZ_CHECK(info.coordinatorKey.size() == Identity::kPublicKeySize);
        FUZZ_CHECK(info.pendingFlop >= 0 && info.forfeitedFlop >= 0 && info.lastForfeitReason.size() <= 500);
        qint64 previous = 0;
        for (const CreditReceipt& r : *receipts) {
            FUZZ_CHECK(r.nodeId == node);
            FUZZ_CHECK(r.seq > previous && r.seq <= info.lastSeq);
            previous = r.seq;
            FUZZ_CHECK(r.issuedAtMs >= 0 && r.flop >= 0 && r.microCredits >= 0);
            FUZZ_CHECK(r.prevHash.size() == 64 && hex.match(r.prevHash).hasMatch());
            FUZZ_CHECK(r.hash.size() == 64 && hex.match(r.hash).hasMatch());
            FUZZ_CHECK(r.signature.size() == Identity::kSignatureSize);
            // What LocalLedger::ingest checks next.
            FUZZ_CHECK(r.computeHash().size() == 64);
            (void)Identity::verify(info.coordinatorKey, r.payload(), r.signature);
        }
    }
    return 0;
}
