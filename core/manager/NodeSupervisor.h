// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeSupervisor: runs tessera-node as a child process and talks to it over its control socket:
// starts it, polls its status, pauses it softly (a control command) or hard (the node exits and
// frees all GPU memory), and restarts it with back-off when it dies. Never touches the GPU itself.
//
//   Stopped ─start()─▶ Starting ─status answered─▶ Running ⇄ SoftPaused
//   Running/SoftPaused ─hardPause()─▶ HardPaused (process gone) ─resume()─▶ Starting
//   Starting/Running/SoftPaused ─process died─▶ Restarting (back-off 1 s…5 min) ─▶ Starting
//   ─exit code 3 (refused: no stage fits, another coordinator key)─▶ Refused (no restart; start() retries)
//   any ─stop()─▶ Stopping ─▶ Stopped

#include "common/Backoff.h"
#include "protocol/ControlMessages.h"
#include "protocol/Refusal.h"

#include <QElapsedTimer>
#include <QJsonObject>
#include <QObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <chrono>
#include <memory>

namespace tessera::node {
class ControlConnection;
}

namespace tessera::manager {

struct NodeLaunch {
    QString program; // tessera-node
    QString coordinatorUrl;
    QString coordinatorCaFile; // empty: none
    QString coordinatorKey;    // empty: the node pins the first key it meets
    QString dataDir;
    QString device; // empty: the node's default
    int gpuLimitPercent = 70;
    QString displayName;        // empty: anonymous on the leaderboard
    QString team;               // empty: none
    QStringList extraArguments; // tests: --bench-seconds, --heartbeat-ms
};

class NodeSupervisor final : public QObject {
    Q_OBJECT

public:
    enum class State { Stopped, Starting, Running, SoftPaused, HardPaused, Restarting, Refused, Stopping };
    Q_ENUM(State)

    explicit NodeSupervisor(QObject* parent = nullptr);
    ~NodeSupervisor() override; // stops the node (SIGTERM, then SIGKILL after 5 s)

    void setLaunch(const NodeLaunch& launch); // used by the next start
    const NodeLaunch& launch() const { return m_launch; }
    void setPollInterval(std::chrono::milliseconds interval);

    // Starts the node (from Stopped, Refused, HardPaused or Restarting); a running one is kept.
    void start();
    // A soft pause: the node stops computing within its running microbatch and keeps its memory.
    void softPause();
    // A hard pause: the node exits (it resumes its session on the next start without a new
    // admission). A node that has no control socket yet is sent SIGTERM.
    void hardPause();
    // Back to computing from either pause (a hard pause starts the process again).
    void resume();
    // Leaves the swarm and ends the process; stopped() follows.
    void stop();
    // Changes the node's compute share live (and for the next start).
    void setGpuLimit(int percent);

    State state() const { return m_state; }
    static QString stateName(State state);
    // The node's last answer to `status` (its state, stage, download, credits…); empty before.
    const QJsonObject& nodeStatus() const { return m_status; }
    qint64 nodePid() const; // 0 when no process runs
    // Why the node stopped, when it was refused or crashed: its last words.
    const QString& lastError() const { return m_lastError; }
    // The technical side of the last failure (the node's last log line), for a "Details" view.
    const QString& lastErrorDetails() const { return m_lastDetails; }
    // A crash in words, by its signal: "the node was killed — the computer may have run out of memory…".
    static QString crashCause(int signal);
    // Why the node was refused for good (state Refused): its kind, read from the node's record.
    const protocol::Refusal& refusal() const { return m_refusal; }
    int restarts() const { return m_restarts; }

Q_SIGNALS:
    void stateChanged(tessera::manager::NodeSupervisor::State state);
    void nodeStatusChanged(const QJsonObject& status);
    // The node died unexpectedly (restart follows) or was refused; the text is for a notification.
    void nodeFailed(const QString& message);
    void stopped();

private:
    void enter(State next);
    void spawn();
    void poll();
    void onStatus(const QJsonObject& reply);
    void onFinished(int exitCode, QProcess::ExitStatus status);
    void command(const protocol::ControlRequest& request);
    QStringList arguments() const;

    NodeLaunch m_launch;
    State m_state = State::Stopped;
    std::unique_ptr<QProcess> m_process;
    std::unique_ptr<node::ControlConnection> m_control;
    QTimer m_poll;
    QTimer m_restart;
    Backoff m_backoff;
    QElapsedTimer m_runningFor; // a node that ran 60 s resets the back-off
    QJsonObject m_status;
    QString m_lastError;
    QString m_lastDetails;
    protocol::Refusal m_refusal;
    QByteArray m_stderrTail;
    int m_restarts = 0;
    bool m_wantSoftPause = false;
    bool m_startWhenExited = false; // start() or resume() while the old process was still leaving
};

} // namespace tessera::manager
