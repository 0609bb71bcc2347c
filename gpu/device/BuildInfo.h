// SPDX-License-Identifier: Apache-2.0
#pragma once
// What this build of gpu/ was made with, for --version and bug reports.

#include <string>

namespace tessera::gpu {

std::string torchVersion(); // e.g. "1.13.0"
bool cudaBackendBuilt();    // whether this build made libtessera-cuda.so
// "LibTorch 1.13.0, CUDA backend built" (or "..., without CUDA backend"): what --version adds.
std::string buildDescription();

} // namespace tessera::gpu
