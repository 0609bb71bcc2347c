// SPDX-License-Identifier: Apache-2.0
#pragma once
// Manager: the desktop app without its widgets — it applies the settings live, runs the pause
// policy every 250 ms and carries out its decisions on the supervised node, keeps the activity
// history, fetches the swarm's status, and says in one state and one sentence what is going on.
// The tray, the wizard and the dashboard only show it and call it.
//
//   NotStarted (Contribute never clicked, or stopped)
//   Preparing  (benchmark, admission, shard download, joining)   ─▶ Contributing ⇄ Paused
//   Waiting    (waitlisted, coordinator unreachable, node restarting)
//   Error      (refused: why, and what to do)

#include "manager/NodeSupervisor.h"
#include "manager/PausePolicy.h"

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QTimer>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

namespace tessera::manager {

class ActivityLog;
class AppSettings;
class SwarmStatusClient;
struct DetectorContext;

enum class AppState { NotStarted, Preparing, Waiting, Contributing, Paused, Error };
QString appStateName(AppState state); // "Contributing"

class Manager final : public QObject {
    Q_OBJECT

public:
    static constexpr std::chrono::milliseconds kPolicyTick{250};
    // A working node with no task done for this long is waiting, not contributing (a step's
    // averaging takes seconds at most; a large stage's microbatch, seconds).
    static constexpr double kTasksStopFlowingS = 30;

    // settings outlives the manager. context: the detectors' surroundings (tests); nullptr: real.
    explicit Manager(AppSettings& settings, QObject* parent = nullptr);
    Manager(AppSettings& settings, const DetectorContext& context, QObject* parent = nullptr);
    ~Manager() override;

    // Resumes what the user chose last time: contributing if they had clicked Contribute.
    void start();
    // The user clicked Contribute: remember it and start the node (subject to the pause rules).
    void contribute();
    // The tray's pauses: for a while (a snooze), or until resume().
    void pauseFor(std::chrono::minutes duration);
    void pauseUntilResumed();
    void resume();
    // Stops the node and forgets Contribute (the user turned it off).
    void stopContributing();
    // Stops the node (leaving Contribute on for the next start); finished() follows.
    void shutdown();

    AppState state() const { return m_state; }
    // One sentence: "Contributing to stage 2 of 7", "Paused — a game is running: witcher3.exe",
    // "Downloading stage 2 of 7 of the model: 480 MB of 1200 MB · 12.0 MB/s · about 3 minutes left".
    const QString& stateText() const { return m_stateText; }
    // The technical side of the state's problem (the node's own error, a crashed node's last log
    // line), "" when there is none.
    const QString& stateDetails() const { return m_stateDetails; }
    const PauseDecision& pauseDecision() const;
    const QJsonObject& nodeStatus() const;
    const QJsonObject& swarmStatus() const;
    double creditsToday() const { return m_creditsToday; }
    double creditsTotal() const { return m_creditsTotal; }
    QString nodeDataDir() const;
    QString ledgerPath() const;

    AppSettings& settings() { return m_settings; }
    NodeSupervisor& supervisor() { return *m_supervisor; }
    PausePolicy& policy() { return *m_policy; }
    ActivityLog& activity() { return *m_activity; }
    // Tests: extra tessera-node arguments (short benchmark, fast heartbeats).
    void setExtraNodeArguments(const QStringList& arguments);
    // Tests: the clock the policy, the history and the dashboard use.
    void setClock(std::function<qint64()> nowMs);
    // The time by that clock (milliseconds since the epoch).
    qint64 nowMs() const { return m_now(); }

Q_SIGNALS:
    void stateChanged(tessera::manager::AppState state, const QString& text);
    void nodeStatusChanged(const QJsonObject& status);
    void swarmStatusChanged(const QJsonObject& status);
    // The coordinator's status could not be fetched (unreachable, TLS, bad answer): why, in words.
    void swarmStatusFailed(const QString& error);
    void creditsChanged(double today, double total);
    // For the tray's notifications (pause, resume, errors), when the user allows them.
    void notify(const QString& title, const QString& message, bool error);
    void finished();

private:
    void applySetting(int key);
    void rebuildDetectors();
    void tick();
    void applyDecision(const PauseDecision& decision);
    // What the app shows: its state, the sentence, and the technical side for a "Details" view.
    struct ShownState {
        AppState state = AppState::Preparing;
        QString text;
        QString details;
    };
    void updateState();
    // What the manager, the pause policy and the supervisor say before the node's own state counts
    // (not contributing, over the disk limit, paused, refused, restarting, starting); none after.
    std::optional<ShownState> stateBeforeNode(const QJsonObject& status) const;
    // What the node's reported state says.
    ShownState nodeReportedState(const QJsonObject& status) const;
    ShownState workingState(const QJsonObject& status, int stage, const QString& stageText) const;
    void sampleHistory();
    NodeLaunch makeLaunch() const;
    // The stage the node was given needs more disk than the user allows.
    bool overDiskLimit() const;

    AppSettings& m_settings;
    std::unique_ptr<DetectorContext> m_context;
    std::unique_ptr<NodeSupervisor> m_supervisor;
    std::unique_ptr<PausePolicy> m_policy;
    std::unique_ptr<ActivityLog> m_activity;
    std::unique_ptr<SwarmStatusClient> m_swarm;
    QTimer m_tick;
    QTimer m_slowTick; // history, credits and the swarm's status every 10 s
    std::function<qint64()> m_now;
    QStringList m_extraArguments;
    AppState m_state = AppState::NotStarted;
    QString m_stateText;
    QString m_stateDetails;
    double m_creditsToday = 0;
    double m_creditsTotal = 0;
    bool m_contributing = false;
    bool m_pauseTold = false; // the pause now in effect was notified (so its end is too)
};

} // namespace tessera::manager
