// SPDX-License-Identifier: Apache-2.0
#pragma once
// ConnectionSettingsPage: the coordinator's address and the certificate to trust for it (a
// private swarm's own CA); the node starts again with them once edited.

#include <QWidget>

class QLineEdit;

namespace tessera::ui {

class SettingsBinder;

class ConnectionSettingsPage final : public QWidget {
    Q_OBJECT

public:
    explicit ConnectionSettingsPage(SettingsBinder& binder, QWidget* parent = nullptr);

    // What is wrong with a coordinator address, or an empty string.
    static QString checkUrl(const QString& text);
    static QString checkCaFile(const QString& text);

private:
    void chooseCaFile();

    SettingsBinder& m_binder;
    QLineEdit* m_caFile;
};

} // namespace tessera::ui
