// SPDX-License-Identifier: Apache-2.0
#include "InstanceBlockedMessage.h"

#include <QMessageBox>

namespace tessera::ui {

QString InstanceBlockedMessage::text(const manager::SingleInstance::Blocker& blocker) {
    QString what;
    if (blocker.owner)
        what = tr("Tessera cannot start: %1 is held by another user (uid %2), so this app cannot make sure "
                  "that it runs only once.")
                   .arg(blocker.path)
                   .arg(*blocker.owner);
    else
        what = tr("Tessera cannot start: %1 is in the way (%2).").arg(blocker.path, blocker.detail);
    return what + u' ' +
           tr("Ask your administrator to remove it, or set XDG_RUNTIME_DIR to a folder that only you can "
              "use, then start Tessera again.");
}

void InstanceBlockedMessage::show(const manager::SingleInstance::Blocker& blocker, QWidget* parent) {
    QMessageBox::critical(parent, tr("Tessera cannot start"), text(blocker));
}

} // namespace tessera::ui
