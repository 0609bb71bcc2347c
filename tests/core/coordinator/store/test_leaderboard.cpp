// SPDX-License-Identifier: Apache-2.0
// The leaderboard's reads on a real SQLite file and a real PostgreSQL server: nodes ranked by
// granted credit with the last 24 hours apart, teams summed with their members counted, the
// opt-in display name and team kept and dropped by admissions, the online nodes of each stage
// capped with the most credited first, and the loss curve of a long run averaged into few points.
#include "DatabaseBackends.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Leaderboard.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/TrainingStore.h"

#include <QTest>

using namespace tessera;
using namespace tessera::coordinator;
using test::failure;

namespace {

constexpr qint64 kNow = 10 * 24 * 3600 * 1000LL; // day 10
constexpr qint64 kDay = 24 * 3600 * 1000LL;
constexpr qint64 kCredit = 1'000'000; // micro-credits

NodeAdmission node(const QString& id, const QString& name = {}, const QString& team = {}) {
    NodeAdmission a{id, u"pk-"_qs + id, u"{}"_qs, u"{}"_qs, u"0.2.0"_qs, 10.0};
    a.displayName = name;
    a.team = team;
    return a;
}

Result<QByteArray> fakeSign(const QByteArray&) {
    return QByteArray(64, 's');
}

Status grant(Database& db, const QString& nodeId, qint64 atMs, qint64 microCredits) {
    Result<CreditReceipt> r =
        CreditLedger(db).append(nodeId, atMs, microCredits * 1000, microCredits, fakeSign);
    return r ? Status() : Status(r.error());
}

} // namespace

class TestLeaderboard final : public test::StoreTest {
    Q_OBJECT

private Q_SLOTS:
    void nodesByCreditNamedOnlyWhenOptedIn_data() { test::DatabaseBackends::addRows(); }
    void nodesByCreditNamedOnlyWhenOptedIn();
    void teamsSumTheirMembers_data() { test::DatabaseBackends::addRows(); }
    void teamsSumTheirMembers();
    void readmissionChangesOrDropsTheProfile_data() { test::DatabaseBackends::addRows(); }
    void readmissionChangesOrDropsTheProfile();
    void onlineNodesPerStageAreCapped_data() { test::DatabaseBackends::addRows(); }
    void onlineNodesPerStageAreCapped();
    void lossCurveSpansTheWholeRunInFewPoints_data() { test::DatabaseBackends::addRows(); }
    void lossCurveSpansTheWholeRunInFewPoints();
};

void TestLeaderboard::nodesByCreditNamedOnlyWhenOptedIn() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    QVERIFY(nodes.admit(node(u"a"_qs, u"Ada"_qs, u"Red"_qs), 0));
    QVERIFY(nodes.admit(node(u"b"_qs, {}, u"Red"_qs), 0)); // a team, no name: anonymous
    QVERIFY(nodes.admit(node(u"c"_qs, u"Cy"_qs), 0));
    QVERIFY(nodes.admit(node(u"d"_qs, u"Dee"_qs, u"Blue"_qs), 0)); // no credit yet
    QVERIFY(grant(*db, u"a"_qs, kNow - 2 * kDay, 1 * kCredit));    // before the last 24 h
    QVERIFY(grant(*db, u"a"_qs, kNow - 3600'000, 2 * kCredit));
    QVERIFY(grant(*db, u"b"_qs, kNow - 60'000, 5 * kCredit));
    QVERIFY(grant(*db, u"c"_qs, kNow - 3 * kDay, 1 * kCredit + 1));

    Result<std::vector<NodeStanding>> top = Leaderboard(*db).topNodes(50, kNow - kDay);
    QVERIFY2(top, failure(top));
    QCOMPARE(top->size(), std::size_t(3)); // d earned nothing: not on the board
    QCOMPARE(top->at(0).nodeId, u"b"_qs);
    QVERIFY(top->at(0).displayName.isEmpty());
    QCOMPARE(top->at(0).team, u"Red"_qs);
    QCOMPARE(top->at(0).microCredits, 5 * kCredit);
    QCOMPARE(top->at(0).recentMicroCredits, 5 * kCredit);
    QCOMPARE(top->at(1).nodeId, u"a"_qs);
    QCOMPARE(top->at(1).displayName, u"Ada"_qs);
    QCOMPARE(top->at(1).microCredits, 3 * kCredit);
    QCOMPARE(top->at(1).recentMicroCredits, 2 * kCredit);
    QCOMPARE(top->at(2).displayName, u"Cy"_qs);
    QCOMPARE(top->at(2).microCredits, kCredit + 1); // exact: integers summed in SQL
    QCOMPARE(top->at(2).recentMicroCredits, qint64(0));

    top = Leaderboard(*db).topNodes(2, kNow - kDay);
    QVERIFY2(top, failure(top));
    QCOMPARE(top->size(), std::size_t(2));
}

void TestLeaderboard::teamsSumTheirMembers() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    QVERIFY(nodes.admit(node(u"a"_qs, u"Ada"_qs, u"Red"_qs), 0));
    QVERIFY(nodes.admit(node(u"b"_qs, {}, u"Red"_qs), 0));
    QVERIFY(nodes.admit(node(u"c"_qs, u"Cy"_qs), 0)); // no team: in no team's sum
    QVERIFY(nodes.admit(node(u"d"_qs, u"Dee"_qs, u"Blue"_qs), 0));
    QVERIFY(nodes.admit(node(u"e"_qs, u"Eve"_qs, u"red"_qs), 0)); // another team: names are exact
    QVERIFY(grant(*db, u"a"_qs, kNow - 2 * kDay, 1 * kCredit));
    QVERIFY(grant(*db, u"a"_qs, kNow - 1000, 2 * kCredit));
    QVERIFY(grant(*db, u"b"_qs, kNow - 1000, 5 * kCredit));
    QVERIFY(grant(*db, u"c"_qs, kNow - 1000, 100 * kCredit));
    QVERIFY(grant(*db, u"e"_qs, kNow - 1000, 1));

    Result<std::vector<TeamStanding>> teams = Leaderboard(*db).topTeams(50, kNow - kDay);
    QVERIFY2(teams, failure(teams));
    QCOMPARE(teams->size(), std::size_t(3));
    QCOMPARE(teams->at(0).team, u"Red"_qs);
    QCOMPARE(teams->at(0).members, qint64(2));
    QCOMPARE(teams->at(0).microCredits, 8 * kCredit);
    QCOMPARE(teams->at(0).recentMicroCredits, 7 * kCredit);
    QCOMPARE(teams->at(1).team, u"red"_qs);
    QCOMPARE(teams->at(1).microCredits, qint64(1));
    QCOMPARE(teams->at(2).team, u"Blue"_qs); // a member, nothing earned yet: listed with 0
    QCOMPARE(teams->at(2).members, qint64(1));
    QCOMPARE(teams->at(2).microCredits, qint64(0));

    teams = Leaderboard(*db).topTeams(1, kNow - kDay);
    QVERIFY2(teams, failure(teams));
    QCOMPARE(teams->size(), std::size_t(1));
}

void TestLeaderboard::readmissionChangesOrDropsTheProfile() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    QVERIFY(nodes.admit(node(u"a"_qs, u"Ada"_qs, u"Red"_qs), 0));
    Result<std::optional<NodeRecord>> found = nodes.find(u"a"_qs);
    QVERIFY2(found && *found, failure(found));
    QCOMPARE((*found)->displayName, u"Ada"_qs);
    QCOMPARE((*found)->team, u"Red"_qs);

    QVERIFY(nodes.admit(node(u"a"_qs, u"Ada L."_qs, u"Blue"_qs), 10));
    found = nodes.find(u"a"_qs);
    QCOMPARE((*found)->displayName, u"Ada L."_qs);
    QCOMPARE((*found)->team, u"Blue"_qs);

    // Opting out: the next admission without a profile makes the node anonymous again.
    QVERIFY(nodes.admit(node(u"a"_qs), 20));
    found = nodes.find(u"a"_qs);
    QVERIFY((*found)->displayName.isEmpty());
    QVERIFY((*found)->team.isEmpty());
}

void TestLeaderboard::onlineNodesPerStageAreCapped() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    NodeRegistry nodes(*db);
    for (int i = 0; i < 5; ++i) {
        const QString id = u"s0-%1"_qs.arg(i);
        QVERIFY(nodes.admit(node(id, i == 3 ? u"Three"_qs : QString()), 0));
        QVERIFY(nodes.setStage(id, 0));
        QVERIFY(grant(*db, id, kNow, (i + 1) * kCredit));
    }
    QVERIFY(nodes.admit(node(u"s1-a"_qs), 0));
    QVERIFY(nodes.setStage(u"s1-a"_qs, 1));
    QVERIFY(nodes.admit(node(u"s1-gone"_qs), 0));
    QVERIFY(nodes.setStage(u"s1-gone"_qs, 1));
    QVERIFY(nodes.setState(u"s1-gone"_qs, NodeState::Offline, 1));
    QVERIFY(nodes.admit(node(u"unassigned"_qs), 0)); // no stage yet: not listed

    Result<std::vector<OnlineNode>> online = nodes.onlineByStage(3);
    QVERIFY2(online, failure(online));
    QCOMPARE(online->size(), std::size_t(4)); // 3 of stage 0, then stage 1's one online node
    QCOMPARE(online->at(0).nodeId, u"s0-4"_qs);
    QCOMPARE(online->at(0).microCredits, 5 * kCredit);
    QCOMPARE(online->at(1).nodeId, u"s0-3"_qs);
    QCOMPARE(online->at(1).displayName, u"Three"_qs);
    QCOMPARE(online->at(2).nodeId, u"s0-2"_qs);
    QCOMPARE(online->at(3).nodeId, u"s1-a"_qs);
    QCOMPARE(online->at(3).stage, 1);
    QCOMPARE(online->at(3).microCredits, qint64(0));
    QCOMPARE(online->at(3).benchGflops, 10.0);
}

void TestLeaderboard::lossCurveSpansTheWholeRunInFewPoints() {
    std::unique_ptr<Database> db = open(freshUrl());
    if (!db)
        return;
    // Two "processes" of one run: steps 1-600, then 601-1000 after a restart.
    qint64 lastTokens = 0;
    for (int process = 0; process < 2; ++process) {
        TrainingStore store(*db);
        Result<TrainingState> state = store.resume(process * 1000);
        QVERIFY2(state, failure(state));
        for (int step = process == 0 ? 1 : 601; step <= (process == 0 ? 600 : 1000); ++step) {
            state->tokens += 100;
            store.stepped(step, 10.0 - step / 200.0, *state, step);
            lastTokens = state->tokens;
        }
        QVERIFY(store.flush());
    }
    TrainingStore store(*db);
    Result<std::vector<LossPoint>> curve = store.lossCurve(100);
    QVERIFY2(curve, failure(curve));
    QVERIFY(curve->size() <= 100);
    QVERIFY(curve->size() >= 90);
    QCOMPARE(curve->back().step, qint64(1000));
    QCOMPARE(curve->back().tokens, lastTokens);
    QVERIFY(curve->front().step <= 10);
    // Each point is the mean of its steps: the first bucket holds steps 1-10.
    QVERIFY(qAbs(curve->front().loss - (10.0 - 5.5 / 200.0)) < 1e-9);

    // Few steps: each one as it is.
    curve = store.lossCurve(5000);
    QVERIFY2(curve, failure(curve));
    QCOMPARE(curve->size(), std::size_t(1000));
    QCOMPARE(curve->front().step, qint64(1));
}

QTEST_GUILESS_MAIN(TestLeaderboard)
#include "test_leaderboard.moc"
