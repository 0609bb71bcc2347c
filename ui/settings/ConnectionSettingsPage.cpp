// SPDX-License-Identifier: Apache-2.0
#include "settings/ConnectionSettingsPage.h"

#include "settings/SettingsBinder.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using Key = manager::AppSettings::Key;

namespace {

QLabel* errorLabel() {
    auto* label = new QLabel;
    label->setWordWrap(true);
    label->setStyleSheet(u"color: #c0392b;"_s);
    label->hide();
    return label;
}

} // namespace

ConnectionSettingsPage::ConnectionSettingsPage(SettingsBinder& binder, QWidget* parent)
    : QWidget(parent)
    , m_binder(binder) {
    auto* url = new QLineEdit;
    url->setObjectName(u"coordinatorUrl"_s);
    url->setPlaceholderText(u"https://coordinator.example.org:7443"_s);
    auto* urlError = errorLabel();
    urlError->setObjectName(u"coordinatorUrlError"_s);
    binder.bind(url, Key::CoordinatorUrl, &ConnectionSettingsPage::checkUrl, urlError);

    m_caFile = new QLineEdit;
    m_caFile->setObjectName(u"caFile"_s);
    m_caFile->setPlaceholderText(tr("None: the system's trusted authorities"));
    auto* caError = errorLabel();
    binder.bind(m_caFile, Key::CoordinatorCaFile, &ConnectionSettingsPage::checkCaFile, caError);
    auto* choose = new QPushButton(tr("C&hoose…"));
    connect(choose, &QPushButton::clicked, this, &ConnectionSettingsPage::chooseCaFile);
    auto* caRow = new QHBoxLayout;
    caRow->addWidget(m_caFile, 1);
    caRow->addWidget(choose);

    auto* hint = new QLabel(tr("Change these only if the swarm's operator asked you to. Tessera starts its "
                               "node again with the new address; what you earned stays yours."));
    hint->setWordWrap(true);
    auto* form = new QFormLayout;
    form->addRow(tr("Coordinator address:"), url);
    form->addRow(QString(), urlError);
    form->addRow(tr("Certificate (PEM):"), caRow);
    form->addRow(QString(), caError);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(hint);
    layout->addLayout(form);
    layout->addStretch();
}

QString ConnectionSettingsPage::checkUrl(const QString& text) {
    const QUrl url(text.trimmed(), QUrl::StrictMode);
    if (text.trimmed().isEmpty())
        return tr("Enter the coordinator's address.");
    if (!url.isValid() || url.host().isEmpty() || (url.scheme() != u"https" && url.scheme() != u"http"))
        return tr("An address looks like https://coordinator.example.org:7443");
    return {};
}

QString ConnectionSettingsPage::checkCaFile(const QString& text) {
    if (text.trimmed().isEmpty() || QFileInfo(text.trimmed()).isReadable())
        return {};
    return tr("There is no readable file at this path.");
}

void ConnectionSettingsPage::chooseCaFile() {
    const QString file =
        QFileDialog::getOpenFileName(this, tr("The coordinator's certificate"), m_caFile->text(),
                                     tr("Certificates (*.pem *.crt);;All files (*)"));
    if (file.isEmpty())
        return;
    m_caFile->setText(file);
    m_binder.settings().setValue(Key::CoordinatorCaFile, file);
}

} // namespace tessera::ui
