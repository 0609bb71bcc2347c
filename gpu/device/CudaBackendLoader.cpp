// SPDX-License-Identifier: Apache-2.0
#include "device/CudaBackend.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <vector>

#include <dlfcn.h>

namespace tessera::gpu {

namespace {

constexpr const char* kModuleName = "libtessera-cuda.so";

std::vector<std::filesystem::path> candidatePaths() {
    std::vector<std::filesystem::path> paths;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto dir = exe.parent_path();
        paths.push_back(dir / kModuleName);
        paths.push_back(dir / ".." / "lib" / "tessera" / kModuleName);
        paths.push_back(dir / ".." / "lib" / "x86_64-linux-gnu" / "tessera" / kModuleName);
        paths.push_back(dir / ".." / "lib64" / "tessera" / kModuleName);
    }
    return paths;
}

Result<std::shared_ptr<CudaBackend>> loadOnce() {
    using Create = CudaBackend* (*)(int);
    std::vector<std::filesystem::path> paths;
    if (const char* env = std::getenv("TESSERA_CUDA_BACKEND"); env && *env) {
        const std::string value = env;
        if (value == "none" || value == "off" || value == "0")
            return makeError("CUDA backend disabled by TESSERA_CUDA_BACKEND=" + value);
        paths.emplace_back(value);
    } else {
        paths = candidatePaths();
    }
    for (const auto& path : paths) {
        std::error_code ec;
        if (!std::filesystem::exists(path, ec))
            continue;
        // The module stays loaded for the life of the process: unloading a CUDA runtime
        // while the driver holds its contexts is not safe.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* why = dlerror();
            return makeError("CUDA backend could not be loaded (missing CUDA libraries?): " +
                             std::string(why ? why : ""));
        }
        auto create = reinterpret_cast<Create>(dlsym(handle, "tessera_cuda_backend_create"));
        if (!create)
            return makeError("CUDA backend " + path.string() + " has no entry point");
        CudaBackend* backend = create(CudaBackend::kAbiVersion);
        if (!backend)
            return makeError("CUDA backend " + path.string() + " was built for another version of Tessera");
        return std::shared_ptr<CudaBackend>(backend);
    }
    return makeError(std::string("CUDA backend not installed (") + kModuleName + " not found" +
                     (paths.empty() ? std::string() : " at " + paths.front().parent_path().string()) +
                     "; this build may have been made without nvcc)");
}

} // namespace

Result<std::shared_ptr<CudaBackend>> loadCudaBackend() {
    static std::once_flag once;
    static std::optional<Result<std::shared_ptr<CudaBackend>>> result;
    std::call_once(once, [] { result.emplace(loadOnce()); });
    return *result;
}

} // namespace tessera::gpu
