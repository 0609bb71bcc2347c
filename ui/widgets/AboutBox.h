// SPDX-License-Identifier: Apache-2.0
#pragma once
// AboutBox: what Tessera is, its version, who made it and its licence (Apache-2.0), from the tray
// menu and the dashboard.

#include <QMessageBox>

namespace tessera::ui {

class AboutBox final : public QMessageBox {
    Q_OBJECT

public:
    explicit AboutBox(QWidget* parent = nullptr);
};

} // namespace tessera::ui
