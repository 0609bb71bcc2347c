// SPDX-License-Identifier: Apache-2.0
// bench_activation_leg: what one activation (or gradient) leg costs in envelope work — node A's
// result message, the coordinator's relay, node B's task — before and after the single envelope,
// side by side in one run. Bytes copied are counted by interposing memcpy/memmove in this program
// (every copy our code and Qt make on the way, whatever library makes it); microseconds are wall
// time per leg, the engine's own compute and the WebSocket's framing left out of both.
//
// before: the issue-6 envelope, replicated here as it was (50-byte TSF1 v1 frame header that
//         repeated ids and shape; the engine's output copied into a QByteArray, then into a frame,
//         then into the message; the coordinator copying the payload out and into a new frame and
//         message; node B copying it out again; a byte-at-a-time CRC32C computed four times).
// after:  the real protocol and Router: the engine writes behind headroom and node A wraps the
//         message around it (wrapInPlace); the coordinator decodes once, keeps a view and relays it
//         with one copy and the CRC it checked; node B hands the engine views into the message.
#include "coordinator/router/Router.h"
#include "engine/StageEngine.h"
#include "protocol/SessionMessages.h"
#include "protocol/TaskMessage.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QtEndian>

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

// --- counting copies --------------------------------------------------------------------------

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::size_t> g_copied{0};

using CopyFn = void* (*)(void*, const void*, std::size_t);

void* slowCopy(void* dst, const void* src, std::size_t n) {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    if (d < s)
        for (std::size_t i = 0; i < n; ++i)
            d[i] = s[i];
    else
        for (std::size_t i = n; i > 0; --i)
            d[i - 1] = s[i - 1];
    return dst;
}

CopyFn resolve(const char* name) {
    static thread_local bool resolving = false;
    if (resolving)
        return nullptr;
    resolving = true;
    auto fn = reinterpret_cast<CopyFn>(dlsym(RTLD_NEXT, name));
    resolving = false;
    return fn;
}

void* counted(CopyFn& real, const char* name, void* dst, const void* src, std::size_t n) {
    if (!real)
        real = resolve(name);
    if (g_counting.load(std::memory_order_relaxed))
        g_copied.fetch_add(n, std::memory_order_relaxed);
    return real ? real(dst, src, n) : slowCopy(dst, src, n);
}

} // namespace

extern "C" {
void* memcpy(void* dst, const void* src, std::size_t n) {
    static CopyFn real = nullptr;
    return counted(real, "memcpy", dst, src, n);
}
void* memmove(void* dst, const void* src, std::size_t n) {
    static CopyFn real = nullptr;
    return counted(real, "memmove", dst, src, n);
}
void* __memcpy_chk(void* dst, const void* src, std::size_t n, std::size_t) {
    static CopyFn real = nullptr;
    return counted(real, "memcpy", dst, src, n);
}
void* __memmove_chk(void* dst, const void* src, std::size_t n, std::size_t) {
    static CopyFn real = nullptr;
    return counted(real, "memmove", dst, src, n);
}
}

using namespace tessera;

namespace {

// --- before: the issue-6 envelope, as it was ----------------------------------------------------

namespace before {

constexpr qsizetype kFrameHeader = 50;

quint32 crcBytewise(QByteArrayView data) {
    static const auto table = [] {
        std::array<quint32, 256> t{};
        for (quint32 i = 0; i < 256; ++i) {
            quint32 c = i;
            for (int b = 0; b < 8; ++b)
                c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    quint32 crc = 0xFFFFFFFFu;
    for (const char c : data)
        crc = table[(crc ^ quint8(c)) & 0xFFu] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

// encodeTaskFrame: a new array of header + payload (one copy), CRC over the source.
QByteArray encodeFrame(quint8 type, qint64 taskId, qint64 microbatch, int stage, QByteArrayView payload) {
    QByteArray frame(kFrameHeader + payload.size(), Qt::Uninitialized);
    char* p = frame.data();
    std::memcpy(p, "TSF1", 4);
    qToLittleEndian<quint16>(1, p + 4);
    p[6] = char(type);
    p[7] = 3;
    p[8] = 0;
    p[9] = 0;
    qToLittleEndian<qint64>(taskId, p + 10);
    qToLittleEndian<qint64>(microbatch, p + 18);
    qToLittleEndian<quint16>(quint16(stage), p + 26);
    qToLittleEndian<quint16>(0, p + 28);
    for (int i = 0; i < 3; ++i)
        qToLittleEndian<quint32>(quint32(8 + i), p + 30 + 4 * i);
    qToLittleEndian<quint32>(quint32(payload.size()), p + 42);
    qToLittleEndian<quint32>(crcBytewise(payload), p + 46);
    std::memcpy(p + kFrameHeader, payload.data(), std::size_t(payload.size()));
    return frame;
}

// encodeTaskMessage: prefix + JSON, then the frame appended (a second copy).
QByteArray encodeMessage(const QJsonObject& header, const QByteArray& frame) {
    const QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    QByteArray message;
    message.reserve(8 + json.size() + frame.size());
    message.append("TSM1", 4);
    char length[4];
    qToLittleEndian<quint32>(quint32(json.size()), length);
    message.append(length, 4);
    message.append(json);
    message.append(frame);
    return message;
}

// decodeTaskMessage: the JSON parsed from a copy of its bytes, the frame's CRC checked, a view.
QByteArrayView decode(const QByteArray& message, QJsonObject& header) {
    const quint32 json = qFromLittleEndian<quint32>(message.constData() + 4);
    header = QJsonDocument::fromJson(QByteArrayView(message).sliced(8, json).toByteArray()).object();
    const QByteArrayView frame = QByteArrayView(message).sliced(8 + json);
    const QByteArrayView payload = frame.sliced(kFrameHeader);
    if (crcBytewise(payload) != qFromLittleEndian<quint32>(frame.data() + 46))
        std::abort();
    return payload;
}

// One leg: node A's output → coordinator → node B's engine task.
QByteArray leg(const std::vector<std::uint8_t>& engineOutput, qint64 id) {
    // node A: EngineWorker copied the engine's bytes into a QByteArray; TaskRunner encoded them.
    const QByteArray output(reinterpret_cast<const char*>(engineOutput.data()),
                            qsizetype(engineOutput.size()));
    const QJsonObject result{{QStringLiteral("type"), QStringLiteral("task_result")},
                             {QStringLiteral("task_id"), id},
                             {QStringLiteral("kind"), QStringLiteral("forward")},
                             {QStringLiteral("microbatch"), id},
                             {QStringLiteral("ok"), true},
                             {QStringLiteral("compute_seconds"), 0.01},
                             {QStringLiteral("tokens"), 512}};
    const QByteArray sent = encodeMessage(result, encodeFrame(2, id, id, 0, output));
    // coordinator: decoded, the payload copied out (Router::advance), a new task built.
    QJsonObject header;
    const QByteArray kept = decode(sent, header).toByteArray();
    const QJsonObject task{{QStringLiteral("type"), QStringLiteral("task")},
                           {QStringLiteral("kind"), QStringLiteral("forward_backward")},
                           {QStringLiteral("task_id"), id + 1},
                           {QStringLiteral("microbatch"), id}};
    const QByteArray relayed = encodeMessage(task, encodeFrame(1, id + 1, id, 1, kept));
    // node B: decoded, the payload copied into the EngineTask (TaskRunner::onTask).
    return decode(relayed, header).toByteArray();
}

} // namespace before

// --- after: the real protocol and Router ---------------------------------------------------------

// Two nodes (stages 0 and 1) played in this process around the real Router.
class AfterLegs {
public:
    explicit AfterLegs(qsizetype payloadBytes)
        : m_router(
              2, {1000, 1000}, routerSettings(),
              [this](const QString& node, const QByteArray& m) {
                  m_outbox.push_back({node, m});
                  return true;
              },
              [this] { return feed(); }) {
        // What the engine writes: headroom for the envelope, then the frame (its bytes do not matter).
        m_engineOutput.assign(std::size_t(protocol::kTaskMessageHeadroom + payloadBytes), 0x5A);
        m_router.addNode(QStringLiteral("a"), 0, 1e-6);
        m_router.addNode(QStringLiteral("b"), 1, 1e-6);
    }

    // One microbatch through the pipeline: two legs (activation forward, gradient back).
    void microbatch() {
        serve(); // node A's forward (stage 0): its output goes to B
        serve(); // node B's forward_backward: its gradient goes back to A
        serve(); // node A's backward (stage 0): no output; the microbatch completes
    }
    qint64 completed() const { return m_router.counters().completed; }

private:
    static coordinator::RouterSettings routerSettings() {
        coordinator::RouterSettings s;
        s.window = 1;
        return s;
    }

    std::optional<coordinator::MicrobatchInput> feed() {
        static const QByteArray tokens(12 + 4 * 8, '\x01');
        return coordinator::MicrobatchInput{tokens, tokens, 1, 8};
    }

    // The oldest task sent: the node decodes it as TaskRunner does (engine views into the message)
    // and answers it as TaskRunner does (the envelope written in front of the engine's output).
    void serve() {
        const auto [node, bytes] = m_outbox.front();
        m_outbox.pop_front();
        Result<protocol::TaskMessage> message = protocol::decodeTaskMessage(bytes);
        Result<protocol::SessionMessage> header = protocol::parseSessionMessage(
            message->header, protocol::Direction::ToNode, protocol::Transport::Binary);
        const auto& task = std::get<protocol::Task>(*header);
        for (const protocol::TaskFrame& f : message->frames) // what the EngineTask gets: views
            m_viewed += QByteArray::fromRawData(f.payload.data(), f.payload.size()).size();

        protocol::TaskResult result;
        result.taskId = task.taskId;
        result.kind = task.kind;
        result.microbatch = task.microbatch;
        result.ok = true;
        result.computeSeconds = 0.01;
        result.tokens = 8;
        if (task.kind == protocol::TaskKind::ForwardBackward)
            result.loss = 2.0;
        QByteArray answer;
        const bool stage0Backward = node == u"a" && task.kind == protocol::TaskKind::Backward;
        if (stage0Backward) {
            answer = protocol::TaskMessageBuilder(protocol::toJson(result)).take();
        } else {
            const auto type = task.kind == protocol::TaskKind::Forward
                                  ? protocol::TaskFrameType::ForwardOutput
                                  : protocol::TaskFrameType::BackwardOutput;
            const qsizetype start = *protocol::wrapInPlace(m_engineOutput, protocol::kTaskMessageHeadroom,
                                                           protocol::toJson(result), type);
            answer = QByteArray::fromRawData(reinterpret_cast<const char*>(m_engineOutput.data()) + start,
                                             qsizetype(m_engineOutput.size()) - start);
        }
        // The coordinator: decoded once (SessionApi::onBinary), then the Router relays it.
        Result<protocol::TaskMessage> received = protocol::decodeTaskMessage(answer);
        Result<protocol::SessionMessage> typed = protocol::parseSessionMessage(
            received->header, protocol::Direction::ToCoordinator, protocol::Transport::Binary);
        m_router.onResult(node, std::get<protocol::TaskResult>(*typed), *received);
    }

    coordinator::Router m_router;
    std::deque<std::pair<QString, QByteArray>> m_outbox;
    std::vector<std::uint8_t> m_engineOutput;
    qsizetype m_viewed = 0;
};

struct Row {
    double microseconds = 0;
    double copies = 0; // payloads' worth of bytes copied per leg
};

template <class Leg>
Row measure(qsizetype payloadBytes, int legsPerCall, Leg&& leg) {
    leg(); // warm-up
    int calls = 0;
    g_copied = 0;
    g_counting = true;
    QElapsedTimer t;
    t.start();
    while (calls < 3 || t.nsecsElapsed() < 400'000'000) {
        leg();
        ++calls;
    }
    const double ns = double(t.nsecsElapsed());
    g_counting = false;
    const double legs = double(calls) * legsPerCall;
    return {ns / 1000.0 / legs, double(g_copied.load()) / double(payloadBytes) / legs};
}

qsizetype tinyActivationBytes() {
    Result<gpu::ModelConfig> tiny = gpu::ModelConfig::preset("tiny");
    gpu::StageEngineOptions options;
    options.config = *tiny;
    options.config.stages = 2;
    auto engine = gpu::StageEngine::create(options);
    auto input = (*engine)->syntheticInput(8, 64, 1);
    auto out = (*engine)->forward(1, *input);
    return qsizetype(out->output.size());
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    struct Size {
        const char* what;
        qsizetype bytes;
    };
    const std::vector<Size> sizes{{"tiny, 8x64 tokens (its real frame)", tinyActivationBytes()},
                                  {"8b subspace int8, 4096 tokens", 4096 * 46 + 28},
                                  {"8b int8 codec, 2048 tokens", 2048 * (4096 + 64 * 4 + 2) + 28},
                                  {"8b none codec fp32, 2048 tokens", qsizetype(2048) * 4096 * 4 + 28}};
    std::printf(
        "bench_activation_leg: one leg = node A's result message -> coordinator relay -> node B's engine "
        "task; before (issue-6 envelope, replicated) and after (this build's protocol and Router), side by "
        "side\n");
    std::printf(
        "copies = bytes memcpy/memmove'd per leg / payload bytes (our code and Qt's; the engine's own "
        "write and the WebSocket's framing are in neither)\n\n");
    std::printf("%-38s %12s | %10s %10s | %10s %10s | %8s\n", "payload", "bytes", "before us", "copies",
                "after us", "copies", "speed-up");
    for (const Size& size : sizes) {
        const std::vector<std::uint8_t> engineOutput(std::size_t(size.bytes), 0x5A);
        qint64 id = 1;
        const Row old = measure(size.bytes, 1, [&] { (void)before::leg(engineOutput, id++); });
        AfterLegs after(size.bytes);
        const Row now = measure(size.bytes, 2, [&] { after.microbatch(); });
        std::printf("%-38s %12lld | %10.1f %10.2f | %10.1f %10.2f | %7.1fx\n", size.what,
                    qlonglong(size.bytes), old.microseconds, old.copies, now.microseconds, now.copies,
                    old.microseconds / now.microseconds);
        std::fflush(stdout);
    }
    std::printf(
        "\nafter: node A writes the envelope in front of the engine's frame (no copy), the coordinator "
        "copies the payload once into the relayed message (its CRC reused), node B's engine reads it in "
        "place; CRC32C: 3 passes a leg (sent, checked at the coordinator, checked at node B), slicing-by-8; "
        "before: 4 byte-at-a-time passes.\n");
    return 0;
}
