// SPDX-License-Identifier: Apache-2.0
// DashboardWindow: credits from a real ledger the node's own LocalLedger wrote (signed, chained
// receipts), per bucket in the charts and today / in total; the state's words follow the
// Manager; the swarm's loss curve from a /v1/status answer.
#include "UiTestSupport.h"

#include "tray/ContributionActions.h"
#include "dashboard/DashboardWindow.h"
#include "dashboard/HistoryChart.h"
#include "dashboard/SwarmPanel.h"

#include "common/Identity.h"
#include "node/ledger/LocalLedger.h"

#include <QDateTime>
#include <QDir>
#include <QJsonArray>
#include <QLineSeries>
#include <QLocale>
#include <QPushButton>
#include <QTest>

#include <numeric>

using namespace Qt::StringLiterals;
using namespace tessera;
using manager::AppState;
using manager::HistoryRange;

class TestDashboard final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { QLocale::setDefault(QLocale(QLocale::English, QLocale::UnitedStates)); }
    void creditsFromTheLedger();
    void stateFollowsTheManager();
    void swarmLossCurve();
    void unreachableCoordinatorIsSaid();
};

namespace {

// Receipts as the coordinator issues them: micro-credits from FLOP, hash-chained, signed.
std::vector<protocol::CreditReceipt> receipts(const Identity& key, const QString& nodeId,
                                              const QList<std::pair<qint64, double>>& grants) {
    std::vector<protocol::CreditReceipt> out;
    QString prev = protocol::kGenesisHash;
    for (const auto& [at, credits] : grants) {
        protocol::CreditReceipt r;
        r.nodeId = nodeId;
        r.seq = qint64(out.size()) + 1;
        r.issuedAtMs = at;
        r.flop = qint64(credits * 1e15);
        r.microCredits = r.flop / protocol::kFlopPerMicroCredit;
        r.prevHash = prev;
        r.hash = r.computeHash();
        r.signature = key.sign(r.payload());
        prev = r.hash;
        out.push_back(r);
    }
    return out;
}

double sum(const QList<double>& values) {
    return std::accumulate(values.begin(), values.end(), 0.0);
}

} // namespace

void TestDashboard::creditsFromTheLedger() {
    test::UiFixture app;
    manager::Manager& manager = app.manager();
    // 2 credits 40 days ago (outside the month), 1.5 earlier today, 0.25 a moment ago.
    const qint64 now = app.pinClockAtNoon();
    const qint64 midnight = QDateTime::fromMSecsSinceEpoch(now).date().startOfDay().toMSecsSinceEpoch();
    Result<Identity> coordinatorKey = Identity::generate();
    Result<Identity> nodeKey = Identity::generate();
    QVERIFY(coordinatorKey && nodeKey);
    QVERIFY(QDir().mkpath(manager.nodeDataDir()));
    {
        auto ledger =
            node::LocalLedger::open(manager.ledgerPath(), nodeKey->nodeId(), coordinatorKey->publicKey());
        QVERIFY2(ledger, ledger ? "" : ledger.message().c_str());
        const auto stored = (*ledger)->ingest(receipts(
            *coordinatorKey, nodeKey->nodeId(),
            {{now - 40LL * 86'400'000, 2.0}, {midnight + (now - midnight) / 2, 1.5}, {now - 1000, 0.25}}));
        QVERIFY2(stored, stored ? "" : stored.message().c_str());
        QCOMPARE(stored->stored, 3);
    }

    manager.start();
    ui::ContributionActions actions(manager);
    ui::DashboardWindow dashboard(manager, actions);
    dashboard.show();
    QCOMPARE(dashboard.creditsTodayText(), u"1.75"_s);
    QCOMPARE(dashboard.creditsTotalText(), u"3.75"_s);
    QVERIFY2(dashboard.historyError().isEmpty(), qPrintable(dashboard.historyError()));

    // A day in hours: both of today's receipts, one step per bucket in the chart.
    dashboard.setRange(HistoryRange::Day);
    const manager::HistorySeries day = dashboard.creditsChart().data(0);
    QCOMPARE(day.values.size(), 24);
    QCOMPARE(sum(day.values), 1.75);
    QVERIFY(sum(day.values.mid(22)) >= 0.25); // a moment ago: the last hour's bucket (or the one before)
    QCOMPARE(dashboard.creditsChart().points(0).size(), 48);
    QCOMPARE(dashboard.creditsChart().points(0).last().y(), day.values.last());

    // A month in days: the receipt 40 days old is outside it.
    dashboard.setRange(HistoryRange::Month);
    QCOMPARE(dashboard.creditsChart().data(0).values.size(), 30);
    QCOMPARE(sum(dashboard.creditsChart().data(0).values), 1.75);

    // The last hour: the receipt of a moment ago, in the last minute's bucket.
    dashboard.setRange(HistoryRange::Hour);
    QCOMPARE(dashboard.creditsChart().data(0).values.size(), 60);
    // (a moment ago: the last minute's bucket, or the one before at a minute's turn)
    QCOMPARE(sum(dashboard.creditsChart().data(0).values.mid(58)), 0.25);
    // The throughput chart has its two lines over the same buckets (empty: no node ran).
    QCOMPARE(dashboard.throughputChart().data(0).values.size(), 60);
    QCOMPARE(dashboard.throughputChart().data(1).values.size(), 60);
}

void TestDashboard::stateFollowsTheManager() {
    test::UiFixture app;
    app.useSilentNode();
    manager::Manager& manager = app.manager();
    manager.start();
    ui::ContributionActions actions(manager);
    ui::DashboardWindow dashboard(manager, actions);
    dashboard.show();
    QVERIFY(dashboard.stateText().startsWith(u"Not contributing"));
    auto* contribute = test::child<QPushButton>(dashboard, u"contribute"_s);
    auto* pause = test::child<QPushButton>(dashboard, u"pause"_s);
    auto* resume = test::child<QPushButton>(dashboard, u"resume"_s);
    QVERIFY(contribute->isVisible() && !pause->isVisible() && !resume->isVisible());

    QTest::mouseClick(contribute, Qt::LeftButton);
    QCOMPARE(manager.state(), AppState::Preparing);
    QCOMPARE(dashboard.stateText(), manager.stateText());
    QVERIFY(!contribute->isVisible() && pause->isVisible() && !resume->isVisible());

    actions.pauseUntilResumed()->trigger(); // the Pause button's menu
    QVERIFY(QTest::qWaitFor([&] { return manager.state() == AppState::Paused; }, 5000));
    QCOMPARE(dashboard.stateText(), u"Paused — you paused it until you resume"_s);
    QVERIFY(!pause->isVisible() && resume->isVisible());

    QTest::mouseClick(resume, Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return manager.state() != AppState::Paused; }, 5000));
    QCOMPARE(dashboard.stateText(), manager.stateText());
    QVERIFY(pause->isVisible() && !resume->isVisible());
}

void TestDashboard::swarmLossCurve() {
    test::UiFixture app;
    ui::ContributionActions actions(app.manager());
    ui::DashboardWindow dashboard(app.manager(), actions);
    QVERIFY(dashboard.swarm().summary().startsWith(u"Waiting for the coordinator"));
    // As Trainer::status() and StatusApi write it.
    QJsonArray curve;
    for (int step = 1; step <= 50; ++step)
        curve.append(QJsonArray{step, 5.5 - step * 0.05, step * 4096});
    const QJsonObject status{{u"nodes"_s, QJsonObject{{u"online"_s, 12}, {u"total"_s, 30}}},
                             {u"step"_s, 50},
                             {u"loss"_s, 3.0},
                             {u"tokens_per_second"_s, 4200.4},
                             {u"loss_curve"_s, curve}};
    dashboard.swarm().setStatus(status);
    QCOMPARE(dashboard.swarm().summary(), u"12 volunteers online · step 50 · loss 3.000 · 4,200 tokens/s"_s);
    QCOMPARE(dashboard.swarm().lossCurve().count(), 50);
    QCOMPARE(dashboard.swarm().lossCurve().at(49), QPointF(50, 3.0));

    // The coordinator goes away: the last figures stay, and the panel says it is not answering.
    // Qt's words are behind Details; an answer again clears it all.
    dashboard.swarm().setError(u"the connection was refused"_s);
    QCOMPARE(dashboard.swarm().summary(),
             u"12 volunteers online · step 50 · loss 3.000 · 4,200 tokens/s\n"
             "The coordinator is not answering; the figures above are the last it gave."_s);
    QCOMPARE(dashboard.swarm().errorDetails(), u"the connection was refused"_s);
    dashboard.swarm().setStatus(status);
    QCOMPARE(dashboard.swarm().summary(), u"12 volunteers online · step 50 · loss 3.000 · 4,200 tokens/s"_s);
    QVERIFY(dashboard.swarm().errorDetails().isEmpty());
}

void TestDashboard::unreachableCoordinatorIsSaid() {
    // The fixture's coordinator is a port nothing listens on: the real fetch fails.
    test::UiFixture app;
    ui::ContributionActions actions(app.manager());
    ui::DashboardWindow dashboard(app.manager(), actions);
    app.manager().start();
    QVERIFY(QTest::qWaitFor([&] { return dashboard.swarm().summary().contains(u"not answering"); }, 10'000));
    QVERIFY2(dashboard.swarm().errorDetails().contains(u"refused"),
             qPrintable(dashboard.swarm().errorDetails()));
}

QTEST_MAIN(TestDashboard)
#include "test_dashboard.moc"
