#include "BuildInfo.h"

#include <torch/version.h>

namespace tessera::gpu {

std::string torchVersion() {
    return TORCH_VERSION;
}

bool cudaBackendBuilt() {
#ifdef TESSERA_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

} // namespace tessera::gpu
