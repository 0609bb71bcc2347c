// SPDX-License-Identifier: Apache-2.0
#pragma once
// NodeMessageCap: the largest binary message a node of a run may send on its session, with
// headroom — the session's limit on binary messages (SessionSettings::maxBinaryBytes). Per run,
// not per task: a sync answer or a gradient share of the largest stage's weights in f32, or a
// result of a microbatch of `tokens` tokens (activations or their gradient, f32 before any codec),
// whichever is larger, plus a quarter and the header's bound; at most protocol::kTaskMessageMaxBytes.

#include "base/ModelConfig.h"

#include <QtGlobal>

namespace tessera::coordinator {

qint64 largestNodeMessage(const gpu::ModelConfig& model, qint64 tokens);

} // namespace tessera::coordinator
