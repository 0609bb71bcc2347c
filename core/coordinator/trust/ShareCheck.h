// SPDX-License-Identifier: Apache-2.0
#pragma once
// ShareCheck: a node's gradient share checked against its own work (issue 41, item 4). A share is
// the mean of the weight gradients of the microbatches the node ran backward this step (plus what
// what its 8-bit rounding lost before); nothing else ties it to that work, and with two replicas one share
// of −9× the honest gradient sets the stage's update within every bound on a share's size.
//
//   1. Every accepted backward (a last stage's forward_backward, a stage 0 backward too) is offered;
//      two per node and step are kept, drawn evenly among them (reservoir sampling), so the node
//      cannot know which of its microbatches will be asked about.
//   2. When a stage's shares are all in, a share of the stage-steps (`percent`, drawn then; every step
//      for `suspectSteps` once a share of the stage failed or was disputed) is checked:
//      each node's kept microbatch is sent to another replica of the stage (another network first)
//      that held the same weights when it ran (Router::era), as a task with a sketch seed drawn now —
//      after the share came, so no share can be shaped to it. The replica answers the count sketch
//      (base/CountSketch) of that microbatch's weight gradient g, nothing accumulated; the
//      coordinator sketches the share s under the same seed.
//   3. Judged by what any share holding its microbatches' gradients must show: the alignment
//      n·⟨g, s⟩/‖g‖² (n its microbatches: g is one of the n terms of the mean, so honest shares give
//      about 1 plus what the other microbatches' gradients share with g — a reversed or scaled-away
//      share gives −9 or 0) at least `minAlignment`, and ‖s‖/‖g‖ at most `maxNormRatio` (a mean of
//      gradients like g is not many times larger than one of them; a dense share carries nothing of a
//      step it was not counted in: gpu/train/GradientExchange drops it).
//   4. A share that fails is looked at again: a referee — a third replica, else the same verifier —
//      sketches the node's other kept microbatch (an independent look: an honest share fails one by
//      chance when its other microbatches' gradients oppose the drawn one's, hardly two). Passing the
//      second, it stands. Failing both, it is dropped from the step's mean, and its sender is struck when
//      two different replicas sketched them; with two replicas (one verifier) the case is unsettled —
//      both go on probation, nobody is struck, since a lying verifier could otherwise strike an honest
//      share — and the update holds only shares that passed the other's check. A verifier that errs,
//      misses its deadline or leaves is replaced; with none left the share stands unchecked.
//   5. No other replica can sketch it (alone on its stage, or none has shown its weights since it
//      joined: Router::mayVerify): the coordinator looks by the node's own trace (setTraceLooks:
//      Bisection::traceShare recomputes one drawn segment's weights' gradient from the trace, the trace
//      pinned at both ends). And with two replicas (case 4's unsettled) it referees the same way: the
//      share passing the trace look stands (the verifier it contradicts goes on probation); failing two,
//      it is struck — the coordinator's own recompute. Not where the stage has no trace of the work (a
//      first stage's backward).
// What it cannot see: a lie orthogonal to every gradient of the node's own microbatches, within the
// norm bound (docs/ARCHITECTURE.md, "Trust"); a low-rank exchange's shares (not checked: the check
// needs the dense share); replicas whose weights differ (SPARTA rounds, after a restart: off there).
//
// Single-threaded (the coordinator's thread); the share's sketch is one pass over it when checked.

#include "base/CountSketch.h"
#include "coordinator/router/Router.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QStringList>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

namespace tessera::coordinator {

struct ShareCheckSettings {
    double percent = 25;       // stage-steps whose shares are checked (drawn once the shares came)
    // n·⟨g, s⟩/‖g‖²: honest ≈ 1 + the other microbatches' share of g. Honest first looks measured down to
    // 0.23 (bench_trust) and 0.30 (test_dishonest_nodes), one honest norm ratio at 4.08 (a microbatch whose
    // gradient is small): the second look carries those, and the bounds leave room for them too.
    double minAlignment = 0.2;
    double maxNormRatio = 6;   // ‖s‖/‖g‖
    int buckets = 4096;        // the sketches' (the node answers CountSketch::kDefaultBuckets)
    int maxVerifiers = 3;      // sends of one case: the verifier and the referee, with replacements
    // A share that failed a check, or was disputed, makes its sender (and a disputing verifier) a
    // suspect: its stage's shares are checked at every step for this many steps.
    int suspectSteps = 20;
};

// A share as the averager holds it.
struct ShareView {
    QString node;
    const std::vector<float>* values = nullptr;
    int microbatches = 0; // its weight: the microbatches the coordinator accepted of it (at most its claim)
    // What its sender divided by (0: as many). More than `microbatches`: the share holds the gradient of work
    // the coordinator refused (a result that crossed a bound — perhaps on a framer's input): a check that fails
    // then leaves it out and strikes nobody (GradientAverager leaves such shares out by size, likewise).
    int claimed = 0;
};

// Where a check by trace looks (a lone replica's share: trust/Bisection::traceShare): one segment's weights.
struct ShareSegment {
    int segment = 0;              // a block of the stage, or blocks(): the last stage's head
    qint64 offset = 0, count = 0; // where its weights' gradient lies in the share (parameter order)
};
struct ShareLook {
    // Held: the trace held, the numbers are the look's. TraceFailed: the trace did not hold or never came
    // (judged as a spot check's: convicted, or struck). Unjudged: nothing could be recomputed.
    enum Outcome { Unjudged, Held, TraceFailed } outcome = Unjudged;
    double alignment = 0, normRatio = 0;
    QString segment; // what was recomputed, in words
};

struct ShareVerdict {
    qint64 step = 0;
    int stage = 0;
    QString node;           // the share's sender
    QStringList verifiers;  // who sketched its microbatches (the referee second)
    bool passed = false;    // the share stands
    bool struck = false;    // dropped, and its sender struck
    bool unsettled = false; // dropped without a verdict: `disputed` go on probation
    QStringList disputed;
    // A verifier whose failing look the coordinator's recompute from the sender's trace contradicted (two
    // replicas, refereed): on probation — a lying verifier, or one look failed by chance.
    QStringList contradicted;
    double alignment = 0;   // against the first verifier's sketch
    double normRatio = 0;
    QString reason;
};

class ShareCheck final : public QObject {
    Q_OBJECT

public:
    using NetworkOf = std::function<QString(const QString& node)>;
    using Draw = std::function<double()>; // uniform in [0, 1)
    using Seed = std::function<quint64()>;

    ShareCheck(ShareCheckSettings settings, Router& router, NetworkOf networkOf, Draw draw, Seed seed,
               QObject* parent = nullptr);
    ~ShareCheck() override;

    const ShareCheckSettings& settings() const { return m_settings; }

    // An accepted backward result (forward_backward on the last stage) of step `mb.step`, as the node
    // answered it (`output`, `loss`: what a check by its trace pins the trace to).
    void offer(const QString& node, const Microbatch& mb, protocol::TaskKind kind,
               const protocol::HeldFrame& output = {}, std::optional<double> loss = std::nullopt);
    // Where no other replica can sketch a node's microbatch (alone on its stage, or none has shown its
    // weights since it joined), the coordinator recomputes one segment's weights' gradient from the node's
    // own trace (trust/Bisection::traceShare): `draw` picks the segment when the shares are in (its values
    // are kept then), `look` asks for the trace and answers the look. Unset: such shares stand unchecked.
    using DrawSegment = std::function<std::optional<ShareSegment>(int stage)>;
    using TraceLook =
        std::function<bool(const CheckTask& task, qint64 era, const QString& node,
                           const protocol::HeldFrame& output, std::optional<double> loss,
                           const ShareSegment& segment, std::shared_ptr<const std::vector<float>> values,
                           int microbatches, std::function<void(const ShareLook&)> done)>;
    // `held` finds a share again while it is judged (null once gone): with two replicas, a share whose only
    // verifier failed it is refereed by the coordinator from the sender's own trace.
    using HeldShare = std::function<const std::vector<float>*(qint64 step, int stage, const QString& node)>;
    void setTraceLooks(DrawSegment draw, TraceLook look, HeldShare held = {}) {
        m_drawSegment = std::move(draw);
        m_traceLook = std::move(look);
        m_heldShare = std::move(held);
    }
    // Whether a node's word has been found false lately (convicted, or struck): a share whose microbatches
    // passed through such a node — its forward fed them, or its backward gave them their gradient — is never
    // struck, only left out. A liar upstream or downstream makes an honest share unlike any one of its
    // microbatches (a noise liar's inputs give gradients 100× the others': `test_dishonest_nodes` "noise,
    // bisected" struck an honest stage-0 replica that way once its shares were refereed by trace).
    using Distrusted = std::function<bool(const QString& node)>;
    void setDistrusted(Distrusted distrusted) { m_distrusted = std::move(distrusted); }
    // The stage's shares of `step` are in: true when they are being checked — `judged` will come,
    // and the averager waits for it. Clears what was kept of the stage's nodes.
    bool begin(qint64 step, int stage, const std::vector<ShareView>& shares);

    qint64 checked() const { return m_checked; }
    qint64 passed() const { return m_passed; }
    qint64 struck() const { return m_struck; }
    qint64 unsettled() const { return m_unsettled; }
    qint64 unchecked() const { return m_unchecked; }
    // Looks recomputed from a lone replica's own trace (setTraceLooks).
    qint64 traceLooks() const { return m_traceLooks; }
    // Shares that stood only on their second look (the first microbatch failed them).
    qint64 secondLooksPassed() const { return m_secondLooksPassed; }
    // Over every look at shares that stood (the check's margin on honest shares).
    double lowestPassedAlignment() const { return m_lowestAlignment; }
    double highestPassedNormRatio() const { return m_highestRatio; }

Q_SIGNALS:
    // Every case of the stage's step is decided: these shares are left out of its mean.
    void judged(qint64 step, int stage, const QStringList& dropped);
    void verdict(const tessera::coordinator::ShareVerdict& verdict);

private:
    struct KeptTask {
        CheckTask task;
        protocol::HeldFrame output; // the node's answer
        std::optional<double> loss;
    };
    struct Kept {
        std::vector<KeptTask> tasks; // two of the step's microbatches at most, drawn evenly
        qint64 step = 0;
        qint64 era = 0;
        int seen = 0;
    };
    struct Case {
        qint64 step = 0;
        int stage = 0;
        QString node;
        std::vector<KeptTask> tasks; // the first for the verifier, the other (if any) for the referee
        quint64 seed = 0;
        QHash<qint64, qint64> sent; // sketch task → its microbatch
        qint64 era = 0;
        int microbatches = 0;
        int offered = 0;        // of its microbatches this step, those offered (the node's n counts them all)
        int claimed = 0;        // ShareView::claimed: beyond `microbatches`, it holds refused work
        QSet<QString> route;    // the other nodes its microbatches of the step passed through
        gpu::CountSketch share; // the share's, under the task's sketch seed
        QStringList tried;
        struct Answer {
            QString node;
            qint64 microbatch = 0;
            bool passed = false;
            double alignment = 0, normRatio = 0;
        };
        std::vector<Answer> answers;
        int sends = 0;
        bool secondLookByVerifier = false; // two replicas: the verifier looked at the other microbatch
        // No replica could sketch it: the coordinator looks at `segment` from the node's own traces.
        bool byTrace = false;
        ShareSegment segment;
        std::shared_ptr<const std::vector<float>> segmentValues; // the share's, at segment
        std::vector<Answer> replicaLooks; // a refereed case: the verifier's looks the trace looks replaced
    };

    bool sendNext(qint64 caseId, Case& c);
    // A look at the case's next kept microbatch by its sender's trace; false when none can be had.
    bool traceNext(qint64 caseId, Case& c);
    // One verifier failed the share and no referee is left: the coordinator referees from the sender's trace
    // (false where it cannot: a first stage, the share gone). The replica's looks are kept for the verdict.
    bool refereeByTrace(qint64 caseId, Case& c);
    void onTraced(qint64 caseId, const ShareLook& look);
    void onAnswered(qint64 taskId, const QString& node, const protocol::HeldFrame& output);
    void onFailed(qint64 taskId, const QString& node, const QString& why);
    void verifierFailed(qint64 caseId, const QString& node, const QString& why);
    // Judges the answers so far; true when the case is decided (false: a referee was sent).
    bool decide(qint64 caseId, Case& c, ShareVerdict& v);
    // One answer so far: a second look, or the referee.
    bool decideOneLook(qint64 caseId, Case& c, ShareVerdict& v);
    // Two answers: it stands, is left out, or is struck.
    bool decideTwoLooks(qint64 caseId, Case& c, ShareVerdict& v);
    static QString numbers(const Case::Answer& a); // a look's alignment and norm ratio, in words
    void close(qint64 caseId, const ShareVerdict& v);

    ShareCheckSettings m_settings;
    Router& m_router;
    NetworkOf m_networkOf;
    Draw m_draw;
    Seed m_seed;
    DrawSegment m_drawSegment;
    TraceLook m_traceLook;
    HeldShare m_heldShare;
    QHash<QString, Kept> m_kept;             // by node: this step's drawn microbatch
    struct Route {
        qint64 step = -1;
        QSet<QString> nodes;
    };
    QHash<QString, Route> m_routes; // by node: who else handled its offered microbatches of the step
    Distrusted m_distrusted;
    QHash<QString, qint64> m_suspects;       // by node: checked at every step through this one
    std::map<qint64, Case> m_cases;          // by case id
    QHash<qint64, qint64> m_taskToCase;      // sketch task in flight → case
    std::map<std::pair<qint64, int>, QStringList> m_dropped; // (step, stage) → shares left out so far
    std::map<std::pair<qint64, int>, int> m_open;            // (step, stage) → cases open
    qint64 m_nextCase = 1;
    qint64 m_checked = 0, m_passed = 0, m_struck = 0, m_unsettled = 0, m_unchecked = 0,
           m_secondLooksPassed = 0, m_traceLooks = 0;
    double m_lowestAlignment = 0, m_highestRatio = 0;
};

} // namespace tessera::coordinator

Q_DECLARE_METATYPE(tessera::coordinator::ShareVerdict)
