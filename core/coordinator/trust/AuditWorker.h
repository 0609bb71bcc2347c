// SPDX-License-Identifier: Apache-2.0
#pragma once
// AuditWorker: an audit's kept tasks recomputed on the node's own weights, on the Auditor's own
// thread — the coordinator's event loop keeps routing meanwhile (a recomputation takes tens of
// milliseconds per task at the tiny preset, seconds at larger ones). Jobs come and outcomes go
// through the Auditor's mailboxes (common/Mailbox.h), judged one at a time, in the order they
// came. It owns a CPU engine per stage (made at first use) and its own frame decoder: nothing it
// touches is shared with the coordinator's thread but the frames' read-only, reference-counted
// buffers.

#include "base/ModelConfig.h"
#include "coordinator/trust/Auditor.h"

#include <QObject>

#include <map>
#include <memory>
#include <vector>

namespace tessera::gpu {
class FrameDecoder;
class StageEngine;
} // namespace tessera::gpu

namespace tessera::coordinator {

// What an audit judges: the node's evidence and the weights it sent for it (the partition frame of
// its answer, as held from the message).
struct AuditJob {
    QString node;
    qint64 version = 0;
    qint64 requestedAtMs = 0;
    std::vector<Evidence> evidence;
    protocol::HeldFrame weights; // null: the node did not send them (judged on the reference alone)
    std::shared_ptr<const std::vector<float>> reference; // the replicas' weights (Auditor::setReference)
};

class AuditWorker final : public QObject {
    Q_OBJECT

public:
    AuditWorker(const gpu::ModelConfig& config, AuditSettings settings);
    ~AuditWorker() override;

    // Whether it can audit at all: the run's frames decode here (set at construction).
    bool available() const { return m_decoder != nullptr; }
    // The outcome of one job (with no tasks recomputed when the stage cannot be audited here).
    AuditOutcome judge(const AuditJob& job);

private:
    // The stage's engine with the weights the answers are judged on loaded (the replicas' where known,
    // else the node's); nullptr where the job ends there (the weights refused, with out saying why, or
    // the stage not audited here, or an unanswered job with no reference).
    gpu::StageEngine* loadWeights(const AuditJob& job, int stage, AuditOutcome& out);
    // Whether the weights a node showed can be the stage's (size, finite) and, where the replicas'
    // are known, are theirs; out says why not.
    bool shownWeightsHold(gpu::StageEngine& e, int stage, const std::vector<float>& weights,
                          const std::vector<float>* reference, AuditOutcome& out) const;
    // One kept task recomputed and compared; false when it failed the node (out says why).
    bool judgeTask(gpu::StageEngine& e, const Evidence& ev, int stage, AuditOutcome& out);
    gpu::StageEngine* engine(int stage);

    gpu::ModelConfig m_config;
    AuditSettings m_settings;
    std::unique_ptr<gpu::FrameDecoder> m_decoder;
    std::map<int, std::unique_ptr<gpu::StageEngine>> m_engines; // by stage, made at first use
};

} // namespace tessera::coordinator
