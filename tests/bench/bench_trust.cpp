// SPDX-License-Identifier: Apache-2.0
// bench_trust: dishonest nodes in a real swarm — tessera-coordinator and six tessera-node
// processes (3 stages × 2 replicas, tiny, subspace codec) on loopback — measured side by side:
//   1. per attack (TESSERA_TEST_MISBEHAVE on one node of six, then on two of six in different
//      stages): seconds and microbatches of the swarm until each liar is caught, how it was caught,
//      and the credit it kept (receipts) and had forfeited;
//   2. the loss at equal steps (equal tokens) of runs with one liar (noise, scale, flip, poison) on
//      the middle stage against two honest runs (their difference is the run-to-run spread), and
//      with the checks off; false strikes, refused and suspected results, the honest statistics'
//      worst deviations;
//   3. tokens/s with the checks and audits on, the checks on without audits, and all off
//      (--result-checks 0), same swarm; over the whole run and its second half; the coordinator's
//      CPU share.
//
//   4. (PARTS containing 4) at 8b's path, all honest: tokens/s with the gradient-share checks at 25% of
//      steps, off, and every check off, twice each; then six more honest runs with every check on — the
//      false strikes over eight honest runs.
//   5. (PARTS containing 5) at 8b's path: the loss at equal steps of a run with one liar (node 1, on the stage
//      admission gives it)
//      (ATTACKS, default noise,scale,flip,tokens,identity,stale,reverse,poison) against two honest runs.
//
// bench_trust [STEPS=150] [DIR] [PARTS=123] [ATTACKS=echo,zeros,nan,noise,scale,flip,loss,poison]
// Everything is printed; nothing is asserted.
#include "BenchSwarm.h"

#include "common/Identity.h"

#include <QSqlDatabase>
#include <QSqlQuery>

#include <numeric>

using namespace tessera::bench;

namespace {

constexpr int kNodes = 6;
constexpr int kTrustStages = 3;

QStringList trustArguments(int maxSteps, bool checks = true, bool audits = true, bool reexecutionOnly = false,
                           int sharePercent = -1) {
    QStringList a{QStringLiteral("--model"),
                  QStringLiteral("tiny"),
                  QStringLiteral("--stages"),
                  QString::number(kTrustStages),
                  QStringLiteral("--codec"),
                  QStringLiteral("subspace"),
                  QStringLiteral("--batch"),
                  QString::number(kBatch),
                  QStringLiteral("--seq"),
                  QString::number(kSeq),
                  QStringLiteral("--microbatches-per-step"),
                  QString::number(kMicrobatches),
                  QStringLiteral("--credit-interval-ms"),
                  QStringLiteral("2000"),
                  QStringLiteral("--credit-escrow-ms"),
                  QStringLiteral("5000")};
    if (maxSteps > 0)
        a << QStringLiteral("--max-steps") << QString::number(maxSteps);
    if (!checks)
        a << QStringLiteral("--result-checks") << QStringLiteral("0");
    if (!checks || !audits)
        a << QStringLiteral("--audit-percent-new") << QStringLiteral("0")
          << QStringLiteral("--audit-percent-trusted") << QStringLiteral("0");
    if (reexecutionOnly) // 8b's path: nothing recomputed on the coordinator, every draw re-executed
        a << QStringLiteral("--recompute-limit") << QStringLiteral("0");
    if (sharePercent >= 0)
        a << QStringLiteral("--share-check-percent") << QString::number(sharePercent);
    return a;
}

// One value from the coordinator's SQLite file, read while it runs.
qint64 sqlValue(const QString& dir, const QString& query, const QVariantList& values = {}) {
    const QString name = QStringLiteral("bench-trust");
    qint64 out = -1;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(dir + QStringLiteral("/coordinator/coordinator.sqlite"));
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=5000"));
        if (db.open()) {
            QSqlQuery q(db);
            q.prepare(query);
            for (const QVariant& v : values)
                q.addBindValue(v);
            if (q.exec() && q.next())
                out = q.value(0).toLongLong();
        }
    }
    QSqlDatabase::removeDatabase(name);
    return out;
}

QString nodeIdOf(LocalSwarm& swarm, int index) {
    tessera::Result<tessera::Identity> id =
        tessera::Identity::load(swarm.nodeDir(index) + QStringLiteral("/node.key"));
    return id ? id->nodeId() : QString();
}

struct Caught {
    QString mode;
    int liars = 0;
    int caught = 0;
    double seconds = 0;      // after the swarm's step 2, until the last liar was caught
    qint64 microbatches = 0; // completed by the swarm meanwhile (each crosses every stage once)
    QString how;             // "refused" (on arrival) or "audit"
    qint64 receipts = 0;     // the liars' credit receipts (FLOPs)
    qint64 forfeitedFlop = 0;
};

// Six nodes, the liars among them (by index), until every liar is caught or timeoutS passes.
Caught attack(const QString& dir, const QString& mode, const QList<int>& liars, int timeoutS) {
    Caught c;
    c.mode = mode;
    c.liars = int(liars.size());
    LocalSwarm swarm(dir, trustArguments(0));
    if (!startCoordinator(swarm))
        return c;
    QProcessEnvironment lie;
    lie.insert(QStringLiteral("TESSERA_TEST_MISBEHAVE"), mode);
    for (int i = 0; i < kNodes; ++i) {
        swarm.addNode({}, liars.contains(i) ? lie : QProcessEnvironment());
        swarm.waitWorking(i + 1, 60'000); // one at a time: stages 0,1,2,0,1,2
    }
    QStringList ids;
    for (int i : liars)
        ids << nodeIdOf(swarm, i);
    if (!waitStep(swarm, 2, 300'000))
        return c;
    const qint64 startCompleted = swarm.get(QStringLiteral("/v1/status"))
                                      .value(u"microbatches")
                                      .toObject()
                                      .value(u"completed")
                                      .toInteger();
    QElapsedTimer t;
    t.start();
    QSet<QString> caught;
    note(QStringLiteral("  %1 x%2: watching %3").arg(mode).arg(liars.size()).arg(ids.join(u' ').left(60)));
    while (t.elapsed() < timeoutS * 1000 && caught.size() < ids.size()) {
        for (const QString& id : ids)
            if (!caught.contains(id) &&
                sqlValue(dir,
                         QStringLiteral("SELECT strikes + audits_failed FROM reputation WHERE subject = ?"),
                         {QString(QStringLiteral("node:") + id)}) > 0) {
                caught.insert(id);
                c.seconds = double(t.elapsed()) / 1000;
                c.microbatches = swarm.get(QStringLiteral("/v1/status"))
                                     .value(u"microbatches")
                                     .toObject()
                                     .value(u"completed")
                                     .toInteger() -
                                 startCompleted;
            }
        sleepWithEvents(250);
    }
    c.caught = int(caught.size());
    sleepWithEvents(8000); // escrow and a grant interval: what would be paid is paid now
    for (const QString& id : ids) {
        const bool audited =
            sqlValue(dir, QStringLiteral("SELECT audits_failed FROM reputation WHERE subject = ?"),
                     {QString(QStringLiteral("node:") + id)}) > 0;
        c.how += (c.how.isEmpty() ? QString() : QStringLiteral("+")) +
                 (audited ? QStringLiteral("audit") : QStringLiteral("refused"));
        c.receipts += std::max<qint64>(
            0,
            sqlValue(dir,
                     QStringLiteral("SELECT COALESCE(SUM(flop), 0) FROM credit_receipts WHERE node_id = ?"),
                     {id}));
        c.forfeitedFlop += std::max<qint64>(
            0,
            sqlValue(dir,
                     QStringLiteral("SELECT COALESCE(SUM(flop), 0) FROM credit_forfeits WHERE node_id = ?"),
                     {id}));
    }
    swarm.stop();
    return c;
}

struct Run {
    double loss = std::nan("");
    double tokensPerSecond = 0;     // from step 2 to the last
    double lateTokensPerSecond = 0; // over the second half of the steps (most nodes past probation)
    double coordinatorCpuShare = 0; // the coordinator's CPU seconds / wall seconds, from step 2
    qint64 strikes = 0, auditsFailed = 0, refused = 0, suspected = 0, checked = 0, audits = 0;
    QJsonObject statistics;  // trust.statistics of /v1/status at the end
    QJsonObject reexecution; // trust.reexecution of /v1/status at the end
    QJsonObject shares;      // trust.shares
    qint64 creditedFlop = 0; // the routed work's FLOPs
};

qint64 stepOf(const QJsonObject& status) {
    return status.value(u"step").toInteger();
}

// A run to `steps` with an optional liar; loss = mean of the last 10 steps. Throughput counts
// steps (each is kMicrobatches × kBatch × kSeq tokens), so a run with a microbatch abandoned
// counts the same tokens as one without. The liar is node 1 (the middle stage when admission fills stages in order).
Run train(const QString& dir, int steps, const QString& liarMode, bool checks, bool audits = true,
          bool reexecutionOnly = false, int sharePercent = -1) {
    Run r;
    LocalSwarm swarm(dir, trustArguments(steps, checks, audits, reexecutionOnly, sharePercent));
    if (!startCoordinator(swarm))
        return r;
    QProcessEnvironment lie;
    lie.insert(QStringLiteral("TESSERA_TEST_MISBEHAVE"), liarMode);
    for (int i = 0; i < kNodes; ++i) {
        swarm.addNode({}, i == 1 && !liarMode.isEmpty() ? lie : QProcessEnvironment());
        // Not waiting on the liar, which may be banned by now (waiting for it let a run pass its last step).
        swarm.waitWorking(liarMode.isEmpty() || i < 1 ? i + 1 : i, 60'000);
    }
    if (!waitStep(swarm, 2, 300'000))
        return r;
    const qint64 tokensPerStep = qint64(kMicrobatches) * kBatch * kSeq;
    const qint64 startStep = stepOf(swarm.get(QStringLiteral("/v1/status")));
    const double startCpu = processCpuSeconds(swarm.coordinatorPid());
    QElapsedTimer t;
    t.start();
    if (!waitStep(swarm, steps / 2, 3'600'000))
        return r;
    const qint64 halfStep = stepOf(swarm.get(QStringLiteral("/v1/status")));
    const qint64 halfMs = t.elapsed();
    if (!waitStep(swarm, steps, 3'600'000))
        return r;
    const QJsonObject s = swarm.get(QStringLiteral("/v1/status"));
    const double seconds = double(t.elapsed()) / 1000;
    r.tokensPerSecond = double((stepOf(s) - startStep) * tokensPerStep) / seconds;
    r.lateTokensPerSecond =
        double((stepOf(s) - halfStep) * tokensPerStep) / (double(t.elapsed() - halfMs) / 1000);
    r.coordinatorCpuShare = (processCpuSeconds(swarm.coordinatorPid()) - startCpu) / seconds;
    double sum = 0;
    int n = 0;
    for (const QJsonValue& p : s.value(u"loss_curve").toArray()) {
        const QJsonArray a = p.toArray();
        if (a.at(0).toInteger() > steps - 10 && a.at(0).toInteger() <= steps) { // equal steps: not past them
            sum += a.at(1).toDouble();
            ++n;
        }
    }
    r.loss = n ? sum / n : std::nan("");
    const QJsonObject trust = s.value(u"trust").toObject();
    r.refused = trust.value(u"results_refused").toInteger();
    r.suspected = trust.value(u"results_suspected").toInteger();
    r.checked = trust.value(u"results_checked").toInteger();
    r.audits = trust.value(u"audits").toInteger();
    r.statistics = trust.value(u"statistics").toObject();
    r.reexecution = trust.value(u"reexecution").toObject();
    r.shares = trust.value(u"shares").toObject();
    r.creditedFlop = s.value(u"credits_granted_flop").toInteger();
    r.strikes = sqlValue(dir, QStringLiteral("SELECT COALESCE(SUM(strikes), 0) FROM reputation"));
    r.auditsFailed = sqlValue(dir, QStringLiteral("SELECT COALESCE(SUM(audits_failed), 0) FROM reputation"));
    swarm.stop();
    return r;
}

// Part 5: the (41) "loss within 2% of an honest run at equal tokens", where replicas agree: two
// honest runs give the spread, every liar's run its ratio to their mean. `attacks` empty: the default list.
void lossAgainstHonest(const QString& root, int steps, const QStringList& attacks) {
    std::printf(
        "\n5. %d steps, 8b's path (--recompute-limit 0, shares checked on 25%% of steps): the loss with "
        "one liar (node 1: on the stage admission gives it) against honest runs at equal steps\n",
        steps);
    const QStringList liars =
        !attacks.isEmpty() ? attacks : QStringList{QStringLiteral("noise"),    QStringLiteral("scale"),
                                                   QStringLiteral("flip"),     QStringLiteral("tokens"),
                                                   QStringLiteral("identity"), QStringLiteral("stale"),
                                                   QStringLiteral("reverse"),  QStringLiteral("poison")};
    std::printf("%-24s %8s %10s %8s %8s %10s\n", "run", "loss", "vs honest", "tok/s", "strikes", "convicted");
    std::vector<double> honest;
    const auto row = [&](const QString& name, const QString& liar) {
        const Run r = train(QStringLiteral("%1/train-5-%2").arg(root, QString(name).replace(u' ', u'-')),
                            steps, liar, true, true, true, 25);
        if (liar.isEmpty())
            honest.push_back(r.loss);
        const double mean = honest.empty()
                                ? std::nan("")
                                : std::accumulate(honest.begin(), honest.end(), 0.0) / double(honest.size());
        std::printf(
            "%-24s %8.4f %+9.2f%% %8.0f %8lld %10lld\n", qPrintable(name), r.loss, 100 * (r.loss / mean - 1),
            r.tokensPerSecond, qlonglong(r.strikes),
            qlonglong(r.reexecution.value(u"convictions").toInteger() +
                      r.reexecution.value(u"bisections").toObject().value(u"convictions").toInteger() +
                      r.reexecution.value(u"bisections").toObject().value(u"spot_convictions").toInteger()));
        std::fflush(stdout);
    };
    row(QStringLiteral("honest"), {});
    row(QStringLiteral("honest, again"), {});
    for (const QString& liar : liars)
        row(liar + QStringLiteral(" liar"), liar);
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments();
    const int steps = args.size() > 1 ? args.at(1).toInt() : 150;
    QTemporaryDir temp;
    const QString root = args.size() > 2 && !args.at(2).isEmpty() ? args.at(2) : temp.path();
    const QString parts = args.size() > 3 ? args.at(3) : QStringLiteral("123");
    std::printf("bench_trust: 3 stages x 2 replicas, tiny, subspace, batch %d x %d, %d microbatches/step; "
                "load %s\n",
                kBatch, kSeq, kMicrobatches, qPrintable(loadAverage()));
    std::fflush(stdout);

    if (parts.contains(u'1')) {
        std::printf(
            "\n1. Attacks: until caught (the swarm's microbatches completed meanwhile), credit kept\n");
        std::printf("%-8s %6s %7s %9s %13s %-14s %14s %16s\n", "attack", "liars", "caught", "seconds",
                    "microbatches", "how", "receipt FLOP", "forfeited FLOP");
        const QStringList modes =
            args.size() > 4
                ? args.at(4).split(u',', Qt::SkipEmptyParts)
                : QStringList{QStringLiteral("echo"),  QStringLiteral("zeros"), QStringLiteral("nan"),
                              QStringLiteral("noise"), QStringLiteral("scale"), QStringLiteral("flip"),
                              QStringLiteral("loss"),  QStringLiteral("poison")};
        // The first three nodes take stages 0, 1, 2 (each empty then): node 1 is on the middle stage,
        // node 2 on the last. Echo exists only on a middle stage and the fake loss only on the last:
        // those attacks run with one liar; the others also with two (the middle and the last stage).
        int n = 0;
        for (const QString& mode : modes)
            for (const QList<int>& liars : {QList<int>{mode == u"loss" ? 2 : 1}, QList<int>{1, 2}}) {
                if (liars.size() == 2 && (mode == u"echo" || mode == u"loss"))
                    continue;
                const Caught c = attack(QStringLiteral("%1/attack-%2").arg(root).arg(n++), mode, liars, 300);
                std::printf("%-8s %4d/6 %7d %9.1f %13lld %-14s %14lld %16lld\n", qPrintable(c.mode), c.liars,
                            c.caught, c.seconds, qlonglong(c.microbatches), qPrintable(c.how),
                            qlonglong(c.receipts), qlonglong(c.forfeitedFlop));
                std::fflush(stdout);
            }
    }
    struct Row {
        const char* name;
        QString liar;
        bool checks;
        bool audits;
        bool reexecutionOnly = false; // --recompute-limit 0
        int sharePercent = -1;        // --share-check-percent (-1: the default)
    };
    const auto runRows = [&](const char* part, const std::vector<Row>& rows) {
        std::printf("%-24s %6s %8s %8s %6s %7s %7s %7s %6s %7s %6s\n", "run", "loss", "tok/s", "late",
                    "coord", "checked", "refused", "suspect", "audits", "strikes", "failed");
        for (const Row& row : rows) {
            const Run r =
                train(QStringLiteral("%1/train-%2-%3")
                          .arg(root, QLatin1String(part))
                          .arg(QString::fromLatin1(row.name).replace(u' ', u'-').replace(u',', u'-')),
                      steps, row.liar, row.checks, row.audits, row.reexecutionOnly, row.sharePercent);
            std::printf("%-24s %6.3f %8.0f %8.0f %5.0f%% %7lld %7lld %7lld %6lld %7lld %6lld\n", row.name,
                        r.loss, r.tokensPerSecond, r.lateTokensPerSecond, 100 * r.coordinatorCpuShare,
                        qlonglong(r.checked), qlonglong(r.refused), qlonglong(r.suspected),
                        qlonglong(r.audits), qlonglong(r.strikes), qlonglong(r.auditsFailed));
            if (r.reexecution.value(u"started").toInteger() > 0)
                std::printf("  re-executions: %lld started, %lld agreed (worst per-token error %.3g), %lld unsettled, "
                            "%lld convictions; their compute %.1f%% of the routed work's\n",
                            qlonglong(r.reexecution.value(u"started").toInteger()),
                            qlonglong(r.reexecution.value(u"agreed").toInteger()),
                            r.reexecution.value(u"worst_agreed_error").toDouble(),
                            qlonglong(r.reexecution.value(u"unsettled").toInteger()),
                            qlonglong(r.reexecution.value(u"convictions").toInteger()),
                            r.creditedFlop > 0 ? 100.0 * double(r.reexecution.value(u"flop").toInteger()) /
                                                     double(r.creditedFlop)
                                               : 0.0);
            if (r.shares.value(u"checked").toInteger() > 0)
                std::printf(
                    "  share checks: %lld checked, %lld passed (%lld on a second look), %lld struck, %lld "
                    "unsettled; lowest alignment %.3g, highest norm ratio %.3g\n",
                    qlonglong(r.shares.value(u"checked").toInteger()),
                    qlonglong(r.shares.value(u"passed").toInteger()),
                    qlonglong(r.shares.value(u"second_looks_passed").toInteger()),
                    qlonglong(r.shares.value(u"struck").toInteger()),
                    qlonglong(r.shares.value(u"unsettled").toInteger()),
                    r.shares.value(u"lowest_passed_alignment").toDouble(),
                    r.shares.value(u"highest_passed_norm_ratio").toDouble());
            const QJsonObject metrics = r.statistics.value(u"metrics").toObject();
            if (row.liar.isEmpty() && row.checks && !metrics.isEmpty()) {
                QString line =
                    QStringLiteral(
                        "  honest statistics, worst accepted (robust deviations; refused above %1):")
                        .arg(r.statistics.value(u"threshold_deviations").toDouble());
                for (auto it = metrics.begin(); it != metrics.end(); ++it)
                    line += QStringLiteral(" %1 %2 (n=%3)")
                                .arg(it.key())
                                .arg(it.value().toObject().value(u"worst_accepted_deviations").toDouble(), 0,
                                     'f', 2)
                                .arg(it.value().toObject().value(u"judged").toInteger());
                std::printf("%s\n", qPrintable(line));
            }
            std::fflush(stdout);
        }
    };
    if (parts.contains(u'2')) {
        std::printf("\n2. %d steps: the loss (mean of the last 10 steps) with one liar on the middle stage\n",
                    steps);
        runRows("2", {Row{"honest", {}, true, true}, Row{"honest, again", {}, true, true},
                      Row{"noise liar", QStringLiteral("noise"), true, true},
                      Row{"scale liar", QStringLiteral("scale"), true, true},
                      Row{"flip liar", QStringLiteral("flip"), true, true},
                      Row{"poison liar", QStringLiteral("poison"), true, true},
                      Row{"noise liar, checks off", QStringLiteral("noise"), false, false}});
    }
    if (parts.contains(u'3')) {
        std::printf("\n3. %d steps, all honest: what the checks cost (tokens/s from step 2; late: the second "
                    "half; coord: the coordinator's CPU share)\n",
                    steps);
        runRows("3", {Row{"checks on", {}, true, true}, Row{"checks on, no audits", {}, true, false},
                      Row{"checks off", {}, false, false},
                      Row{"checks on, recompute limit 0", {}, true, true, true},
                      Row{"checks off, again", {}, false, false}});
    }
    if (parts.contains(u'4')) {
        std::printf(
            "\n4. %d steps, all honest, 8b's path (--recompute-limit 0): the share checks' cost side by side "
            "(25%% of steps, 0, checks off), then eight honest runs with every check on: false strikes\n",
            steps);
        std::vector<Row> rows;
        for (int round = 0; round < 2; ++round) {
            rows.push_back(Row{round ? "shares checked, again" : "shares checked", {}, true, true, true, 25});
            rows.push_back(
                Row{round ? "shares unchecked, again" : "shares unchecked", {}, true, true, true, 0});
            rows.push_back(Row{round ? "checks off, again" : "checks off", {}, false, false, true, 0});
        }
        for (const char* name : {"honest 3", "honest 4", "honest 5", "honest 6", "honest 7", "honest 8"})
            rows.push_back(Row{name, {}, true, true, true, 25});
        runRows("4", rows);
    }
    if (parts.contains(u'5'))
        lossAgainstHonest(root, steps,
                          args.size() > 4 ? args.at(4).split(u',', Qt::SkipEmptyParts) : QStringList());
    return 0;
}
