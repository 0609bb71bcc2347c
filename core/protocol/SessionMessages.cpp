// SPDX-License-Identifier: Apache-2.0
// SessionMessages: one schema per message type, and the encoding and checks that follow from it.
#include "protocol/SessionMessages.h"

#include "protocol/TaskMessage.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <QStringList>

#include <array>
#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

namespace tessera::protocol {

namespace {

constexpr double kMaxId = 9007199254740992.0; // 2^53: every id and counter stays exact in JSON

constexpr std::array<const char*, 4> kTaskKindNames{"probe", "forward", "forward_backward", "backward"};
// In ErrorKind's order.
constexpr std::array<const char*, 4> kErrorKindNames{"failed", "invalid_input", "unsupported",
                                                     "missing_graph"};

// --- fields ------------------------------------------------------------------------------------

template <class M, class T>
struct Field {
    const char* name;
    T M::*member;
    bool required;
    double min;
    double max; // strings: the most characters
};

template <class M, class T>
constexpr Field<M, T> need(const char* name, T M::*member, double min = 0, double max = kMaxId) {
    return {name, member, true, min, max};
}
template <class M, class T>
constexpr Field<M, T> maybe(const char* name, T M::*member, double min = 0, double max = kMaxId) {
    return {name, member, false, min, max};
}
template <class M>
constexpr Field<M, QString> text(const char* name, QString M::*member, bool required = false) {
    return {name, member, required, 0, kMaxReasonChars};
}

struct TypeInfo {
    const char* name;
    Direction direction;
    Transport transport;
};

template <class M>
struct Schema;

#define TESSERA_SCHEMA(M, NAME, DIRECTION, TRANSPORT, ...)                                                   \
    template <>                                                                                              \
    struct Schema<M> {                                                                                       \
        static constexpr TypeInfo info{NAME, Direction::DIRECTION, Transport::TRANSPORT};                    \
        static constexpr auto fields = std::make_tuple(__VA_ARGS__);                                         \
    }

template <>
struct Schema<Heartbeat> {
    static constexpr TypeInfo info{"heartbeat", Direction::ToCoordinator, Transport::Text};
    static constexpr auto fields = std::tuple<>();
};
TESSERA_SCHEMA(Ready, "ready", ToCoordinator, Text, need("stage", &Ready::stage, 0, kMaxStage),
               need("version", &Ready::version), maybe("sync_round", &Ready::syncRound),
               maybe("sync_received", &Ready::syncReceived));
TESSERA_SCHEMA(Unavailable, "unavailable", ToCoordinator, Text, text("reason", &Unavailable::reason));
TESSERA_SCHEMA(TaskResult, "task_result", ToCoordinator, Either, need("task_id", &TaskResult::taskId),
               need("kind", &TaskResult::kind), maybe("microbatch", &TaskResult::microbatch, -1),
               need("ok", &TaskResult::ok), maybe("compute_seconds", &TaskResult::computeSeconds, 0, 1e9),
               maybe("tokens", &TaskResult::tokens), maybe("loss", &TaskResult::loss, -1e9, 1e9),
               text("error", &TaskResult::error), maybe("error_kind", &TaskResult::errorKind));
TESSERA_SCHEMA(StepDone, "step_done", ToCoordinator, Text, need("step", &StepDone::step),
               need("ok", &StepDone::ok), maybe("microbatches", &StepDone::microbatches, 0, 1e9),
               text("error", &StepDone::error), text("fingerprint", &StepDone::fingerprint));
TESSERA_SCHEMA(AverageShare, "average_share", ToCoordinator, Binary, need("round", &AverageShare::round),
               need("partition", &AverageShare::partition, -1, kMaxPartitions - 1),
               maybe("partitions", &AverageShare::partitions, 0, kMaxPartitions),
               need("ok", &AverageShare::ok), text("error", &AverageShare::error),
               maybe("offset", &AverageShare::offset), maybe("total", &AverageShare::total));
TESSERA_SCHEMA(SyncDone, "sync_done", ToCoordinator, Text, need("round", &SyncDone::round),
               need("ok", &SyncDone::ok), text("error", &SyncDone::error),
               maybe("received", &SyncDone::received));
TESSERA_SCHEMA(GradientShare, "gradient_share", ToCoordinator, Binary, need("step", &GradientShare::step),
               need("microbatches", &GradientShare::microbatches, 0, 1e9),
               need("basis", &GradientShare::basis), maybe("bits", &GradientShare::bits, 4, 32),
               need("ok", &GradientShare::ok), text("error", &GradientShare::error),
               maybe("first_round", &GradientShare::firstRound), maybe("offset", &GradientShare::offset),
               maybe("total", &GradientShare::total));
TESSERA_SCHEMA(HeartbeatAck, "heartbeat_ack", ToNode, Text,
               need("server_time_ms", &HeartbeatAck::serverTimeMs));
TESSERA_SCHEMA(ErrorNotice, "error", ToNode, Text, text("error", &ErrorNotice::error, true));
TESSERA_SCHEMA(Task, "task", ToNode, Either, need("task_id", &Task::taskId), need("kind", &Task::kind),
               maybe("microbatch", &Task::microbatch, -1), maybe("step", &Task::step, -1),
               maybe("batch", &Task::batch, 0, 4096), maybe("seq", &Task::seq, 0, 65536),
               maybe("seed", &Task::seed), maybe("sketch_seed", &Task::sketchSeed),
               maybe("trace", &Task::trace));
TESSERA_SCHEMA(Step, "step", ToNode, Text, need("step", &Step::step), maybe("basis", &Step::basis, -1),
               maybe("rank", &Step::rank, 0, 1024), maybe("bits", &Step::bits, 4, 32),
               maybe("chunk", &Step::chunk));
TESSERA_SCHEMA(Average, "average", ToNode, Text, need("round", &Average::round),
               need("partition", &Average::partition, 0, kMaxPartitions - 1),
               need("partitions", &Average::partitions, 1, kMaxPartitions), maybe("step", &Average::step),
               maybe("chunk", &Average::chunk));
TESSERA_SCHEMA(AverageResult, "average_result", ToNode, Binary, need("round", &AverageResult::round),
               need("partition", &AverageResult::partition, -1, kMaxPartitions - 1),
               need("replicas", &AverageResult::replicas, 1, 1e6), maybe("offset", &AverageResult::offset),
               maybe("total", &AverageResult::total));
TESSERA_SCHEMA(SyncRequest, "sync_request", ToNode, Text, need("round", &SyncRequest::round),
               need("partitions", &SyncRequest::partitions, 1, kMaxPartitions),
               maybe("chunk", &SyncRequest::chunk));
TESSERA_SCHEMA(Sync, "sync", ToNode, Binary, need("round", &Sync::round), need("offset", &Sync::offset),
               need("total", &Sync::total, 1), maybe("optimizer_steps", &Sync::optimizerSteps, -1));
TESSERA_SCHEMA(Reassign, "reassign", ToNode, Text, need("stage", &Reassign::stage, 0, kMaxStage),
               text("reason", &Reassign::reason));
template <>
struct Schema<Credits> {
    static constexpr TypeInfo info{"credits", Direction::ToNode, Transport::Text};
    static constexpr auto fields = std::tuple<>();
};
TESSERA_SCHEMA(GradientResult, "gradient_result", ToNode, Binary, need("step", &GradientResult::step),
               need("round", &GradientResult::round, 1), need("included", &GradientResult::included),
               need("replicas", &GradientResult::replicas, 0, 1e6),
               need("learning_rate", &GradientResult::learningRate, 0, 1),
               need("clip_scale", &GradientResult::clipScale, 1e-12, 1),
               maybe("look_ahead", &GradientResult::lookAhead, 0, 4),
               maybe("bits", &GradientResult::bits, 4, 32), maybe("values", &GradientResult::values),
               maybe("offset", &GradientResult::offset), maybe("total", &GradientResult::total),
               maybe("fingerprint_seed", &GradientResult::fingerprintSeed));
TESSERA_SCHEMA(GradientBasis, "gradient_basis", ToNode, Binary, need("step", &GradientBasis::step),
               need("round", &GradientBasis::round, 0), maybe("offset", &GradientBasis::offset),
               maybe("total", &GradientBasis::total));
#undef TESSERA_SCHEMA

// Checks across fields, beyond each field's own range.
Status crossCheck(const Average& m) {
    if (m.partition >= m.partitions)
        return makeError("partition " + std::to_string(m.partition) + " is not in [0, " +
                         std::to_string(m.partitions) + ")");
    return {};
}
Status crossCheck(const Sync& m) {
    if (m.offset >= m.total)
        return makeError("offset " + std::to_string(m.offset) + " is not below total " +
                         std::to_string(m.total));
    return {};
}
Status crossCheck(const Task& m) {
    if (m.kind != TaskKind::Probe && m.microbatch < 0)
        return makeError("microbatch: a " + std::string(kTaskKindNames[std::size_t(m.kind)]) +
                         " task needs one (≥ 0)");
    if (m.kind == TaskKind::Probe && (m.batch < 1 || m.seq < 1))
        return makeError("a probe needs a batch and a seq of at least 1");
    return {};
}
template <class M>
Status crossCheck(const M&) {
    return {};
}

// --- one field's value --------------------------------------------------------------------------

template <class T>
QJsonValue encodeValue(const T& value) {
    if constexpr (std::is_same_v<T, TaskKind>)
        return QString::fromLatin1(kTaskKindNames[std::size_t(value)]);
    else if constexpr (std::is_same_v<T, ErrorKind>)
        return QString::fromLatin1(kErrorKindNames[std::size_t(value)]);
    else if constexpr (std::is_same_v<T, std::optional<double>>)
        return *value;
    else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        return qint64(value);
    else
        return value;
}

// Optional fields are left out while they hold what a default-constructed message holds.
template <class T>
bool isDefault(const T& value, const T& byDefault) {
    if constexpr (std::is_same_v<T, std::optional<double>>)
        return !value.has_value();
    else
        return value == byDefault;
}

std::string rangeText(double min, double max) {
    const auto n = [](double v) {
        return v == std::trunc(v) ? std::to_string(qint64(v)) : std::to_string(v);
    };
    return n(min) + ".." + n(max);
}

template <class T>
Result<T> decodeValue(const QJsonValue& v, double min, double max) {
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.isBool())
            return makeError("must be true or false");
        return v.toBool();
    } else if constexpr (std::is_same_v<T, QString>) {
        if (!v.isString())
            return makeError("must be a string");
        if (v.toString().size() > max)
            return makeError("longer than " + std::to_string(qint64(max)) + " characters");
        return v.toString();
    } else if constexpr (std::is_same_v<T, TaskKind>) {
        const QString name = v.toString();
        for (std::size_t i = 0; i < kTaskKindNames.size(); ++i)
            if (name == QLatin1String(kTaskKindNames[i]))
                return TaskKind(i);
        return makeError("must be probe, forward, forward_backward or backward");
    } else if constexpr (std::is_same_v<T, ErrorKind>) {
        if (!v.isString())
            return makeError("must be a string");
        return errorKindFromName(v.toString()); // a newer kind reads as "failed"
    } else {
        if (!v.isDouble())
            return makeError("must be a number");
        const double d = v.toDouble();
        if (!std::isfinite(d) || d < min || d > max)
            return makeError("must be within " + rangeText(min, max));
        if constexpr (std::is_same_v<T, std::optional<double>> || std::is_same_v<T, double>) {
            return T(d);
        } else {
            if (d != std::trunc(d))
                return makeError("must be a whole number");
            return T(v.toInteger());
        }
    }
}

// --- one message ----------------------------------------------------------------------------------

template <class M>
QJsonObject encodeMessage(const M& m) {
    QJsonObject json{{QStringLiteral("type"), QLatin1String(Schema<M>::info.name)}};
    const M byDefault{};
    std::apply(
        [&](const auto&... field) {
            (
                [&] {
                    const auto& value = m.*(field.member);
                    if (field.required || !isDefault(value, byDefault.*(field.member)))
                        json.insert(QLatin1String(field.name), encodeValue(value));
                }(),
                ...);
        },
        Schema<M>::fields);
    return json;
}

template <class M>
Result<SessionMessage> decodeMessage(const QJsonObject& json) {
    M m;
    std::string error;
    std::apply(
        [&](const auto&... field) {
            (
                [&] {
                    if (!error.empty())
                        return;
                    const QJsonValue v = json.value(QLatin1String(field.name));
                    using T = std::remove_cvref_t<decltype(m.*(field.member))>;
                    if (v.isUndefined()) {
                        if (field.required)
                            error = std::string(field.name) + ": missing";
                        return;
                    }
                    Result<T> value = decodeValue<T>(v, field.min, field.max);
                    if (!value)
                        error = std::string(field.name) + ": " + value.message();
                    else
                        m.*(field.member) = std::move(*value);
                }(),
                ...);
        },
        Schema<M>::fields);
    if (error.empty())
        if (Status s = crossCheck(m); !s)
            error = s.message();
    if (!error.empty())
        return makeError(std::string(Schema<M>::info.name) + "." + error, ErrorKind::InvalidInput);
    return SessionMessage(std::move(m));
}

// --- the table, in MessageType order --------------------------------------------------------------

template <std::size_t... I>
constexpr std::array<TypeInfo, kMessageTypes> infos(std::index_sequence<I...>) {
    return {Schema<std::variant_alternative_t<I, SessionMessage>>::info...};
}
constexpr auto kInfos = infos(std::make_index_sequence<kMessageTypes>());

using Decoder = Result<SessionMessage> (*)(const QJsonObject&);
template <std::size_t... I>
constexpr std::array<Decoder, kMessageTypes> decoders(std::index_sequence<I...>) {
    return {&decodeMessage<std::variant_alternative_t<I, SessionMessage>>...};
}
constexpr auto kDecoders = decoders(std::make_index_sequence<kMessageTypes>());

template <class M>
QStringList fieldNames() {
    QStringList names;
    std::apply(
        [&](const auto&... field) {
            (names.append(QLatin1String(field.name) + (field.required ? QString() : QStringLiteral("?"))),
             ...);
        },
        Schema<M>::fields);
    return names;
}

} // namespace

QString errorKindName(ErrorKind kind) {
    return QLatin1String(kErrorKindNames[std::size_t(kind)]);
}

ErrorKind errorKindFromName(const QString& name) {
    for (std::size_t i = 0; i < kErrorKindNames.size(); ++i)
        if (name == QLatin1String(kErrorKindNames[i]))
            return ErrorKind(i);
    return ErrorKind::Failed;
}

QString messageTypeName(MessageType type) {
    return QLatin1String(kInfos[std::size_t(type)].name);
}

QString taskKindName(TaskKind kind) {
    return QLatin1String(kTaskKindNames[std::size_t(kind)]);
}

Direction directionOf(MessageType type) {
    return kInfos[std::size_t(type)].direction;
}

Transport transportOf(MessageType type) {
    return kInfos[std::size_t(type)].transport;
}

QJsonObject toJson(const SessionMessage& message) {
    return std::visit([](const auto& m) { return encodeMessage(m); }, message);
}

QString toText(const SessionMessage& message) {
    return QString::fromUtf8(QJsonDocument(toJson(message)).toJson(QJsonDocument::Compact));
}

Result<SessionMessage> parseSessionMessage(const QJsonObject& json, Direction direction,
                                           Transport transport) {
    const QJsonValue typeValue = json.value(u"type");
    if (!typeValue.isString())
        return makeError("type: missing or not a string", ErrorKind::InvalidInput);
    const QString name = typeValue.toString();
    for (std::size_t i = 0; i < kInfos.size(); ++i) {
        if (name != QLatin1String(kInfos[i].name))
            continue;
        const TypeInfo& info = kInfos[i];
        if (info.direction != direction)
            return makeError(name.toStdString() + ": sent the wrong way (it goes " +
                                 (info.direction == Direction::ToNode ? "to nodes" : "to the coordinator") +
                                 ")",
                             ErrorKind::InvalidInput);
        if ((int(info.transport) & int(transport)) == 0)
            return makeError(name.toStdString() + ": must come as a " +
                                 (info.transport == Transport::Text ? "text" : "binary") + " message",
                             ErrorKind::InvalidInput);
        return kDecoders[i](json);
    }
    return makeError("type: unknown message type '" + name.left(64).toStdString() + "'",
                     ErrorKind::InvalidInput);
}

Result<SessionMessage> parseSessionText(const QString& text, Direction direction, qsizetype maxBytes) {
    const QByteArray utf8 = text.toUtf8();
    if (utf8.size() > maxBytes)
        return makeError("message: longer than " + std::to_string(maxBytes) + " bytes",
                         ErrorKind::InvalidInput);
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(utf8, &parseError);
    if (parseError.error != QJsonParseError::NoError)
        return makeError("message: not JSON (" + parseError.errorString().toStdString() + ")",
                         ErrorKind::InvalidInput);
    if (!doc.isObject())
        return makeError("message: must be a JSON object", ErrorKind::InvalidInput);
    return parseSessionMessage(doc.object(), direction, Transport::Text);
}

std::optional<qint64> readableTaskId(const QJsonObject& header) {
    if (header.value(u"type").toString() != messageTypeName(MessageType::Task))
        return std::nullopt;
    const Result<qint64> id = decodeValue<qint64>(header.value(u"task_id"), 0, kMaxId);
    return id ? std::optional<qint64>(*id) : std::nullopt;
}

QString describeSessionMessages() {
    const auto fields = []<std::size_t... I>(std::index_sequence<I...>) {
        return std::array<QStringList, kMessageTypes>{
            fieldNames<std::variant_alternative_t<I, SessionMessage>>()...};
    }
    (std::make_index_sequence<kMessageTypes>());
    QString out;
    for (std::size_t i = 0; i < kInfos.size(); ++i) {
        const TypeInfo& info = kInfos[i];
        const char* transport = info.transport == Transport::Text     ? "text"
                                : info.transport == Transport::Binary ? "binary"
                                                                      : "text or binary";
        const QString textLimit = QStringLiteral("%1 KiB").arg(kSessionTextMaxBytes / 1024);
        const QString binaryLimit = QStringLiteral("header %1 KiB, message %2 MiB")
                                        .arg(kTaskMessageMaxJsonBytes / 1024)
                                        .arg(kTaskMessageMaxBytes >> 20);
        const QString limit = info.transport == Transport::Text ? textLimit
                              : info.transport == Transport::Binary
                                  ? binaryLimit
                                  : textLimit + QStringLiteral("; ") + binaryLimit;
        out +=
            QStringLiteral("| `%1` | %2 | %3 | %4 | %5 |\n")
                .arg(QLatin1String(info.name),
                     info.direction == Direction::ToNode ? QStringLiteral("coordinator → node")
                                                         : QStringLiteral("node → coordinator"),
                     QLatin1String(transport),
                     fields[i].isEmpty() ? QStringLiteral("—") : fields[i].join(QStringLiteral(", ")), limit);
    }
    return out;
}

} // namespace tessera::protocol
