// SPDX-License-Identifier: Apache-2.0
#include "SettingsDialog.h"

#include "ConnectionSettingsPage.h"
#include "GeneralSettingsPage.h"
#include "PauseRulesPage.h"
#include "SettingsBinder.h"

#include "manager/Manager.h"

#include <QDialogButtonBox>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;

SettingsDialog::SettingsDialog(manager::Manager& manager, QWidget* parent)
    : QDialog(parent)
    , m_binder(new SettingsBinder(manager.settings(), this)) {
    setWindowTitle(tr("Tessera Settings"));
    m_tabs = new QTabWidget;
    m_tabs->addTab(new GeneralSettingsPage(*m_binder), tr("General"));
    m_pauseRules = new PauseRulesPage(*m_binder, manager);
    m_tabs->addTab(m_pauseRules, tr("When to pause"));
    m_tabs->addTab(new ConnectionSettingsPage(*m_binder), tr("Coordinator"));

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_tabs);
    layout->addWidget(buttons);
    // Return confirms a text field; in a dialog it would also press a default button (open a
    // file picker, close the dialog). Nothing here needs confirming, so no button is default.
    for (QPushButton* button : findChildren<QPushButton*>()) {
        button->setAutoDefault(false);
        button->setDefault(false);
    }
    resize(600, 620);
}

SettingsDialog::~SettingsDialog() = default;

void SettingsDialog::done(int result) {
    // Escape closes without moving the focus: a text still being typed is stored too.
    m_binder->commit();
    QDialog::done(result);
}

} // namespace tessera::ui
