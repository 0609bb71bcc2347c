// SPDX-License-Identifier: Apache-2.0
// TimeWindows and TimeWindowDetector at chosen instants of local time: weekdays, nights past
// midnight, whole days, and the errors the settings dialog shows.
#include "manager/detectors/TimeWindowDetector.h"
#include "manager/detectors/TimeWindows.h"
#include "test_detectors.h"

#include <QTest>

using namespace tessera::manager;

namespace {

// 2024-06-03 is a Monday.
qint64 at(int dayOfJune, int hour, int minute = 0) {
    return QDateTime(QDate(2024, 6, dayOfJune), QTime(hour, minute)).toMSecsSinceEpoch();
}

TimeWindows parsed(const QString& text) {
    auto windows = TimeWindows::parse(text);
    if (!windows)
        qFatal("%s", windows.message().c_str());
    return *windows;
}

} // namespace

class TestTimeWindows final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pausesOutsideTheUsersHours_data();
    void pausesOutsideTheUsersHours();
    void saysWhichHoursInTheReason();
    void emptyMeansAlways();
    void explainsMistakes_data();
    void explainsMistakes();
};

void TestTimeWindows::pausesOutsideTheUsersHours_data() {
    QTest::addColumn<QString>("windows");
    QTest::addColumn<qint64>("now");
    QTest::addColumn<bool>("contributes");
    const QString evenings = QStringLiteral("Mon-Fri 18:00-08:00, Sat-Sun");
    QTest::newRow("Monday noon") << evenings << at(3, 12) << false;
    QTest::newRow("Monday evening") << evenings << at(3, 19) << true;
    QTest::newRow("Tuesday 07:59, Monday's night") << evenings << at(4, 7, 59) << true;
    QTest::newRow("Tuesday 08:00, the night is over") << evenings << at(4, 8) << false;
    QTest::newRow("Saturday 03:00, Friday's night") << evenings << at(8, 3) << true;
    QTest::newRow("Sunday afternoon, a whole day") << evenings << at(9, 15) << true;
    // Sunday is a whole day, but its night is no weekday evening's.
    QTest::newRow("Monday 03:00, after Sunday") << evenings << at(3, 3) << false;
    QTest::newRow("Friday night 23:30") << evenings << at(7, 23, 30) << true;
    const QString nights = QStringLiteral("22:00-06:00");
    QTest::newRow("hours alone: every night") << nights << at(5, 23) << true;
    QTest::newRow("hours alone: not by day") << nights << at(5, 12) << false;
    QTest::newRow("hours alone: Sunday's night") << nights << at(3, 5) << true;
    const QString weekend = QStringLiteral("fri-MON");
    QTest::newRow("wrapping days: Sunday") << weekend << at(9, 12) << true;
    QTest::newRow("wrapping days: Monday") << weekend << at(3, 12) << true;
    QTest::newRow("wrapping days: Tuesday") << weekend << at(4, 12) << false;
    const QString list = QStringLiteral("Monday Wed 09:00-17:00, Sat 00:00-24:00");
    QTest::newRow("day list: Wednesday") << list << at(5, 10) << true;
    QTest::newRow("day list: Tuesday") << list << at(4, 10) << false;
    QTest::newRow("day list: Monday evening") << list << at(3, 17) << false;
    QTest::newRow("until 24:00: Saturday 23:59") << list << at(8, 23, 59) << true;
    QTest::newRow("until 24:00: Sunday 00:00") << list << at(9, 0) << false;
}

void TestTimeWindows::pausesOutsideTheUsersHours() {
    QFETCH(QString, windows);
    QFETCH(qint64, now);
    QFETCH(bool, contributes);
    TimeWindowDetector detector(parsed(windows), [now] { return now; });
    const auto cause = detector.check();
    QCOMPARE(!cause.has_value(), contributes);
    if (cause) {
        QCOMPARE(cause->rule, QStringLiteral("time-window"));
        QVERIFY(!cause->game);
    }
}

void TestTimeWindows::saysWhichHoursInTheReason() {
    TimeWindowDetector detector(parsed(QStringLiteral("  Mon-Fri   18:00-08:00 ,Sat-Sun ")),
                                [] { return at(3, 12); });
    QCOMPARE(detector.check()->reason,
             QStringLiteral("outside your contributing hours (Mon-Fri 18:00-08:00, Sat-Sun)"));
}

void TestTimeWindows::emptyMeansAlways() {
    for (const QString& text : {QString(), QStringLiteral("  "), QStringLiteral(",")}) {
        const TimeWindows windows = parsed(text);
        QVERIFY(windows.empty());
        QVERIFY(!TimeWindowDetector(windows, [] { return at(3, 12); }).check());
    }
}

void TestTimeWindows::explainsMistakes_data() {
    QTest::addColumn<QString>("windows");
    QTest::addColumn<QString>("error");
    QTest::newRow("misspelt day") << QStringLiteral("Mon-Fry 18:00-08:00")
                                  << QStringLiteral(
                                         "'Mon-Fry': unknown day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun");
    QTest::newRow("three days") << QStringLiteral("Mon-Wed-Fri")
                                << QStringLiteral(
                                       "'Mon-Wed-Fri': unknown day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun");
    QTest::newRow("no such hour") << QStringLiteral("Sat-Sun, Mon 25:00-08:00")
                                  << QStringLiteral(
                                         "'25:00-08:00': not a range of hours; write it like 18:00-08:00");
    QTest::newRow("half a range") << QStringLiteral("Mon 18:00")
                                  << QStringLiteral(
                                         "'18:00': not a range of hours; write it like 18:00-08:00");
    QTest::newRow("24:00 as a start")
        << QStringLiteral("Mon 24:00-08:00")
        << QStringLiteral("'24:00-08:00': not a range of hours; write it like 18:00-08:00");
    QTest::newRow("empty range") << QStringLiteral("Mon 18:00-18:00")
                                 << QStringLiteral(
                                        "'18:00-18:00': starts and ends at the same time; leave out "
                                        "the hours for a whole day");
    QTest::newRow("hours first") << QStringLiteral("18:00-08:00 Mon")
                                 << QStringLiteral(
                                        "'18:00-08:00 Mon': put the days before the hours, like Mon-Fri "
                                        "18:00-08:00");
}

void TestTimeWindows::explainsMistakes() {
    QFETCH(QString, windows);
    QFETCH(QString, error);
    const auto parsedWindows = TimeWindows::parse(windows);
    QVERIFY(!parsedWindows);
    QCOMPARE(QString::fromStdString(parsedWindows.message()), error);
}

namespace tessera::test {
int runTimeWindowsTests(int argc, char** argv) {
    TestTimeWindows test;
    return QTest::qExec(&test, argc, argv);
}
} // namespace tessera::test

#include "test_detectors_time_windows.moc"
