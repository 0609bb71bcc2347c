// SPDX-License-Identifier: Apache-2.0
#include "manager/NodeSupervisor.h"

#include "node/NodeFiles.h"
#include "control/ControlConnection.h"

#include <QMetaEnum>

#include <csignal>

namespace tessera::manager {

namespace {

constexpr qsizetype kStderrTailBytes = 8 * 1024;
constexpr std::chrono::seconds kStableRun{60}; // a node that ran this long starts the back-off over
constexpr int kStopGraceMs = 10'000;           // then SIGKILL
constexpr int kExitRefused = 3;                // tessera-node's NodeExit::ExitRefused

// The last non-empty line the node wrote: its own words for why it stopped.
QString lastLine(const QByteArray& tail) {
    const QList<QByteArray> lines = tail.trimmed().split('\n');
    for (auto it = lines.crbegin(); it != lines.crend(); ++it) {
        if (!it->trimmed().isEmpty())
            return QString::fromUtf8(it->trimmed());
    }
    return {};
}

} // namespace

NodeSupervisor::NodeSupervisor(QObject* parent)
    : QObject(parent) {
    m_poll.setInterval(1000);
    connect(&m_poll, &QTimer::timeout, this, &NodeSupervisor::poll);
    m_restart.setSingleShot(true);
    connect(&m_restart, &QTimer::timeout, this, &NodeSupervisor::spawn);
}

NodeSupervisor::~NodeSupervisor() {
    m_poll.stop();
    m_restart.stop();
    m_control.reset();
    if (m_process && m_process->state() != QProcess::NotRunning) {
        m_process->disconnect(this);
        m_process->terminate();
        if (!m_process->waitForFinished(5000))
            m_process->kill();
        m_process->waitForFinished(1000);
    }
}

QString NodeSupervisor::stateName(State state) {
    return QString::fromLatin1(QMetaEnum::fromType<State>().valueToKey(int(state)));
}

void NodeSupervisor::setLaunch(const NodeLaunch& launch) {
    m_launch = launch;
}

void NodeSupervisor::setPollInterval(std::chrono::milliseconds interval) {
    m_poll.setInterval(int(interval.count()));
}

qint64 NodeSupervisor::nodePid() const {
    return m_process && m_process->state() != QProcess::NotRunning ? m_process->processId() : 0;
}

void NodeSupervisor::enter(State next) {
    if (m_state == next)
        return;
    m_state = next;
    Q_EMIT stateChanged(next);
}

QStringList NodeSupervisor::arguments() const {
    QStringList args{QStringLiteral("run"),
                     QStringLiteral("--coordinator"),
                     m_launch.coordinatorUrl,
                     QStringLiteral("--data-dir"),
                     m_launch.dataDir,
                     QStringLiteral("--gpu-limit"),
                     QString::number(m_launch.gpuLimitPercent)};
    if (!m_launch.coordinatorCaFile.isEmpty())
        args << QStringLiteral("--coordinator-ca") << m_launch.coordinatorCaFile;
    if (!m_launch.coordinatorKey.isEmpty())
        args << QStringLiteral("--coordinator-key") << m_launch.coordinatorKey;
    if (!m_launch.device.isEmpty())
        args << QStringLiteral("--device") << m_launch.device;
    // Opt-in: nothing is sent (the node stays anonymous) unless the user typed something.
    if (!m_launch.displayName.trimmed().isEmpty())
        args << QStringLiteral("--display-name") << m_launch.displayName.trimmed();
    if (!m_launch.team.trimmed().isEmpty())
        args << QStringLiteral("--team") << m_launch.team.trimmed();
    return args + m_launch.extraArguments;
}

void NodeSupervisor::start() {
    switch (m_state) {
    case State::Stopped:
    case State::Refused:
    case State::HardPaused:
    case State::Restarting:
        m_wantSoftPause = false;
        spawn();
        break;
    case State::Stopping:
        m_startWhenExited = true;
        break;
    default:
        break;
    }
}

void NodeSupervisor::spawn() {
    m_restart.stop();
    if (m_process) {
        // Still exiting (a hard pause or a stop in progress): start once it has gone.
        m_startWhenExited = true;
        return;
    }
    m_startWhenExited = false;
    m_stderrTail.clear();
    m_status = {};
    m_process = std::make_unique<QProcess>();
    m_process->setStandardOutputFile(QProcess::nullDevice());
    QProcess* process = m_process.get();
    // The node logs to stderr (and to node.log): keep the tail for its last words, and drain the
    // pipe so that a chatty node never blocks on it.
    connect(process, &QProcess::readyReadStandardError, this, [this, process] {
        m_stderrTail += process->readAllStandardError();
        if (m_stderrTail.size() > kStderrTailBytes)
            m_stderrTail = m_stderrTail.right(kStderrTailBytes);
    });
    connect(process, &QProcess::finished, this, &NodeSupervisor::onFinished);
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart)
            return;
        m_lastError = tr("cannot start %1: %2").arg(m_launch.program, process->errorString());
        m_process.release()->deleteLater();
        m_control.reset();
        m_poll.stop();
        enter(State::Refused);
        Q_EMIT nodeFailed(m_lastError);
    });
    m_control = std::make_unique<node::ControlConnection>(m_launch.dataDir);
    enter(State::Starting);
    m_runningFor.start();
    process->start(m_launch.program, arguments());
    m_poll.start();
    QTimer::singleShot(200, this, &NodeSupervisor::poll);
}

void NodeSupervisor::poll() {
    if (!m_control || m_control->busy())
        return;
    m_control->request(
        protocol::ControlRequest{protocol::ControlCommand::Status},
        [this](Result<QJsonObject> reply) {
            if (reply)
                onStatus(*reply);
            // No answer while the node starts up (its socket is not there yet) is expected; a dead
            // node is seen by QProcess::finished.
        },
        3000);
}

void NodeSupervisor::onStatus(const QJsonObject& reply) {
    m_status = reply;
    const bool paused = reply.value(u"paused").toBool();
    if (m_state == State::Starting) {
        enter(paused ? State::SoftPaused : State::Running);
        // The limit is the app's (one store: its settings): said again on every connect, since it may
        // have changed after the node was launched with --gpu-limit.
        command({protocol::ControlCommand::SetLimit, false, double(m_launch.gpuLimitPercent)});
    }
    // A soft pause asked while the node was starting is carried out as soon as it answers.
    if (m_wantSoftPause && !paused && (m_state == State::Running || m_state == State::SoftPaused)) {
        command({protocol::ControlCommand::Pause});
        enter(State::SoftPaused);
    }
    if (m_runningFor.isValid() && m_runningFor.elapsed() >= std::chrono::milliseconds(kStableRun).count())
        m_backoff.reset();
    Q_EMIT nodeStatusChanged(m_status);
}

void NodeSupervisor::command(const protocol::ControlRequest& request) {
    if (!m_control)
        return;
    m_control->request(request, [this, request](Result<QJsonObject> reply) {
        if (!reply) {
            qWarning("supervisor: %s: %s", qPrintable(protocol::controlCommandName(request.command)),
                     reply.message().c_str());
            return;
        }
        if (reply->contains(u"state") && reply->contains(u"stage")) {
            m_status = *reply;
            Q_EMIT nodeStatusChanged(m_status);
        }
    });
}

void NodeSupervisor::softPause() {
    m_wantSoftPause = true;
    if (m_state == State::Running) {
        command({protocol::ControlCommand::Pause});
        enter(State::SoftPaused);
    }
}

void NodeSupervisor::hardPause() {
    m_wantSoftPause = false;
    m_startWhenExited = false;
    m_restart.stop();
    switch (m_state) {
    case State::Running:
    case State::SoftPaused:
        command({protocol::ControlCommand::Pause, true});
        // A node that does not leave by itself in time is made to.
        QTimer::singleShot(kStopGraceMs, this, [this] {
            if (m_state == State::HardPaused && m_process)
                m_process->kill();
        });
        break;
    case State::Starting:
        // No control socket yet: SIGTERM is the node's own clean stop.
        if (m_process)
            m_process->terminate();
        break;
    default:
        break;
    }
    if (m_state != State::Stopped && m_state != State::Refused && m_state != State::Stopping)
        enter(State::HardPaused);
}

void NodeSupervisor::resume() {
    m_wantSoftPause = false;
    switch (m_state) {
    case State::SoftPaused:
        command({protocol::ControlCommand::Resume});
        enter(State::Running);
        break;
    case State::HardPaused:
    case State::Restarting:
        spawn();
        break;
    default:
        break;
    }
}

void NodeSupervisor::stop() {
    m_restart.stop();
    m_startWhenExited = false;
    m_wantSoftPause = false;
    if (!m_process) {
        m_poll.stop();
        enter(State::Stopped);
        Q_EMIT stopped();
        return;
    }
    if (m_state == State::Stopping)
        return;
    if (m_state == State::Running || m_state == State::SoftPaused)
        command({protocol::ControlCommand::Stop});
    else
        m_process->terminate();
    enter(State::Stopping);
    QTimer::singleShot(kStopGraceMs, this, [this] {
        if (m_state == State::Stopping && m_process)
            m_process->kill();
    });
}

void NodeSupervisor::setGpuLimit(int percent) {
    m_launch.gpuLimitPercent = percent;
    if (m_state == State::Running || m_state == State::SoftPaused)
        command({protocol::ControlCommand::SetLimit, false, double(percent)});
}

QString NodeSupervisor::crashCause(int signal) {
    switch (signal) {
    case SIGKILL:
        return tr("the node was killed — the computer may have run out of memory, or another program "
                  "ended it");
    case SIGSEGV:
    case SIGBUS:
        return tr("the node crashed on a memory fault (a bug in Tessera; signal %1)").arg(signal);
    case SIGABRT:
        return tr("the node crashed on an internal error (a bug in Tessera; signal %1)").arg(signal);
    case SIGILL:
        return tr("the node crashed: this processor lacks an instruction it used (signal %1)").arg(signal);
    case SIGFPE:
        return tr("the node crashed on an arithmetic fault (a bug in Tessera; signal %1)").arg(signal);
    default:
        return tr("the node crashed (signal %1)").arg(signal);
    }
}

void NodeSupervisor::onFinished(int exitCode, QProcess::ExitStatus exitStatus) {
    if (m_process) {
        m_stderrTail += m_process->readAllStandardError();
        m_process.release()->deleteLater(); // this is its own finished() signal
    }
    m_control.reset();
    m_poll.stop();
    const bool crashed = exitStatus == QProcess::CrashExit;

    if (m_state == State::Stopping) {
        enter(State::Stopped);
        Q_EMIT stopped();
        if (m_startWhenExited)
            spawn();
        return;
    }
    if (m_state == State::HardPaused) {
        if (m_startWhenExited)
            spawn();
        return;
    }
    const QString words = lastLine(m_stderrTail);
    if (!crashed && exitCode == kExitRefused) {
        // The node records why, by kind, before it exits refused.
        m_refusal = node::NodeFiles(m_launch.dataDir).readRefusal().value_or(protocol::Refusal{});
        const QString detail = m_status.value(u"detail").toString();
        m_lastError = !m_refusal.message.isEmpty() ? m_refusal.message : !words.isEmpty() ? words : detail;
        enter(State::Refused);
        Q_EMIT nodeFailed(m_lastError);
        return;
    }
    if (!crashed && exitCode == 0) {
        // Stopped from outside (`tessera-node stop`): the user's own hand, not a fault.
        enter(State::Stopped);
        Q_EMIT stopped();
        return;
    }
    ++m_restarts;
    const std::chrono::milliseconds delay = m_backoff.next();
    // A crash is told by its cause (Qt gives the signal as the exit code); its last log line is
    // only a detail, as it says what the node did last, not why it died. A node that exits with
    // an error prints that error last.
    m_lastDetails = words;
    if (crashed) {
        m_lastError = crashCause(exitCode);
    } else {
        m_lastError = tr("the node stopped with exit code %1").arg(exitCode);
        if (!words.isEmpty())
            m_lastError += QStringLiteral(": ") + words;
    }
    enter(State::Restarting);
    m_restart.start(int(delay.count()));
    Q_EMIT nodeFailed(tr("%1; restarting in %2 s").arg(m_lastError).arg((delay.count() + 999) / 1000));
}

} // namespace tessera::manager
