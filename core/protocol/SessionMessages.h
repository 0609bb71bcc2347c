// SPDX-License-Identifier: Apache-2.0
#pragma once
// SessionMessages: every message of the /v1/session WebSocket, typed. One enum of message types and
// one of task kinds; one struct per type with its fields; one schema per type (direction, text or
// binary, each field's name, JSON type, range and whether it is required) from which encoding,
// decoding and the table in docs/ARCHITECTURE.md follow. Unknown types, messages sent the wrong way,
// and missing, mistyped or out-of-range fields are refused with a reason naming the field
// (ErrorKind::InvalidInput); fields a type does not know are ignored, so a newer peer may add some.
//
// The wire names ("task_result", "forward_backward", ...) appear here and nowhere else.

#include "base/Result.h"

#include <QJsonObject>
#include <QString>
#include <QtGlobal>

#include <optional>
#include <type_traits>
#include <variant>

namespace tessera::protocol {

// The order is the SessionMessage variant's: MessageType(message.index()) is its type.
enum class MessageType : quint8 {
    Heartbeat,      // node → coordinator, text: keeps the session (and the node) alive
    Ready,          // node → coordinator, text: the engine holds the stage; tasks may come
    Unavailable,    // node → coordinator, text: paused; route around it
    TaskResult,     // node → coordinator, binary (text for probes): a task finished or failed
    StepDone,       // node → coordinator, text: an optimizer step was applied
    AverageShare,   // node → coordinator, binary: a partition of its weights for a round or a sync
    SyncDone,       // node → coordinator, text: a ghost took the weights it was sent
    GradientShare,  // node → coordinator, binary: its share of a step's gradient exchange
    HeartbeatAck,   // coordinator → node, text
    ErrorNotice,    // coordinator → node, text: the node sent something the coordinator refused
    Task,           // coordinator → node, binary (text for probes): forward, backward, ... or a probe
    Step,           // coordinator → node, text: apply what was accumulated (or: share it, with `basis`)
    Average,        // coordinator → node, text: send partition p of P for round r
    AverageResult,  // coordinator → node, binary: the round's average (apply the delta rule)
    SyncRequest,    // coordinator → node, text: send all your weights (a ghost joins your stage)
    Sync,           // coordinator → node, binary: take these weights (you are the ghost)
    Reassign,       // coordinator → node, text: move to another stage
    Credits,        // coordinator → node, text: new credit receipts are waiting
    GradientResult, // coordinator → node, binary: the step's averaged gradient (apply it)
    GradientBasis,  // coordinator → node, binary: a low-rank exchange's basis (send the second share)
};
inline constexpr int kMessageTypes = int(MessageType::GradientBasis) + 1;

enum class TaskKind : quint8 {
    Probe,           // synthetic forward + backward of a stage: how fast this node runs it
    Forward,         // input → the stage's output
    ForwardBackward, // the last stage: input + targets → loss, then the gradient for the previous stage
    Backward,        // the next stage's gradient → the gradient for the previous stage
};

enum class Direction : quint8 { ToCoordinator, ToNode };
// Text messages are JSON; binary ones are a TaskMessage (JSON header + frames).
enum class Transport : quint8 { Text = 1, Binary = 2, Either = 3 };

// A text message's most bytes (they are small: control, not tensors); a bigger one closes the session.
inline constexpr qsizetype kSessionTextMaxBytes = 16 * 1024;

// Range of the fields shared by several messages.
inline constexpr int kMaxStage = 1023;
inline constexpr int kMaxPartitions = 1000;
inline constexpr int kMaxReasonChars = 1000;

struct Heartbeat {};
struct Ready {
    int stage = 0;
    qint64 version = 0; // the stage shard's
    // A ghost sync this node's weights hold a part of (a pause or a dropped session cut it short):
    // its round and how many weights, from the start, it took. 0: none.
    qint64 syncRound = 0;
    qint64 syncReceived = 0;
};
struct Unavailable {
    QString reason;
};
struct TaskResult {
    qint64 taskId = 0;
    TaskKind kind = TaskKind::Forward;
    qint64 microbatch = -1; // -1 for probes
    bool ok = false;
    double computeSeconds = 0;
    qint64 tokens = 0;
    std::optional<double> loss; // the last stage's
    QString error;              // when !ok
    ErrorKind errorKind = ErrorKind::Failed;
};
struct StepDone {
    qint64 step = 0;
    bool ok = false;
    int microbatches = 0;
    QString error;
    // The weights' fingerprint after the step, when its gradient_result asked for one
    // (base/WeightFingerprint's text: "count p0 p1 p2 p3 norm²").
    QString fingerprint;
};
struct AverageShare {
    qint64 round = 0;
    int partition = 0; // -1: all of them (a sync)
    int partitions = 0;
    bool ok = false;
    QString error;
    // A share larger than the request's `chunk` travels in chunks, in order (PartitionChunks): this
    // message's values are [offset, offset + n) of `total`. 0, 0: the whole share in one message.
    qint64 offset = 0;
    qint64 total = 0;
};
struct SyncDone {
    qint64 round = 0;
    bool ok = false;
    QString error;
    qint64 received = 0; // weights taken so far, from the start (the next chunk starts there)
};
struct GradientShare {
    qint64 step = 0;
    int microbatches = 0; // the share is per microbatch; it weighs this much in the mean
    qint64 basis = 0;     // the basis round it holds (a share built on another is not counted)
    bool ok = false;      // false: no share (no basis for the round, no microbatch, or an error)
    QString error;
    int bits = 32; // what its values travel in (32, 8 or 4: gpu/base/BlockQuant)
    // A low-rank exchange's first round (P_r): the coordinator answers with gradient_basis, and the
    // node with its second share (first_round false).
    bool firstRound = false;
    qint64 offset = 0; // a chunk of the share's payload, in 4-byte words (PartitionChunks); 0, 0: whole
    qint64 total = 0;
};
struct HeartbeatAck {
    qint64 serverTimeMs = 0;
};
struct ErrorNotice {
    QString error;
};
struct Task {
    qint64 taskId = 0;
    TaskKind kind = TaskKind::Forward;
    qint64 microbatch = -1; // ≥ 0 for the data plane's tasks
    // The asynchronous pipeline: the step the microbatch belongs to (its gradients join that step's
    // share, its backward runs on its forward's weights). Absent (-1): a synchronous step.
    qint64 step = -1;
    // A probe's synthetic microbatch.
    int batch = 0;
    int seq = 0;
    qint64 seed = 0;
    // Not 0 (a backward with its input, or a forward_backward): run it on the weights held now without
    // adding to what is accumulated, and answer the count sketch (base/CountSketch, this seed, its
    // default buckets) of the weights' gradient it gives, as the result's Partition frame — a share
    // check (the coordinator's trust/ShareCheck) asks it of another replica once a node's share came.
    qint64 sketchSeed = 0;
    // Trace: answer, instead of the output, a Partition frame (fp32) of the residual stream after each of
    // the stage's blocks — and for a backward (with its input) or a forward_backward, then the gradients
    // with respect to them (the last block's first) and to the stage's input, and the loss on the last
    // stage: the coordinator bisecting a disputed task to the one block it recomputes (trust/Bisection).
    bool trace = false;
};
struct Step {
    qint64 step = 0;
    // Present (≥ 0) with gradient averaging: send a gradient_share built on the basis of this round
    // at this rank, and wait for the gradient_result. Absent (-1): step on what was accumulated.
    qint64 basis = -1;
    int rank = 0;
    int bits = 32;    // what the share's values travel in (32; 8 or 4 at rank 0)
    qint64 chunk = 0; // 4-byte words a message of the share may carry (0: PartitionChunks' default)
};
struct Average {
    qint64 round = 0;
    int partition = 0;
    int partitions = 0;
    qint64 step = 0;
    qint64 chunk = 0; // values a message of the share may carry (0: PartitionChunks' default)
};
struct AverageResult {
    qint64 round = 0;
    int partition = 0;
    int replicas = 0;
    qint64 offset = 0; // a chunk of the result, as AverageShare's
    qint64 total = 0;
};
struct SyncRequest {
    qint64 round = 0;
    int partitions = 0;
    qint64 chunk = 0; // as Average's
};
// A chunk of a ghost sync: the stage's weights [offset, offset + values) in parameter order, of
// `total`. Each chunk is answered with a sync_done; the sync ends when `total` were taken. A total of
// three times the stage's weights carries AdamW's state: the first moments, the second, then the
// weights (moments first: updates land between chunks, see gpu::StateRegion), with the optimizer's
// step count in optimizer_steps (-1: the weights alone).
struct Sync {
    qint64 round = 0;
    qint64 offset = 0;
    qint64 total = 0;
    qint64 optimizerSteps = -1;
};
struct Reassign {
    int stage = 0;
    QString reason;
};
struct Credits {};
struct GradientResult {
    qint64 step = 0;
    qint64 round = 0;        // the basis round it starts (the next shares are built on it)
    bool included = false;   // whether this node's share was counted
    int replicas = 0;        // shares counted
    double learningRate = 0; // the schedule's, for this step
    double clipScale = 1;    // the global clip: min(1, clip_norm / ‖every stage's gradient‖)
    double lookAhead = 0;    // the asynchronous pipeline: the weights run ahead by this × the update
    int bits = 32;           // what its values travel in (32, 8 or 4)
    qint64 values = 0;       // how many (needed below 32 bits: the bytes do not say)
    qint64 offset = 0;       // a chunk of its payload, as a share's
    qint64 total = 0;
    // Not 0: answer the weights' fingerprint under this seed, once the update is applied, in the
    // step_done (drawn for this step: nobody can work it out before holding the updated weights).
    qint64 fingerprintSeed = 0;
};

// The basis P̂ of a low-rank exchange's step (fp32, a Partition frame): the node answers with its
// second gradient_share, built on it.
struct GradientBasis {
    qint64 step = 0;
    qint64 round = 0;  // the warm start's round the first shares were built on
    qint64 offset = 0; // a chunk of it, as a share's
    qint64 total = 0;
};

// What each side receives, in MessageType's order. Each side's inbox is a std::visit over its own
// variant with one overload per alternative and no catch-all: a message type added here does not
// compile until every side that can receive it handles it.
using ToCoordinatorMessage =
    std::variant<Heartbeat, Ready, Unavailable, TaskResult, StepDone, AverageShare, SyncDone, GradientShare>;
using ToNodeMessage = std::variant<HeartbeatAck, ErrorNotice, Task, Step, Average, AverageResult, SyncRequest,
                                   Sync, Reassign, Credits, GradientResult, GradientBasis>;

namespace detail {
template <class A, class B>
struct JoinVariants;
template <class... A, class... B>
struct JoinVariants<std::variant<A...>, std::variant<B...>> {
    using type = std::variant<A..., B...>;
};
template <class T, class V>
struct IsAlternative;
template <class T, class... A>
struct IsAlternative<T, std::variant<A...>> : std::bool_constant<(std::is_same_v<T, A> || ...)> {};
} // namespace detail

// Every message of the session, either way: what the parser and the encoder speak.
using SessionMessage = detail::JoinVariants<ToCoordinatorMessage, ToNodeMessage>::type;
static_assert(std::variant_size_v<SessionMessage> == kMessageTypes);
static_assert(std::is_same_v<std::variant_alternative_t<int(MessageType::HeartbeatAck), SessionMessage>,
                             HeartbeatAck>,
              "MessageType lists the messages to the coordinator first, then those to the node");

// The message as one side's variant; nullopt when it travels the other way (parseSessionMessage,
// given that side's direction, never returns such a message).
template <class Side>
std::optional<Side> receivedAs(SessionMessage message) {
    return std::visit(
        []<class M>(M&& m) -> std::optional<Side> {
            if constexpr (detail::IsAlternative<std::decay_t<M>, Side>::value)
                return Side(std::move(m));
            else
                return std::nullopt;
        },
        std::move(message));
}

// Overloaded{lambda...}: a visitor from lambdas, for small inboxes.
template <class... F>
struct Overloaded : F... {
    using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

inline MessageType typeOf(const SessionMessage& message) {
    return MessageType(message.index());
}

// "failed", "invalid_input", "unsupported", "missing_graph": the names an error's kind travels under.
QString errorKindName(ErrorKind kind);
// The kind a name stands for; Failed for a name this build does not know (a newer peer's).
ErrorKind errorKindFromName(const QString& name);

QString messageTypeName(MessageType type);
QString taskKindName(TaskKind kind);
Direction directionOf(MessageType type);
Transport transportOf(MessageType type);

// The JSON object of a message (the whole text message, or a binary message's header).
QJsonObject toJson(const SessionMessage& message);
// The text message itself (compact JSON).
QString toText(const SessionMessage& message);

// Reads a message that came `from` a peer over `transport` (Text or Binary): its type must be
// known, travel that way and in that direction, and its fields must match the schema. Errors name
// the type and the field: "task_result.task_id: missing".
Result<SessionMessage> parseSessionMessage(const QJsonObject& json, Direction direction, Transport transport);
// The same from the text of a message (at most maxBytes UTF-8 bytes).
Result<SessionMessage> parseSessionText(const QString& text, Direction direction, qsizetype maxBytes);

// The task id of a binary task header that did not pass its schema (an unknown kind, a missing
// field), when it has one: the node answers such a task by its id rather than leave it to time out.
std::optional<qint64> readableTaskId(const QJsonObject& header);

// One Markdown table row per message type for the documentation: name, direction, text or binary,
// fields (? = optional), size limit.
QString describeSessionMessages();

} // namespace tessera::protocol
