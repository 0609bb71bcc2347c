// SPDX-License-Identifier: Apache-2.0
#include "LocalSwarm.h"

#include "control/ControlClient.h"

#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QJsonDocument>
#include <QNetworkReply>
#include <QProcessEnvironment>
#include <QSslCertificate>
#include <QTimer>
#include <QUrl>

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

QString swarmCoordinatorProgram() {
    return QStringLiteral(TESSERA_COORDINATOR_PATH);
}

QString swarmNodeProgram() {
    return QStringLiteral(TESSERA_NODE_PATH);
}

void sleepWithEvents(int ms) {
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

namespace {

// The node's flags: the shortest admission benchmark, a heartbeat a second, and no throttle —
// the benchmark measures the swarm, not a user's limit.
QStringList nodeFlags(const QString& url, const QString& dataDir, const QString& caFile) {
    return {QStringLiteral("run"),
            QStringLiteral("--coordinator"),
            url,
            QStringLiteral("--data-dir"),
            dataDir,
            QStringLiteral("--coordinator-ca"),
            caFile,
            QStringLiteral("--bench-seconds"),
            QStringLiteral("0.5"),
            QStringLiteral("--heartbeat-ms"),
            QStringLiteral("1000"),
            QStringLiteral("--gpu-limit"),
            QStringLiteral("100")};
}

// In the child before exec: a benchmark stopped by a signal leaves no swarm behind.
void dieWithParent() {
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
}

} // namespace

LocalSwarm::LocalSwarm(const QString& dir, const QStringList& coordinatorArguments)
    : m_dir(dir)
    , m_arguments(coordinatorArguments) {
    // A coordinator data dir left from an earlier run would resume that run instead of a new one.
    QDir(dir).removeRecursively();
    QDir().mkpath(dir);
}

LocalSwarm::~LocalSwarm() {
    stop();
}

quint16 LocalSwarm::port() const {
    return quint16(QUrl(m_url).port());
}

QString LocalSwarm::caFile() const {
    return m_dir + QStringLiteral("/coordinator/tls.crt");
}

QString LocalSwarm::coordinatorLog() const {
    return m_dir + QStringLiteral("/coordinator.log");
}

QString LocalSwarm::coordinatorCommand() const {
    return QStringLiteral("tessera-coordinator --data-dir D --listen 127.0.0.1:0 ") + m_arguments.join(u' ');
}

QString LocalSwarm::nodeCommand(const QString& url, const QString& caFile) {
    return QStringLiteral("OMP_NUM_THREADS=1 tessera-node ") +
           nodeFlags(url, QStringLiteral("DIR"), caFile).join(u' ');
}

QString LocalSwarm::start() {
    // Its output goes to a file: a pipe nobody drains while the benchmark sleeps would stall it.
    m_coordinator.setProcessChannelMode(QProcess::MergedChannels);
    m_coordinator.setStandardOutputFile(coordinatorLog(), QIODevice::Append);
    m_coordinator.setChildProcessModifier(dieWithParent);
    m_coordinator.setProgram(swarmCoordinatorProgram());
    m_coordinator.setArguments(QStringList{QStringLiteral("--data-dir"),
                                           m_dir + QStringLiteral("/coordinator"), QStringLiteral("--listen"),
                                           QStringLiteral("127.0.0.1:0")} +
                               m_arguments);
    m_coordinator.start();
    QElapsedTimer waited;
    waited.start();
    while (waited.elapsed() < 120'000) {
        QFile log(coordinatorLog());
        if (log.open(QIODevice::ReadOnly)) {
            const QByteArray text = log.readAll();
            const qsizetype at = text.indexOf("listening on ");
            const qsizetype end = at < 0 ? -1 : text.indexOf('\n', at);
            // "ready": a new run's initial weights are written, nodes are admitted.
            if (end > 0 && text.indexOf("\nready: ", end) >= 0) {
                m_url = QString::fromUtf8(text.mid(at + 13, end - at - 13)).trimmed();
                break;
            }
        }
        if (m_coordinator.state() == QProcess::NotRunning)
            break;
        sleepWithEvents(100);
    }
    if (m_url.isEmpty()) {
        QFile log(coordinatorLog());
        (void)log.open(QIODevice::ReadOnly);
        return QStringLiteral("the coordinator did not start: ") +
               QString::fromUtf8(log.readAll().right(2000));
    }
    m_ssl = QSslConfiguration::defaultConfiguration();
    m_ssl.addCaCertificates(QSslCertificate::fromPath(caFile()));
    return {};
}

int LocalSwarm::addNode(const QString& url, const QProcessEnvironment& environment) {
    const int index = int(m_nodes.size());
    auto process = std::make_unique<QProcess>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    env.insert(environment);
    process->setProcessEnvironment(env);
    process->setProcessChannelMode(QProcess::MergedChannels);
    process->setStandardOutputFile(QStringLiteral("%1/node-%2.log").arg(m_dir).arg(index), QIODevice::Append);
    process->setChildProcessModifier(dieWithParent);
    process->setProgram(swarmNodeProgram());
    process->setArguments(nodeFlags(url.isEmpty() ? m_url : url, nodeDir(index), caFile()));
    process->start();
    m_nodes.push_back(std::move(process));
    return index;
}

void LocalSwarm::killNode(int index) {
    QProcess& p = *m_nodes.at(std::size_t(index));
    p.kill();
    p.waitForFinished(5000);
}

bool LocalSwarm::nodeRunning(int index) const {
    return m_nodes.at(std::size_t(index))->state() != QProcess::NotRunning;
}

QList<int> LocalSwarm::runningNodes() const {
    QList<int> out;
    for (int i = 0; i < int(m_nodes.size()); ++i)
        if (nodeRunning(i))
            out.append(i);
    return out;
}

qint64 LocalSwarm::nodePid(int index) const {
    return m_nodes.at(std::size_t(index))->processId();
}

QString LocalSwarm::nodeDir(int index) const {
    return QStringLiteral("%1/node-%2").arg(m_dir).arg(index);
}

QString LocalSwarm::nodeLog(int index) const {
    return QStringLiteral("%1/node-%2.log").arg(m_dir).arg(index);
}

QJsonObject LocalSwarm::get(const QString& path) {
    QNetworkRequest request{QUrl(m_url + path)};
    request.setSslConfiguration(m_ssl);
    QNetworkReply* reply = m_net.get(request);
    QEventLoop loop;
    QTimer timeout;
    timeout.setSingleShot(true);
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    QObject::connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
    timeout.start(15'000);
    loop.exec();
    if (!reply->isFinished())
        reply->abort();
    const QByteArray body = reply->readAll();
    reply->deleteLater();
    return QJsonDocument::fromJson(body).object();
}

QJsonObject LocalSwarm::nodeStatus(int index) const {
    if (!nodeRunning(index))
        return {};
    tessera::Result<QJsonObject> s =
        tessera::node::ControlClient::call(nodeDir(index), {tessera::protocol::ControlCommand::Status}, 3000);
    return s ? *s : QJsonObject();
}

bool LocalSwarm::waitWorking(int count, int timeoutMs) {
    QElapsedTimer waited;
    waited.start();
    while (waited.elapsed() < timeoutMs) {
        int working = 0;
        for (int i : runningNodes())
            working += nodeStatus(i).value(u"state").toString() == u"Working" ? 1 : 0;
        if (working >= count)
            return true;
        sleepWithEvents(500);
    }
    return false;
}

void LocalSwarm::stop() {
    for (auto& node : m_nodes)
        if (node->state() != QProcess::NotRunning)
            node->terminate();
    for (auto& node : m_nodes)
        if (node->state() != QProcess::NotRunning && !node->waitForFinished(15'000)) {
            node->kill();
            node->waitForFinished(5000);
        }
    if (m_coordinator.state() != QProcess::NotRunning) {
        m_coordinator.terminate();
        if (!m_coordinator.waitForFinished(15'000)) {
            m_coordinator.kill();
            m_coordinator.waitForFinished(5000);
        }
    }
}
