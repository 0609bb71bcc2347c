// SPDX-License-Identifier: Apache-2.0
#pragma once
// WelcomePage: the first-run wizard's first page — what Tessera does, the coordinator's address
// (pre-filled with the packaged default, editable) and Contribute.
//
// Contribute first checks that a coordinator answers at the address (manager::CoordinatorCheck),
// before anything is measured or started: a wrong address, a coordinator that is down, or
// something else answering is said in words here, with the address selected to be fixed and the
// technical text behind "Details"; a certificate nobody trusted signed shows its SHA-256
// fingerprint and "Trust this coordinator" (the certificate is then pinned beside the settings
// and becomes the coordinator's certificate file: trust on first use). Only a coordinator that
// answered over a trusted connection lets the wizard go on (joinRequested).

#include "manager/CoordinatorCheck.h"

#include <QSslCertificate>
#include <QWidget>

class QHBoxLayout;
class QLabel;
class QLineEdit;
class QPushButton;

namespace tessera::manager {
class AppSettings;
}

namespace tessera::ui {

class ErrorNote;

class WelcomePage final : public QWidget {
    Q_OBJECT

public:
    explicit WelcomePage(manager::AppSettings& settings, QWidget* parent = nullptr);

    // The address field shows the stored address again (unless the user is editing it).
    void refresh();
    // What the page says about the check: "Checking…", or what is wrong and what to do.
    QString checkText() const;
    bool checking() const { return m_check.running(); }
    // The fingerprint offered for trust ("" when no certificate waits for an answer).
    QString offeredFingerprint() const;

public Q_SLOTS:
    // Contribute: stores the address and checks it; joinRequested() follows when it answers.
    void contribute();

Q_SIGNALS:
    void joinRequested();
    void notNowClicked();

private:
    QHBoxLayout* makeAddressRow();
    QWidget* makeTrustPanel();
    QHBoxLayout* makeButtonRow();
    void onChecked(const manager::CoordinatorCheck::Answer& answer);
    void trustOffered();
    void showError(const QString& message, const QString& details);

    manager::AppSettings& m_settings;
    QLineEdit* m_address;
    QPushButton* m_contribute;
    ErrorNote* m_note; // "Checking…", or what is wrong (Details: Qt's words)
    QWidget* m_trustPanel;
    QLabel* m_fingerprint;
    QPushButton* m_trust;
    manager::CoordinatorCheck m_check;
    QSslCertificate m_offered; // the certificate the trust panel shows
};

} // namespace tessera::ui
