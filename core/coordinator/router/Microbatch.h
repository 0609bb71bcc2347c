// SPDX-License-Identifier: Apache-2.0
#pragma once
// Microbatch: one microbatch's trip through the pipeline, as the router tracks it.
//
// Phases, one task in flight at a time:
//   Forward(0) → … → Forward(S−2) → ForwardBackward(S−1) → Backward(S−2) → … → Backward(0) → Completed
//   (with one stage: ForwardBackward(0) → Completed)
//   any phase → Abandoned (attempts exhausted or the microbatch's deadline passed)
// A phase whose task fails (error, deadline, node gone) is sent again, to another node when
// there is one; a backward goes preferably to the node that ran the forward of that stage.

#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QString>
#include <QtGlobal>

#include <limits>
#include <vector>

namespace tessera::coordinator {

using protocol::TaskKind;

// A task whose result was used: the work that earns credit once the microbatch completes.
struct AcceptedTask {
    QString nodeId;
    int stage = 0;
    TaskKind kind = TaskKind::Forward;
    bool recomputed = false; // a backward that ran the forward again (it got the input)
    qint64 tokens = 0;
    qint64 flop = 0;
};

struct Microbatch {
    enum class Phase { Forward, ForwardBackward, Backward, Completed, Abandoned };

    qint64 id = 0;
    qint64 step = 0;   // the training step it counts toward (set by the feed)
    qint64 tokens = 0; // batch·seq
    int batch = 0;
    int seq = 0;
    qint64 issuedAtMs = 0;
    qint64 deadlineMs = 0; // abandoned when not completed by then

    Phase phase = Phase::Forward;
    int stage = 0;    // of the current phase
    int attempts = 0; // of the current phase

    // Frames as they arrived (views into the messages that brought them, never copied out): each
    // is copied once more, into the message that sends it on, with the CRC checked on arrival.
    std::vector<protocol::HeldFrame> inputs; // inputs[s]: what stage s's forward takes (token frame on 0)
    protocol::HeldFrame targets;             // token frame, for the last stage
    protocol::HeldFrame gradient;            // the gradient frame the current backward phase sends
    std::vector<QString> forwardNode;        // who ran stage s's forward (its graph may still be kept)
    std::vector<qint64> forwardEpoch;        // that node's step epoch at the time
    std::vector<qint64> forwardVersion;      // and the version of its weights (Router::weightsVersion)
    std::vector<AcceptedTask> accepted;
    double loss = std::numeric_limits<double>::quiet_NaN();
    QString abandonReason;

    // The task in flight for the current phase (0: none; waiting for a node).
    qint64 taskId = 0;
    QString taskNode;
    qint64 taskDeadlineMs = 0;
    bool taskHasInput = false;
    // The node that answered this phase's backward with missing_graph (it held the forward's graph, by
    // its own word): its answer with the input is paid as a backward alone — the forward it ran again
    // was paid once already, and a node keeping its graph could say otherwise for 6NT instead of 4NT.
    QString claimedMissingGraph;
    qint64 taskEpoch = 0;   // the node's step epoch when the task was sent (a step after it drops the graph)
    qint64 taskVersion = 0; // the version of the node's weights the task runs on (Router::weightsVersion)
    qint64 taskEra = 0;     // the stage's weights era when the task was sent (Router::era)
    // A refusal of this phase's result waiting for another replica's answer to the same input (Router:
    // "framing"): whose it was, why, and who sent the input.
    QString refusedNode;
    QString refusedWhy;
    QString inputFrom;
    int inputStage = -1;
};

} // namespace tessera::coordinator
