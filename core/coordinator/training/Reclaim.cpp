// SPDX-License-Identifier: Apache-2.0
// Reclaim: a restarted coordinator takes each stage's current weights back from its nodes, checked.
#include "coordinator/training/Reclaim.h"

#include <QDir>
#include <QTemporaryFile>

#include <algorithm>
#include <numeric>

namespace tessera::coordinator {

namespace {

QString shortId(const QString& node) {
    return node.left(12);
}

} // namespace

Reclaim::Reclaim(ReclaimSettings settings, ReclaimCheckpoint checkpoint, FailedAudits failedAudits,
                 SendText sendText, Clock clock)
    : m_settings(std::move(settings))
    , m_checkpoint(std::move(checkpoint))
    , m_failedAudits(std::move(failedAudits))
    , m_sendText(std::move(sendText))
    , m_clock(std::move(clock)) {}

Reclaim::~Reclaim() = default;

void Reclaim::expect(const QString& node, int stage) {
    m_expected.insert(node, stage);
}

bool Reclaim::holds(const QString& node) const {
    for (const auto& [stage, s] : m_stages)
        if (s.open && !s.closed && s.held.contains(node))
            return true;
    return false;
}

int Reclaim::waiting(int stage) const {
    const auto it = m_stages.find(stage);
    return it == m_stages.end() || !it->second.open || it->second.closed ? 0 : int(it->second.held.size());
}

bool Reclaim::onReady(const QString& node, int stage) {
    Stage& s = m_stages[stage];
    if (s.closed)
        return false;
    const bool expected = m_expected.value(node, -1) == stage;
    if (!s.open) {
        bool anyExpected = false;
        for (auto it = m_expected.cbegin(); it != m_expected.cend() && !anyExpected; ++it)
            anyExpected = it.value() == stage;
        if (!anyExpected) {
            s.closed = true; // nobody held this stage's weights: nothing to take back
            return false;
        }
        const std::vector<qint64> partitions = m_checkpoint.partitions(stage);
        s.values = std::accumulate(partitions.begin(), partitions.end(), qint64(0));
        if (s.values <= 0) {
            qWarning("reclaim: stage %d: its checkpoint is not readable: it stands as published", stage);
            s.closed = true;
            return false;
        }
        s.open = true;
        s.openedAtMs = m_clock();
        s.deadlineMs = s.openedAtMs + m_settings.deadlineMs;
        qInfo("reclaim: stage %d: taking its current weights back from the nodes that held them", stage);
    }
    if (!s.held.contains(node))
        s.held.append(node);
    if (expected && !s.asked.contains(node) && s.answers.find(node) == s.answers.end())
        ask(stage, s, node);
    maybeClose(stage);
    return true;
}

void Reclaim::ask(int stage, Stage& s, const QString& node) {
    const qint64 round = m_nextRound++;
    if (!m_sendText(node, protocol::SyncRequest{round, m_settings.partitions, m_settings.chunkValues}))
        return;
    s.asked.insert(node, round);
    qInfo("reclaim: stage %d: asked node %s for its weights", stage, qPrintable(shortId(node)));
}

bool Reclaim::awaitsShare(const QString& node, qint64 round) const {
    return std::any_of(m_stages.cbegin(), m_stages.cend(), [&](const auto& entry) {
        const Stage& s = entry.second;
        return !s.closed && s.asked.value(node, -1) == round;
    });
}

bool Reclaim::onShare(const QString& node, const protocol::AverageShare& share,
                      const protocol::TaskMessage& message) {
    for (auto& [stage, s] : m_stages) {
        const auto it = s.asked.find(node);
        if (s.closed || it == s.asked.end() || it.value() != share.round)
            continue;
        takeChunk(stage, s, node, share, message);
        maybeClose(stage);
        return true;
    }
    return false;
}

void Reclaim::takeChunk(int stage, Stage& s, const QString& node, const protocol::AverageShare& share,
                        const protocol::TaskMessage& message) {
    Answer& a = s.answers[node];
    const auto refuse = [&](const QString& why) {
        qWarning("reclaim: stage %d: node %s's weights are not taken: %s", stage, qPrintable(shortId(node)),
                 qPrintable(why));
        a.error = why;
        a.file.reset();
        s.asked.remove(node);
    };
    const protocol::TaskFrame* frame = message.frame(protocol::TaskFrameType::Partition);
    if (share.partition != -1 || frame == nullptr)
        return refuse(QStringLiteral("not all weights"));
    if (frame->payload.size() % qsizetype(sizeof(float)) != 0)
        return refuse(
            QStringLiteral("a partition of %1 bytes, not whole fp32 values").arg(frame->payload.size()));
    const qint64 n = frame->payload.size() / qsizetype(sizeof(float));
    const qint64 total = share.total > 0 ? share.total : n;
    const qint64 offset = share.total > 0 ? share.offset : 0;
    if (total != s.values)
        return refuse(QStringLiteral("%1 values, the stage has %2").arg(total).arg(s.values));
    if (offset != a.received)
        return refuse(QStringLiteral("a chunk at value %1 after %2 values").arg(offset).arg(a.received));
    if (offset + n > total)
        return refuse(QStringLiteral("values past the %1 it announced").arg(total));
    if (!a.file) {
        const QString dir = m_settings.spillDir.isEmpty() ? QDir::tempPath() : m_settings.spillDir;
        QDir().mkpath(dir);
        a.file = std::make_unique<QTemporaryFile>(
            QDir(dir).filePath(QStringLiteral("reclaim-stage-%1-XXXXXX").arg(stage)));
        if (!a.file->open())
            return refuse(
                QStringLiteral("its answer cannot be written in %1: %2").arg(dir, a.file->errorString()));
    }
    if (a.file->write(frame->payload.data(), frame->payload.size()) != frame->payload.size())
        return refuse(QStringLiteral("its answer could not be written: %1").arg(a.file->errorString()));
    a.received += n;
    // An answer under way keeps the stage open: a deadline from its last chunk, within the longest.
    s.deadlineMs = std::min(std::max(s.deadlineMs, m_clock() + m_settings.deadlineMs),
                            s.openedAtMs + std::max(m_settings.longestMs, m_settings.deadlineMs));
    if (a.received == total) {
        a.complete = a.file->flush();
        if (!a.complete)
            return refuse(QStringLiteral("its answer could not be written: %1").arg(a.file->errorString()));
        s.asked.remove(node);
    }
}

void Reclaim::nodeGone(const QString& node) {
    for (auto& [stage, s] : m_stages) {
        if (s.closed)
            continue;
        s.held.removeAll(node);
        if (s.asked.remove(node) > 0) {
            s.answers.erase(node); // what came of it is not all of its weights
            maybeClose(stage);
        }
    }
}

void Reclaim::tick() {
    for (auto& [stage, s] : m_stages)
        if (s.open && !s.closed)
            maybeClose(stage);
}

void Reclaim::maybeClose(int stage) {
    Stage& s = m_stages[stage];
    if (!s.open || s.closed)
        return;
    const qint64 t = m_clock();
    bool everyExpectedAnswered = true;
    for (auto it = m_expected.cbegin(); it != m_expected.cend(); ++it) {
        const auto answer = s.answers.find(it.key());
        if (it.value() == stage &&
            (answer == s.answers.end() || (!answer->second.complete && answer->second.error.isEmpty())))
            everyExpectedAnswered = false;
    }
    const bool windowOver = t >= s.openedAtMs + m_settings.windowMs && s.asked.isEmpty();
    if (everyExpectedAnswered || windowOver || t >= s.deadlineMs)
        close(stage);
}

void Reclaim::close(int stage) {
    Stage& s = m_stages[stage];
    s.closed = true;
    s.asked.clear();
    QStringList refused;
    std::map<QString, Piece> answers;
    for (auto& [node, a] : s.answers) {
        if (!a.error.isEmpty()) {
            refused.append(node);
            continue;
        }
        if (!a.complete) {
            qWarning(
                "reclaim: stage %d: node %s's answer was not complete when the stage closed (%lld of %lld "
                "values)",
                stage, qPrintable(shortId(node)), qlonglong(a.received), qlonglong(s.values));
            continue;
        }
        if (m_failedAudits(node) > 0) {
            qWarning("reclaim: stage %d: node %s failed an audit before: its weights are not taken", stage,
                     qPrintable(shortId(node)));
            refused.append(node);
            continue;
        }
        QTemporaryFile* file = a.file.get();
        answers.emplace(node, [file](qint64 offset, qint64 count) -> Result<std::vector<float>> {
            std::vector<float> v(static_cast<std::size_t>(count));
            const qint64 bytes = count * qint64(sizeof(float));
            if (!file->seek(offset * qint64(sizeof(float))) ||
                file->read(reinterpret_cast<char*>(v.data()), bytes) != bytes)
                return makeError("its answer could not be read back: " + file->errorString().toStdString());
            return v;
        });
    }
    ReclaimOutcome outcome;
    if (!answers.empty()) {
        outcome = choose(
            stage, answers, m_checkpoint.partitions(stage),
            [&](int partition) { return m_checkpoint.values(stage, partition); },
            [&](int partition, std::span<const float> values) {
                return m_checkpoint.take(stage, partition, values);
            },
            m_checkpoint.stepsSince(stage), m_settings);
    } else {
        outcome.summary =
            refused.isEmpty()
                ? QStringLiteral("no node sent its weights: the published checkpoint stands")
                : QStringLiteral("no weights passed the checks: the published checkpoint stands");
    }
    outcome.refused += refused;
    outcome.stage = stage;
    outcome.held = s.held;
    s.answers.clear(); // and their files
    qInfo("reclaim: stage %d: %s", stage, qPrintable(outcome.summary));
    Q_EMIT settled(outcome);
}

} // namespace tessera::coordinator
