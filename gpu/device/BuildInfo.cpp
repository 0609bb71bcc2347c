// SPDX-License-Identifier: Apache-2.0
#include "device/BuildInfo.h"

#include <torch/version.h>

namespace tessera::gpu {

std::string torchVersion() {
    return TORCH_VERSION;
}

std::string buildDescription() {
    return "LibTorch " + torchVersion() +
           (cudaBackendBuilt() ? ", CUDA backend built" : ", without CUDA backend");
}

bool cudaBackendBuilt() {
#ifdef TESSERA_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

} // namespace tessera::gpu
