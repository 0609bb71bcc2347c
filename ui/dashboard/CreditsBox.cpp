// SPDX-License-Identifier: Apache-2.0
#include "dashboard/CreditsBox.h"

#include "manager/CreditDays.h"
#include "manager/History.h"
#include "manager/NodeStatusText.h"

#include <QGridLayout>
#include <QLabel>
#include <QPushButton>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::NodeStatusText;

namespace {

QLabel* figure(const QString& name, const QString& accessibleName) {
    auto* label = new QLabel(u"0"_s);
    label->setObjectName(name);
    QFont f = label->font();
    f.setPointSizeF(f.pointSizeF() * 1.6);
    f.setBold(true);
    label->setFont(f);
    label->setAccessibleName(accessibleName);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    return label;
}

} // namespace

CreditsBox::CreditsBox(QWidget* parent)
    : QGroupBox(tr("Your credits"), parent) {
    m_today = figure(u"creditsToday"_s, tr("Credits today"));
    m_total = figure(u"creditsTotal"_s, tr("Credits in total"));
    m_pending = figure(u"creditsPending"_s, tr("Credits pending"));
    m_pending->setToolTip(tr("Work the swarm accepted that is not credit yet: it becomes a signed receipt "
                             "once the coordinator's checks of this computer's results have covered it "
                             "(usually within minutes)."));
    m_rate = new QLabel;
    m_rate->setObjectName(u"creditsRate"_s);
    m_rate->setWordWrap(true);
    // What a credit is comes first in words; its definition in FLOP is there for who asks.
    m_what = new QLabel(tr("Credits count the work this computer did for the swarm that was checked and "
                           "accepted. Each arrives as a receipt signed by the coordinator and is kept on "
                           "this computer."));
    m_what->setWordWrap(true);
    m_what->setToolTip(tr("1 credit = 10<sup>15</sup> floating-point operations of accepted work."));
    m_days = new QPushButton(tr("Day &by day…"));
    m_days->setObjectName(u"creditsByDay"_s);
    connect(m_days, &QPushButton::clicked, this, &CreditsBox::dayByDayRequested);

    m_grid = new QGridLayout(this);
    const QStringList heads{tr("Today"), tr("In total"), tr("Pending")};
    const QList<QLabel*> figures{m_today, m_total, m_pending};
    for (int i = 0; i < 3; ++i) {
        auto* head = new QLabel(heads[i]);
        head->setBuddy(figures[i]);
        m_grid->addWidget(head, 0, i);
        m_grid->addWidget(figures[i], 1, i);
        m_grid->setColumnMinimumWidth(i, 110);
    }
    m_grid->addWidget(m_rate, 2, 0, 1, 3);
    setNarrow(false);
}

void CreditsBox::setNarrow(bool narrow) {
    if (narrow == m_narrow && m_grid->indexOf(m_what) >= 0)
        return;
    m_narrow = narrow;
    m_grid->removeWidget(m_what);
    m_grid->removeWidget(m_days);
    m_grid->setColumnStretch(3, 0);
    if (narrow) {
        // Below the figures, the full width: a narrow window keeps the figures side by side.
        m_grid->addWidget(m_what, 3, 0, 1, 3);
        m_grid->addWidget(m_days, 4, 0, 1, 3, Qt::AlignLeft);
    } else {
        m_grid->addWidget(m_what, 0, 3, 2, 1);
        m_grid->addWidget(m_days, 2, 3, Qt::AlignRight);
        m_grid->setColumnStretch(3, 1);
    }
}

void CreditsBox::setLedger(const QString& ledgerPath, qint64 nowMs) {
    QStringList problems;
    if (const Result<manager::CreditTotals> totals = manager::CreditHistory::totals(ledgerPath, nowMs);
        totals) {
        m_today->setText(NodeStatusText::credits(totals->today));
        m_total->setText(NodeStatusText::credits(totals->total));
    } else {
        problems << QString::fromStdString(totals.message());
    }
    if (const Result<manager::CreditRate> rate = manager::CreditDays::rate(ledgerPath, nowMs); !rate) {
        problems << QString::fromStdString(rate.message());
    } else if (rate->lastDay <= 0) {
        m_rate->setText(tr("No credit granted in the last 24 hours."));
    } else {
        m_rate->setText(
            tr("Earning %1 credits an hour lately · %2 in the last 24 hours")
                .arg(NodeStatusText::credits(rate->lastHour), NodeStatusText::credits(rate->lastDay)));
    }
    problems.removeDuplicates();
    m_problem = problems.join(u"; "_s);
}

void CreditsBox::setNodeStatus(const QJsonObject& s) {
    m_pending->setText(NodeStatusText::credits(s.value(u"credits_pending").toDouble()));
    const double forfeited = s.value(u"credits_forfeited").toDouble();
    m_pending->setStyleSheet(forfeited > 0 ? u"color: #b00020;"_s : QString());
    if (forfeited > 0)
        m_pending->setToolTip(
            tr("%1 credits were forfeited: %2")
                .arg(NodeStatusText::credits(forfeited), s.value(u"last_forfeit_reason").toString()));
}

QString CreditsBox::todayText() const {
    return m_today->text();
}

QString CreditsBox::totalText() const {
    return m_total->text();
}

QString CreditsBox::pendingText() const {
    return m_pending->text();
}

QString CreditsBox::rateText() const {
    return m_rate->text();
}

} // namespace tessera::ui
