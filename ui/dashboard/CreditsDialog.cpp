// SPDX-License-Identifier: Apache-2.0
#include "dashboard/CreditsDialog.h"

#include "manager/NodeStatusText.h"

#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QStandardPaths>
#include <QTableWidget>
#include <QVBoxLayout>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::NodeStatusText;

CreditsDialog::CreditsDialog(QString ledgerPath, std::function<qint64()> nowMs, QWidget* parent)
    : QDialog(parent)
    , m_ledgerPath(std::move(ledgerPath))
    , m_nowMs(std::move(nowMs)) {
    setWindowTitle(tr("Credits day by day"));
    m_summary = new QLabel;
    m_summary->setObjectName(u"summary"_s);
    m_summary->setWordWrap(true);
    m_table = new QTableWidget(0, 3);
    m_table->setObjectName(u"days"_s);
    m_table->setHorizontalHeaderLabels({tr("Day"), tr("Credits"), tr("Receipts")});
    m_table->setAccessibleName(tr("Credits granted each day"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_table->setAlternatingRowColors(true);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    auto* exportButton = buttons->addButton(tr("&Export as CSV…"), QDialogButtonBox::ActionRole);
    exportButton->setObjectName(u"export"_s);
    connect(exportButton, &QPushButton::clicked, this, &CreditsDialog::exportAsked);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
    layout->addWidget(buttons);
    resize(460, 420);
    refresh();
}

void CreditsDialog::refresh() {
    const Result<QList<manager::CreditDay>> days = manager::CreditDays::days(m_ledgerPath, m_nowMs());
    m_days = days ? *days : QList<manager::CreditDay>();
    const QLocale locale;
    m_table->setRowCount(int(m_days.size()));
    double total = 0;
    for (int row = 0; row < m_days.size(); ++row) {
        const manager::CreditDay& d = m_days[row];
        total += d.credits;
        auto* day = new QTableWidgetItem(locale.toString(d.day, QLocale::LongFormat));
        auto* credits = new QTableWidgetItem(NodeStatusText::credits(d.credits));
        auto* receipts = new QTableWidgetItem(locale.toString(d.receipts));
        credits->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        receipts->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(row, 0, day);
        m_table->setItem(row, 1, credits);
        m_table->setItem(row, 2, receipts);
    }
    if (!days)
        m_summary->setText(
            tr("The credit ledger could not be read: %1").arg(QString::fromStdString(days.message())));
    else
        m_summary->setText(tr("%1 credits over the last %n day(s), as the coordinator's signed receipts on "
                              "this computer say.",
                              nullptr, int(m_days.size()))
                               .arg(NodeStatusText::credits(total)));
}

Status CreditsDialog::exportTo(const QString& path) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return makeError(file.errorString().toStdString());
    const QByteArray csv = manager::CreditDays::csv(m_days);
    if (file.write(csv) != csv.size() || !file.commit())
        return makeError(file.errorString().toStdString());
    return {};
}

void CreditsDialog::exportAsked() {
    const QString start = QDir(QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation))
                              .filePath(u"tessera-credits.csv"_s);
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export credits"), start, tr("CSV files (*.csv)"));
    if (path.isEmpty())
        return;
    if (const Status s = exportTo(path); !s)
        QMessageBox::warning(this, tr("Export credits"),
                             tr("The credits could not be written to %1: %2")
                                 .arg(QDir::toNativeSeparators(path), QString::fromStdString(s.message())));
}

} // namespace tessera::ui
