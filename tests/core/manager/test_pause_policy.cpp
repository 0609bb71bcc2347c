// SPDX-License-Identifier: Apache-2.0
// PausePolicy: the pause rules' state machine on a clock the test moves. The detectors here are
// switches the test flips: the real sensors are tested in test_detectors and test_x11_detectors,
// and together with the policy in test_pause_while_gaming.
#include "manager/PausePolicy.h"

#include <QSignalSpy>
#include <QTest>

using namespace tessera::manager;

namespace {

// A rule whose truth the test sets.
class Switch final : public PauseDetector {
public:
    Switch(QString rule, bool game, bool* on)
        : m_rule(std::move(rule))
        , m_game(game)
        , m_on(on) {}
    QString rule() const override { return m_rule; }
    std::optional<PauseCause> check() override {
        if (!*m_on)
            return std::nullopt;
        return PauseCause{m_rule, m_rule + QStringLiteral(" is on"), m_game};
    }

private:
    QString m_rule;
    bool m_game;
    bool* m_on;
};

constexpr qint64 kGrace = 15'000;

} // namespace

class TestPausePolicy final : public QObject {
    Q_OBJECT

    bool m_game = false;
    bool m_warm = false;
    std::unique_ptr<PausePolicy> m_policy;

private Q_SLOTS:
    void init() {
        m_game = false;
        m_warm = false;
        m_policy = std::make_unique<PausePolicy>();
        std::vector<std::unique_ptr<PauseDetector>> detectors;
        detectors.push_back(std::make_unique<Switch>(QStringLiteral("temperature"), false, &m_warm));
        detectors.push_back(std::make_unique<Switch>(QStringLiteral("fullscreen"), true, &m_game));
        m_policy->setDetectors(std::move(detectors));
        m_policy->setGracePeriod(std::chrono::milliseconds(kGrace));
    }

    void runsWithoutCauses() {
        QCOMPARE(m_policy->evaluate(0).kind, PauseKind::None);
        QVERIFY(m_policy->decision().reason.isEmpty());
    }

    void gamePausesHardAtOnceAndResumesOnlyAfterGrace() {
        QSignalSpy changes(m_policy.get(), &PausePolicy::decisionChanged);
        m_policy->evaluate(0);
        m_game = true;
        QCOMPARE(m_policy->evaluate(250).kind, PauseKind::Hard);
        QCOMPARE(m_policy->decision().reason, QStringLiteral("fullscreen is on"));
        m_game = false;
        // Gone, but not for long enough: still paused, counting down.
        QCOMPARE(m_policy->evaluate(1000).kind, PauseKind::Hard);
        QCOMPARE(m_policy->decision().resumeAtMs, 1000 + kGrace);
        QCOMPARE(m_policy->decision().reason, QStringLiteral("resuming in 15 s"));
        QCOMPARE(m_policy->evaluate(1000 + kGrace - 1).kind, PauseKind::Hard);
        QCOMPARE(m_policy->evaluate(1000 + kGrace).kind, PauseKind::None);
        // Paused, grace started, resumed: the countdown's ticks were no new decisions.
        QCOMPARE(changes.count(), 3);
    }

    void causeReturningDuringGraceRestartsIt() {
        m_game = true;
        m_policy->evaluate(0);
        m_game = false;
        m_policy->evaluate(1000);
        m_game = true; // the game's loading screen flickered out of full screen
        m_policy->evaluate(5000);
        m_game = false;
        m_policy->evaluate(6000);
        QCOMPARE(m_policy->evaluate(1000 + kGrace).kind, PauseKind::Hard);
        QCOMPARE(m_policy->evaluate(6000 + kGrace).kind, PauseKind::None);
    }

    void shortInterruptionIsSoftThenHardWhenLong() {
        m_warm = true;
        QCOMPARE(m_policy->evaluate(0).kind, PauseKind::Soft);
        QCOMPARE(m_policy->evaluate(PausePolicy::kSoftToHard.count() - 1).kind, PauseKind::Soft);
        // A soft pause that lasts frees the GPU's memory after all.
        QCOMPARE(m_policy->evaluate(PausePolicy::kSoftToHard.count()).kind, PauseKind::Hard);
        m_warm = false;
        const qint64 t = PausePolicy::kSoftToHard.count() + 1000;
        QCOMPARE(m_policy->evaluate(t).kind, PauseKind::Hard);
        QCOMPARE(m_policy->evaluate(t + kGrace).kind, PauseKind::None);
    }

    void softBecomesHardWhenAGameStartsAndStaysHard() {
        m_warm = true;
        QCOMPARE(m_policy->evaluate(0).kind, PauseKind::Soft);
        m_game = true;
        QCOMPARE(m_policy->evaluate(500).kind, PauseKind::Hard);
        QCOMPARE(m_policy->decision().reason, QStringLiteral("fullscreen is on")); // the game comes first
        m_game = false;
        QCOMPARE(m_policy->evaluate(1000).kind, PauseKind::Hard); // once hard, hard until it ends
    }

    void snoozeEndsOnTime() {
        m_policy->snoozeUntil(0, 3'600'000);
        QCOMPARE(m_policy->decision().kind, PauseKind::Hard);
        QVERIFY(m_policy->decision().reason.startsWith(QStringLiteral("you paused it until ")));
        QCOMPARE(m_policy->evaluate(3'599'999).kind, PauseKind::Hard);
        m_policy->evaluate(3'600'000);
        QCOMPARE(m_policy->snoozeUntilMs(), 0);
        QCOMPARE(m_policy->evaluate(3'600'000 + kGrace).kind, PauseKind::None);
    }

    void snoozeNeverEndsDuringAGame() {
        m_policy->snoozeUntil(0, 3'600'000);
        m_game = true;
        m_policy->evaluate(3'000'000);
        // The hour is over while the game runs: still paused, and the snooze is still held.
        QCOMPARE(m_policy->evaluate(3'600'000).kind, PauseKind::Hard);
        QCOMPARE(m_policy->evaluate(5'000'000).kind, PauseKind::Hard);
        QCOMPARE(m_policy->snoozeUntilMs(), 3'600'000);
        QVERIFY(m_policy->decision().causes.size() == 2);
        m_game = false;
        m_policy->evaluate(5'000'001);
        QCOMPARE(m_policy->snoozeUntilMs(), 0);
        QCOMPARE(m_policy->evaluate(5'000'001 + kGrace - 1).kind, PauseKind::Hard);
        QCOMPARE(m_policy->evaluate(5'000'001 + kGrace).kind, PauseKind::None);
    }

    void pauseUntilResumedLastsAndResumeSkipsGrace() {
        m_policy->snoozeUntil(0, -1);
        QCOMPARE(m_policy->evaluate(100'000'000).kind, PauseKind::Hard);
        QCOMPARE(m_policy->decision().reason, QStringLiteral("you paused it until you resume"));
        m_policy->resume(100'000'001);
        QCOMPARE(m_policy->decision().kind, PauseKind::None);
    }

    void resumeDoesNotOverrideARuleStillTrue() {
        m_policy->snoozeUntil(0, -1);
        m_game = true;
        m_policy->resume(1000);
        QCOMPARE(m_policy->decision().kind, PauseKind::Hard);
        QCOMPARE(m_policy->decision().reason, QStringLiteral("fullscreen is on"));
    }

    void newDetectorsApplyOnTheNextTick() {
        m_game = true;
        QCOMPARE(m_policy->evaluate(0).kind, PauseKind::Hard);
        m_policy->setDetectors({}); // the user turned the rule off
        m_policy->evaluate(100);
        QCOMPARE(m_policy->evaluate(100 + kGrace).kind, PauseKind::None);
    }
};

QTEST_GUILESS_MAIN(TestPausePolicy)
#include "test_pause_policy.moc"
