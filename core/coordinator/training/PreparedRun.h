// SPDX-License-Identifier: Apache-2.0
#pragma once
// PreparedRun: what RunPreparation made ready on its worker threads for Trainer::create — the run's
// checkpoints, opened, and its training data, checked (drawn in any order until Trainer::create
// reorders it for the run's step).

#include "coordinator/training/StageCheckpoints.h"
#include "train/TrainingData.h"

#include <memory>

namespace tessera::coordinator {

struct PreparedRun {
    std::unique_ptr<StageCheckpoints> checkpoints;
    std::unique_ptr<gpu::TrainingData> data;
};

} // namespace tessera::coordinator
