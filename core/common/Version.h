// SPDX-License-Identifier: Apache-2.0
#pragma once
// The version line every executable prints for --version.

#include <QString>

#include <string>

namespace tessera {

QString tesseraVersion(); // "0.2.0"
// "tessera-node 0.2.0 (Qt 6.4.2, LibTorch 1.13.0, CUDA backend built)": `runtime` is what the
// program computes with (gpu::buildDescription() for those that link gpu/).
QString versionLine(const QString& program, const std::string& runtime);

} // namespace tessera
