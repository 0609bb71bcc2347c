// SPDX-License-Identifier: Apache-2.0
// The operator's page as a browser shows it: headless Chromium (Debian's `chromium`) loads the real
// coordinator's page over HTTPS and its DOM is read after the script refreshed it a few times. The
// run has history from an earlier process (30 steps of loss, two volunteers' credits: one named, one
// anonymous), and a real tessera-node joins with --display-name and --team. The page must show the
// stage numbered from 1, the node's row with its name, team and state, big numbers with thousands
// separators, the leaderboard of nodes and teams, and one loss curve across the restart. Then the
// same page against a coordinator that stops answering after its first answers shows the error line
// and keeps what it had. Skipped, saying so, where chromium is not installed.
#include "CoordinatorHttp.h"
#include "CoordinatorProcess.h"
#include "NodeProcess.h"
#include "TestSupport.h"
#include "common/Identity.h"
#include "coordinator/store/CreditLedger.h"
#include "coordinator/store/Database.h"
#include "coordinator/store/NodeRegistry.h"
#include "coordinator/store/TrainingStore.h"

#include <QDateTime>
#include <QJsonArray>
#include <QNetworkAccessManager>
#include <QRegularExpression>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QStandardPaths>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <memory>

using namespace tessera;
using namespace tessera::test;

namespace {

constexpr qint64 kCredit = 1'000'000; // micro-credits
constexpr qint64 kDayMs = 24 * 3600 * 1000LL;

// A stand-in for a coordinator that stops answering: it serves the page and the first
// `apiAnswers` /v1 requests as recorded from the real one, then drops every /v1 connection unanswered.
class StoppingCoordinator final {
public:
    StoppingCoordinator(QHash<QByteArray, QByteArray> bodies, int apiAnswers)
        : m_bodies(std::move(bodies))
        , m_apiAnswers(apiAnswers) {
        QObject::connect(&m_server, &QTcpServer::newConnection, [this] {
            while (QTcpSocket* socket = m_server.nextPendingConnection())
                QObject::connect(socket, &QTcpSocket::readyRead, socket, [this, socket] { answer(socket); });
        });
    }
    bool listen() { return m_server.listen(QHostAddress::LocalHost); }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1/").arg(m_server.serverPort()); }

private:
    void answer(QTcpSocket* socket) {
        QByteArray& request = m_requests[socket];
        request += socket->readAll();
        if (!request.contains("\r\n\r\n"))
            return;
        const QByteArray path = request.split(' ').value(1).split('?').value(0);
        m_requests.remove(socket);
        if (path.startsWith("/v1/") && m_apiAnswers-- <= 0) {
            socket->abort(); // not answering any more
            socket->deleteLater();
            return;
        }
        const QByteArray type = path == "/"             ? "text/html; charset=utf-8"
                                : path.endsWith(".js")  ? "text/javascript"
                                : path.endsWith(".css") ? "text/css"
                                                        : "application/json";
        const bool known = m_bodies.contains(path);
        const QByteArray body = known ? m_bodies.value(path) : QByteArray("{\"error\":\"not found\"}");
        socket->write((known ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.1 404 Not Found\r\n") +
                      QByteArray("Content-Type: ") + type + "\r\nContent-Length: " +
                      QByteArray::number(body.size()) + "\r\nConnection: close\r\n\r\n" + body);
        socket->disconnectFromHost();
        QObject::connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
    }

    QTcpServer m_server;
    QHash<QByteArray, QByteArray> m_bodies;
    QHash<QTcpSocket*, QByteArray> m_requests;
    int m_apiAnswers;
};

// The text of the element with this id, tags stripped (the dump is Chromium's serialised DOM).
QString section(const QString& dom, const QString& id) {
    const qsizetype at = dom.indexOf(u"id=\"" + id + u'"');
    if (at < 0)
        return {};
    const qsizetype end = dom.indexOf(QStringLiteral("</section>"), at);
    QString text = dom.mid(at, end < 0 ? -1 : end - at);
    text.replace(QRegularExpression(QStringLiteral("<[^>]*>")), QStringLiteral(" "));
    return text.simplified();
}

} // namespace

class TestOperatorPage final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void pageShowsTheSwarmAfterRefreshing();
    void pageSaysWhenTheCoordinatorStopsAnswering();

private:
    // Chromium's DOM of `url` once `virtualMs` of (virtual) time went by: the page's timers run
    // that long, its fetches are waited for.
    QString renderedDom(const QString& url, int virtualMs);
    HttpReply get(const QString& path) { return httpRequest(m_net, m_ssl, m_coordinator->url() + path); }
    void seedEarlierProcess(const QString& runDir);

    QString m_chromium;
    QTemporaryDir m_dir;
    int m_profiles = 0;
    std::unique_ptr<CoordinatorProcess> m_coordinator;
    QNetworkAccessManager m_net;
    QSslConfiguration m_ssl;
    QHash<QByteArray, QByteArray> m_recorded; // path → body, for the stand-in coordinator
};

void TestOperatorPage::initTestCase() {
    m_chromium = QStandardPaths::findExecutable(QStringLiteral("chromium"));
    if (m_chromium.isEmpty())
        QSKIP("chromium is not installed (Debian: apt-get install chromium; scripts/install-deps.sh has it)");
    QVERIFY(m_dir.isValid());
}

QString TestOperatorPage::renderedDom(const QString& url, int virtualMs) {
    ProcessOptions options;
    options.environment.insert(QStringLiteral("LANG"), QStringLiteral("en_US.UTF-8"));
    options.environment.remove(QStringLiteral("LC_ALL"));
    options.timeoutMs = 60'000;
    const ProcessRun run = runProcess(
        m_chromium,
        {QStringLiteral("--headless"), QStringLiteral("--disable-gpu"), QStringLiteral("--no-sandbox"),
         QStringLiteral("--ignore-certificate-errors"), QStringLiteral("--no-first-run"),
         QStringLiteral("--lang=en-US"),
         QStringLiteral("--user-data-dir=") + m_dir.filePath(QStringLiteral("chromium-%1").arg(++m_profiles)),
         QStringLiteral("--virtual-time-budget=%1").arg(virtualMs), QStringLiteral("--dump-dom"), url},
        options);
    if (run.exitCode != 0)
        qWarning("chromium exited with %d: %s", run.exitCode, run.err.right(2000).constData());
    return QString::fromUtf8(run.out);
}

// What an earlier process of the run left: 30 steps of loss, a named volunteer of the team the
// test's node joins and an anonymous one, with their (signed) receipts; both long offline.
void TestOperatorPage::seedEarlierProcess(const QString& runDir) {
    Result<Identity> key = Identity::load(runDir + QStringLiteral("/coordinator.key"));
    QVERIFY2(key, failure(key));
    Result<std::unique_ptr<coordinator::Database>> db = coordinator::Database::open(QString(), runDir);
    QVERIFY2(db, failure(db));
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    coordinator::TrainingStore store(**db);
    Result<coordinator::TrainingState> state = store.resume(now - kDayMs);
    QVERIFY2(state, failure(state));
    for (int step = 1; step <= 30; ++step) {
        state->tokens += 4096;
        store.stepped(step, 5.5 - step * 0.05, *state, now - kDayMs + step * 60'000);
    }
    QVERIFY(store.flush());

    coordinator::NodeRegistry nodes(**db);
    coordinator::CreditLedger ledger(**db);
    const auto sign = [&](const QByteArray& payload) -> Result<QByteArray> { return key->sign(payload); };
    for (const auto& [id, name, credits] :
         {std::tuple{QStringLiteral("aa11"), QStringLiteral("Grace Hopper"), 1'234'567 * kCredit},
          std::tuple{QStringLiteral("bb22"), QString(), 2'500 * kCredit}}) {
        coordinator::NodeAdmission a{
            id,  QStringLiteral("pk"), QStringLiteral("{}"), QStringLiteral("{}"), QStringLiteral("0.2.0"),
            10.0};
        a.displayName = name;
        a.team = name.isEmpty() ? QString() : QStringLiteral("Chromium Testers");
        QVERIFY(nodes.admit(a, now - 2 * kDayMs));
        QVERIFY(nodes.setState(id, coordinator::NodeState::Offline, now - 2 * kDayMs));
        QVERIFY(ledger.append(id, now - 2 * kDayMs, credits * 1000, credits, sign));
    }
}

void TestOperatorPage::pageShowsTheSwarmAfterRefreshing() {
    const QString run = m_dir.filePath(QStringLiteral("run"));
    const QStringList args{QStringLiteral("--data-dir"), run,
                           QStringLiteral("--listen"),   QStringLiteral("127.0.0.1:0"),
                           QStringLiteral("--model"),    QStringLiteral("tiny"),
                           QStringLiteral("--stages"),   QStringLiteral("1")};
    m_coordinator = std::make_unique<CoordinatorProcess>(args);
    QVERIFY2(m_coordinator->waitReady(), m_coordinator->err().constData());
    QCOMPARE(m_coordinator->terminate(15'000), 0); // the earlier process
    seedEarlierProcess(run);
    if (QTest::currentTestFailed())
        return;
    m_coordinator = std::make_unique<CoordinatorProcess>(args);
    QVERIFY2(m_coordinator->waitReady(), m_coordinator->err().constData());
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.setCaCertificates(QSslCertificate::fromPath(run + QStringLiteral("/tls.crt")));

    NodeProcess node(m_coordinator->url(), m_dir.filePath(QStringLiteral("node")),
                     run + QStringLiteral("/tls.crt"),
                     {QStringLiteral("--display-name"), QStringLiteral("Headless Ada"),
                      QStringLiteral("--team"), QStringLiteral("Chromium Testers")},
                     oneComputeThread());
    // Training, and a step of this process beyond the earlier one's 30.
    const bool training = QTest::qWaitFor(
        [&] {
            QTest::qWait(300); // a few requests a second: the coordinator has work to do
            const QJsonObject n = get(QStringLiteral("/v1/nodes"))
                                      .json()
                                      .value(u"stages")
                                      .toArray()
                                      .at(0)
                                      .toObject()
                                      .value(u"nodes")
                                      .toArray()
                                      .at(0)
                                      .toObject();
            return n.value(u"state").toString() == u"training" &&
                   get(QStringLiteral("/v1/status")).json().value(u"step").toInteger() > 30;
        },
        90'000);
    QVERIFY2(training, node.log().right(3000).constData());

    // The real node earns its first credit (signed by the coordinator's key, as the data plane would).
    QString nodeId;
    {
        Result<Identity> key = Identity::load(run + QStringLiteral("/coordinator.key"));
        QVERIFY2(key, failure(key));
        Result<std::unique_ptr<coordinator::Database>> db = coordinator::Database::open(QString(), run);
        QVERIFY2(db, failure(db));
        Result<std::vector<coordinator::NodeRecord>> online =
            coordinator::NodeRegistry(**db).list(coordinator::NodeState::Online);
        QVERIFY2(online && online->size() == 1, failure(online));
        QCOMPARE(online->front().displayName, QStringLiteral("Headless Ada"));
        nodeId = online->front().nodeId;
        const auto sign = [&](const QByteArray& payload) -> Result<QByteArray> { return key->sign(payload); };
        QVERIFY(coordinator::CreditLedger(**db).append(online->front().nodeId,
                                                       QDateTime::currentMSecsSinceEpoch(),
                                                       1000 * kCredit * 1000, 1000 * kCredit, sign));
    }

    // Past the few seconds the coordinator keeps an answer.
    QVERIFY(QTest::qWaitFor(
        [&] {
            QTest::qWait(300);
            return get(QStringLiteral("/v1/leaderboard")).json().value(u"nodes").toArray().size() == 3 &&
                   get(QStringLiteral("/v1/nodes")).body.contains("\"credits\":1000");
        },
        15'000));

    // Three refreshes or more (one every 5 s of the page's time).
    const QString dom = renderedDom(m_coordinator->url() + u'/', 16'000);
    QVERIFY2(dom.contains(u"<h1>Tessera coordinator</h1>"), qPrintable(dom.left(2000)));
    const QRegularExpressionMatch refreshes =
        QRegularExpression(QStringLiteral("data-refreshes=\"(\\d+)\"")).match(dom);
    QVERIFY2(refreshes.hasMatch() && refreshes.captured(1).toInt() >= 2, qPrintable(dom.left(2000)));
    QVERIFY(
        QRegularExpression(QStringLiteral("id=\"updated\"[^>]*>Updated \\d+ s ago<")).match(dom).hasMatch());
    QVERIFY(QRegularExpression(QStringLiteral("id=\"error\"[^>]*hidden")).match(dom).hasMatch());

    // Stages from 1, as the app numbers them; never a stage 0.
    const QString stages = section(dom, QStringLiteral("stages-title"));
    QVERIFY2(stages.contains(u"Stage 1 1 1"), qPrintable(stages)); // stage, nodes online, training
    QVERIFY(!dom.contains(u"Stage 0"));

    // The node's row: its chosen name and team, its state, its credit.
    const QString nodes = section(dom, QStringLiteral("nodes-title"));
    QVERIFY2(nodes.contains(u"Stage 1 of 1 · 1 node"), qPrintable(nodes));
    // name, team, state, tokens/s, benchmark GFLOPS, credits
    QVERIFY2(
        QRegularExpression(QStringLiteral("Headless Ada Chromium Testers Training [\\d,.]+ [\\d,.]+ 1,000$"))
            .match(nodes)
            .hasMatch(),
        qPrintable(nodes));

    // The leaderboard: names only where chosen, separators in big numbers, the team's sum.
    const QString board = section(dom, QStringLiteral("leaderboard-title"));
    QVERIFY2(board.contains(u"1 Grace Hopper Chromium Testers 1,234,567 0"), qPrintable(board));
    QVERIFY2(board.contains(u"2 anonymous — 2,500 0"), qPrintable(board));
    QVERIFY2(board.contains(u"3 Headless Ada Chromium Testers 1,000 1,000"), qPrintable(board));
    QVERIFY2(board.contains(u"1 Chromium Testers 2 1,235,567 1,000"), qPrintable(board));
    QVERIFY(!dom.contains(nodeId)); // ids only shortened

    // The loss: the earlier process's 30 steps and this one's, in one curve.
    const QRegularExpressionMatch curve =
        QRegularExpression(QStringLiteral("<polyline class=\"curve\" points=\"([^\"]+)\"")).match(dom);
    QVERIFY2(curve.hasMatch(), qPrintable(section(dom, QStringLiteral("loss-title"))));
    QVERIFY(curve.captured(1).split(u' ').size() > 30);
    QVERIFY2(section(dom, QStringLiteral("loss-title")).contains(u"steps 1 to 3"),
             qPrintable(section(dom, QStringLiteral("loss-title"))));
    // The model's size with separators.
    QVERIFY(QRegularExpression(QStringLiteral("\\(\\d{1,3}(,\\d{3})+ parameters, 1 stage\\)"))
                .match(dom)
                .hasMatch());

    for (const char* path :
         {"/", "/operator.js", "/operator.css", "/v1/status", "/v1/nodes", "/v1/leaderboard", "/v1/loss"}) {
        const HttpReply r = get(QString::fromLatin1(path));
        QCOMPARE(r.status, 200);
        m_recorded.insert(path, r.body);
    }
}

void TestOperatorPage::pageSaysWhenTheCoordinatorStopsAnswering() {
    if (m_recorded.isEmpty())
        QSKIP("needs what the page showed in pageShowsTheSwarmAfterRefreshing");
    // Four answers: the first refresh's status, nodes, leaderboard and loss; nothing after.
    StoppingCoordinator stopping(m_recorded, 4);
    QVERIFY(stopping.listen());
    const QString dom = renderedDom(stopping.url(), 12'000);
    QVERIFY2(dom.contains(u"data-refreshes=\"1\""), qPrintable(dom.left(2000)));
    const QRegularExpressionMatch error =
        QRegularExpression(QStringLiteral("<p id=\"error\" class=\"error\" role=\"alert\">([^<]*)</p>"))
            .match(dom);
    QVERIFY2(error.hasMatch(), qPrintable(dom.left(3000)));
    QVERIFY2(error.captured(1).startsWith(u"The coordinator is not answering"),
             qPrintable(error.captured(1)));
    QVERIFY2(QRegularExpression(QStringLiteral("What you see is from \\d+ s ago"))
                 .match(error.captured(1))
                 .hasMatch(),
             qPrintable(error.captured(1)));
    // What it had stays on the page.
    QVERIFY(section(dom, QStringLiteral("nodes-title")).contains(u"Headless Ada"));
}

QTEST_GUILESS_MAIN(TestOperatorPage)
#include "test_operator_page.moc"
