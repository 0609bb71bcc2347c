// SPDX-License-Identifier: Apache-2.0
#include "ShardInspect.h"

#include <QFile>
#include <QJsonArray>
#include <QStringList>

#include <algorithm>
#include <filesystem>

namespace tessera::node {

namespace {

constexpr qint64 kMaxManifestBytes = 1024 * 1024;

std::filesystem::path nativePath(const QString& file) {
    return std::filesystem::path(QFile::encodeName(file).toStdString());
}

// Names and metadata come from the file: never let them drive the terminal.
QString printable(const std::string& text) {
    QString out = QString::fromStdString(text);
    for (QChar& c : out) {
        if (c.category() == QChar::Other_Control)
            c = u'?';
    }
    return out;
}

QString shapeText(const std::vector<std::int64_t>& shape) {
    QStringList dims;
    for (std::int64_t d : shape)
        dims << QString::number(d);
    return u'[' + dims.join(u',') + u']';
}

Result<gpu::ShardManifest> readManifest(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return makeError("cannot open manifest " + path.toStdString() + ": " + f.errorString().toStdString());
    if (f.size() > kMaxManifestBytes)
        return makeError("manifest " + path.toStdString() + " is larger than 1 MiB");
    const QByteArray text = f.read(kMaxManifestBytes + 1);
    return gpu::ShardManifest::fromJson(
        std::string_view(text.constData(), static_cast<std::size_t>(text.size())));
}

} // namespace

ShardInspect::ShardInspect(QString file, gpu::SafetensorsFile shard,
                           std::optional<gpu::ShardManifest> manifest)
    : m_file(std::move(file))
    , m_shard(std::move(shard))
    , m_manifest(std::move(manifest)) {}

Result<ShardInspect> ShardInspect::run(const QString& file, const QString& manifestFile) {
    std::optional<gpu::ShardManifest> manifest;
    if (!manifestFile.isEmpty()) {
        Result<gpu::ShardManifest> m = readManifest(manifestFile);
        if (!m)
            return m.error();
        // The manifest first: a tampered download is the cause to report, not its symptoms.
        if (Status s = m->verifyFile(nativePath(file)); !s)
            return makeError(s.message());
        manifest = std::move(m).value();
    }
    Result<gpu::SafetensorsFile> shard = gpu::SafetensorsFile::open(nativePath(file));
    if (!shard)
        return shard.error();
    return ShardInspect(file, std::move(shard).value(), std::move(manifest));
}

QJsonObject ShardInspect::toJson() const {
    QJsonArray tensors;
    for (const gpu::TensorInfo& t : m_shard.tensors()) {
        QJsonArray shape;
        for (std::int64_t d : t.shape)
            shape.append(static_cast<qint64>(d));
        tensors.append(QJsonObject{{QStringLiteral("name"), QString::fromStdString(t.name)},
                                   {QStringLiteral("dtype"), QString::fromStdString(t.dtype)},
                                   {QStringLiteral("shape"), shape},
                                   {QStringLiteral("bytes"), static_cast<qint64>(t.byteSize())}});
    }
    QJsonObject metadata;
    for (const auto& [key, value] : m_shard.metadata())
        metadata.insert(QString::fromStdString(key), QString::fromStdString(value));
    QJsonObject root{{QStringLiteral("file"), m_file},
                     {QStringLiteral("file_size"), static_cast<qint64>(m_shard.fileSize())},
                     {QStringLiteral("header_size"), static_cast<qint64>(m_shard.headerLength())},
                     {QStringLiteral("tensors"), tensors},
                     {QStringLiteral("metadata"), metadata}};
    if (m_manifest) {
        const gpu::ShardManifest& m = *m_manifest;
        root.insert(
            QStringLiteral("manifest"),
            QJsonObject{{QStringLiteral("verified"), true},
                        {QStringLiteral("model_config_hash"), QString::fromStdString(m.modelConfigHash)},
                        {QStringLiteral("stage"), static_cast<qint64>(m.stage)},
                        {QStringLiteral("version"), static_cast<qint64>(m.version)},
                        {QStringLiteral("step"), static_cast<qint64>(m.step)},
                        {QStringLiteral("sha256"), QString::fromStdString(m.sha256)},
                        {QStringLiteral("chunk_size"), static_cast<qint64>(m.chunkSize)},
                        {QStringLiteral("chunks"), static_cast<qint64>(m.chunks.size())},
                        {QStringLiteral("signed"), m.signature.has_value()}});
    }
    return root;
}

QString ShardInspect::toText() const {
    QString out = QStringLiteral("%1: %2 tensors, %3 bytes (header %4 bytes)\n")
                      .arg(m_file)
                      .arg(m_shard.tensors().size())
                      .arg(m_shard.fileSize())
                      .arg(m_shard.headerLength());
    int nameWidth = 4;
    for (const gpu::TensorInfo& t : m_shard.tensors())
        nameWidth = std::max(nameWidth, static_cast<int>(printable(t.name).size()));
    if (!m_shard.tensors().empty()) {
        out += QStringLiteral("  %1  %2  %3  %4\n")
                   .arg(QStringLiteral("name"), -nameWidth)
                   .arg(QStringLiteral("dtype"), -7)
                   .arg(QStringLiteral("shape"), -16)
                   .arg(QStringLiteral("bytes"));
    }
    for (const gpu::TensorInfo& t : m_shard.tensors()) {
        out += QStringLiteral("  %1  %2  %3  %4\n")
                   .arg(printable(t.name), -nameWidth)
                   .arg(QString::fromStdString(t.dtype), -7)
                   .arg(shapeText(t.shape), -16)
                   .arg(t.byteSize());
    }
    if (!m_shard.metadata().empty()) {
        out += QStringLiteral("metadata:\n");
        for (const auto& [key, value] : m_shard.metadata())
            out += QStringLiteral("  %1: %2\n").arg(printable(key), printable(value));
    }
    if (m_manifest) {
        const gpu::ShardManifest& m = *m_manifest;
        out +=
            QStringLiteral("manifest: verified (stage %1, version %2, step %3; %4 chunks of %5 bytes; %6)\n")
                .arg(m.stage)
                .arg(m.version)
                .arg(m.step)
                .arg(m.chunks.size())
                .arg(m.chunkSize)
                .arg(m.signature ? QStringLiteral("signed") : QStringLiteral("unsigned"));
        out += QStringLiteral("  sha256: %1\n  model config: %2\n")
                   .arg(QString::fromStdString(m.sha256), QString::fromStdString(m.modelConfigHash));
    }
    return out;
}

} // namespace tessera::node
