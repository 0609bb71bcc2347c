// SPDX-License-Identifier: Apache-2.0
#pragma once
// SettingsDialog: every setting a user should see, in three tabs. There is no OK or Apply: each
// edit is stored at once and the Manager applies it live; Close only closes.

#include <QDialog>

class QTabWidget;

namespace tessera::manager {
class Manager;
}

namespace tessera::ui {

class PauseRulesPage;
class SettingsBinder;

class SettingsDialog final : public QDialog {
    Q_OBJECT

public:
    explicit SettingsDialog(manager::Manager& manager, QWidget* parent = nullptr);
    ~SettingsDialog() override;

    PauseRulesPage& pauseRules() { return *m_pauseRules; }
    QTabWidget& tabs() { return *m_tabs; }

    void done(int result) override;

private:
    SettingsBinder* m_binder;
    QTabWidget* m_tabs;
    PauseRulesPage* m_pauseRules;
};

} // namespace tessera::ui
