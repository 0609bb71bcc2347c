// SPDX-License-Identifier: Apache-2.0
// TrayController and DesktopApp: the tray menu's choices reach the Manager; a desktop without a
// tray (offscreen has none) gets the dashboard instead, and closing it asks before quitting.
#include "UiTestSupport.h"

#include "widgets/AboutBox.h"
#include "tray/ContributionActions.h"
#include "dashboard/DashboardWindow.h"
#include "DesktopApp.h"
#include "wizard/FirstRunWizard.h"
#include "widgets/QuestionBox.h"
#include "tray/TrayController.h"
#include "common/Version.h"

#include <QDateTime>
#include <QMenu>
#include <QPushButton>
#include <QSignalSpy>
#include <QTest>

using namespace Qt::StringLiterals;
using namespace tessera;
using manager::AppSettings;
using manager::AppState;
using test::menuAction;

class TestTray final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void withoutTrayTheDashboardOpens();
    void firstRunOpensTheWizard();
    void menuDrivesTheManager();
    void closingTheOnlyWindowAsks();
    void minimizedWithoutTrayStaysFindable();
    void aboutSaysTheVersionAndTheLicence();
};

void TestTray::withoutTrayTheDashboardOpens() {
    QVERIFY(!ui::TrayController::available()); // offscreen
    test::UiFixture app;
    app.settings().setValue(AppSettings::Key::FirstRunDone, true);
    ui::DesktopApp desktop(app.manager());
    desktop.start({});
    QVERIFY(!desktop.hasTray());
    QVERIFY(desktop.dashboard());
    QVERIFY(desktop.dashboard()->isVisible());
    QVERIFY(!desktop.wizard());
}

void TestTray::firstRunOpensTheWizard() {
    test::UiFixture app;
    ui::DesktopApp desktop(app.manager());
    desktop.start({});
    QVERIFY(desktop.wizard());
    QVERIFY(desktop.wizard()->isVisible());
    QCOMPARE(desktop.wizard()->page(), ui::FirstRunWizard::Page::Welcome);
    // "Not now" without a tray: nothing would be left on screen, so the app quits.
    QSignalSpy quitting(&desktop, &ui::DesktopApp::quitting);
    QTest::mouseClick(test::child<QWidget>(*desktop.wizard(), u"notNow"_s), Qt::LeftButton);
    QTRY_COMPARE(quitting.size(), 1);
    QVERIFY(!desktop.wizard());
}

void TestTray::menuDrivesTheManager() {
    test::UiFixture app;
    app.useSilentNode();
    manager::Manager& manager = app.manager();
    ui::ContributionActions actions(manager);
    ui::TrayController tray(manager, actions);
    manager.start();
    QMenu& menu = tray.menu();
    QVERIFY(tray.toolTip().startsWith(u"Tessera — Not contributing"));
    QVERIFY(tray.toolTip().endsWith(u"\nToday: 0 credits (0 pending)"));
    QVERIFY(menuAction(menu, u"contribute"_s)->isVisible());
    QVERIFY(!menuAction(menu, u"pauseHour"_s)->isVisible());
    QVERIFY(!menuAction(menu, u"resume"_s)->isVisible());

    menuAction(menu, u"contribute"_s)->trigger();
    QCOMPARE(manager.state(), AppState::Preparing);
    QVERIFY(app.settings().flag(AppSettings::Key::Contributing));
    QVERIFY(!menuAction(menu, u"contribute"_s)->isVisible());
    QVERIFY(menuAction(menu, u"pauseHour"_s)->isVisible());
    QVERIFY(menuAction(menu, u"pauseUntilResumed"_s)->isVisible());
    QVERIFY(QTest::qWaitFor([&] { return manager.supervisor().nodePid() != 0; }, 5000));

    // Pause for 1 hour: a snooze of an hour; the node is stopped (a pause of the user's own).
    const qint64 before = QDateTime::currentMSecsSinceEpoch();
    menuAction(menu, u"pauseHour"_s)->trigger();
    QVERIFY(QTest::qWaitFor([&] { return manager.state() == AppState::Paused; }, 5000));
    const qint64 until = manager.pauseDecision().snoozeUntilMs;
    QVERIFY2(until >= before + 3600'000 && until <= QDateTime::currentMSecsSinceEpoch() + 3600'000,
             qPrintable(QString::number(until - before)));
    QCOMPARE(app.settings().value(AppSettings::Key::ManualPauseUntilMs).toLongLong(), until);
    QVERIFY(manager.stateText().startsWith(u"Paused — "));
    QVERIFY(tray.toolTip().startsWith(u"Tessera — Paused — "));
    QVERIFY(QTest::qWaitFor([&] { return manager.supervisor().nodePid() == 0; }, 10'000));
    QVERIFY(menuAction(menu, u"resume"_s)->isVisible());
    QVERIFY(!menuAction(menu, u"pauseHour"_s)->isVisible());

    menuAction(menu, u"resume"_s)->trigger();
    QVERIFY(QTest::qWaitFor([&] { return manager.state() != AppState::Paused; }, 5000));
    QCOMPARE(manager.pauseDecision().snoozeUntilMs, 0);
    QVERIFY(QTest::qWaitFor([&] { return manager.supervisor().nodePid() != 0; }, 5000));

    // Pause until I resume: no end.
    menuAction(menu, u"pauseUntilResumed"_s)->trigger();
    QVERIFY(QTest::qWaitFor([&] { return manager.state() == AppState::Paused; }, 5000));
    QCOMPARE(manager.pauseDecision().snoozeUntilMs, -1);

    QSignalSpy dashboard(&tray, &ui::TrayController::dashboardRequested);
    QSignalSpy settings(&tray, &ui::TrayController::settingsRequested);
    QSignalSpy quit(&tray, &ui::TrayController::quitRequested);
    menuAction(menu, u"dashboard"_s)->trigger();
    menuAction(menu, u"settings"_s)->trigger();
    menuAction(menu, u"quit"_s)->trigger();
    QCOMPARE(dashboard.size(), 1);
    QCOMPARE(settings.size(), 1);
    QCOMPARE(quit.size(), 1);
}

void TestTray::closingTheOnlyWindowAsks() {
    test::UiFixture app;
    app.settings().setValue(AppSettings::Key::FirstRunDone, true);
    ui::DesktopApp desktop(app.manager());
    desktop.start({});
    ui::DashboardWindow* dashboard = desktop.dashboard();
    QVERIFY(dashboard && dashboard->isVisible());
    QSignalSpy quitting(&desktop, &ui::DesktopApp::quitting);

    // "Keep running": the window stays (minimised), the app goes on.
    ui::QuestionBox::setNextAnswer(ui::QuestionBox::Answer::No);
    QVERIFY(!dashboard->close());
    QVERIFY(dashboard->isVisible());
    QCOMPARE(quitting.size(), 0);

    // "Quit Tessera": the Manager stops the node and says it is finished.
    QSignalSpy finished(&app.manager(), &manager::Manager::finished);
    ui::QuestionBox::setNextAnswer(ui::QuestionBox::Answer::Yes);
    QVERIFY(!dashboard->close());
    QCOMPARE(quitting.size(), 1);
    QVERIFY(finished.wait(10'000));
}

// Started at login (--minimized) on a desktop whose tray never comes: after waiting for one, the
// dashboard sits minimised in the taskbar rather than the app running where nobody finds it.
void TestTray::minimizedWithoutTrayStaysFindable() {
    test::UiFixture app;
    app.settings().setValue(AppSettings::Key::FirstRunDone, true);
    ui::DesktopApp desktop(app.manager());
    desktop.setTrayWait(std::chrono::milliseconds(300));
    desktop.start({true, QString()});
    QVERIFY(!desktop.dashboard());
    QTRY_VERIFY(desktop.dashboard());
    QVERIFY(desktop.dashboard()->isMinimized());
}

// The About box, from the dashboard's button and the tray menu's entry: the version, the licence
// (Apache-2.0), closed by Escape.
void TestTray::aboutSaysTheVersionAndTheLicence() {
    test::UiFixture app;
    app.settings().setValue(AppSettings::Key::FirstRunDone, true);
    ui::DesktopApp desktop(app.manager());
    desktop.start({});
    QVERIFY(desktop.dashboard());
    QVERIFY(!desktop.about());
    QTest::mouseClick(test::child<QPushButton>(*desktop.dashboard(), u"about"_s), Qt::LeftButton);
    QTRY_VERIFY(desktop.about() && desktop.about()->isVisible());
    ui::AboutBox* about = desktop.about();
    QVERIFY2(about->text().contains(tesseraVersion()), qPrintable(about->text()));
    QVERIFY2(about->informativeText().contains(u"Apache License, Version 2.0"),
             qPrintable(about->informativeText()));
    QTest::keyClick(about, Qt::Key_Escape);
    QTRY_VERIFY(!desktop.about());

    ui::ContributionActions actions(app.manager());
    ui::TrayController tray(app.manager(), actions);
    QSignalSpy asked(&tray, &ui::TrayController::aboutRequested);
    menuAction(tray.menu(), u"about"_s)->trigger();
    QCOMPARE(asked.size(), 1);
}

QTEST_MAIN(TestTray)
#include "test_tray.moc"
