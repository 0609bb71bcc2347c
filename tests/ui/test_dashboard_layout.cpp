// SPDX-License-Identifier: Apache-2.0
// The dashboard on small screens and for everyone: it opens no larger than the screen; at
// 1280 × 720 at 150 % (853 × 480 logical pixels) every button stays inside the window, the
// buttons go under the status and the charts under each other, and the rest is reached by
// scrolling; wide again, they go back. The charts as tables hold the same figures, the credits
// day by day come from a real signed ledger and export as CSV, and the controls a screen reader
// meets have names.
#include "UiTestSupport.h"

#include "tray/ContributionActions.h"
#include "dashboard/CreditsBox.h"
#include "dashboard/CreditsDialog.h"
#include "dashboard/DashboardWindow.h"
#include "dashboard/HistoryView.h"
#include "ReceiptChain.h"
#include "dashboard/SwarmPanel.h"

#include "node/ledger/LocalLedger.h"

#include <QCheckBox>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableWidget>
#include <QTest>

using namespace Qt::StringLiterals;
using namespace tessera;

namespace {

// The node's ledger with signed receipts at the given times (credits each).
bool writeLedger(const QString& path, const QList<std::pair<qint64, double>>& grants) {
    Result<Identity> coordinator = Identity::generate();
    Result<Identity> node = Identity::generate();
    if (!coordinator || !node)
        return false;
    auto ledger = node::LocalLedger::open(path, node->nodeId(), coordinator->publicKey());
    if (!ledger)
        return false;
    std::vector<protocol::CreditReceipt> out;
    QString prev = protocol::kGenesisHash;
    for (const auto& [at, credits] : grants) {
        protocol::CreditReceipt r;
        r.nodeId = node->nodeId();
        r.seq = qint64(out.size()) + 1;
        r.issuedAtMs = at;
        r.flop = qint64(credits * 1e15);
        r.microCredits = r.flop / protocol::kFlopPerMicroCredit;
        r.prevHash = prev;
        r = test::ReceiptChain::sign(std::move(r), *coordinator);
        prev = r.hash;
        out.push_back(r);
    }
    const auto stored = (*ledger)->ingest(out);
    return stored && stored->stored == qsizetype(grants.size());
}

// Where a widget lies in the scroll area's content.
QRect inContent(const QWidget& w, const QScrollArea& scroll) {
    return {w.mapTo(scroll.widget(), QPoint(0, 0)), w.size()};
}

} // namespace

class TestDashboardLayout final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates)); }

    void opensNoLargerThanTheScreen() {
        test::UiFixture app;
        ui::ContributionActions actions(app.manager());
        ui::DashboardWindow dashboard(app.manager(), actions);
        const QRect available = dashboard.screen()->availableGeometry();
        QVERIFY2(dashboard.width() <= available.width() && dashboard.height() <= available.height(),
                 qPrintable(u"%1×%2 on %3×%4"_s.arg(dashboard.width())
                                .arg(dashboard.height())
                                .arg(available.width())
                                .arg(available.height())));
    }

    void fitsAt150PercentAndReflows() {
        test::UiFixture app;
        ui::ContributionActions actions(app.manager());
        ui::DashboardWindow dashboard(app.manager(), actions);
        // 1280 × 720 at 150 %: 853 × 480 logical pixels, less a title bar and a panel.
        dashboard.resize(840, 440);
        dashboard.show();
        QVERIFY(QTest::qWaitForWindowExposed(&dashboard));
        QVERIFY(dashboard.narrow());
        QScrollArea& scroll = dashboard.scrollArea();
        QTRY_VERIFY(scroll.widget()->width() <= scroll.viewport()->width());
        QVERIFY(!scroll.horizontalScrollBar()->isVisible());
        for (const QString& name : {u"contribute"_s, u"settings"_s, u"about"_s, u"creditsByDay"_s}) {
            auto* button = test::child<QPushButton>(dashboard, name);
            QVERIFY(button);
            const QRect r = inContent(*button, scroll);
            QVERIFY2(r.left() >= 0 && r.right() < scroll.viewport()->width(),
                     qPrintable(u"%1 at x %2..%3 of %4"_s.arg(name).arg(r.left()).arg(r.right()).arg(
                         scroll.viewport()->width())));
        }
        // Buttons under the status, charts under each other, the swarm reached by scrolling.
        const QRect state = inContent(*test::child<QLabel>(dashboard, u"state"_s), scroll);
        const QRect settings = inContent(*test::child<QPushButton>(dashboard, u"settings"_s), scroll);
        QVERIFY(settings.top() > state.top());
        const QRect credits = inContent(dashboard.creditsView(), scroll);
        const QRect work = inContent(dashboard.throughputView(), scroll);
        QCOMPARE(credits.left(), work.left());
        QVERIFY(work.top() >= credits.bottom());
        QVERIFY(scroll.verticalScrollBar()->isVisible());
        // Scrolled to the end, the swarm's panel is there, whole at its bottom.
        scroll.verticalScrollBar()->setValue(scroll.verticalScrollBar()->maximum());
        const QRect swarm = inContent(dashboard.swarm(), scroll);
        const int top = scroll.verticalScrollBar()->value();
        QVERIFY2(swarm.bottom() > top && swarm.bottom() <= top + scroll.viewport()->height(),
                 qPrintable(u"swarm %1..%2, visible %3..%4"_s.arg(swarm.top())
                                .arg(swarm.bottom())
                                .arg(top)
                                .arg(top + scroll.viewport()->height())));

        // 1280 × 720 at 100 %: side by side again, the buttons beside the status.
        dashboard.resize(1040, 680);
        QTRY_VERIFY(!dashboard.narrow());
        QTRY_COMPARE(inContent(dashboard.throughputView(), scroll).top(),
                     inContent(dashboard.creditsView(), scroll).top());
        QVERIFY(inContent(*test::child<QPushButton>(dashboard, u"settings"_s), scroll).left() >
                inContent(*test::child<QLabel>(dashboard, u"state"_s), scroll).left());
    }

    void chartsAsTablesAndCreditsDayByDay() {
        test::UiFixture app;
        manager::Manager& manager = app.manager();
        QVERIFY(QDir().mkpath(manager.nodeDataDir()));
        const qint64 now = app.pinClockAtNoon();
        const QDate today = QDateTime::fromMSecsSinceEpoch(now).date();
        const qint64 threeDaysAgo = today.addDays(-3).startOfDay().toMSecsSinceEpoch() + 12 * 3'600'000;
        QVERIFY(writeLedger(manager.ledgerPath(),
                            {{threeDaysAgo, 2.0}, {now - 60'000, 0.5}, {now - 1000, 0.25}}));
        ui::ContributionActions actions(manager);
        ui::DashboardWindow dashboard(manager, actions);
        dashboard.show();

        // The rate: both of the last minutes' receipts, in the last hour and the last day.
        QCOMPARE(dashboard.credits().rateText(),
                 u"Earning 0.75 credits an hour lately · 0.75 in the last 24 hours"_s);

        // Tables: the chart's buckets, newest first, same figures.
        auto* tables = test::child<QCheckBox>(dashboard, u"showTables"_s);
        QVERIFY(tables);
        tables->click();
        QVERIFY(dashboard.creditsView().tableShown() && dashboard.throughputView().tableShown());
        QTableWidget& table = dashboard.creditsView().table();
        QCOMPARE(table.rowCount(), 60);
        QCOMPARE(table.columnCount(), 2);
        double sum = 0;
        for (int row = 0; row < 2; ++row)
            sum += QLocale().toDouble(table.item(row, 1)->text());
        QCOMPARE(sum, 0.75);
        QVERIFY2(dashboard.creditsChart().accessibleDescription().contains(u"highest"),
                 qPrintable(dashboard.creditsChart().accessibleDescription()));

        // Day by day: four days (today, two without credit, three days ago), then CSV.
        test::child<QPushButton>(dashboard, u"creditsByDay"_s)->click();
        auto* dialog = dashboard.findChild<ui::CreditsDialog*>(u"creditsByDay"_s);
        QVERIFY(dialog && dialog->isVisible());
        QCOMPARE(dialog->table().rowCount(), 4);
        QCOMPARE(dialog->table().item(0, 1)->text(), u"0.75"_s);
        QCOMPARE(dialog->table().item(0, 2)->text(), u"2"_s);
        QCOMPARE(dialog->table().item(1, 1)->text(), u"0"_s);
        QCOMPARE(dialog->table().item(3, 1)->text(), u"2.00"_s);
        const QString csv = app.path(u"credits.csv");
        QVERIFY(dialog->exportTo(csv));
        QFile file(csv);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = file.readAll().split('\n');
        QCOMPARE(lines.first(), QByteArray("date,credits,receipts\r"));
        QCOMPARE(lines.at(1), today.addDays(-3).toString(Qt::ISODate).toUtf8() + ",2.000000,1\r");
        QCOMPARE(lines.at(4), today.toString(Qt::ISODate).toUtf8() + ",0.750000,2\r");
        // A folder that cannot be written: an error, no file.
        QVERIFY(!dialog->exportTo(app.path(u"no-such-folder/credits.csv")));
    }

    void controlsHaveNamesAndMnemonics() {
        test::UiFixture app;
        ui::ContributionActions actions(app.manager());
        ui::DashboardWindow dashboard(app.manager(), actions);
        for (const QString& name : {u"contribute"_s, u"settings"_s, u"about"_s, u"creditsByDay"_s})
            QVERIFY2(test::child<QPushButton>(dashboard, name)->text().contains(u'&'), qPrintable(name));
        for (const QString& name : {u"creditsToday"_s, u"creditsTotal"_s, u"creditsPending"_s, u"state"_s})
            QVERIFY2(!test::child<QLabel>(dashboard, name)->accessibleName().isEmpty(), qPrintable(name));
        QCOMPARE(dashboard.creditsChart().accessibleName(), u"Credits earned"_s);
        QCOMPARE(dashboard.creditsView().table().accessibleName(), u"Credits earned"_s);
        // The charts take the keyboard's focus (and show it), so a screen reader reaches them.
        QVERIFY(dashboard.creditsChart().focusPolicy() & Qt::TabFocus);
    }
};

QTEST_MAIN(TestDashboardLayout)
#include "test_dashboard_layout.moc"
