// SPDX-License-Identifier: Apache-2.0
#include "widgets/ErrorNote.h"

#include <QLabel>
#include <QToolButton>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;

namespace {

QLabel* wrapped(const QString& name) {
    auto* label = new QLabel;
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setTextFormat(Qt::PlainText); // an error's text is never markup
    label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    return label;
}

} // namespace

ErrorNote::ErrorNote(QWidget* parent)
    : QWidget(parent) {
    m_message = wrapped(u"message"_s);
    m_toggle = new QToolButton;
    m_toggle->setObjectName(u"details"_s);
    m_toggle->setText(tr("&Details"));
    m_toggle->setCheckable(true);
    m_toggle->setArrowType(Qt::RightArrow);
    m_toggle->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_toggle->setAutoRaise(true);
    m_toggle->setAccessibleDescription(tr("Shows the technical text of the problem"));
    m_details = wrapped(u"detailsText"_s);
    m_details->setStyleSheet(u"color: #6b7078;"_s); // quieter, and readable on light and dark
    connect(m_toggle, &QToolButton::toggled, this, [this](bool open) {
        m_toggle->setArrowType(open ? Qt::DownArrow : Qt::RightArrow);
        m_details->setVisible(open);
    });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_message);
    layout->addWidget(m_toggle, 0, Qt::AlignLeft);
    layout->addWidget(m_details);
    clear();
}

void ErrorNote::showInfo(const QString& text) {
    m_error = false;
    m_message->setStyleSheet(QString());
    m_message->setText(text);
    m_message->show();
    m_toggle->setChecked(false);
    m_toggle->hide();
    m_details->clear();
    m_details->hide();
    show();
}

void ErrorNote::showError(const QString& message, const QString& details) {
    showProblem(u"#c0392b"_s, message, details);
}

void ErrorNote::showWarning(const QString& message, const QString& details) {
    showProblem(u"#b36b00"_s, message, details);
}

void ErrorNote::showProblem(const QString& colour, const QString& message, const QString& details) {
    m_error = true;
    m_message->setStyleSheet(u"color: %1;"_s.arg(colour));
    m_message->setText(message);
    m_message->setVisible(!message.isEmpty()); // a problem already told elsewhere: Details alone
    m_message->setAccessibleDescription(details);
    // The disclosure stays as the user left it while the same problem is told again.
    if (details != m_details->text())
        m_toggle->setChecked(false);
    m_details->setText(details);
    m_toggle->setVisible(!details.isEmpty());
    m_details->setVisible(!details.isEmpty() && m_toggle->isChecked());
    show();
}

void ErrorNote::clear() {
    m_error = false;
    m_message->clear();
    m_details->clear();
    m_toggle->setChecked(false);
    hide();
}

QString ErrorNote::message() const {
    return isHidden() ? QString() : m_message->text();
}

QString ErrorNote::details() const {
    return m_details->text();
}

} // namespace tessera::ui
