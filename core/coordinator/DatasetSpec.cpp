// SPDX-License-Identifier: Apache-2.0
#include "coordinator/DatasetSpec.h"

#include "base/TokenDataset.h"

#include <QFile>

#include <QFileInfo>
#include <QStringList>

namespace tessera::coordinator {

namespace {

const std::string kForms =
    " (expected synthetic[:order=N,branch=M,symbols=V,tokens=K], text:PATH, tokens16:PATH, "
    "tokens32:PATH or dataset:DIR)";

std::string str(const QString& s) {
    return s.toStdString();
}

Result<QString> syntheticSpec(const QString& spec, const QString& options) {
    if (options.isEmpty())
        return DatasetSpec::defaultSpec();
    const QStringList known{QStringLiteral("order"), QStringLiteral("branch"), QStringLiteral("symbols"),
                            QStringLiteral("tokens")};
    QStringList seen;
    for (const QString& option : options.split(u',')) {
        const qsizetype eq = option.indexOf(u'=');
        const QString key = option.left(eq);
        if (eq <= 0 || !known.contains(key))
            return makeError("--dataset " + str(spec) + ": unknown synthetic option '" + str(option) +
                             "' (order, branch, symbols, tokens, each as KEY=N)");
        if (seen.contains(key))
            return makeError("--dataset " + str(spec) + ": synthetic option '" + str(key) + "' given twice");
        seen << key;
        bool ok = false;
        const qlonglong value = option.mid(eq + 1).toLongLong(&ok);
        if (!ok || value < 1)
            return makeError("--dataset " + str(spec) + ": synthetic option '" + str(key) +
                             "' needs a positive whole number");
    }
    return spec;
}

Result<QString> fileSpec(const QString& spec, const QString& kind, const QString& path) {
    if (path.isEmpty())
        return makeError("--dataset " + str(spec) + ": " + str(kind) + " needs a file path after ':'" +
                         kForms);
    const QFileInfo file(path);
    if (!file.exists())
        return makeError("--dataset " + str(spec) + ": " + str(path) + " does not exist");
    if (!file.isFile())
        return makeError("--dataset " + str(spec) + ": " + str(path) + " is not a regular file");
    if (!file.isReadable())
        return makeError("--dataset " + str(spec) + ": " + str(path) + " is not readable by this user");
    const qint64 width = kind == u"text" ? 1 : kind == u"tokens16" ? 2 : 4;
    if (file.size() < 2 * width)
        return makeError("--dataset " + str(spec) + ": " + str(path) + " holds fewer than 2 tokens");
    if (file.size() % width != 0)
        return makeError("--dataset " + str(spec) + ": " + str(path) + "'s size " +
                         std::to_string(file.size()) + " is not a multiple of " + std::to_string(width) +
                         " bytes (truncated token file?)");
    return QString(kind + u':' + file.absoluteFilePath());
}

// A token dataset (tessera-data build): pinned by its manifest's SHA-256, so the run trains on that
// tokenizer and those tokens for good (the shards are checked against it when the data opens).
Result<QString> datasetSpec(const QString& spec, const QString& path) {
    if (path.isEmpty())
        return makeError("--dataset " + str(spec) +
                         ": dataset needs the directory tessera-data built after ':'");
    if (path.contains(u'#'))
        return makeError("--dataset " + str(spec) +
                         ": give the dataset's directory; the run pins its hash itself");
    const QString manifest = QString::fromStdString(
        gpu::tokenDatasetManifestPath(QFileInfo(path).absoluteFilePath().toStdString()).string());
    QFile file(manifest);
    if (!file.open(QIODevice::ReadOnly))
        return makeError("--dataset " + str(spec) + ": cannot read " + str(manifest) +
                         " (build one with tessera-data build)");
    const QByteArray text = file.readAll();
    if (Result<gpu::TokenDatasetManifest> m = gpu::TokenDatasetManifest::fromJson(text.toStdString()); !m)
        return makeError("--dataset " + str(spec) + ": " + str(manifest) + ": " + m.message());
    Result<std::string> hash = gpu::tokenDatasetHash(manifest.toStdString());
    if (!hash)
        return hash.error();
    return QStringLiteral("dataset:%1#sha256=%2").arg(manifest, QString::fromStdString(*hash));
}

} // namespace

Result<DatasetSpec> DatasetSpec::parse(const QString& spec) {
    const qsizetype colon = spec.indexOf(u':');
    const QString kind = spec.left(colon);
    const QString rest = colon < 0 ? QString() : spec.mid(colon + 1);
    Result<QString> text = makeError("");
    if (kind == u"synthetic")
        text = syntheticSpec(spec, rest);
    else if (kind == u"text" || kind == u"tokens16" || kind == u"tokens32")
        text = fileSpec(spec, kind, rest);
    else if (kind == u"dataset")
        text = datasetSpec(spec, rest);
    else
        return makeError("--dataset " + str(spec) + ": unknown kind '" + str(kind) + "'" + kForms);
    if (!text)
        return text.error();
    return DatasetSpec(*text);
}

} // namespace tessera::coordinator
