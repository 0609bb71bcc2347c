// SPDX-License-Identifier: Apache-2.0
#pragma once
// ComputeThreads: how many threads one LibTorch operation may use in this process — set by a
// process whose work is many small operations (the coordinator's frame checks and audits), where a
// pool of intra-op threads spinning between operations costs more CPU than it saves. Torch-free.

namespace tessera::gpu {

void setComputeThreads(int threads); // at least 1

} // namespace tessera::gpu
