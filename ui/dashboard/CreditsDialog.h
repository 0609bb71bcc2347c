// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditsDialog: the credits granted day by day (newest first, days without credit included),
// read from the node's ledger, with an export of the table as CSV for a spreadsheet.

#include "base/Result.h"
#include "manager/CreditDays.h"

#include <QDialog>

#include <functional>

class QLabel;
class QTableWidget;

namespace tessera::ui {

class CreditsDialog final : public QDialog {
    Q_OBJECT

public:
    // Days end at local midnight by `nowMs` (the manager's clock).
    CreditsDialog(QString ledgerPath, std::function<qint64()> nowMs, QWidget* parent = nullptr);

    // Reads the ledger again.
    void refresh();
    const QList<manager::CreditDay>& days() const { return m_days; }
    QTableWidget& table() const { return *m_table; }
    // Writes the table as CSV (atomically: a failed write leaves no half file).
    Status exportTo(const QString& path) const;

private:
    void exportAsked();

    QString m_ledgerPath;
    std::function<qint64()> m_nowMs;
    QList<manager::CreditDay> m_days;
    QTableWidget* m_table;
    QLabel* m_summary;
};

} // namespace tessera::ui
