// SPDX-License-Identifier: Apache-2.0
#include "common/Version.h"

#include <QtGlobal>

namespace tessera {

QString tesseraVersion() {
    return QStringLiteral(TESSERA_VERSION);
}

QString versionLine(const QString& program, const std::string& runtime) {
    return program + u' ' + tesseraVersion() + QStringLiteral(" (Qt ") + QString::fromLatin1(qVersion()) +
           QStringLiteral(", ") + QString::fromStdString(runtime) + u')';
}

} // namespace tessera
