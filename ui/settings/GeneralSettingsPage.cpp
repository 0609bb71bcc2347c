// SPDX-License-Identifier: Apache-2.0
#include "settings/GeneralSettingsPage.h"

#include "protocol/PublicProfile.h"
#include "settings/SettingsBinder.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using Key = manager::AppSettings::Key;

namespace {

QLabel* errorLabel(const QString& name) {
    auto* label = new QLabel;
    label->setObjectName(name);
    label->setWordWrap(true);
    label->setStyleSheet(u"color: #c0392b;"_s);
    label->hide();
    return label;
}

} // namespace

GeneralSettingsPage::GeneralSettingsPage(SettingsBinder& binder, QWidget* parent)
    : QWidget(parent)
    , m_binder(binder) {
    auto* form = new QFormLayout;
    // A field goes under its label where both do not fit side by side (a long label, a narrow
    // window, a language with longer words): the page scrolls down, never sideways.
    form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    addGpuLimitRows(form);
    addStartupRows(form);
    addDataRows(form);
    addLeaderboardRows(form);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addStretch();
}

void GeneralSettingsPage::addGpuLimitRows(QFormLayout* form) {
    auto* limit = new QSlider(Qt::Horizontal);
    limit->setObjectName(u"gpuLimit"_s);
    limit->setRange(10, 100);
    limit->setSingleStep(5);
    limit->setPageStep(10);
    limit->setTickPosition(QSlider::TicksBelow);
    limit->setTickInterval(10);
    auto* limitValue = new QLabel;
    limitValue->setMinimumWidth(40);
    m_binder.bind(limit, Key::GpuLimitPercent);
    const auto showLimit = [limitValue](int percent) { limitValue->setText(tr("%1%").arg(percent)); };
    connect(limit, &QSlider::valueChanged, this, showLimit);
    m_binder.onChange(Key::GpuLimitPercent, [limit, showLimit] { showLimit(limit->value()); });
    auto* limitRow = new QHBoxLayout;
    limitRow->addWidget(limit, 1);
    limitRow->addWidget(limitValue);
    auto* limitHint = new QLabel(tr("The share of time the GPU computes for Tessera. Lower keeps the card "
                                    "cooler and quieter; the change applies at once."));
    limitHint->setWordWrap(true);
    form->addRow(tr("GPU usage limit:"), limitRow);
    form->addRow(QString(), limitHint);
}

void GeneralSettingsPage::addStartupRows(QFormLayout* form) {
    auto* login = new QCheckBox(tr("Start Tessera when I log in"));
    login->setObjectName(u"startAtLogin"_s);
    m_binder.bind(login, Key::StartAtLogin);
    auto* notifications = new QCheckBox(tr("Tell me when Tessera pauses, resumes or has a problem"));
    notifications->setObjectName(u"notifications"_s);
    m_binder.bind(notifications, Key::Notifications);
    form->addRow(login); // the check boxes span the page: beside the label column they would not fit
    form->addRow(notifications);
}

void GeneralSettingsPage::addDataRows(QFormLayout* form) {
    m_dataDir = new QLineEdit;
    m_dataDir->setObjectName(u"dataDir"_s);
    m_dataDir->setPlaceholderText(tr("The default folder"));
    m_binder.bind(m_dataDir, Key::DataDir);
    auto* choose = new QPushButton(tr("Choose…"));
    choose->setObjectName(u"chooseDataDir"_s);
    connect(choose, &QPushButton::clicked, this, &GeneralSettingsPage::chooseDataDir);
    auto* dirRow = new QHBoxLayout;
    dirRow->addWidget(m_dataDir, 1);
    dirRow->addWidget(choose);
    auto* disk = new QDoubleSpinBox;
    disk->setObjectName(u"diskLimit"_s);
    disk->setRange(1, 10'000);
    disk->setDecimals(0);
    disk->setSuffix(tr(" GB"));
    m_binder.bind(disk, Key::DiskLimitGb);
    form->addRow(tr("Data folder:"), dirRow);
    form->addRow(tr("Disk space limit:"), disk);
}

// Opt-in and public: nothing is sent unless the user types a name (protocol/PublicProfile).
void GeneralSettingsPage::addLeaderboardRows(QFormLayout* form) {
    auto* displayName = new QLineEdit;
    displayName->setObjectName(u"displayName"_s);
    displayName->setPlaceholderText(tr("Anonymous"));
    auto* displayNameError = errorLabel(u"displayNameError"_s);
    m_binder.bind(displayName, Key::DisplayName, &GeneralSettingsPage::checkProfileText, displayNameError);
    auto* team = new QLineEdit;
    team->setObjectName(u"team"_s);
    team->setPlaceholderText(tr("No team"));
    auto* teamError = errorLabel(u"teamError"_s);
    m_binder.bind(team, Key::Team, &GeneralSettingsPage::checkProfileText, teamError);
    auto* publicHint =
        new QLabel(tr("Both are public: anyone who opens the coordinator's page sees them next "
                      "to your credits. Leave them empty to stay anonymous."));
    publicHint->setObjectName(u"leaderboardHint"_s);
    publicHint->setWordWrap(true);
    form->addRow(tr("Name on the leaderboard (optional):"), displayName);
    form->addRow(QString(), displayNameError);
    form->addRow(tr("Team (optional):"), team);
    form->addRow(QString(), teamError);
    form->addRow(QString(), publicHint);
}

QString GeneralSettingsPage::checkProfileText(const QString& text) {
    switch (protocol::checkProfileText(text)) {
    case protocol::ProfileTextProblem::None:
        return {};
    case protocol::ProfileTextProblem::TooLong:
        return tr("At most %1 characters.").arg(protocol::kMaxProfileTextChars);
    case protocol::ProfileTextProblem::NotPrintable:
        return tr("Only printable characters: no line breaks, tabs or invisible characters.");
    }
    return {};
}

void GeneralSettingsPage::chooseDataDir() {
    const QString dir =
        QFileDialog::getExistingDirectory(this, tr("Tessera's data folder"), m_dataDir->text());
    if (dir.isEmpty())
        return;
    m_dataDir->setText(dir);
    m_binder.settings().setValue(Key::DataDir, dir);
}

} // namespace tessera::ui
