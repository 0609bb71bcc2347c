// SPDX-License-Identifier: Apache-2.0
// SettingsDialog: every control is stored in the settings file as soon as it changes (read back
// by a fresh AppSettings on the same file); an invalid time window, address or leaderboard name
// shows why and is not stored; rules this machine cannot sense say so.
#include "UiTestSupport.h"

#include "settings/ExclusiveAppsEditor.h"
#include "settings/GeneralSettingsPage.h"
#include "settings/PauseRulesPage.h"
#include "settings/SettingsDialog.h"

#include "manager/Autostart.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>

using namespace Qt::StringLiterals;
using namespace tessera;
using Key = manager::AppSettings::Key;

namespace {

QSet<QString> asSet(const QStringList& list) {
    return QSet<QString>(list.begin(), list.end());
}

} // namespace

class TestSettingsDialog final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void everyControlIsStoredAtOnce();
    void invalidTextIsNotStored();
    void leaderboardNameIsOptionalAndChecked();
    void exclusiveAppsEditor();
    void unavailableRulesSaySo();
    void everyPageFitsTheDialogsWidth();

private:
    // Types text into a field and presses Return, as a user does.
    static void type(QLineEdit* edit, const QString& text);

    QTemporaryDir m_config;
};

void TestSettingsDialog::initTestCase() {
    // "Start at login" writes an autostart entry: into this test's own folder.
    qputenv("XDG_CONFIG_HOME", m_config.path().toUtf8());
}

void TestSettingsDialog::type(QLineEdit* edit, const QString& text) {
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, text);
    QTest::keyClick(edit, Qt::Key_Return);
}

void TestSettingsDialog::everyControlIsStoredAtOnce() {
    test::UiFixture app;
    app.manager().start();
    ui::SettingsDialog dialog(app.manager());
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));

    // General.
    auto* limit = test::child<QSlider>(dialog, u"gpuLimit"_s);
    QCOMPARE(limit->value(), 70);
    limit->setValue(40);
    QTest::keyClick(limit, Qt::Key_Right); // one step up with the keyboard
    auto* login = test::child<QCheckBox>(dialog, u"startAtLogin"_s);
    login->click();
    auto* notifications = test::child<QCheckBox>(dialog, u"notifications"_s);
    notifications->click();
    auto* dataDir = test::child<QLineEdit>(dialog, u"dataDir"_s);
    type(dataDir, app.path(u"elsewhere"));
    test::child<QDoubleSpinBox>(dialog, u"diskLimit"_s)->setValue(50);

    // Pause rules.
    test::child<QCheckBox>(dialog, u"pauseOnFullscreen"_s)->click();
    test::child<QCheckBox>(dialog, u"pauseOnGpuGraphics"_s)->click();
    auto* idle = test::child<QCheckBox>(dialog, u"onlyWhenIdle"_s);
    auto* idleMinutes = test::child<QSpinBox>(dialog, u"idleMinutes"_s);
    QVERIFY(!idleMinutes->isEnabled());
    idle->click();
    QVERIFY(idleMinutes->isEnabled());
    idleMinutes->setValue(10);
    test::child<QCheckBox>(dialog, u"pauseOnBattery"_s)->click();
    auto* hot = test::child<QCheckBox>(dialog, u"temperatureRule"_s);
    auto* degrees = test::child<QSpinBox>(dialog, u"temperatureLimit"_s);
    QVERIFY(hot->isChecked());
    degrees->setValue(75);
    type(test::child<QLineEdit>(dialog, u"timeWindows"_s), u"Mon-Fri 18:00-08:00, Sat-Sun"_s);

    // The coordinator.
    const QString ca = app.path(u"ca.pem");
    QVERIFY(QFile(ca).open(QIODevice::WriteOnly));
    type(test::child<QLineEdit>(dialog, u"coordinatorUrl"_s), u"https://swarm.example.org:7443"_s);
    type(test::child<QLineEdit>(dialog, u"caFile"_s), ca);

    const auto stored = app.reread();
    QCOMPARE(stored->integer(Key::GpuLimitPercent), 45);
    QCOMPARE(stored->flag(Key::StartAtLogin), true);
    QVERIFY2(QFileInfo::exists(manager::Autostart::location()), qPrintable(manager::Autostart::location()));
    QCOMPARE(stored->flag(Key::Notifications), false);
    QCOMPARE(stored->string(Key::DataDir), app.path(u"elsewhere"));
    QCOMPARE(stored->value(Key::DiskLimitGb).toDouble(), 50.0);
    QCOMPARE(stored->flag(Key::PauseOnFullscreen), false);
    QCOMPARE(stored->flag(Key::PauseOnGpuGraphics), false);
    QCOMPARE(stored->flag(Key::OnlyWhenIdle), true);
    QCOMPARE(stored->integer(Key::IdleMinutes), 10);
    QCOMPARE(stored->flag(Key::PauseOnBattery), false);
    QCOMPARE(stored->integer(Key::TemperatureLimitC), 75);
    QCOMPARE(stored->string(Key::TimeWindows), u"Mon-Fri 18:00-08:00, Sat-Sun"_s);
    QCOMPARE(stored->string(Key::CoordinatorUrl), u"https://swarm.example.org:7443"_s);
    QCOMPARE(stored->string(Key::CoordinatorCaFile), ca);

    // The temperature rule off is a limit of 0; back on, the degrees shown.
    hot->click();
    QVERIFY(!degrees->isEnabled());
    QCOMPARE(app.reread()->integer(Key::TemperatureLimitC), 0);
    hot->click();
    QCOMPARE(app.reread()->integer(Key::TemperatureLimitC), 75);

    // A change made elsewhere (another window, the tray) shows in the dialog.
    app.settings().setValue(Key::GpuLimitPercent, 90);
    QCOMPARE(limit->value(), 90);
    app.settings().setValue(Key::PauseOnBattery, true);
    QVERIFY(test::child<QCheckBox>(dialog, u"pauseOnBattery"_s)->isChecked());

    // Closing mid-edit (Escape: the focus never leaves the field) keeps what was typed.
    dataDir->setFocus();
    dataDir->selectAll();
    QTest::keyClicks(dataDir, app.path(u"third"));
    QTest::keyClick(&dialog, Qt::Key_Escape);
    QVERIFY(!dialog.isVisible());
    QCOMPARE(app.reread()->string(Key::DataDir), app.path(u"third"));
}

void TestSettingsDialog::invalidTextIsNotStored() {
    test::UiFixture app;
    ui::SettingsDialog dialog(app.manager());
    dialog.show();
    auto* windows = test::child<QLineEdit>(dialog, u"timeWindows"_s);
    auto* windowsError = test::child<QLabel>(dialog, u"timeWindowsError"_s);
    dialog.tabs().setCurrentIndex(1); // when to pause
    type(windows, u"Mon-Fri 25:00-08:00"_s);
    QVERIFY(windowsError->isVisible());
    QVERIFY(!windowsError->text().isEmpty());
    QCOMPARE(windowsError->text(), ui::PauseRulesPage::checkTimeWindows(u"Mon-Fri 25:00-08:00"_s));
    QVERIFY(app.reread()->string(Key::TimeWindows).isEmpty());
    // Fixed: the message goes, the value is stored.
    type(windows, u"Mon-Fri 18:00-23:00"_s);
    QVERIFY(!windowsError->isVisible());
    QCOMPARE(app.reread()->string(Key::TimeWindows), u"Mon-Fri 18:00-23:00"_s);

    auto* url = test::child<QLineEdit>(dialog, u"coordinatorUrl"_s);
    dialog.tabs().setCurrentIndex(2);
    type(url, u"not an address"_s);
    QVERIFY(test::child<QLabel>(dialog, u"coordinatorUrlError"_s)->isVisible());
    QCOMPARE(app.reread()->string(Key::CoordinatorUrl), u"https://127.0.0.1:1"_s);
}

void TestSettingsDialog::leaderboardNameIsOptionalAndChecked() {
    test::UiFixture app;
    ui::SettingsDialog dialog(app.manager());
    dialog.show();
    dialog.tabs().setCurrentIndex(0);
    auto* name = test::child<QLineEdit>(dialog, u"displayName"_s);
    auto* nameError = test::child<QLabel>(dialog, u"displayNameError"_s);
    auto* team = test::child<QLineEdit>(dialog, u"team"_s);
    // Empty by default: anonymous, and the page says both are public.
    QVERIFY(name->text().isEmpty());
    QVERIFY(team->text().isEmpty());
    QVERIFY(test::child<QLabel>(dialog, u"leaderboardHint"_s)->text().contains(u"public"_s));

    type(name, QString(33, u'x'));
    QVERIFY(nameError->isVisible());
    QCOMPARE(nameError->text(), ui::GeneralSettingsPage::checkProfileText(QString(33, u'x')));
    QVERIFY(app.reread()->string(Key::DisplayName).isEmpty());
    type(name, u"Ada Lovelace"_s);
    QVERIFY(!nameError->isVisible());
    type(team, u"Analytical Engines"_s);
    QCOMPARE(app.reread()->string(Key::DisplayName), u"Ada Lovelace"_s);
    QCOMPARE(app.reread()->string(Key::Team), u"Analytical Engines"_s);
    QVERIFY(!ui::GeneralSettingsPage::checkProfileText(u"a\tb"_s).isEmpty());

    // Opting out again: an empty name is stored as none.
    name->setFocus();
    name->selectAll();
    QTest::keyClick(name, Qt::Key_Delete);
    QTest::keyClick(name, Qt::Key_Return);
    QVERIFY(app.reread()->string(Key::DisplayName).isEmpty());
}

void TestSettingsDialog::exclusiveAppsEditor() {
    test::UiFixture app;
    ui::SettingsDialog dialog(app.manager());
    dialog.tabs().setCurrentIndex(1); // when to pause
    dialog.show();
    auto* editor = test::child<ui::ExclusiveAppsEditor>(dialog, u"exclusiveApps"_s);
    const QStringList defaults = manager::AppSettings::defaultExclusiveApps();
    QVERIFY(!defaults.isEmpty());
    QCOMPARE(asSet(editor->apps()), asSet(defaults));

    auto* name = test::child<QLineEdit>(dialog, u"appName"_s);
    name->setText(u"witcher3.exe"_s);
    QTest::mouseClick(test::child<QWidget>(dialog, u"addApp"_s), Qt::LeftButton);
    QVERIFY(app.reread()->list(Key::PauseExclusiveApps).contains(u"witcher3.exe"_s));
    editor->addApp(u"WITCHER3.EXE"_s); // the same program: not twice
    QCOMPARE(app.reread()->list(Key::PauseExclusiveApps).size(), defaults.size() + 1);

    auto* list = test::child<QListWidget>(dialog, u"apps"_s);
    list->findItems(u"witcher3.exe"_s, Qt::MatchExactly).first()->setSelected(true);
    editor->removeSelected();
    QVERIFY(!app.reread()->list(Key::PauseExclusiveApps).contains(u"witcher3.exe"_s));

    list->clearSelection();
    list->item(0)->setSelected(true);
    editor->removeSelected();
    QCOMPARE(app.reread()->list(Key::PauseExclusiveApps).size(), defaults.size() - 1);
    editor->resetToDefaults();
    QCOMPARE(asSet(editor->apps()), asSet(defaults));
}

void TestSettingsDialog::unavailableRulesSaySo() {
    test::UiFixture app; // no NVML, no X display: the GPU and full-screen rules cannot be sensed
    app.manager().start();
    ui::SettingsDialog dialog(app.manager());
    // In plain words; what the detector found (the missing library, the X display) behind Details.
    QCOMPARE(dialog.pauseRules().unavailableNote(u"gpu-graphics"_s),
             ui::PauseRulesPage::cannotSense(u"gpu-graphics"_s));
    QVERIFY2(dialog.pauseRules().unavailableDetails(u"gpu-graphics"_s).contains(u"NVML"_s),
             qPrintable(dialog.pauseRules().unavailableDetails(u"gpu-graphics"_s)));
    QCOMPARE(dialog.pauseRules().unavailableNote(u"fullscreen"_s),
             ui::PauseRulesPage::cannotSense(u"fullscreen"_s));
    QVERIFY(dialog.pauseRules().unavailableDetails(u"fullscreen"_s).contains(u"X display"_s));
    // A rule turned off needs no warning; its note goes once the Manager rebuilt its detectors.
    test::child<QCheckBox>(dialog, u"pauseOnGpuGraphics"_s)->click();
    QTRY_VERIFY(dialog.pauseRules().unavailableNote(u"gpu-graphics"_s).isEmpty());
    // The time window rule is sensed everywhere (the clock).
    QVERIFY(dialog.pauseRules().unavailableNote(u"time-window"_s).isEmpty());
}

// The dialog opens at most 600 pixels wide (and 1280 × 720 at 150 % leaves 853): each page scrolls
// down, never sideways — a check box or hint cut at the right edge is a page that does not fit.
void TestSettingsDialog::everyPageFitsTheDialogsWidth() {
    test::UiFixture app;
    app.manager().start();
    ui::SettingsDialog dialog(app.manager());
    dialog.resize(600, 480);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    auto* tabs = dialog.findChild<QTabWidget*>();
    QVERIFY(tabs);
    for (int i = 0; i < tabs->count(); ++i) {
        tabs->setCurrentIndex(i);
        auto* scroll = qobject_cast<QScrollArea*>(tabs->widget(i));
        QVERIFY(scroll);
        QTRY_VERIFY2(scroll->widget()->width() <= scroll->viewport()->width(),
                     qPrintable(u"%1: %2 wide in %3"_s.arg(tabs->tabText(i))
                                    .arg(scroll->widget()->width())
                                    .arg(scroll->viewport()->width())));
        QVERIFY2(!scroll->horizontalScrollBar()->isVisible(), qPrintable(tabs->tabText(i)));
    }
}

QTEST_MAIN(TestSettingsDialog)
#include "test_settings_dialog.moc"
