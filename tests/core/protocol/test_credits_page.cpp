// SPDX-License-Identifier: Apache-2.0
// parseCreditsPage: a page of GET /v1/nodes/{id}/credits, as the coordinator writes it, becomes
// the receipts it lists; any field of the wrong type or range is refused by name.
#include "ReceiptChain.h"
#include "TestSupport.h"
#include "common/Identity.h"
#include "protocol/CreditsPage.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <functional>

using namespace tessera;
using protocol::CreditReceipt;
using test::failure;

namespace {

const QString kNode = QStringLiteral("node-a");

// The coordinator's receiptJson (api/CreditsApi.cpp), field for field.
QJsonObject receiptJson(const CreditReceipt& r) {
    return QJsonObject{{QStringLiteral("seq"), r.seq},
                       {QStringLiteral("issued_at"), r.issuedAtMs},
                       {QStringLiteral("flop"), r.flop},
                       {QStringLiteral("micro_credits"), r.microCredits},
                       {QStringLiteral("prev_hash"), r.prevHash},
                       {QStringLiteral("hash"), r.hash},
                       {QStringLiteral("signature"), Identity::toBase64Url(r.signature)}};
}

using Edit = std::function<void(QJsonObject& page)>;

Edit setField(const QString& key, const QJsonValue& value) {
    return [=](QJsonObject& page) { page.insert(key, value); };
}

Edit setReceiptField(int index, const QString& key, const QJsonValue& value) {
    return [=](QJsonObject& page) {
        QJsonArray receipts = page.value(QStringLiteral("receipts")).toArray();
        QJsonObject r = receipts.at(index).toObject();
        if (value.isUndefined())
            r.remove(key);
        else
            r.insert(key, value);
        receipts.replace(index, r);
        page.insert(QStringLiteral("receipts"), receipts);
    };
}

} // namespace

Q_DECLARE_METATYPE(Edit)

class TestCreditsPage final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void readsTheCoordinatorsPage();
    void refusesABadField_data();
    void refusesABadField();

private:
    QJsonObject page() const;

    std::optional<Identity> m_key;
    std::vector<CreditReceipt> m_receipts;
};

void TestCreditsPage::initTestCase() {
    Result<Identity> key = Identity::generate();
    QVERIFY2(key, failure(key));
    m_key = *key;
    test::ReceiptChain chain(*m_key, kNode);
    m_receipts = chain.take(3);
}

QJsonObject TestCreditsPage::page() const {
    QJsonArray list;
    qint64 total = 0;
    for (const CreditReceipt& r : m_receipts) {
        list.append(receiptJson(r));
        total += r.microCredits;
    }
    // Through text, as it comes over the wire: 64-bit integers must survive the JSON parser.
    const QJsonObject page{
        {QStringLiteral("node_id"), kNode},
        {QStringLiteral("receipts"), list},
        {QStringLiteral("total_micro_credits"), total},
        {QStringLiteral("total_credits"), double(total) / protocol::kMicroCreditsPerCredit},
        {QStringLiteral("last_seq"), 3},
        {QStringLiteral("coordinator_key"), m_key->publicKeyBase64()}};
    return QJsonDocument::fromJson(QJsonDocument(page).toJson()).object();
}

void TestCreditsPage::readsTheCoordinatorsPage() {
    protocol::CreditsPageInfo info;
    Result<std::vector<CreditReceipt>> receipts = protocol::parseCreditsPage(page(), kNode, &info);
    QVERIFY2(receipts, failure(receipts));
    QCOMPARE(receipts->size(), m_receipts.size());
    for (size_t i = 0; i < m_receipts.size(); ++i) {
        const CreditReceipt& a = (*receipts)[i];
        const CreditReceipt& b = m_receipts[i];
        QCOMPARE(a.nodeId, kNode);
        QCOMPARE(a.payload(), b.payload());
        QCOMPARE(a.hash, b.hash);
        QCOMPARE(a.signature, b.signature);
    }
    QCOMPARE(info.lastSeq, qint64(3));
    QCOMPARE(info.coordinatorKey, m_key->publicKey());

    // Near 2^63, past what a double holds exactly.
    QJsonObject big = page();
    setReceiptField(0, QStringLiteral("flop"), QJsonValue(qint64(9'007'199'254'740'993)))(big);
    big = QJsonDocument::fromJson(QJsonDocument(big).toJson()).object();
    receipts = protocol::parseCreditsPage(big, kNode);
    QVERIFY2(receipts, failure(receipts));
    QCOMPARE(receipts->front().flop, qint64(9'007'199'254'740'993));

    QJsonObject empty = page();
    empty.insert(QStringLiteral("receipts"), QJsonArray());
    receipts = protocol::parseCreditsPage(empty, kNode);
    QVERIFY2(receipts, failure(receipts));
    QVERIFY(receipts->empty());
}

void TestCreditsPage::refusesABadField_data() {
    QTest::addColumn<Edit>("edit");
    QTest::addColumn<QString>("expected");
    const QString hex = QString(64, u'a');
    const auto row = [](const char* name, Edit edit, const char* expected) {
        QTest::newRow(name) << edit << QString::fromUtf8(expected);
    };
    row("other node", setField(QStringLiteral("node_id"), QStringLiteral("node-b")),
        "node_id: the page is for node node-b, not this node (node-a)");
    row("node_id a number", setField(QStringLiteral("node_id"), 7), "node_id: must be a string");
    row(
        "last_seq missing", [](QJsonObject& p) { p.remove(QStringLiteral("last_seq")); },
        "last_seq: missing");
    row("last_seq negative", setField(QStringLiteral("last_seq"), -1),
        "last_seq: must be at least 0, got -1");
    row("total a string", setField(QStringLiteral("total_micro_credits"), QStringLiteral("12")),
        "total_micro_credits: must be a number");
    row("total_credits a string", setField(QStringLiteral("total_credits"), QStringLiteral("1.5")),
        "total_credits: must be a number");
    row("key too short", setField(QStringLiteral("coordinator_key"), QStringLiteral("AAAA")),
        "coordinator_key: expected 32 bytes, got 3");
    row(
        "receipts missing", [](QJsonObject& p) { p.remove(QStringLiteral("receipts")); },
        "receipts: missing");
    row("receipts an object", setField(QStringLiteral("receipts"), QJsonObject()),
        "receipts: must be an array");
    row(
        "receipt a string",
        [](QJsonObject& p) {
            QJsonArray a = p.value(QStringLiteral("receipts")).toArray();
            a.replace(1, QStringLiteral("#2"));
            p.insert(QStringLiteral("receipts"), a);
        },
        "receipts[1]: must be an object");
    row("seq zero", setReceiptField(0, QStringLiteral("seq"), 0),
        "receipts[0].seq: must be at least 1, got 0");
    row("seq text", setReceiptField(0, QStringLiteral("seq"), QStringLiteral("1")),
        "receipts[0].seq: must be a number");
    row("issued_at missing", setReceiptField(2, QStringLiteral("issued_at"), QJsonValue::Undefined),
        "receipts[2].issued_at: missing");
    row("flop fractional", setReceiptField(1, QStringLiteral("flop"), 1.5),
        "receipts[1].flop: must be a whole number below 2^63");
    row("flop beyond 2^63", setReceiptField(1, QStringLiteral("flop"), 1e30),
        "receipts[1].flop: must be a whole number below 2^63");
    row("micro_credits negative", setReceiptField(1, QStringLiteral("micro_credits"), -5),
        "receipts[1].micro_credits: must be at least 0, got -5");
    row("micro_credits null", setReceiptField(1, QStringLiteral("micro_credits"), QJsonValue::Null),
        "receipts[1].micro_credits: must be a number");
    row("prev_hash uppercase", setReceiptField(0, QStringLiteral("prev_hash"), hex.toUpper()),
        "receipts[0].prev_hash: must be 64 lowercase hex digits");
    row("hash short", setReceiptField(2, QStringLiteral("hash"), hex.left(63)),
        "receipts[2].hash: must be 64 lowercase hex digits");
    row("signature padded",
        setReceiptField(0, QStringLiteral("signature"), QString(QString(86, u'A') + u"==")),
        "receipts[0].signature: not base64url");
    row("signature too short", setReceiptField(0, QStringLiteral("signature"), QString(84, u'A')),
        "receipts[0].signature: expected 64 bytes, got 63");
    row("receipts out of order", setReceiptField(1, QStringLiteral("seq"), 1),
        "receipts[1].seq: 1 does not follow 1");
    row("seq beyond last_seq", setField(QStringLiteral("last_seq"), 2),
        "receipts[2].seq: 3 is beyond last_seq 2");
}

void TestCreditsPage::refusesABadField() {
    QFETCH(Edit, edit);
    QFETCH(QString, expected);
    QJsonObject p = page();
    edit(p);
    Result<std::vector<CreditReceipt>> receipts = protocol::parseCreditsPage(p, kNode);
    QVERIFY(!receipts);
    QVERIFY2(QString::fromStdString(receipts.message()).startsWith(expected), receipts.message().c_str());
}

QTEST_GUILESS_MAIN(TestCreditsPage)
#include "test_credits_page.moc"
