// SPDX-License-Identifier: Apache-2.0
#pragma once
// ExclusiveAppsEditor: the list of programs that pause Tessera while they run (games, launchers),
// with add, remove and reset to the defaults; each edit is stored at once.

#include <QStringList>
#include <QWidget>

class QLineEdit;
class QListWidget;
class QPushButton;

namespace tessera::manager {
class AppSettings;
}

namespace tessera::ui {

class SettingsBinder;

class ExclusiveAppsEditor final : public QWidget {
    Q_OBJECT

public:
    explicit ExclusiveAppsEditor(SettingsBinder& binder, QWidget* parent = nullptr);

    QStringList apps() const;
    // "witcher3.exe", "steam": a process name as the system shows it; a duplicate is ignored.
    void addApp(const QString& name);
    void removeSelected();
    void resetToDefaults();

private:
    void store(QStringList apps);

    manager::AppSettings& m_settings;
    QListWidget* m_list;
    QLineEdit* m_name;
    QPushButton* m_remove;
};

} // namespace tessera::ui
