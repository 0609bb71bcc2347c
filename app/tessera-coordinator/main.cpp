// tessera-coordinator: admission, stage assignment and shard serving (see core/coordinator/).
#include "coordinator/CoordinatorCommandLine.h"

#include <QCoreApplication>

#include <iostream>

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("tessera-coordinator"));
    QCoreApplication::setOrganizationName(QStringLiteral("Tessera"));
    tessera::coordinator::CoordinatorCommandLine commandLine(std::cout, std::cerr);
    return commandLine.run(QCoreApplication::arguments());
}
