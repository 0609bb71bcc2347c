// SPDX-License-Identifier: Apache-2.0
#include "protocol/CreditsPage.h"

#include "common/Identity.h"

#include <QJsonArray>
#include <QJsonValue>
#include <QRegularExpression>
#include <QVariant>

namespace tessera::protocol {

namespace {

std::string text(const QString& s) {
    return s.toStdString();
}

Error fieldError(const QString& field, const std::string& what) {
    return makeError(text(field) + ": " + what);
}

// JSON numbers are doubles to most parsers, but the coordinator writes exact integers and Qt
// keeps those that fit in 64 bits as integers: anything else (1.5, 1e30) is refused.
Result<qint64> integerField(const QJsonObject& o, const QString& key, const QString& field, qint64 min) {
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return fieldError(field, "missing");
    if (!v.isDouble())
        return fieldError(field, "must be a number");
    const QVariant n = v.toVariant();
    if (n.typeId() != QMetaType::LongLong)
        return fieldError(field, "must be a whole number below 2^63");
    const qint64 value = n.toLongLong();
    if (value < min)
        return fieldError(field,
                          "must be at least " + std::to_string(min) + ", got " + std::to_string(value));
    return value;
}

Result<QString> stringField(const QJsonObject& o, const QString& key, const QString& field) {
    const QJsonValue v = o.value(key);
    if (v.isUndefined())
        return fieldError(field, "missing");
    if (!v.isString())
        return fieldError(field, "must be a string");
    return v.toString();
}

Result<QString> hashField(const QJsonObject& o, const QString& key, const QString& field) {
    // anchoredPattern, not ^...$: "$" also matches before a final newline (65 characters).
    static const QRegularExpression hex(QRegularExpression::anchoredPattern(QStringLiteral("[0-9a-f]{64}")));
    Result<QString> s = stringField(o, key, field);
    if (s && !hex.match(*s).hasMatch())
        return fieldError(field, "must be 64 lowercase hex digits (a SHA-256)");
    return s;
}

Result<QByteArray> base64UrlField(const QJsonObject& o, const QString& key, const QString& field,
                                  qsizetype size) {
    Result<QString> s = stringField(o, key, field);
    if (!s)
        return s.error();
    Result<QByteArray> bytes = Identity::fromBase64Url(*s, size);
    if (!bytes)
        return fieldError(field, bytes.message());
    return bytes;
}

Result<CreditReceipt> parseReceipt(const QJsonValue& value, const QString& field, const QString& nodeId) {
    if (!value.isObject())
        return fieldError(field, "must be an object");
    const QJsonObject o = value.toObject();
    const auto name = [&](const char* key) -> QString { return field + u'.' + QLatin1String(key); };
    CreditReceipt r;
    r.nodeId = nodeId;
    Result<qint64> seq = integerField(o, QStringLiteral("seq"), name("seq"), 1);
    if (!seq)
        return seq.error();
    r.seq = *seq;
    Result<qint64> issued = integerField(o, QStringLiteral("issued_at"), name("issued_at"), 0);
    if (!issued)
        return issued.error();
    r.issuedAtMs = *issued;
    Result<qint64> flop = integerField(o, QStringLiteral("flop"), name("flop"), 0);
    if (!flop)
        return flop.error();
    r.flop = *flop;
    Result<qint64> micro = integerField(o, QStringLiteral("micro_credits"), name("micro_credits"), 0);
    if (!micro)
        return micro.error();
    r.microCredits = *micro;
    Result<QString> prev = hashField(o, QStringLiteral("prev_hash"), name("prev_hash"));
    if (!prev)
        return prev.error();
    r.prevHash = *prev;
    Result<QString> hash = hashField(o, QStringLiteral("hash"), name("hash"));
    if (!hash)
        return hash.error();
    r.hash = *hash;
    Result<QByteArray> signature =
        base64UrlField(o, QStringLiteral("signature"), name("signature"), Identity::kSignatureSize);
    if (!signature)
        return signature.error();
    r.signature = *signature;
    return r;
}

} // namespace

Result<std::vector<CreditReceipt>> parseCreditsPage(const QJsonObject& page, const QString& expectedNodeId,
                                                    CreditsPageInfo* info) {
    Result<QString> nodeId = stringField(page, QStringLiteral("node_id"), QStringLiteral("node_id"));
    if (!nodeId)
        return nodeId.error();
    if (*nodeId != expectedNodeId)
        return makeError("node_id: the page is for node " + text(*nodeId) + ", not this node (" +
                         text(expectedNodeId) + ")");
    Result<qint64> lastSeq = integerField(page, QStringLiteral("last_seq"), QStringLiteral("last_seq"), 0);
    if (!lastSeq)
        return lastSeq.error();
    Result<qint64> total =
        integerField(page, QStringLiteral("total_micro_credits"), QStringLiteral("total_micro_credits"), 0);
    if (!total)
        return total.error();
    Result<QByteArray> key = base64UrlField(page, QStringLiteral("coordinator_key"),
                                            QStringLiteral("coordinator_key"), Identity::kPublicKeySize);
    if (!key)
        return key.error();
    // total_credits repeats total_micro_credits for display: only its type is checked.
    const QJsonValue credits = page.value(QStringLiteral("total_credits"));
    if (!credits.isUndefined() && !credits.isDouble())
        return makeError("total_credits: must be a number");

    const QJsonValue list = page.value(QStringLiteral("receipts"));
    if (list.isUndefined())
        return makeError("receipts: missing");
    if (!list.isArray())
        return makeError("receipts: must be an array");
    std::vector<CreditReceipt> receipts;
    const QJsonArray array = list.toArray();
    receipts.reserve(size_t(array.size()));
    for (qsizetype i = 0; i < array.size(); ++i) {
        const QString field = QStringLiteral("receipts[%1]").arg(i);
        Result<CreditReceipt> r = parseReceipt(array.at(i), field, expectedNodeId);
        if (!r)
            return r.error();
        // A page lists receipts oldest first and last_seq covers them all.
        if (!receipts.empty() && r->seq <= receipts.back().seq)
            return makeError(text(field) + ".seq: " + std::to_string(r->seq) + " does not follow " +
                             std::to_string(receipts.back().seq));
        if (r->seq > *lastSeq)
            return makeError(text(field) + ".seq: " + std::to_string(r->seq) + " is beyond last_seq " +
                             std::to_string(*lastSeq));
        receipts.push_back(std::move(*r));
    }
    CreditsPageInfo escrowInfo{*lastSeq, *total, *key, 0, 0, {}};
    if (const QJsonValue escrow = page.value(QStringLiteral("escrow")); !escrow.isUndefined()) {
        if (!escrow.isObject())
            return makeError("escrow: must be an object");
        const QJsonObject e = escrow.toObject();
        Result<qint64> pending =
            integerField(e, QStringLiteral("pending_flop"), QStringLiteral("escrow.pending_flop"), 0);
        if (!pending)
            return pending.error();
        Result<qint64> forfeited =
            integerField(e, QStringLiteral("forfeited_flop"), QStringLiteral("escrow.forfeited_flop"), 0);
        if (!forfeited)
            return forfeited.error();
        const QJsonValue reason = e.value(QStringLiteral("last_forfeit_reason"));
        if (!reason.isUndefined() && (!reason.isString() || reason.toString().size() > 500))
            return makeError("escrow.last_forfeit_reason: must be a string of at most 500 characters");
        escrowInfo.pendingFlop = *pending;
        escrowInfo.forfeitedFlop = *forfeited;
        escrowInfo.lastForfeitReason = reason.toString();
    }
    if (info)
        *info = escrowInfo;
    return receipts;
}

} // namespace tessera::protocol
