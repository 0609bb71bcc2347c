// SPDX-License-Identifier: Apache-2.0
#include "CudaBackendImpl.h"

#include "CublasGemm.h"
#include "CudaCheck.h"
#include "CudaKernels.h"
#include "CudaResources.h"
#include "GemmReference.h"

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

namespace tessera::gpu {
namespace {

using namespace cudaimpl;

// The accuracy check runs a naive triple loop on the CPU; beyond this it would take seconds.
constexpr double kMaxReferenceMultiplyAdds = 1 << 28;

// Runs `body` and turns anything it throws into an Error: the module's exception boundary.
template <class T, class Body>
Result<T> guarded(Body&& body) noexcept {
    try {
        return Result<T>(body());
    } catch (const CudaFailure& failure) {
        return makeError(failure.what());
    } catch (const std::bad_alloc&) {
        return makeError("CUDA backend: out of host memory");
    } catch (const std::exception& e) {
        return makeError(std::string("CUDA backend: ") + e.what());
    } catch (...) {
        return makeError("CUDA backend: unknown failure");
    }
}

int installedDriverVersion() {
    int version = 0;
    return cudaDriverGetVersion(&version) == cudaSuccess ? version : 0;
}

std::string versionText(int version) {
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// cudaGetDeviceCount, with its failures explained in terms of what the user can fix.
int countDevices() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess)
        return count;
    (void)cudaGetLastError();
    const std::string detail = describeCudaError(status);
    const int driver = installedDriverVersion();
    if (status == cudaErrorNoDevice)
        fail("no CUDA device: " + detail);
    if (driver == 0 && (status == cudaErrorInsufficientDriver || status == cudaErrorInitializationError))
        fail("no CUDA driver: " + detail);
    if (status == cudaErrorInsufficientDriver) {
        int runtime = 0;
        cudaRuntimeGetVersion(&runtime);
        fail("the NVIDIA driver supports CUDA " + versionText(driver) + " but this backend needs CUDA " +
             versionText(runtime) + "; update the driver: " + detail);
    }
    if (status == cudaErrorSystemDriverMismatch)
        fail("the NVIDIA kernel module and driver library differ (reboot after a driver update?): " + detail);
    fail("cudaGetDeviceCount: " + detail);
}

// Makes `device` current for this thread, after checking that it exists.
void selectDevice(int device) {
    const int count = countDevices();
    if (device < 0 || device >= count)
        fail("CUDA device " + std::to_string(device) + " does not exist (this machine has " +
             std::to_string(count) + ")");
    checkCuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
}

int attribute(cudaDeviceAttr attr, int device, const char* name) {
    int value = 0;
    checkCuda(cudaDeviceGetAttribute(&value, attr, device), name);
    return value;
}

// Refuses a dtype the GPU's tensor cores and cuBLAS cannot do, before allocating anything.
void requireGemmDtype(int device, Dtype dtype) {
    const int major = attribute(cudaDevAttrComputeCapabilityMajor, device, "cudaDeviceGetAttribute(major)");
    const int minor = attribute(cudaDevAttrComputeCapabilityMinor, device, "cudaDeviceGetAttribute(minor)");
    const std::string cc = std::to_string(major) + "." + std::to_string(minor);
    if (dtype == Dtype::BF16 && major < 8)
        fail("bf16 GEMM needs compute capability 8.0 or newer; CUDA device " + std::to_string(device) +
             " has " + cc);
    if (dtype == Dtype::F16 && (major < 5 || (major == 5 && minor < 3)))
        fail("fp16 GEMM needs compute capability 5.3 or newer; CUDA device " + std::to_string(device) +
             " has " + cc);
    if (dtype == Dtype::I8)
        fail("the CUDA backend has no int8 GEMM");
}

void requireBytes(std::size_t bytes) {
    if (bytes == 0)
        fail("a copy benchmark needs at least one byte");
}

// nvidia-smi's spelling: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
std::string formatUuid(const cudaUUID_t& uuid) {
    std::string text = "GPU-";
    char hex[3];
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text += '-';
        std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
        text += hex;
    }
    return text;
}

std::string formatPciBusId(int domain, int bus, int deviceId) {
    char text[32];
    std::snprintf(text, sizeof text, "%04x:%02x:%02x.0", domain, bus, deviceId);
    return text;
}

} // namespace

int CudaBackendImpl::runtimeVersion() const {
    int version = 0;
    return cudaRuntimeGetVersion(&version) == cudaSuccess ? version : 0;
}

int CudaBackendImpl::driverVersion() const {
    return installedDriverVersion();
}

Result<int> CudaBackendImpl::deviceCount() {
    return guarded<int>([] { return countDevices(); });
}

Result<CudaDeviceInfo> CudaBackendImpl::deviceInfo(int device) {
    return guarded<CudaDeviceInfo>([device] {
        selectDevice(device);
        cudaDeviceProp props;
        std::memset(&props, 0, sizeof props);
        checkCuda(cudaGetDeviceProperties(&props, device), "cudaGetDeviceProperties");
        std::size_t freeBytes = 0;
        std::size_t totalBytes = 0;
        checkCuda(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");

        CudaDeviceInfo info;
        info.index = device;
        info.name = props.name;
        info.uuid = formatUuid(props.uuid);
        info.pciBusId = formatPciBusId(props.pciDomainID, props.pciBusID, props.pciDeviceID);
        info.totalMemoryBytes = props.totalGlobalMem;
        info.freeMemoryBytes = freeBytes;
        info.computeMajor = props.major;
        info.computeMinor = props.minor;
        info.multiprocessors = props.multiProcessorCount;
        // cudaDeviceProp::clockRate is gone in CUDA 13; the attribute remains (kHz).
        info.clockMhz = attribute(cudaDevAttrClockRate, device, "cudaDeviceGetAttribute(clockRate)") / 1000;
        info.source = "cuda-runtime";
        return info;
    });
}

Result<BenchSample> CudaBackendImpl::gemm(int device, Dtype dtype, int m, int n, int k,
                                          const RepeatPolicy& policy) {
    return guarded<BenchSample>([&] {
        selectDevice(device);
        requireGemmDtype(device, dtype);
        CublasGemm problem(dtype, m, n, k);
        problem.fillRandom(0x7e55e7a);
        return repeatTimed(policy, [&] { return problem.timeOnce(); });
    });
}

Result<BenchSample> CudaBackendImpl::deviceCopy(int device, std::size_t bytes, const RepeatPolicy& policy) {
    return guarded<BenchSample>([&] {
        selectDevice(device);
        requireBytes(bytes);
        const int sms = attribute(cudaDevAttrMultiProcessorCount, device, "cudaDeviceGetAttribute(SMs)");
        CudaStream stream;
        DeviceBuffer src(bytes);
        DeviceBuffer dst(bytes);
        checkCuda(cudaMemsetAsync(src.get(), 0x5a, bytes, stream.get()), "cudaMemsetAsync");
        const int blocks = copyGridBlocks(bytes, sms);
        return repeatTimed(policy, [&] {
            return timeOnStream(stream.get(),
                                [&] { copyBytes(dst.get(), src.get(), bytes, blocks, stream.get()); });
        });
    });
}

Result<BenchSample> CudaBackendImpl::hostToDevice(int device, std::size_t bytes, const RepeatPolicy& policy) {
    return hostTransfer(device, bytes, policy, true);
}

Result<BenchSample> CudaBackendImpl::deviceToHost(int device, std::size_t bytes, const RepeatPolicy& policy) {
    return hostTransfer(device, bytes, policy, false);
}

Result<BenchSample> CudaBackendImpl::hostTransfer(int device, std::size_t bytes, const RepeatPolicy& policy,
                                                  bool toDevice) {
    return guarded<BenchSample>([&] {
        selectDevice(device);
        requireBytes(bytes);
        CudaStream stream;
        PinnedBuffer host(bytes);
        DeviceBuffer onDevice(bytes);
        std::memset(host.get(), 0x5a, bytes);
        void* dst = toDevice ? onDevice.get() : host.get();
        const void* src = toDevice ? host.get() : onDevice.get();
        const cudaMemcpyKind kind = toDevice ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
        const char* call = toDevice ? "cudaMemcpyAsync(host to device)" : "cudaMemcpyAsync(device to host)";
        return repeatTimed(policy, [&] {
            return timeOnStream(
                stream.get(), [&] { checkCuda(cudaMemcpyAsync(dst, src, bytes, kind, stream.get()), call); });
        });
    });
}

Result<double> CudaBackendImpl::gemmMaxRelativeError(int device, Dtype dtype, int m, int n, int k) {
    return guarded<double>([&] {
        selectDevice(device);
        requireGemmDtype(device, dtype);
        if (m <= 0 || n <= 0 || k <= 0)
            fail("GEMM dimensions must be positive");
        if (static_cast<double>(m) * n * k > kMaxReferenceMultiplyAdds)
            fail("GEMM too large for the CPU reference of the accuracy check");
        // Fixed seeds: the check must give the same inputs on every machine and every run.
        std::vector<float> a = seededValues(static_cast<std::size_t>(m) * k, 0x5eed0001);
        std::vector<float> b = seededValues(static_cast<std::size_t>(k) * n, 0x5eed0002);
        const std::vector<std::byte> aBytes = encodeRounding(a, dtype);
        const std::vector<std::byte> bBytes = encodeRounding(b, dtype);

        CublasGemm problem(dtype, m, n, k);
        problem.upload(aBytes, bBytes);
        problem.enqueue();
        const std::vector<float> c = decode(problem.downloadC(), dtype);
        return maxRelativeError(c, referenceGemm(a, b, m, n, k));
    });
}

} // namespace tessera::gpu

extern "C" __attribute__((visibility("default"))) tessera::gpu::CudaBackend*
tessera_cuda_backend_create(int abiVersion) {
    if (abiVersion != tessera::gpu::CudaBackend::kAbiVersion)
        return nullptr;
    try {
        return new tessera::gpu::CudaBackendImpl();
    } catch (...) {
        return nullptr;
    }
}
