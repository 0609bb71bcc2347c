// SPDX-License-Identifier: Apache-2.0
#include "node/NodeFiles.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QSaveFile>
#include <QStandardPaths>

namespace tessera::node {

QString NodeFiles::defaultDataDir() {
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    return QDir(base.isEmpty() ? QDir::homePath() : base).filePath(QStringLiteral("tessera/node"));
}

Status NodeFiles::ensureExists() const {
    if (!QDir().mkpath(m_dir))
        return makeError("cannot create the data dir " + m_dir.toStdString());
    QFile::setPermissions(m_dir, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return {};
}

QString NodeFiles::path(const QString& name) const {
    return QDir(m_dir).filePath(name);
}

Result<QJsonObject> NodeFiles::read(const QString& name) const {
    QFile f(path(name));
    if (!f.exists())
        return QJsonObject();
    if (!f.open(QIODevice::ReadOnly))
        return makeError("cannot read " + f.fileName().toStdString() + ": " + f.errorString().toStdString());
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(f.read(1 << 20), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        return makeError(f.fileName().toStdString() +
                         " is damaged (not a JSON object); delete it to start over");
    return doc.object();
}

Status NodeFiles::write(const QString& name, const QJsonObject& record, bool secret) const {
    QSaveFile f(path(name));
    if (!f.open(QIODevice::WriteOnly))
        return makeError("cannot write " + f.fileName().toStdString() + ": " + f.errorString().toStdString());
    // Before any byte is written: the temporary file is never readable by others.
    if (secret)
        f.setPermissions(QFile::ReadOwner | QFile::WriteOwner);
    const QByteArray bytes = QJsonDocument(record).toJson(QJsonDocument::Indented);
    // flush() first: Qt 6.4's commit() renames a file whose last write failed (a full disk); then
    // commit() fsyncs and renames over the old file.
    if (f.write(bytes) != bytes.size() || !f.flush() || !f.commit())
        return makeError("cannot write " + f.fileName().toStdString() + ": " + f.errorString().toStdString());
    return {};
}

Status NodeFiles::remove(const QString& name) const {
    QFile f(path(name));
    if (f.exists() && !f.remove())
        return makeError("cannot remove " + f.fileName().toStdString() + ": " +
                         f.errorString().toStdString());
    return {};
}

Status NodeFiles::writeRefusal(const protocol::Refusal& refusal) const {
    return write(refusalFile(), protocol::toJson(refusal));
}

std::optional<protocol::Refusal> NodeFiles::readRefusal() const {
    Result<QJsonObject> record = read(refusalFile());
    return record ? protocol::parseRefusal(*record) : std::nullopt;
}

} // namespace tessera::node
