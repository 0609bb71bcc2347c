// SPDX-License-Identifier: Apache-2.0
#pragma once
// GeneralSettingsPage: how much of the GPU Tessera may use, start at login, notifications, and
// where the node keeps its data (with the disk space it may take).

#include <QWidget>

class QLabel;
class QLineEdit;

namespace tessera::ui {

class SettingsBinder;

class GeneralSettingsPage final : public QWidget {
    Q_OBJECT

public:
    explicit GeneralSettingsPage(SettingsBinder& binder, QWidget* parent = nullptr);

private:
    void chooseDataDir();

    SettingsBinder& m_binder;
    QLineEdit* m_dataDir;
};

} // namespace tessera::ui
