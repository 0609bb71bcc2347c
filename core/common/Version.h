#pragma once
// The version line every executable prints for --version.

#include <QString>

namespace tessera {

QString tesseraVersion(); // "0.1.0"
// "tessera-node 0.1.0 (Qt 6.4.2, LibTorch 1.13.0, CUDA backend built)"
QString versionLine(const QString& program);

} // namespace tessera
