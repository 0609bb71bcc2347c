// SPDX-License-Identifier: Apache-2.0
#include "settings/ExclusiveAppsEditor.h"

#include "settings/SettingsBinder.h"

#include <QGridLayout>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using Key = manager::AppSettings::Key;

ExclusiveAppsEditor::ExclusiveAppsEditor(SettingsBinder& binder, QWidget* parent)
    : QWidget(parent)
    , m_settings(binder.settings()) {
    m_list = new QListWidget;
    m_list->setObjectName(u"apps"_s);
    m_list->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_name = new QLineEdit;
    m_name->setObjectName(u"appName"_s);
    m_name->setPlaceholderText(tr("Program name, e.g. witcher3.exe"));
    auto* add = new QPushButton(tr("&Add"));
    add->setObjectName(u"addApp"_s);
    m_remove = new QPushButton(tr("&Remove"));
    m_remove->setObjectName(u"removeApp"_s);
    m_remove->setEnabled(false);
    auto* reset = new QPushButton(tr("Reset to &defaults"));
    reset->setObjectName(u"resetApps"_s);
    reset->setToolTip(tr("The common games and game launchers Tessera knows"));

    auto* layout = new QGridLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_list, 0, 0, 3, 1);
    layout->addWidget(m_remove, 0, 1);
    layout->addWidget(reset, 1, 1);
    layout->addWidget(m_name, 3, 0);
    layout->addWidget(add, 3, 1);

    connect(add, &QPushButton::clicked, this, [this] { addApp(m_name->text()); });
    connect(m_name, &QLineEdit::returnPressed, this, [this] { addApp(m_name->text()); });
    connect(m_remove, &QPushButton::clicked, this, &ExclusiveAppsEditor::removeSelected);
    connect(reset, &QPushButton::clicked, this, &ExclusiveAppsEditor::resetToDefaults);
    connect(m_list, &QListWidget::itemSelectionChanged, this,
            [this] { m_remove->setEnabled(!m_list->selectedItems().isEmpty()); });
    binder.onChange(Key::PauseExclusiveApps, [this] {
        QStringList apps = m_settings.list(Key::PauseExclusiveApps);
        apps.sort(Qt::CaseInsensitive); // as people look for a name, not by code points
        m_list->clear();
        m_list->addItems(apps);
    });
}

QStringList ExclusiveAppsEditor::apps() const {
    QStringList apps;
    for (int i = 0; i < m_list->count(); ++i)
        apps << m_list->item(i)->text();
    return apps;
}

void ExclusiveAppsEditor::addApp(const QString& name) {
    const QString app = name.trimmed();
    if (app.isEmpty())
        return;
    m_name->clear();
    QStringList list = apps();
    if (list.contains(app, Qt::CaseInsensitive))
        return;
    list << app;
    store(list);
}

void ExclusiveAppsEditor::removeSelected() {
    QStringList list = apps();
    for (const QListWidgetItem* item : m_list->selectedItems())
        list.removeAll(item->text());
    store(list);
}

void ExclusiveAppsEditor::resetToDefaults() {
    m_settings.reset(Key::PauseExclusiveApps);
}

void ExclusiveAppsEditor::store(QStringList apps) {
    apps.sort(Qt::CaseInsensitive);
    m_settings.setValue(Key::PauseExclusiveApps, apps);
}

} // namespace tessera::ui
