// SPDX-License-Identifier: Apache-2.0
#include "node/shard/ShardProgress.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

namespace tessera::node {

namespace {

constexpr qint64 kMaxRecordBytes = 64 * 1024;

// JSON numbers are doubles: byte counts are exact up to 2^53 (8 PiB), far beyond a shard.
bool isCount(const QJsonValue& v) {
    return v.isDouble() && v.toDouble() >= 0 && v.toDouble() <= 9007199254740992.0 &&
           v.toDouble() == double(qint64(v.toDouble()));
}

} // namespace

Result<ShardProgress> ShardProgress::load(const QString& path) {
    const auto bad = [&path](const QString& why) {
        return makeError("download record " + path.toStdString() + ": " + why.toStdString());
    };
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return bad(f.errorString());
    if (f.size() > kMaxRecordBytes)
        return bad(QStringLiteral("larger than 64 KiB"));
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(f.read(kMaxRecordBytes), &error);
    if (!doc.isObject())
        return bad(error.error != QJsonParseError::NoError ? error.errorString()
                                                           : QStringLiteral("not a JSON object"));
    const QJsonObject o = doc.object();
    for (const char* key : {"url", "etag", "sha256"}) {
        if (!o.value(QLatin1String(key)).isString())
            return bad(QStringLiteral("field '%1' must be a string").arg(QLatin1String(key)));
    }
    for (const char* key : {"verified_bytes", "file_size", "stage", "version"}) {
        if (!isCount(o.value(QLatin1String(key))))
            return bad(QStringLiteral("field '%1' must be a whole number").arg(QLatin1String(key)));
    }
    ShardProgress p;
    p.url = o.value(u"url").toString();
    p.etag = o.value(u"etag").toString();
    p.sha256 = o.value(u"sha256").toString();
    p.verifiedBytes = qint64(o.value(u"verified_bytes").toDouble());
    p.fileSize = qint64(o.value(u"file_size").toDouble());
    p.stage = qint64(o.value(u"stage").toDouble());
    p.version = qint64(o.value(u"version").toDouble());
    if (p.verifiedBytes > p.fileSize)
        return bad(QStringLiteral("verified_bytes exceeds file_size"));
    return p;
}

Status ShardProgress::save(const QString& path) const {
    const QJsonObject o{{QStringLiteral("url"), url},
                        {QStringLiteral("etag"), etag},
                        {QStringLiteral("verified_bytes"), qint64(verifiedBytes)},
                        {QStringLiteral("file_size"), qint64(fileSize)},
                        {QStringLiteral("sha256"), sha256},
                        {QStringLiteral("stage"), qint64(stage)},
                        {QStringLiteral("version"), qint64(version)}};
    QSaveFile f(path);
    // flush() first: Qt 6.4's commit() renames a file whose last write failed (a full disk left an
    // empty record that no longer parsed); then commit() fsyncs and renames over the old record.
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(o).toJson()) < 0 || !f.flush() || !f.commit())
        return makeError("cannot save the download record " + path.toStdString() + ": " +
                         f.errorString().toStdString());
    return {};
}

} // namespace tessera::node
