// SPDX-License-Identifier: Apache-2.0
// SessionMessages and ControlMessages: every message type and control command round-trips, and a
// message of an unknown type, sent the wrong way or over the wrong transport, with a field missing,
// mistyped or out of range is refused with the type and field named; the table in
// docs/ARCHITECTURE.md lists every type.
#include "protocol/ControlMessages.h"
#include "protocol/SessionMessages.h"

#include <QFile>
#include <QJsonDocument>
#include <QTest>

#include <string>

using namespace tessera;
using namespace tessera::protocol;

namespace {

// One message of each type, with every field set away from its default.
std::vector<SessionMessage> samples() {
    TaskResult result;
    result.taskId = 7;
    result.kind = TaskKind::ForwardBackward;
    result.microbatch = 0; // 0 is a value, not "absent"
    result.ok = false;
    result.computeSeconds = 0.25;
    result.tokens = 512;
    result.loss = 2.5;
    result.error = QStringLiteral("no graph");
    result.errorKind = ErrorKind::MissingGraph;
    Task task;
    task.taskId = 9;
    task.kind = TaskKind::Backward;
    task.microbatch = 3;
    return {Heartbeat{},
            Ready{2, 5, 9, 4096},
            Unavailable{QStringLiteral("paused")},
            result,
            StepDone{12, true, 8, {}, {}},
            AverageShare{4, -1, 20, true, {}, 64, 1000},
            SyncDone{4, false, QStringLiteral("bad size"), 8192},
            GradientShare{12, 3, 11, true, {}, 32, true},
            HeartbeatAck{1'700'000'000'000},
            ErrorNotice{QStringLiteral("refused")},
            task,
            Step{12, 11, 4},
            Average{5, 3, 20, 100, 4096},
            AverageResult{5, 3, 2, 0, 0},
            SyncRequest{6, 20, 0},
            Sync{6, 4096, 10000},
            Reassign{1, QStringLiteral("stage 1 has no node")},
            Credits{},
            GradientResult{12, 12, true, 3, 0.0025, 0.5},
            GradientBasis{12, 11}};
}

bool operator==(const TaskResult& a, const TaskResult& b) {
    return a.taskId == b.taskId && a.kind == b.kind && a.microbatch == b.microbatch && a.ok == b.ok &&
           a.computeSeconds == b.computeSeconds && a.tokens == b.tokens && a.loss == b.loss &&
           a.error == b.error && a.errorKind == b.errorKind;
}

bool fails(const Result<SessionMessage>& r, const char* text) {
    if (r)
        return false;
    if (r.message().find(text) == std::string::npos) {
        qWarning("error \"%s\" does not mention \"%s\"", r.message().c_str(), text);
        return false;
    }
    return r.kind() == ErrorKind::InvalidInput;
}

QJsonObject parse(const char* json) {
    return QJsonDocument::fromJson(json).object();
}

Result<SessionMessage> toNode(const char* json, Transport transport = Transport::Text) {
    return parseSessionMessage(parse(json), Direction::ToNode, transport);
}

Result<SessionMessage> toCoordinator(const char* json, Transport transport = Transport::Text) {
    return parseSessionMessage(parse(json), Direction::ToCoordinator, transport);
}

} // namespace

class TestSessionMessages final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyTypeRoundTrips() {
        const std::vector<SessionMessage> all = samples();
        QCOMPARE(int(all.size()), kMessageTypes);
        for (const SessionMessage& m : all) {
            const MessageType type = typeOf(m);
            const QJsonObject json = toJson(m);
            QCOMPARE(json.value(u"type").toString(), messageTypeName(type));
            const Transport transport =
                transportOf(type) == Transport::Binary ? Transport::Binary : Transport::Text;
            const Result<SessionMessage> back = parseSessionMessage(json, directionOf(type), transport);
            QVERIFY2(back, back ? "" : back.message().c_str());
            QCOMPARE(typeOf(*back), type);
            // Equal field by field: encoding the decoded message gives the same JSON.
            QCOMPARE(toJson(*back), json);
        }
        const QByteArray text = toText(all[3]).toUtf8();
        const Result<SessionMessage> result = toCoordinator(text.constData());
        QVERIFY(std::get<TaskResult>(*result) == std::get<TaskResult>(all[3]));
    }

    void optionalFieldsTakeTheirDefaults() {
        const Result<SessionMessage> r = toCoordinator(
            R"({"type":"task_result","task_id":1,"kind":"forward","ok":true})", Transport::Binary);
        QVERIFY2(r, r ? "" : r.message().c_str());
        const TaskResult& t = std::get<TaskResult>(*r);
        QCOMPARE(t.microbatch, qint64(-1));
        QVERIFY(!t.loss);
        QCOMPARE(t.errorKind, ErrorKind::Failed);
        // An error kind a newer peer knows and this build does not reads as "failed".
        const Result<SessionMessage> newer = toCoordinator(
            R"({"type":"task_result","task_id":1,"kind":"forward","ok":false,"error_kind":"quantum"})");
        QCOMPARE(std::get<TaskResult>(*newer).errorKind, ErrorKind::Failed);
        // Fields a type does not know are ignored (a newer peer may add some).
        QVERIFY(toNode(R"({"type":"step","step":3,"lr":0.001})").ok());
    }

    void refusesWithTheFieldNamed() {
        QVERIFY(fails(toNode(R"({"step":3})"), "type: missing"));
        QVERIFY(fails(toNode(R"({"type":"launch_missiles"})"), "unknown message type 'launch_missiles'"));
        QVERIFY(fails(toNode(R"({"type":"ready","stage":1,"version":1})"), "sent the wrong way"));
        QVERIFY(fails(toCoordinator(R"({"type":"step","step":1})"), "sent the wrong way"));
        QVERIFY(fails(toNode(R"({"type":"sync","round":1,"offset":0,"total":20})"), "binary message"));
        QVERIFY(fails(toNode(R"({"type":"sync","round":1,"offset":20,"total":20})", Transport::Binary),
                      "offset 20 is not below total 20"));
        QVERIFY(fails(toNode(R"({"type":"sync","round":1,"offset":-1,"total":20})", Transport::Binary),
                      "sync.offset: must be within"));
        QVERIFY(fails(toCoordinator(R"({"type":"ready","stage":1,"version":1})", Transport::Binary),
                      "text message"));
        QVERIFY(fails(toNode(R"({"type":"step"})"), "step.step: missing"));
        QVERIFY(fails(toNode(R"({"type":"step","step":"3"})"), "step.step: must be a number"));
        QVERIFY(fails(toNode(R"({"type":"step","step":1.5})"), "step.step: must be a whole number"));
        QVERIFY(fails(toNode(R"({"type":"step","step":-1})"), "step.step: must be within"));
        QVERIFY(
            fails(toNode(R"({"type":"reassign","stage":1024})"), "reassign.stage: must be within 0..1023"));
        QVERIFY(fails(toNode(R"({"type":"average","round":1,"partition":20,"partitions":20})"),
                      "partition 20 is not in [0, 20)"));
        QVERIFY(fails(toNode(R"({"type":"task","task_id":1,"kind":"forward"})", Transport::Binary),
                      "task.microbatch"));
        QVERIFY(fails(
            toNode(R"({"type":"task","task_id":1,"kind":"teleport","microbatch":1})", Transport::Binary),
            "task.kind"));
        QVERIFY(fails(toNode(R"({"type":"task","task_id":1,"kind":"probe"})"), "probe needs"));
        const std::string longReason(2000, 'x');
        QVERIFY(fails(
            toNode(qPrintable(
                QStringLiteral(R"({"type":"error","error":"%1"})").arg(QString::fromStdString(longReason)))),
            "longer than 1000"));
        QVERIFY(fails(parseSessionText(QStringLiteral("not json"), Direction::ToNode, kSessionTextMaxBytes),
                      "not JSON"));
        QVERIFY(fails(parseSessionText(QStringLiteral("[1]"), Direction::ToNode, kSessionTextMaxBytes),
                      "JSON object"));
        QVERIFY(fails(parseSessionText(QString(17 * 1024, u' '), Direction::ToNode, kSessionTextMaxBytes),
                      "longer than 16384 bytes"));
    }

    void theDocumentationListsEveryType() {
        QFile doc(QStringLiteral(TESSERA_SOURCE_DIR "/docs/ARCHITECTURE.md"));
        QVERIFY(doc.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(doc.readAll());
        // The table there is describeSessionMessages()'s output: regenerate it when this fails.
        const QStringList rows = describeSessionMessages().split(u'\n', Qt::SkipEmptyParts);
        QCOMPARE(rows.size(), kMessageTypes);
        for (const QString& row : rows)
            QVERIFY2(text.contains(row),
                     qPrintable(QStringLiteral("docs/ARCHITECTURE.md lacks the row: ") + row));
    }

    void controlCommandsRoundTrip() {
        const std::vector<ControlRequest> all{{ControlCommand::Status},
                                              {ControlCommand::Pause, true},
                                              {ControlCommand::Resume},
                                              {ControlCommand::Stop},
                                              {ControlCommand::SetLimit, false, 40}};
        QCOMPARE(controlCommandNames().size(), qsizetype(all.size()));
        for (const ControlRequest& r : all) {
            const QByteArray line = requestLine(r, "0123abcd");
            QVERIFY(line.endsWith('\n'));
            const QJsonObject json = QJsonDocument::fromJson(line).object();
            QCOMPARE(json.value(u"token").toString(), QStringLiteral("0123abcd"));
            const Result<ControlRequest> back = parseControlRequest(json);
            QVERIFY2(back, back ? "" : back.message().c_str());
            QCOMPARE(back->command, r.command);
            QCOMPARE(back->hard, r.hard);
            QCOMPARE(back->percent, r.percent);
        }
    }

    void controlRequestsAreChecked() {
        const auto failsWith = [](const char* json, const char* text) {
            const Result<ControlRequest> r = parseControlRequest(parse(json));
            return !r && r.message().find(text) != std::string::npos && r.kind() == ErrorKind::InvalidInput;
        };
        QVERIFY(failsWith(R"({})", "needs a \"command\""));
        QVERIFY(failsWith(R"({"command":"reboot"})",
                          "unknown command \"reboot\" (expected one of: status, pause"));
        QVERIFY(failsWith(R"({"command":"pause","arguments":[1]})", "must be a JSON object"));
        QVERIFY(
            failsWith(R"({"command":"pause","arguments":{"hard":"yes"}})", "hard: must be true or false"));
        QVERIFY(failsWith(R"({"command":"set-limit","arguments":{"percent":0}})",
                          "percent: must be from 1 to 100"));
        QVERIFY(failsWith(R"({"command":"set-limit"})", "percent"));
    }
};

QTEST_GUILESS_MAIN(TestSessionMessages)
#include "test_session_messages.moc"
