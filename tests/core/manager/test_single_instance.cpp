// SingleInstance with a socket name of the test's own: a second instance in this process, and in a
// second process (this test program started again as a helper), is refused and makes the first
// show itself; once the first is gone, or was killed and left its socket file behind, the next
// one claims it.
#include "manager/SingleInstance.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTest>
#include <QUuid>

#include <cstdio>
#include <cstring>
#include <memory>

using namespace tessera::manager;

namespace {

const char* const kHelper = "--single-instance-helper";

// The helper process: claims name; prints "claimed" or "refused". A claimed helper waits for
// someone to ask it to show itself, prints "show" and exits 0.
int helperMain(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    SingleInstance instance(QString::fromLocal8Bit(argv[2]));
    const bool claimed = instance.claim();
    std::printf("%s\n", claimed ? "claimed" : "refused");
    std::fflush(stdout);
    if (!claimed)
        return 1;
    QObject::connect(&instance, &SingleInstance::showRequested, &app, [] {
        std::printf("show\n");
        std::fflush(stdout);
        QCoreApplication::exit(0);
    });
    return app.exec();
}

QString uniqueName() {
    return QStringLiteral("tessera-test-") + QUuid::createUuid().toString(QUuid::WithoutBraces).left(8);
}

} // namespace

class TestSingleInstance final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void secondInstanceShowsTheFirst();
    void nextInstanceClaimsAfterTheFirstIsGone();
    void secondProcessShowsTheFirst();
    void firstProcessKilledLeavesNoLock();
    void defaultNameIsPerUser();

private:
    // Starts this program as a helper claiming name; its first line is read into *firstLine.
    std::unique_ptr<QProcess> startHelper(const QString& name, QByteArray* firstLine);
};

std::unique_ptr<QProcess> TestSingleInstance::startHelper(const QString& name, QByteArray* firstLine) {
    auto helper = std::make_unique<QProcess>();
    helper->start(QCoreApplication::applicationFilePath(), {QString::fromLatin1(kHelper), name});
    // The event loop runs meanwhile, so an instance in this process answers the helper.
    (void)QTest::qWaitFor([&] { return helper->canReadLine() || helper->state() == QProcess::NotRunning; },
                          30'000);
    *firstLine = helper->readLine().trimmed();
    return helper;
}

void TestSingleInstance::secondInstanceShowsTheFirst() {
    const QString name = uniqueName();
    SingleInstance first(name);
    QVERIFY(first.claim());
    QSignalSpy shown(&first, &SingleInstance::showRequested);
    SingleInstance second(name);
    QVERIFY(!second.claim());
    QVERIFY(shown.wait(5'000));
    QCOMPARE(shown.size(), 1);
    QVERIFY(first.claim()); // still the first
}

void TestSingleInstance::nextInstanceClaimsAfterTheFirstIsGone() {
    const QString name = uniqueName();
    {
        SingleInstance first(name);
        QVERIFY(first.claim());
    }
    SingleInstance next(name);
    QVERIFY(next.claim());
    QSignalSpy shown(&next, &SingleInstance::showRequested);
    SingleInstance another(name);
    QVERIFY(!another.claim());
    QVERIFY(shown.wait(5'000));
}

void TestSingleInstance::secondProcessShowsTheFirst() {
    // This process first: the helper is refused and this one is asked to show.
    const QString name = uniqueName();
    {
        SingleInstance first(name);
        QVERIFY(first.claim());
        QSignalSpy shown(&first, &SingleInstance::showRequested);
        QByteArray line;
        std::unique_ptr<QProcess> helper = startHelper(name, &line);
        QCOMPARE(line, QByteArray("refused"));
        QVERIFY(helper->waitForFinished(10'000));
        QCOMPARE(helper->exitCode(), 1);
        QVERIFY(shown.size() == 1 || shown.wait(5'000));
    }

    // The helper first: this one is refused, and the helper shows itself.
    const QString other = uniqueName();
    QByteArray line;
    std::unique_ptr<QProcess> helper = startHelper(other, &line);
    QCOMPARE(line, QByteArray("claimed"));
    SingleInstance second(other);
    QVERIFY(!second.claim());
    QVERIFY(helper->waitForFinished(10'000));
    QCOMPARE(helper->readAll().trimmed(), QByteArray("show"));
    QCOMPARE(helper->exitCode(), 0);
}

void TestSingleInstance::firstProcessKilledLeavesNoLock() {
    // A crash (SIGKILL) leaves the socket file behind with no one listening on it.
    const QString name = uniqueName();
    QByteArray line;
    std::unique_ptr<QProcess> helper = startHelper(name, &line);
    QCOMPARE(line, QByteArray("claimed"));
    helper->kill();
    QVERIFY(helper->waitForFinished(10'000));
    QVERIFY(QFile::exists(QDir::tempPath() + u'/' + name));

    SingleInstance next(name);
    QVERIFY(next.claim());
    QSignalSpy shown(&next, &SingleInstance::showRequested);
    SingleInstance another(name);
    QVERIFY(!another.claim());
    QVERIFY(shown.wait(5'000));
}

void TestSingleInstance::defaultNameIsPerUser() {
    const QByteArray user = qgetenv("USER");
    qputenv("USER", "alice");
    QCOMPARE(defaultInstanceName(), QStringLiteral("tessera-alice"));
    // A name that cannot be part of a file name is replaced by a hash of the home folder.
    qputenv("USER", "../x y");
    const QString hashed = defaultInstanceName();
    QVERIFY2(QRegularExpression(QStringLiteral("^tessera-[0-9a-f]{16}$")).match(hashed).hasMatch(),
             qPrintable(hashed));
    qputenv("USER", user);
}

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], kHelper) == 0)
        return helperMain(argc, argv);
    QCoreApplication app(argc, argv);
    TestSingleInstance test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_single_instance.moc"
