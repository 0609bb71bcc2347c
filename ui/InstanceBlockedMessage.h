// SPDX-License-Identifier: Apache-2.0
#pragma once
// InstanceBlockedMessage: what the user is told when the app's single-instance socket is held by
// something else (another user, a program that does not answer), instead of the app quitting
// silently at every start.

#include "manager/SingleInstance.h"

#include <QObject>
#include <QString>

class QWidget;

namespace tessera::ui {

class InstanceBlockedMessage final : public QObject {
    Q_OBJECT

public:
    // The sentence the user reads: what holds the name, and what to do about it.
    static QString text(const manager::SingleInstance::Blocker& blocker);
    // Shows text() in a modal error box.
    static void show(const manager::SingleInstance::Blocker& blocker, QWidget* parent = nullptr);
};

} // namespace tessera::ui
