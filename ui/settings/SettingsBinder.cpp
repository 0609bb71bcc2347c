// SPDX-License-Identifier: Apache-2.0
#include "settings/SettingsBinder.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>

namespace tessera::ui {

SettingsBinder::SettingsBinder(manager::AppSettings& settings, QObject* parent)
    : QObject(parent)
    , m_settings(settings) {
    connect(&m_settings, &manager::AppSettings::changed, this, &SettingsBinder::reload);
}

void SettingsBinder::onChange(Key key, const std::function<void()>& reload) {
    m_reloaders.insert(int(key), reload);
    reload();
}

void SettingsBinder::reload(Key key) {
    for (auto it = m_reloaders.constFind(int(key)); it != m_reloaders.cend() && it.key() == int(key); ++it)
        it.value()();
}

void SettingsBinder::bind(QCheckBox* box, Key key) {
    onChange(key, [this, box, key] {
        const QSignalBlocker block(box);
        box->setChecked(m_settings.flag(key));
    });
    connect(box, &QCheckBox::toggled, this, [this, key](bool on) { m_settings.setValue(key, on); });
}

void SettingsBinder::bind(QSpinBox* box, Key key) {
    onChange(key, [this, box, key] {
        const QSignalBlocker block(box);
        box->setValue(m_settings.integer(key));
    });
    connect(box, &QSpinBox::valueChanged, this, [this, key](int value) { m_settings.setValue(key, value); });
}

void SettingsBinder::bind(QDoubleSpinBox* box, Key key) {
    onChange(key, [this, box, key] {
        const QSignalBlocker block(box);
        box->setValue(m_settings.value(key).toDouble());
    });
    connect(box, &QDoubleSpinBox::valueChanged, this,
            [this, key](double value) { m_settings.setValue(key, value); });
}

void SettingsBinder::bind(QLineEdit* edit, Key key, Validator validate, QLabel* error) {
    onChange(key, [this, edit, key, error] {
        if (edit->hasFocus() && edit->isModified())
            return; // the user is typing: their text wins until they finish
        const QSignalBlocker block(edit);
        edit->setText(m_settings.string(key));
        edit->setModified(false);
        if (error)
            error->hide();
    });
    const auto check = [validate, error](const QString& text) {
        const QString problem = validate ? validate(text) : QString();
        if (error) {
            error->setText(problem);
            error->setVisible(!problem.isEmpty());
        }
        return problem.isEmpty();
    };
    connect(edit, &QLineEdit::textEdited, this, [check](const QString& text) { (void)check(text); });
    const auto store = [this, edit, key, check] {
        const QString text = edit->text().trimmed();
        if (!check(text) || text == m_settings.string(key))
            return;
        edit->setModified(false);
        m_settings.setValue(key, text);
    };
    connect(edit, &QLineEdit::editingFinished, this, store);
    m_commits << store;
}

void SettingsBinder::bind(QSlider* slider, Key key) {
    onChange(key, [this, slider, key] {
        if (slider->isSliderDown())
            return;
        const QSignalBlocker block(slider);
        slider->setValue(m_settings.integer(key));
    });
    // Keyboard, wheel and clicks on the groove change the value without a drag: stored at once.
    connect(slider, &QSlider::valueChanged, this, [this, slider, key](int value) {
        if (!slider->isSliderDown())
            m_settings.setValue(key, value);
    });
    connect(slider, &QSlider::sliderReleased, this,
            [this, slider, key] { m_settings.setValue(key, slider->value()); });
}

void SettingsBinder::commit() {
    for (const auto& store : m_commits)
        store();
}

} // namespace tessera::ui
