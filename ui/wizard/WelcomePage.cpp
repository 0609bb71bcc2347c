// SPDX-License-Identifier: Apache-2.0
// WelcomePage: the address checked before joining, and trust on first use.
#include "wizard/WelcomePage.h"

#include "widgets/ErrorNote.h"
#include "tray/TrayIcons.h"
#include "wizard/WizardLabels.h"

#include "manager/AppSettings.h"

#include <QDir>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::AppSettings;
using manager::AppState;

WelcomePage::WelcomePage(AppSettings& settings, QWidget* parent)
    : QWidget(parent)
    , m_settings(settings) {

    // Everything but the buttons scrolls: a long error, the trust question or a large font never
    // pushes Contribute off a small screen or clips the text.
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* logo = new QLabel;
    logo->setPixmap(TrayIcons::pixmap(AppState::Contributing, 64));
    layout->addWidget(logo);
    layout->addWidget(titleLabel(tr("Help train an open language model")));
    layout->addWidget(
        bodyLabel(tr("Tessera lends your graphics card's spare time to volunteers who train a large "
                     "language model together: your computer holds one small part of the model and "
                     "earns credits for the work it does.")));
    layout->addWidget(
        bodyLabel(tr("It pauses by itself the moment you start a game or the computer needs its "
                     "graphics card, and it never needs your attention.")));
    layout->addLayout(makeAddressRow());
    m_note = new ErrorNote;
    m_note->setObjectName(u"checkText"_s);
    layout->addWidget(m_note);
    layout->addWidget(makeTrustPanel());
    connect(&m_check, &manager::CoordinatorCheck::finished, this, &WelcomePage::onChecked);

    layout->addStretch();
    auto* scroll = new QScrollArea;
    scroll->setWidget(content);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(scroll, 1);
    outer->addLayout(makeButtonRow());
    refresh();
}

// Where to contribute: the packaged default, editable (a volunteer may be given another).
QHBoxLayout* WelcomePage::makeAddressRow() {
    m_address = new QLineEdit;
    m_address->setObjectName(u"coordinatorAddress"_s);
    m_address->setPlaceholderText(u"https://coordinator.example.org:7443"_s);
    m_address->setAccessibleName(tr("Coordinator address"));
    connect(m_address, &QLineEdit::returnPressed, this, &WelcomePage::contribute);
    auto* addressLabel = new QLabel(tr("Coordinator &address:"));
    addressLabel->setBuddy(m_address);
    auto* addressRow = new QHBoxLayout;
    addressRow->addWidget(addressLabel);
    addressRow->addWidget(m_address, 1);
    return addressRow;
}

// Trust on first use: the fingerprint to compare, and the one button that trusts it.
QWidget* WelcomePage::makeTrustPanel() {
    m_trustPanel = new QWidget;
    m_trustPanel->setObjectName(u"trustPanel"_s);
    auto* trustLayout = new QVBoxLayout(m_trustPanel);
    trustLayout->setContentsMargins(0, 0, 0, 0);
    m_fingerprint = bodyLabel();
    m_fingerprint->setObjectName(u"fingerprint"_s);
    m_fingerprint->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_fingerprint->setAccessibleName(tr("Certificate fingerprint (SHA-256)"));
    m_trust = new QPushButton(tr("&Trust this coordinator"));
    m_trust->setObjectName(u"trust"_s);
    connect(m_trust, &QPushButton::clicked, this, &WelcomePage::trustOffered);
    auto* trustRow = new QHBoxLayout;
    trustRow->addStretch();
    trustRow->addWidget(m_trust);
    trustLayout->addWidget(m_fingerprint);
    trustLayout->addLayout(trustRow);
    m_trustPanel->hide();
    return m_trustPanel;
}

// Not now on the left, Contribute (the default) on the right: outside the scrolled content.
QHBoxLayout* WelcomePage::makeButtonRow() {
    m_contribute = new QPushButton(tr("&Contribute"));
    m_contribute->setObjectName(u"contribute"_s);
    m_contribute->setDefault(true);
    m_contribute->setMinimumWidth(160);
    connect(m_contribute, &QPushButton::clicked, this, &WelcomePage::contribute);
    auto* notNow = new QPushButton(tr("&Not now"));
    notNow->setObjectName(u"notNow"_s);
    connect(notNow, &QPushButton::clicked, this, &WelcomePage::notNowClicked);
    auto* row = new QHBoxLayout;
    row->addWidget(notNow);
    row->addStretch();
    row->addWidget(m_contribute);
    return row;
}

void WelcomePage::refresh() {
    if (!m_address->hasFocus() && !m_check.running())
        m_address->setText(m_settings.string(AppSettings::Key::CoordinatorUrl));
}

QString WelcomePage::checkText() const {
    return m_note->message();
}

void WelcomePage::contribute() {
    if (m_check.running())
        return;
    const QString address = m_address->text().trimmed();
    // The packaged default is not copied into the user's settings: a package that moves its
    // coordinator moves everyone who did not choose another.
    if (address == m_settings.defaultValue(AppSettings::Key::CoordinatorUrl).toString())
        m_settings.reset(AppSettings::Key::CoordinatorUrl);
    else
        m_settings.setValue(AppSettings::Key::CoordinatorUrl, address);
    m_trustPanel->hide();
    m_offered = QSslCertificate();
    m_note->showInfo(tr("Checking the coordinator at %1…").arg(address));
    m_contribute->setEnabled(false);
    m_check.check(address, m_settings.string(AppSettings::Key::CoordinatorCaFile));
}

void WelcomePage::onChecked(const manager::CoordinatorCheck::Answer& answer) {
    using Outcome = manager::CoordinatorCheck::Outcome;
    m_contribute->setEnabled(true);
    if (answer.outcome == Outcome::Ok) {
        m_note->clear();
        Q_EMIT joinRequested();
        return;
    }
    showError(answer.message, answer.details);
    if (answer.outcome == Outcome::Untrusted && !answer.certificate.isNull()) {
        m_offered = answer.certificate;
        // 32 bytes in two lines of 16: it fits the window, and reads like a printed one.
        const QString fingerprint = offeredFingerprint();
        m_fingerprint->setText(tr("SHA-256 fingerprint:") + u'\n' + fingerprint.left(47) + u'\n' +
                               fingerprint.mid(48));
        m_trustPanel->show();
        m_trust->setFocus();
        return;
    }
    // The address is what the user can fix here: ready to be corrected.
    m_address->setFocus();
    m_address->selectAll();
}

QString WelcomePage::offeredFingerprint() const {
    return m_offered.isNull() ? QString() : manager::CoordinatorCheck::fingerprint(m_offered);
}

void WelcomePage::trustOffered() {
    if (m_offered.isNull())
        return;
    // Pinned beside the settings: the node trusts exactly this certificate for this coordinator.
    const QString dir = QFileInfo(m_settings.fileName()).absoluteDir().filePath(u"trusted"_s);
    const Result<QString> pinned = manager::CoordinatorCheck::pin(m_offered, dir, m_address->text());
    if (!pinned) {
        showError(tr("Tessera could not keep the coordinator's certificate."),
                  QString::fromStdString(pinned.message()));
        return;
    }
    m_settings.setValue(AppSettings::Key::CoordinatorCaFile, *pinned);
    contribute(); // checked again, now trusting it: on to joining
}

void WelcomePage::showError(const QString& message, const QString& details) {
    m_note->showError(message, details);
}

} // namespace tessera::ui
