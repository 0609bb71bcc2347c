// SPDX-License-Identifier: Apache-2.0
// tessera-node: the headless compute node (see core/node/).
#include "NodeCommandLine.h"

#include <QCoreApplication>

#include <iostream>

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("tessera-node"));
    QCoreApplication::setOrganizationName(QStringLiteral("Tessera"));
    tessera::node::NodeCommandLine commandLine(std::cout, std::cerr);
    return commandLine.run(QCoreApplication::arguments());
}
