// SPDX-License-Identifier: Apache-2.0
// FirstRunWizard against a real tessera-coordinator, with the real tessera-node started by the
// Manager: Contribute → measuring → the stage held → the download → contributing, then the
// dashboard and a live GPU limit on that node; Cancel stops the node; a coordinator that is not
// the pinned one is refused and the wizard says why and what to do. Before anything starts, the
// first page checks the address: a wrong one is said there and fixed in the field (Enter goes
// on), and a self-signed coordinator shows its fingerprint and is trusted on first use.
#include "UiTestSupport.h"

#include "CoordinatorProcess.h"
#include "manager/NodeStatusText.h"

#include "tray/ContributionActions.h"
#include "dashboard/DashboardWindow.h"
#include "wizard/FirstRunWizard.h"
#include "settings/SettingsDialog.h"
#include "dashboard/SwarmPanel.h"
#include "wizard/WelcomePage.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QSslCertificate>
#include <QTest>

#include <algorithm>

using namespace Qt::StringLiterals;
using namespace tessera;
using manager::AppSettings;
using manager::AppState;
using Page = ui::FirstRunWizard::Page;

class TestFirstRunWizard final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void contributeReachesContributing();
    void cancelStopsTheNode();
    void otherCoordinatorKeyIsExplained();
    void aWrongAddressIsFixedOnTheFirstPage();
    void anUnknownCertificateIsTrustedOnFirstUse();
    void enterContributesAndEscapeCloses();

private:
    // The app pointed at the test's coordinator, with the node's fast test flags.
    void configure(test::UiFixture& app, const QStringList& extra = {});
    static QByteArray nodeLog(test::UiFixture& app);

    QTemporaryDir m_dir;
    std::unique_ptr<CoordinatorProcess> m_coordinator;
};

void TestFirstRunWizard::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_coordinator = std::make_unique<CoordinatorProcess>(
        QStringList{u"--data-dir"_s, m_dir.filePath(u"run"_s), u"--listen"_s, u"127.0.0.1:0"_s, u"--model"_s,
                    u"tiny"_s, u"--stages"_s, u"1"_s, u"--heartbeat-timeout-ms"_s, u"3000"_s});
    QVERIFY2(m_coordinator->waitReady(), m_coordinator->err().constData());
}

void TestFirstRunWizard::configure(test::UiFixture& app, const QStringList& extra) {
    app.settings().setValue(AppSettings::Key::CoordinatorUrl, m_coordinator->url());
    app.settings().setValue(AppSettings::Key::CoordinatorCaFile, m_dir.filePath(u"run/tls.crt"_s));
    app.settings().setValue(AppSettings::Key::NodeProgram, QStringLiteral(TESSERA_NODE_PATH));
    // A short benchmark, fast heartbeats, and a download slow enough to be seen (1 MiB/s).
    app.manager().setExtraNodeArguments(QStringList{u"--bench-seconds"_s, u"0.5"_s, u"--heartbeat-ms"_s,
                                                    u"500"_s, u"--max-download-rate"_s, u"1024"_s} +
                                        extra);
}

QByteArray TestFirstRunWizard::nodeLog(test::UiFixture& app) {
    QFile log(app.manager().nodeDataDir() + u"/node.log"_s);
    return log.open(QIODevice::ReadOnly) ? log.readAll().right(3000) : QByteArray("(no node.log)");
}

void TestFirstRunWizard::contributeReachesContributing() {
    test::UiFixture app;
    configure(app);
    manager::Manager& manager = app.manager();
    manager.start();
    ui::FirstRunWizard wizard(manager);
    wizard.show();
    QCOMPARE(wizard.page(), Page::Welcome);
    QCOMPARE(test::child<QLineEdit>(wizard, u"coordinatorAddress"_s)->text(), m_coordinator->url());

    QList<Page> pages;
    connect(&wizard, &ui::FirstRunWizard::pageChanged, this, [&pages](Page page) { pages << page; });
    QStringList downloads; // what the download page said while the shard came
    connect(&manager, &manager::Manager::nodeStatusChanged, this, [&] {
        if (wizard.page() == Page::Download)
            downloads << wizard.text(Page::Download);
    });
    QTest::mouseClick(test::child<QPushButton>(wizard, u"contribute"_s), Qt::LeftButton);
    QVERIFY2(QTest::qWaitFor([&] { return wizard.page() == Page::Done; }, 120'000), nodeLog(app).constData());

    QCOMPARE(pages, (QList<Page>{Page::Benchmark, Page::Admission, Page::Download, Page::Done}));
    QVERIFY2(wizard.text(Page::Benchmark).contains(u"about ") &&
                 wizard.text(Page::Benchmark).contains(u"TFLOP/s"),
             qPrintable(wizard.text(Page::Benchmark)));
    QCOMPARE(wizard.text(Page::Admission), u"You hold stage 1 of 1 of the model"_s);
    QVERIFY2(std::any_of(downloads.cbegin(), downloads.cend(),
                         [](const QString& t) { return t.contains(u" MB of "); }),
             qPrintable(downloads.join(u'\n')));
    QVERIFY(app.reread()->flag(AppSettings::Key::FirstRunDone));
    QTRY_COMPARE_WITH_TIMEOUT(manager.state(), AppState::Contributing, 30'000);

    // The dashboard: this node's stage, and the swarm as the coordinator reports it.
    ui::ContributionActions actions(manager);
    ui::DashboardWindow dashboard(manager, actions);
    dashboard.show();
    QVERIFY(dashboard.stageText().startsWith(u"You hold stage 1 of 1 of the model"));
    if (manager::NodeStatusText::onCpu(manager.nodeStatus())) // no GPU here: said, and "CPU's time"
        QVERIFY2(dashboard.stageText().contains(
                     u"of the CPU's time\nNo NVIDIA GPU found — contributing with the CPU"),
                 qPrintable(dashboard.stageText()));
    QCOMPARE(dashboard.stateText(), u"Contributing to stage 1 of 1 of the model"_s);
    QTRY_VERIFY_WITH_TIMEOUT(dashboard.swarm().summary().startsWith(u"1 volunteer online"), 30'000);

    // The GPU limit reaches the running node at once.
    ui::SettingsDialog settings(manager);
    test::child<QSlider>(settings, u"gpuLimit"_s)->setValue(30);
    QTRY_COMPARE_WITH_TIMEOUT(manager.nodeStatus().value(u"compute_limit").toDouble(), 0.3, 15'000);
}

void TestFirstRunWizard::cancelStopsTheNode() {
    test::UiFixture app;
    configure(app, {u"--max-download-rate"_s, u"64"_s}); // the shard takes minutes: time to cancel
    manager::Manager& manager = app.manager();
    manager.start();
    ui::FirstRunWizard wizard(manager);
    wizard.show();
    QTest::mouseClick(test::child<QPushButton>(wizard, u"contribute"_s), Qt::LeftButton);
    QVERIFY2(QTest::qWaitFor([&] { return wizard.page() == Page::Download; }, 60'000),
             nodeLog(app).constData());
    QVERIFY(manager.supervisor().nodePid() != 0);

    QTest::mouseClick(test::child<QPushButton>(wizard, u"cancel"_s), Qt::LeftButton);
    QCOMPARE(wizard.page(), Page::Welcome);
    QCOMPARE(manager.state(), AppState::NotStarted);
    QVERIFY(!app.reread()->flag(AppSettings::Key::Contributing));
    QVERIFY(QTest::qWaitFor([&] { return manager.supervisor().nodePid() == 0; }, 15'000));
    QVERIFY(!app.reread()->flag(AppSettings::Key::FirstRunDone));
}

void TestFirstRunWizard::otherCoordinatorKeyIsExplained() {
    test::UiFixture app;
    // The node was told to expect another key than this coordinator's (a coordinator that
    // changed keys, or an address that now points elsewhere).
    configure(app, {u"--coordinator-key"_s, QString(43, u'A')});
    manager::Manager& manager = app.manager();
    manager.start();
    ui::FirstRunWizard wizard(manager);
    wizard.show();
    QTest::mouseClick(test::child<QPushButton>(wizard, u"contribute"_s), Qt::LeftButton);
    QVERIFY2(QTest::qWaitFor([&] { return wizard.refused(); }, 60'000), nodeLog(app).constData());
    QCOMPARE(wizard.page(), Page::Admission);
    QCOMPARE(manager.state(), AppState::Error);
    QVERIFY2(wizard.text(Page::Admission).contains(u"refusing the coordinator"),
             qPrintable(wizard.text(Page::Admission)));
    auto* retry = test::child<QPushButton>(wizard, u"retry"_s);
    QVERIFY(retry->isVisible());
    QVERIFY(!app.reread()->flag(AppSettings::Key::FirstRunDone));
}

void TestFirstRunWizard::aWrongAddressIsFixedOnTheFirstPage() {
    test::UiFixture app;
    configure(app);
    manager::Manager& manager = app.manager();
    // A typing mistake in the port: nothing listens there.
    app.settings().setValue(AppSettings::Key::CoordinatorUrl, u"https://127.0.0.1:1"_s);
    manager.start();
    ui::FirstRunWizard wizard(manager);
    wizard.show();
    auto* address = test::child<QLineEdit>(wizard, u"coordinatorAddress"_s);
    QCOMPARE(address->text(), u"https://127.0.0.1:1"_s);
    QTest::mouseClick(test::child<QPushButton>(wizard, u"contribute"_s), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!wizard.welcome().checking(), 15'000);

    // Said on the first page, in words, with nothing started and the address ready to be fixed.
    QCOMPARE(wizard.page(), Page::Welcome);
    QVERIFY2(wizard.text(Page::Welcome).startsWith(u"Nothing answers at 127.0.0.1:1"),
             qPrintable(wizard.text(Page::Welcome)));
    QCOMPARE(manager.state(), AppState::NotStarted);
    QCOMPARE(manager.supervisor().nodePid(), 0);
    QCOMPARE(address->selectedText(), address->text());
    QVERIFY(test::child<QWidget>(wizard, u"details"_s)->isVisible()); // Qt's own words, behind Details

    // The right address typed over it, and Enter: the coordinator answers and the node starts.
    address->clear();
    QTest::keyClicks(address, m_coordinator->url());
    QTest::keyClick(address, Qt::Key_Return);
    QVERIFY2(QTest::qWaitFor([&] { return wizard.page() != Page::Welcome; }, 15'000),
             qPrintable(wizard.text(Page::Welcome)));
    QCOMPARE(app.reread()->string(AppSettings::Key::CoordinatorUrl), m_coordinator->url());
    QVERIFY(QTest::qWaitFor([&] { return manager.supervisor().nodePid() != 0; }, 15'000));
}

void TestFirstRunWizard::anUnknownCertificateIsTrustedOnFirstUse() {
    test::UiFixture app;
    configure(app);
    // A newcomer's settings: the address only; the coordinator's certificate is self-signed.
    app.settings().setValue(AppSettings::Key::CoordinatorCaFile, QString());
    manager::Manager& manager = app.manager();
    manager.start();
    QElapsedTimer firstWindow;
    firstWindow.start();
    ui::FirstRunWizard wizard(manager);
    wizard.show();
    QTest::mouseClick(test::child<QPushButton>(wizard, u"contribute"_s), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!wizard.welcome().checking(), 15'000);

    // Its fingerprint, as `openssl x509 -fingerprint -sha256` prints it, and nothing started yet.
    const QList<QSslCertificate> served = QSslCertificate::fromPath(m_dir.filePath(u"run/tls.crt"_s));
    QCOMPARE(served.size(), 1);
    const QString expected =
        QString::fromLatin1(served.front().digest(QCryptographicHash::Sha256).toHex(':').toUpper());
    QCOMPARE(wizard.welcome().offeredFingerprint(), expected);
    QVERIFY(test::child<QWidget>(wizard, u"trustPanel"_s)->isVisible());
    QVERIFY(wizard.text(Page::Welcome).contains(u"no authority this computer trusts"));
    QCOMPARE(manager.supervisor().nodePid(), 0);

    // Trusted: pinned beside the settings, and on to contributing without another click.
    QTest::mouseClick(test::child<QPushButton>(wizard, u"trust"_s), Qt::LeftButton);
    QVERIFY2(QTest::qWaitFor([&] { return wizard.page() == Page::Done; }, 120'000),
             qPrintable(wizard.text(Page::Welcome) + u'\n' + QString::fromUtf8(nodeLog(app))));
    const QString pinned = app.reread()->string(AppSettings::Key::CoordinatorCaFile);
    QVERIFY2(pinned.startsWith(app.path(u"trusted/")), qPrintable(pinned));
    QCOMPARE(QSslCertificate::fromPath(pinned), served);
    QTRY_COMPARE_WITH_TIMEOUT(manager.state(), AppState::Contributing, 30'000);
    qInfo("first window to contributing: %.1f s (trusting the certificate included; tiny shard at 1 MiB/s)",
          double(firstWindow.elapsed()) / 1000);
}

// A dialog: Enter anywhere on the first page is Contribute (the check starts), Escape closes the
// wizard as Not now does, with nothing started.
void TestFirstRunWizard::enterContributesAndEscapeCloses() {
    test::UiFixture app;
    manager::Manager& manager = app.manager();
    manager.start();
    ui::FirstRunWizard wizard(manager);
    wizard.show();
    QVERIFY(QTest::qWaitForWindowActive(&wizard));
    QTest::keyClick(&wizard, Qt::Key_Return);
    QVERIFY(!wizard.text(Page::Welcome).isEmpty()); // "Checking…", then why it failed (port 1)
    QTRY_VERIFY_WITH_TIMEOUT(!wizard.welcome().checking(), 15'000);
    QCOMPARE(wizard.page(), Page::Welcome);
    QTest::keyClick(&wizard, Qt::Key_Escape);
    QVERIFY(!wizard.isVisible());
    QCOMPARE(manager.state(), AppState::NotStarted);
    QCOMPARE(manager.supervisor().nodePid(), 0);
}

QTEST_MAIN(TestFirstRunWizard)
#include "test_first_run_wizard.moc"
