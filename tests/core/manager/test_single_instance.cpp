// SPDX-License-Identifier: Apache-2.0
// SingleInstance with a socket name of the test's own: a second instance in this process, and in a
// second process (this test program started again as a helper), is refused and makes the first
// show itself; once the first is gone, or was killed and left its socket file behind, the next
// one claims it. The name lives in a private directory ($XDG_RUNTIME_DIR/tessera, else
// <temp>/tessera-<uid>); a name held by another user's listener, by a program that does not
// answer, or a private directory another user created first is Blocked with what holds it —
// what the user then reads instead of the app quitting silently at every start.
#include "common/PrivateSocketDir.h"
#include "manager/SingleInstance.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLocalServer>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUuid>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

using namespace tessera;
using namespace tessera::manager;

namespace {

const char* const kHelper = "--single-instance-helper";
const char* const kListenAs = "--listen-as-uid";
constexpr unsigned kOtherUid = 65534; // nobody

// The other user's listener: becomes uid argv[2], listens on argv[3], prints "listening", and
// accepts connections without ever answering until killed.
int listenAsMain(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const uid_t uid = uid_t(std::strtoul(argv[2], nullptr, 10));
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) {
        std::printf("cannot become uid %u\n", unsigned(uid));
        return 2;
    }
    QLocalServer server;
    server.setSocketOptions(QLocalServer::WorldAccessOption);
    if (!server.listen(QString::fromLocal8Bit(argv[3]))) {
        std::printf("cannot listen: %s\n", qPrintable(server.errorString()));
        return 2;
    }
    std::printf("listening\n");
    std::fflush(stdout);
    return app.exec();
}

// The helper process: claims name; prints "claimed" or "refused". A claimed helper waits for
// someone to ask it to show itself, prints "show" and exits 0.
int helperMain(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    SingleInstance instance(QString::fromLocal8Bit(argv[2]));
    const bool claimed = instance.claim() == SingleInstance::Claim::First;
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
    void nameIsInThePrivateRuntimeDir();
    void anotherUsersListenerIsNamedNotObeyed();
    void aListenerThatDoesNotAnswerIsNamed();
    void aPrivateDirAnotherUserCreatedIsNamed();

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
    QCOMPARE(first.claim(), SingleInstance::Claim::First);
    QSignalSpy shown(&first, &SingleInstance::showRequested);
    SingleInstance second(name);
    QCOMPARE(second.claim(), SingleInstance::Claim::Second);
    QVERIFY(shown.size() == 1 || shown.wait(5'000));
    QCOMPARE(shown.size(), 1);
    QCOMPARE(first.claim(), SingleInstance::Claim::First); // still the first
}

void TestSingleInstance::nextInstanceClaimsAfterTheFirstIsGone() {
    const QString name = uniqueName();
    {
        SingleInstance first(name);
        QCOMPARE(first.claim(), SingleInstance::Claim::First);
    }
    SingleInstance next(name);
    QCOMPARE(next.claim(), SingleInstance::Claim::First);
    QSignalSpy shown(&next, &SingleInstance::showRequested);
    SingleInstance another(name);
    QCOMPARE(another.claim(), SingleInstance::Claim::Second);
    QVERIFY(shown.size() == 1 || shown.wait(5'000));
}

void TestSingleInstance::secondProcessShowsTheFirst() {
    // This process first: the helper is refused and this one is asked to show.
    const QString name = uniqueName();
    {
        SingleInstance first(name);
        QCOMPARE(first.claim(), SingleInstance::Claim::First);
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
    QCOMPARE(second.claim(), SingleInstance::Claim::Second);
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
    QVERIFY(QFile::exists(*PrivateSocketDir::path() + u'/' + name));

    SingleInstance next(name);
    QCOMPARE(next.claim(), SingleInstance::Claim::First);
    QSignalSpy shown(&next, &SingleInstance::showRequested);
    SingleInstance another(name);
    QCOMPARE(another.claim(), SingleInstance::Claim::Second);
    QVERIFY(shown.size() == 1 || shown.wait(5'000));
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

void TestSingleInstance::nameIsInThePrivateRuntimeDir() {
    // With XDG_RUNTIME_DIR set (a login session), the socket is under it, never in the shared /tmp.
    QTemporaryDir runtime;
    QVERIFY(QFile::setPermissions(runtime.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner));
    const QByteArray saved = qgetenv("XDG_RUNTIME_DIR");
    qputenv("XDG_RUNTIME_DIR", QFile::encodeName(runtime.path()));
    const QString name = uniqueName();
    {
        SingleInstance first(name);
        QCOMPARE(first.claim(), SingleInstance::Claim::First);
        QCOMPARE(first.socketPath(), runtime.path() + QStringLiteral("/tessera/") + name);
        QVERIFY(QFile::exists(first.socketPath()));
        QCOMPARE(QFileInfo(runtime.path() + QStringLiteral("/tessera")).permissions().toInt() & 0x0077, 0);
    }
    qputenv("XDG_RUNTIME_DIR", saved);
}

void TestSingleInstance::anotherUsersListenerIsNamedNotObeyed() {
    // Tried: another local user listens on the very path first (here in a world-writable folder,
    // as /tmp was). A user would otherwise see the app quit silently at every start.
    if (::geteuid() != 0)
        QSKIP("needs root to start a listener as another user (CI runs as root)");
    QTemporaryDir shared;
    QVERIFY(::chmod(QFile::encodeName(shared.path()).constData(), 01777) == 0);
    const QString path = shared.filePath(uniqueName());
    QProcess other;
    other.start(QCoreApplication::applicationFilePath(),
                {QString::fromLatin1(kListenAs), QString::number(kOtherUid), path});
    QVERIFY(QTest::qWaitFor([&] { return other.canReadLine() || other.state() == QProcess::NotRunning; },
                            30'000));
    QCOMPARE(other.readLine().trimmed(), QByteArray("listening"));

    SingleInstance mine(path);
    QCOMPARE(mine.claim(), SingleInstance::Claim::Blocked);
    QCOMPARE(mine.blocker().path, path);
    QCOMPARE(mine.blocker().owner, std::optional<unsigned>(kOtherUid));
    QVERIFY2(mine.blocker().detail.contains(QStringLiteral("another user (uid 65534)")),
             qPrintable(mine.blocker().detail));
    other.kill();
    other.waitForFinished(10'000);
}

void TestSingleInstance::aListenerThatDoesNotAnswerIsNamed() {
    // Tried: something of this user's (not Tessera) listens on the name and never answers.
    const QString path = *PrivateSocketDir::path() + u'/' + uniqueName();
    QLocalServer squatter;
    QVERIFY(squatter.listen(path));
    SingleInstance mine(path);
    QCOMPARE(mine.claim(), SingleInstance::Claim::Blocked);
    QCOMPARE(mine.blocker().path, path);
    QVERIFY2(mine.blocker().detail.contains(QStringLiteral("did not answer")),
             qPrintable(mine.blocker().detail));
}

void TestSingleInstance::aPrivateDirAnotherUserCreatedIsNamed() {
    // Tried: no XDG_RUNTIME_DIR, and another user created <temp>/tessera-<our uid> first.
    if (::geteuid() != 0)
        QSKIP("needs root to give a folder to another user (CI runs as root)");
    QTemporaryDir temp;
    const QByteArray savedTmp = qgetenv("TMPDIR");
    const QByteArray savedRuntime = qgetenv("XDG_RUNTIME_DIR");
    qputenv("TMPDIR", QFile::encodeName(temp.path()));
    qunsetenv("XDG_RUNTIME_DIR");
    const QString taken = temp.path() + QStringLiteral("/tessera-") + QString::number(::geteuid());
    QVERIFY(QDir().mkpath(taken));
    QVERIFY(::chown(QFile::encodeName(taken).constData(), kOtherUid, kOtherUid) == 0);

    SingleInstance mine(uniqueName());
    const SingleInstance::Claim claim = mine.claim();
    qputenv("TMPDIR", savedTmp);
    qputenv("XDG_RUNTIME_DIR", savedRuntime);
    QCOMPARE(claim, SingleInstance::Claim::Blocked);
    QCOMPARE(mine.blocker().path, taken);
    QVERIFY2(mine.blocker().detail.contains(QStringLiteral("belongs to another user (uid 65534)")),
             qPrintable(mine.blocker().detail));
}

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], kHelper) == 0)
        return helperMain(argc, argv);
    if (argc == 4 && std::strcmp(argv[1], kListenAs) == 0)
        return listenAsMain(argc, argv);
    QCoreApplication app(argc, argv);
    TestSingleInstance test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "test_single_instance.moc"
