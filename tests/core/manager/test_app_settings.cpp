// AppSettings: the one registry — defaults, types kept through the INI file, changed() once per
// real change, and every key with a name of its own.
#include "manager/AppSettings.h"

#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace tessera::manager;
using Key = AppSettings::Key;

class TestAppSettings final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void defaultsWithoutAFile() {
        QTemporaryDir dir;
        AppSettings settings(dir.filePath(QStringLiteral("tessera.ini")));
        QCOMPARE(settings.integer(Key::GpuLimitPercent), 70);
        QCOMPARE(settings.integer(Key::GraceSeconds), 15);
        QCOMPARE(settings.integer(Key::TemperatureLimitC), 83);
        QVERIFY(settings.flag(Key::PauseOnFullscreen));
        QVERIFY(!settings.flag(Key::OnlyWhenIdle));
        QVERIFY(settings.list(Key::PauseExclusiveApps).contains(QStringLiteral("witcher3")));
        QVERIFY(!settings.flag(Key::FirstRunDone));
    }

    void everyKeyHasItsOwnName() {
        QSet<QString> names;
        for (int k = 0; k < int(Key::KeyCount); ++k) {
            const AppSettings::Definition& d = AppSettings::definition(Key(k));
            QCOMPARE(int(d.key), k);
            names.insert(QString::fromLatin1(d.name));
        }
        QCOMPARE(names.size(), int(Key::KeyCount));
    }

    void valuesSurviveAReopenWithTheirTypes() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("tessera.ini"));
        {
            AppSettings settings(path);
            settings.setValue(Key::GpuLimitPercent, 35);
            settings.setValue(Key::PauseOnFullscreen, false);
            settings.setValue(Key::PauseExclusiveApps, QStringList{QStringLiteral("only-one.exe")});
            settings.setValue(Key::ManualPauseUntilMs, qint64(-1));
        }
        AppSettings again(path);
        QCOMPARE(again.integer(Key::GpuLimitPercent), 35);
        QVERIFY(!again.flag(Key::PauseOnFullscreen));
        // A one-item list is a plain string in an INI file: it comes back a list.
        QCOMPARE(again.list(Key::PauseExclusiveApps), QStringList{QStringLiteral("only-one.exe")});
        QCOMPARE(again.value(Key::ManualPauseUntilMs).toLongLong(), -1);
    }

    void changedOncePerRealChange() {
        QTemporaryDir dir;
        AppSettings settings(dir.filePath(QStringLiteral("tessera.ini")));
        QSignalSpy changed(&settings, &AppSettings::changed);
        settings.setValue(Key::IdleMinutes, 3); // the default: no change
        QCOMPARE(changed.count(), 0);
        settings.setValue(Key::IdleMinutes, 5);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.at(0).at(0).value<Key>(), Key::IdleMinutes);
        settings.reset(Key::IdleMinutes);
        QCOMPARE(changed.count(), 2);
        QCOMPARE(settings.integer(Key::IdleMinutes), 3);
    }

    void aMangledValueFallsBackToTheDefault() {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("tessera.ini"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("[contribute]\ngpu_limit_percent=lots\n[pause\ngarbage\n");
        file.close();
        AppSettings settings(path);
        QCOMPARE(settings.integer(Key::GpuLimitPercent), 70);
    }
};

QTEST_GUILESS_MAIN(TestAppSettings)
#include "test_app_settings.moc"
