// SPDX-License-Identifier: Apache-2.0
#include "settings/SettingsDialog.h"

#include "settings/ConnectionSettingsPage.h"
#include "settings/GeneralSettingsPage.h"
#include "settings/PauseRulesPage.h"
#include "settings/SettingsBinder.h"

#include "manager/Manager.h"

#include <QDialogButtonBox>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace tessera::ui {

using namespace Qt::StringLiterals;

SettingsDialog::SettingsDialog(manager::Manager& manager, QWidget* parent)
    : QDialog(parent)
    , m_binder(new SettingsBinder(manager.settings(), this)) {
    setWindowTitle(tr("Tessera Settings"));
    m_tabs = new QTabWidget;
    // Each page scrolls: at 150 % on a 720-pixel screen the dialog is shorter than its pages.
    const auto scrolled = [](QWidget* page) {
        auto* scroll = new QScrollArea;
        scroll->setWidget(page);
        scroll->setWidgetResizable(true);
        scroll->setFrameShape(QFrame::NoFrame);
        return scroll;
    };
    m_tabs->addTab(scrolled(new GeneralSettingsPage(*m_binder)), tr("&General"));
    m_pauseRules = new PauseRulesPage(*m_binder, manager);
    m_tabs->addTab(scrolled(m_pauseRules), tr("When to &pause"));
    m_tabs->addTab(scrolled(new ConnectionSettingsPage(*m_binder)), tr("&Coordinator"));

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
    // Never larger than the screen.
    const QRect available = screen() ? screen()->availableGeometry() : QRect(0, 0, 1280, 720);
    resize(std::min(600, available.width() * 19 / 20), std::min(620, available.height() * 19 / 20));
}

SettingsDialog::~SettingsDialog() = default;

void SettingsDialog::done(int result) {
    // Escape closes without moving the focus: a text still being typed is stored too.
    m_binder->commit();
    QDialog::done(result);
}

} // namespace tessera::ui
