// SPDX-License-Identifier: Apache-2.0
#pragma once
// DatasetSpec: the run's training data as named by --dataset, checked without reading the data.

#include "base/Result.h"

#include <QString>

namespace tessera::coordinator {

// "synthetic[:order=N,branch=M,symbols=V,tokens=K]", "text:PATH", "tokens16:PATH" or
// "tokens32:PATH" or "dataset:DIR" — the spellings gpu::DataSource opens. Range checks that need the model's
// vocabulary (token ids, symbol counts) are the data plane's, when it opens the data.
class DatasetSpec final {
public:
    static QString defaultSpec() { return QStringLiteral("synthetic"); }

    // Checks the syntax and, for a file, that it is a readable regular file whose size fits its
    // token width. A relative PATH is made absolute, so the stored spec survives a change of
    // working directory. "dataset:DIR" (tessera-data build) becomes "dataset:DIR/manifest.json#sha256=H":
    // the run pins the manifest it started on. Errors name --dataset and the expected forms.
    static Result<DatasetSpec> parse(const QString& spec);

    // The normalised spec: what run.json stores and what restarts compare.
    const QString& text() const { return m_text; }

private:
    explicit DatasetSpec(QString text)
        : m_text(std::move(text)) {}

    QString m_text;
};

} // namespace tessera::coordinator
