// SPDX-License-Identifier: Apache-2.0
// ControlServer and ControlClient: the node's local control socket on real QLocalSockets, with
// its token file, its refusals and its data-directory rules.
#include "ControlSocketTestSupport.h"
#include "common/PrivateSocketDir.h"

using namespace tessera;
using namespace tessera::node;
using test::fileMode;
using test::readFile;

class TestControlSocket : public QObject {
    Q_OBJECT

private:
    std::unique_ptr<QTemporaryDir> m_dir;
    std::shared_ptr<Calls> m_calls;

    QString dataDir() const { return m_dir->filePath(QStringLiteral("data")); }

private Q_SLOTS:
    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_calls = std::make_shared<Calls>();
    }

    void statusRoundTrip() {
        ServerThread server(dataDir(), handlerFor(m_calls));
        const Status listening = server.listen();
        QVERIFY2(listening, listening ? "" : listening.message().c_str());

        const Result<QJsonObject> reply = ControlClient::call(dataDir(), {ControlCommand::Status});
        QVERIFY2(reply, reply ? "" : reply.message().c_str());
        QCOMPARE(reply->value(u"ok").toBool(), true);
        QCOMPARE(reply->value(u"state").toString(), QStringLiteral("training"));
        QCOMPARE(reply->value(u"stage").toInt(), 2);
        QCOMPARE(m_calls->last().command, ControlCommand::Status);
    }

    void commandsReachHandler_data() {
        QTest::addColumn<int>("command");
        QTest::addColumn<bool>("hard");
        QTest::addColumn<double>("percent");
        QTest::newRow("pause") << int(ControlCommand::Pause) << false << 0.0;
        QTest::newRow("resume") << int(ControlCommand::Resume) << false << 0.0;
        QTest::newRow("stop") << int(ControlCommand::Stop) << false << 0.0;
        QTest::newRow("set-limit") << int(ControlCommand::SetLimit) << false << 50.0;
    }

    void commandsReachHandler() {
        QFETCH(int, command);
        QFETCH(bool, hard);
        QFETCH(double, percent);
        ServerThread server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());

        const ControlRequest request{ControlCommand(command), hard, percent};
        const Result<QJsonObject> reply = ControlClient::call(dataDir(), request);
        QVERIFY2(reply, reply ? "" : reply.message().c_str());
        QCOMPARE(reply->value(u"done").toString(), protocol::controlCommandName(request.command));
        QCOMPARE(m_calls->size(), 1);
        QCOMPARE(m_calls->last().command, request.command);
        QCOMPARE(m_calls->last().hard, hard);
        QCOMPARE(m_calls->last().percent, percent);
    }

    void handlerRefusalAndExceptionBecomeErrors() {
        ServerThread server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());

        const Result<QJsonObject> refused = ControlClient::call(dataDir(), kRefused);
        QVERIFY(!refused);
        QCOMPARE(refused.message(), std::string("limit must be positive"));

        const Result<QJsonObject> thrown = ControlClient::call(dataDir(), kThrows);
        QVERIFY(!thrown);
        QCOMPARE(thrown.message(), std::string("pause failed: engine exploded"));

        // The server survived both.
        QVERIFY(ControlClient::call(dataDir(), {ControlCommand::Status}));
    }

    void wrongTokenRefusedAndClosed_data() {
        QTest::addColumn<QString>("token");
        QTest::newRow("wrong") << QStringLiteral("0123456789abcdef0123456789abcdef");
        QTest::newRow("prefix") << QStringLiteral("0");
        QTest::newRow("empty") << QStringLiteral("");
        QTest::newRow("missing") << QString();
    }

    void wrongTokenRefusedAndClosed() {
        QFETCH(QString, token);
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());
        QVERIFY(token != tokenOf(dataDir()));

        RawClient client(server.socketPath());
        QVERIFY(client.connected());
        client.send(requestLine(token, QStringLiteral("stop")));
        const QJsonObject reply = client.reply();
        QCOMPARE(reply.value(u"ok").toBool(true), false);
        QCOMPARE(reply.value(u"error").toString(), QStringLiteral("wrong control token"));
        QVERIFY(client.disconnected());
        QCOMPARE(m_calls->size(), 0);
        QTRY_COMPARE(server.clientCount(), 0);
    }

    void oversizeLineRefusedAndClosed_data() {
        QTest::addColumn<QByteArray>("line");
        QTest::newRow("no newline") << QByteArray(kCap + 1, 'x');
        QTest::newRow("with newline") << QByteArray(kCap + 1, 'x') + '\n';
        QTest::newRow("much more") << QByteArray(4 * kCap, 'x') + '\n';
    }

    void oversizeLineRefusedAndClosed() {
        QFETCH(QByteArray, line);
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());

        RawClient flooder(server.socketPath());
        QVERIFY(flooder.connected());
        flooder.send(line);
        const QJsonObject reply = flooder.reply();
        QCOMPARE(reply.value(u"error").toString(), QStringLiteral("message over 1 MiB"));
        QVERIFY(flooder.disconnected());

        // Others are still served.
        RawClient client(server.socketPath());
        QVERIFY(client.connected());
        client.send(requestLine(tokenOf(dataDir()), QStringLiteral("status")));
        QCOMPARE(client.reply().value(u"state").toString(), QStringLiteral("training"));
    }

    void lineOfExactlyTheCapIsRead() {
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());
        // A valid request padded with spaces to exactly 1 MiB: the cap is inclusive.
        QByteArray line = requestLine(tokenOf(dataDir()), QStringLiteral("status"));
        line.chop(1);
        line += QByteArray(kCap - line.size(), ' ') + '\n';
        QCOMPARE(line.size(), kCap + 1);

        RawClient client(server.socketPath());
        QVERIFY(client.connected());
        client.send(line);
        QCOMPARE(client.reply().value(u"state").toString(), QStringLiteral("training"));
        QVERIFY(client.stillConnected());
    }

    void badRequestsKeepTheConnection() {
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());
        const QString token = tokenOf(dataDir());

        RawClient client(server.socketPath());
        QVERIFY(client.connected());
        client.send("{not json\n");
        QVERIFY(client.reply().value(u"error").toString().startsWith(u"malformed JSON"));
        client.send("[1,2]\n");
        QCOMPARE(client.reply().value(u"error").toString(),
                 QStringLiteral("a request must be a JSON object"));
        client.send(requestLine(token, QStringLiteral("fly")));
        QVERIFY(client.reply().value(u"error").toString().startsWith(u"unknown command \"fly\""));
        client.send(QJsonDocument(QJsonObject{{QStringLiteral("token"), token},
                                              {QStringLiteral("command"), QStringLiteral("pause")},
                                              {QStringLiteral("arguments"), 5}})
                        .toJson(QJsonDocument::Compact) +
                    '\n');
        QCOMPARE(client.reply().value(u"error").toString(),
                 QStringLiteral("\"arguments\" must be a JSON object"));
        QVERIFY(client.stillConnected());
        QCOMPARE(m_calls->size(), 0);

        // Two requests in one write: two answers, in order.
        client.send(requestLine(token, QStringLiteral("status")) +
                    requestLine(token, QStringLiteral("resume")));
        QCOMPARE(client.reply().value(u"state").toString(), QStringLiteral("training"));
        QCOMPARE(client.reply().value(u"done").toString(), QStringLiteral("resume"));
        QVERIFY(client.stillConnected());
    }

    void tokenFileIsPrivateAndFresh() {
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());
        const QString tokenPath = QDir(dataDir()).filePath(QStringLiteral("control.token"));
        QCOMPARE(fileMode(tokenPath), 0600);
        const QString first = tokenOf(dataDir());
        QVERIFY2(QRegularExpression(QStringLiteral("^[0-9a-f]{32}$")).match(first).hasMatch(),
                 qPrintable(first));
        // No temporary file left beside it.
        QCOMPARE(QDir(dataDir()).entryList(QDir::Files | QDir::System | QDir::Hidden).size(), 2);

        server.close();
        QVERIFY(!QFile::exists(tokenPath));
        QVERIFY(server.listen());
        const QString second = tokenOf(dataDir());
        QVERIFY(QRegularExpression(QStringLiteral("^[0-9a-f]{32}$")).match(second).hasMatch());
        QVERIFY(second != first);
        QCOMPARE(fileMode(tokenPath), 0600);
    }

    void socketIsOwnerOnly() {
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());
        QCOMPARE(server.socketPath(), QDir(dataDir()).filePath(QStringLiteral("control.sock")));
        QVERIFY(isOwnerOnlySocket(server.socketPath()));
        server.close();
        QVERIFY(!QFile::exists(QDir(dataDir()).filePath(QStringLiteral("control.sock"))));
    }

    void secondServerRefusedWhileFirstRuns() {
        ControlServer first(dataDir(), handlerFor(m_calls));
        QVERIFY(first.listen());
        const QString token = tokenOf(dataDir());

        ControlServer second(dataDir(), handlerFor(m_calls));
        const Status refused = second.listen();
        QVERIFY(!refused);
        QCOMPARE(refused.message(), "another tessera-node is running on " + dataDir().toStdString());
        // The running node's token and socket are untouched.
        QCOMPARE(tokenOf(dataDir()), token);
        RawClient client(first.socketPath());
        QVERIFY(client.connected());
        client.send(requestLine(token, QStringLiteral("status")));
        QCOMPARE(client.reply().value(u"ok").toBool(), true);

        first.close();
        const Status accepted = second.listen();
        QVERIFY2(accepted, accepted ? "" : accepted.message().c_str());
    }

    void staleSocketOfDeadNodeReplaced() {
        QVERIFY(QDir().mkpath(dataDir()));
        const ControlEndpoint endpoint(dataDir());
        QVERIFY(makeDanglingSocket(endpoint.socketPath()));
        const Result<QByteArray> staleToken = endpoint.writeNewToken();
        QVERIFY(staleToken);

        ControlServer server(dataDir(), handlerFor(m_calls));
        const Status listening = server.listen();
        QVERIFY2(listening, listening ? "" : listening.message().c_str());
        QVERIFY(tokenOf(dataDir()).toLatin1() != *staleToken);
        RawClient client(server.socketPath());
        QVERIFY(client.connected());
        client.send(requestLine(tokenOf(dataDir()), QStringLiteral("status")));
        QCOMPARE(client.reply().value(u"ok").toBool(), true);
    }

    void fileInTheSocketsPlaceIsKept() {
        QVERIFY(QDir().mkpath(dataDir()));
        const QString path = ControlEndpoint(dataDir()).socketPath();
        QVERIFY(test::writeFile(path, "notes"));
        ControlServer server(dataDir(), handlerFor(m_calls));
        const Status refused = server.listen();
        QVERIFY(!refused);
        QVERIFY2(refused.message().find("is not a socket") != std::string::npos, refused.message().c_str());
        QCOMPARE(readFile(path), QByteArray("notes"));
    }

    void longDataDirUsesTempDirSocket() {
        const QString base = QFileInfo(m_dir->path()).canonicalFilePath();
        // The longest path Qt accepts (106 bytes on Linux) still fits in the data directory...
        const qsizetype fitting =
            ControlEndpoint::maxSocketPathBytes() - base.size() - 1 - qsizetype(sizeof("/control.sock") - 1);
        QVERIFY(fitting > 0 && fitting < 250);
        const QString fits = base + u'/' + QString(fitting, u'f');
        QCOMPARE(ControlEndpoint(fits).socketPath(), fits + QStringLiteral("/control.sock"));
        {
            ControlServer server(fits, handlerFor(m_calls));
            const Status listening = server.listen();
            QVERIFY2(listening, listening ? "" : listening.message().c_str());
            QCOMPARE(QFile::encodeName(server.socketPath()).size(), ControlEndpoint::maxSocketPathBytes());
        }

        // ...one more byte moves the socket to the temp directory, named after the data dir.
        const QString tooLong = base + u'/' + QString(fitting + 1, u'l');
        ControlServer server(tooLong, handlerFor(m_calls));
        const Status listening = server.listen();
        QVERIFY2(listening, listening ? "" : listening.message().c_str());
        const QByteArray hash =
            QCryptographicHash::hash(QFile::encodeName(tooLong), QCryptographicHash::Sha256).toHex().left(16);
        // In this user's private socket dir ($XDG_RUNTIME_DIR/tessera or <temp>/tessera-<uid>, 0700),
        // never in the shared temp dir where another user could take the name first.
        const QString expected = *PrivateSocketDir::path() + QStringLiteral("/tessera-node-") +
                                 QString::fromLatin1(hash) + QStringLiteral(".sock");
        QVERIFY(!expected.startsWith(QDir::tempPath() + QStringLiteral("/tessera-node-")));
        QCOMPARE(server.socketPath(), expected);
        QCOMPARE(ControlEndpoint(tooLong).socketPath(), expected);
        // A relative spelling of the same directory finds the same socket.
        QCOMPARE(ControlEndpoint(QDir::current().relativeFilePath(tooLong)).socketPath(), expected);
        QVERIFY(isOwnerOnlySocket(expected));

        RawClient client(expected);
        QVERIFY(client.connected());
        client.send(requestLine(tokenOf(tooLong), QStringLiteral("status")));
        QCOMPARE(client.reply().value(u"ok").toBool(), true);
        server.close();
        QVERIFY(!QFile::exists(expected));
    }

    void longDataDirFallbackTakenByAnotherUserIsNamed() {
        // Tried: no XDG_RUNTIME_DIR, and another local user created <temp>/tessera-<uid> first (a
        // planted directory). The node refuses to start in words that name it and its owner; it
        // never listens there and the user is not left with a node that silently fails.
        if (::geteuid() != 0)
            QSKIP("needs root to give a folder to another user (CI runs as root)");
        const QByteArray savedTmp = qgetenv("TMPDIR");
        const QByteArray savedRuntime = qgetenv("XDG_RUNTIME_DIR");
        qputenv("TMPDIR", QFile::encodeName(m_dir->path()));
        qunsetenv("XDG_RUNTIME_DIR");
        const QString taken = m_dir->path() + QStringLiteral("/tessera-") + QString::number(::geteuid());
        QVERIFY(QDir().mkpath(taken));
        QVERIFY(::chown(QFile::encodeName(taken).constData(), 65534, 65534) == 0);

        const QString tooLong = m_dir->filePath(QString(120, u'd'));
        ControlServer server(tooLong, handlerFor(m_calls));
        const Status listening = server.listen();
        const Result<QJsonObject> reply = ControlClient::call(tooLong, {ControlCommand::Status});
        qputenv("TMPDIR", savedTmp);
        if (savedRuntime.isNull())
            qunsetenv("XDG_RUNTIME_DIR");
        else
            qputenv("XDG_RUNTIME_DIR", savedRuntime);
        QVERIFY(!listening);
        QVERIFY2(listening.message().find(taken.toStdString() + " belongs to another user (uid 65534)") !=
                     std::string::npos,
                 listening.message().c_str());
        QVERIFY(!server.isListening());
        QVERIFY(!reply);
    }

    void longDataDirWorksWithTheClient() {
        const QString tooLong = m_dir->filePath(QString(120, u'c'));
        ServerThread server(tooLong, handlerFor(m_calls));
        QVERIFY(server.listen());
        const Result<QJsonObject> reply = ControlClient::call(tooLong, {ControlCommand::Status});
        QVERIFY2(reply, reply ? "" : reply.message().c_str());
        QCOMPARE(reply->value(u"stage").toInt(), 2);
    }

    void clientErrorsWhenNoNodeRuns() {
        const QString dir = dataDir();
        const std::string shown = dir.toStdString();

        Result<QJsonObject> reply = ControlClient::call(dir, {ControlCommand::Status});
        QVERIFY(!reply);
        QCOMPARE(reply.message(), "no tessera-node is running on " + shown + " (no control token)");

        // A token a crashed node left, and no socket.
        QVERIFY(QDir().mkpath(dir));
        const ControlEndpoint endpoint(dir);
        QVERIFY(endpoint.writeNewToken());
        reply = ControlClient::call(dir, {ControlCommand::Status});
        QVERIFY(!reply);
        QCOMPARE(reply.message(), "no tessera-node is running on " + shown);

        // Its socket too, dead.
        QVERIFY(makeDanglingSocket(endpoint.socketPath()));
        reply = ControlClient::call(dir, {ControlCommand::Status});
        QVERIFY(!reply);
        QCOMPARE(reply.message(), "no tessera-node is running on " + shown);
    }

    void clientRefusesTamperedToken() {
        QVERIFY(QDir().mkpath(dataDir()));
        const ControlEndpoint endpoint(dataDir());
        QVERIFY(endpoint.writeNewToken());
        QVERIFY(::chmod(QFile::encodeName(endpoint.tokenPath()).constData(), 0644) == 0);
        Result<QJsonObject> reply = ControlClient::call(dataDir(), {ControlCommand::Status});
        QVERIFY(!reply);
        QVERIFY2(reply.message().find("has mode 0644") != std::string::npos, reply.message().c_str());

        QVERIFY(::chmod(QFile::encodeName(endpoint.tokenPath()).constData(), 0600) == 0);
        QVERIFY(test::writeFile(endpoint.tokenPath(), "not-a-token"));
        reply = ControlClient::call(dataDir(), {ControlCommand::Status});
        QVERIFY(!reply);
        QVERIFY2(reply.message().find("is malformed") != std::string::npos, reply.message().c_str());
    }

    void tooManyClientsRefused() {
        ControlServer server(dataDir(), handlerFor(m_calls));
        QVERIFY(server.listen());
        std::vector<std::unique_ptr<RawClient>> clients;
        for (int i = 0; i < ControlServer::kMaxClients; ++i) {
            clients.push_back(std::make_unique<RawClient>(server.socketPath()));
            QVERIFY(clients.back()->connected());
        }
        QTRY_COMPARE(server.clientCount(), ControlServer::kMaxClients);

        RawClient extra(server.socketPath());
        QVERIFY(extra.connected());
        QVERIFY(extra.reply().value(u"error").toString().startsWith(u"too many control connections"));
        QVERIFY(extra.disconnected());

        clients.front()->close();
        QTRY_COMPARE(server.clientCount(), ControlServer::kMaxClients - 1);
        RawClient next(server.socketPath());
        QVERIFY(next.connected());
        next.send(requestLine(tokenOf(dataDir()), QStringLiteral("status")));
        QCOMPARE(next.reply().value(u"ok").toBool(), true);
    }

    void idleClientClosed() {
        ControlServer server(dataDir(), handlerFor(m_calls));
        server.setIdleTimeout(std::chrono::milliseconds(300));
        QVERIFY(server.listen());
        RawClient idle(server.socketPath());
        QVERIFY(idle.connected());
        QTRY_COMPARE(server.clientCount(), 1);
        QVERIFY(idle.disconnected(5000));
        QTRY_COMPARE(server.clientCount(), 0);
    }
};

QTEST_GUILESS_MAIN(TestControlSocket)
#include "test_control_socket.moc"
