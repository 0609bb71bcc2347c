#include "common/Version.h"

#include "BuildInfo.h"

#include <QtGlobal>

namespace tessera {

QString tesseraVersion() {
    return QStringLiteral(TESSERA_VERSION);
}

QString versionLine(const QString& program) {
    return program + u' ' + tesseraVersion() + QStringLiteral(" (Qt ") + QString::fromLatin1(qVersion()) +
           QStringLiteral(", LibTorch ") + QString::fromStdString(gpu::torchVersion()) +
           (gpu::cudaBackendBuilt() ? QStringLiteral(", CUDA backend built)")
                                    : QStringLiteral(", without CUDA backend)"));
}

} // namespace tessera
