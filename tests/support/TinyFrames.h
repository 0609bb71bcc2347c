// SPDX-License-Identifier: Apache-2.0
#pragma once
// TinyFrames: the tiny model in two stages and seeded token frames of kBatch × kSeq, for the
// engine tests (EngineWorker, TaskRunner).

#include "base/ModelConfig.h"
#include "base/Result.h"
#include "base/TokenFrame.h"

#include <QByteArray>
#include <QtGlobal>

#include <cstdint>
#include <vector>

namespace tessera::test {

inline constexpr int kBatch = 2;
inline constexpr int kSeq = 32;

inline gpu::ModelConfig tinyTwoStages() {
    Result<gpu::ModelConfig> c = gpu::ModelConfig::preset("tiny");
    if (!c)
        qFatal("tiny preset: %s", c.message().c_str());
    c->stages = 2;
    return *c;
}

// kBatch × kSeq token ids, a different sequence per offset.
inline QByteArray tokenFrame(int offset) {
    std::vector<std::int32_t> ids(kBatch * kSeq);
    for (std::size_t i = 0; i < ids.size(); ++i)
        ids[i] = std::int32_t((i * 7 + std::size_t(offset)) % 256);
    Result<gpu::Bytes> frame = gpu::encodeTokens(ids, kBatch, kSeq);
    if (!frame)
        qFatal("encodeTokens: %s", frame.message().c_str());
    return QByteArray(reinterpret_cast<const char*>(frame->data()), qsizetype(frame->size()));
}

} // namespace tessera::test
