// SPDX-License-Identifier: Apache-2.0
#pragma once
// SettingsBinder: ties each settings widget to its AppSettings key both ways — an edit is stored
// at once (no OK or Apply: the Manager applies every change live), and a change made elsewhere
// (the tray's pause, another window) shows in the widget.

#include "manager/AppSettings.h"

#include <QMultiHash>
#include <QObject>
#include <QString>

#include <functional>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSlider;
class QSpinBox;

namespace tessera::ui {

class SettingsBinder final : public QObject {
    Q_OBJECT

public:
    using Key = manager::AppSettings::Key;
    // Returns what is wrong with a text (shown under the field), or an empty string.
    using Validator = std::function<QString(const QString&)>;

    explicit SettingsBinder(manager::AppSettings& settings, QObject* parent = nullptr);

    manager::AppSettings& settings() { return m_settings; }

    void bind(QCheckBox* box, Key key);
    void bind(QSpinBox* box, Key key);
    void bind(QDoubleSpinBox* box, Key key);
    // Stored when editing finishes (Return, focus leaves, commit()) and only when valid; the
    // error, if any, shows in `error` while typing.
    void bind(QLineEdit* edit, Key key, Validator validate = {}, QLabel* error = nullptr);
    // Stored when the handle is released (a drag does not restart the node's limit 90 times).
    void bind(QSlider* slider, Key key);
    // Anything else: reload() runs now and whenever the key changes.
    void onChange(Key key, const std::function<void()>& reload);
    // Stores what a text field holds but has not stored yet (the window closes mid-edit).
    void commit();

private:
    void reload(Key key);

    manager::AppSettings& m_settings;
    QMultiHash<int, std::function<void()>> m_reloaders;
    QList<std::function<void()>> m_commits;
};

} // namespace tessera::ui
