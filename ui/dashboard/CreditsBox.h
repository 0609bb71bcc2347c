// SPDX-License-Identifier: Apache-2.0
#pragma once
// CreditsBox: the dashboard's "Your credits" — granted today and in total, pending (accepted work
// not yet in a signed receipt, or forfeited by a failed check), the rate the computer earns at,
// what a credit is, and "Day by day…" (the daily table and its CSV export). Narrow, it stacks.

#include <QGroupBox>
#include <QJsonObject>

class QGridLayout;
class QLabel;
class QPushButton;

namespace tessera::ui {

class CreditsBox final : public QGroupBox {
    Q_OBJECT

public:
    explicit CreditsBox(QWidget* parent = nullptr);

    // From the node's ledger (the app reads it; the node writes it).
    void setLedger(const QString& ledgerPath, qint64 nowMs);
    // Pending and forfeited: the coordinator's word, from the node's status.
    void setNodeStatus(const QJsonObject& status);
    void setNarrow(bool narrow);

    QString todayText() const;
    QString totalText() const;
    QString pendingText() const;
    QString rateText() const;
    // Reading the ledger failed ("" when it did not).
    const QString& problem() const { return m_problem; }

Q_SIGNALS:
    void dayByDayRequested();

private:
    QGridLayout* m_grid;
    QLabel* m_today;
    QLabel* m_total;
    QLabel* m_pending;
    QLabel* m_rate;
    QLabel* m_what;
    QPushButton* m_days;
    QString m_problem;
    bool m_narrow = false;
};

} // namespace tessera::ui
