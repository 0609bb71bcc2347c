// SPDX-License-Identifier: Apache-2.0
// Our CUDA code against its CPU twin. On a machine without a GPU (or a build without nvcc) the
// backend must say why in words; on a GPU machine every kernel is checked.
#include "GpuTest.h"
#include "device/CudaBackend.h"

using namespace tessera::gpu;

namespace {

std::shared_ptr<CudaBackend> backendWithDevice() {
    auto cuda = loadCudaBackend();
    if (!cuda)
        tessera::test::skip(cuda.message());
    auto count = (*cuda)->deviceCount();
    if (!count)
        tessera::test::skip(count.message());
    if (*count == 0)
        tessera::test::skip("no CUDA device");
    return *cuda;
}

} // namespace

TESSERA_TEST(absentBackendOrDriverIsExplainedNotFatal) {
    auto cuda = loadCudaBackend();
    if (!cuda) {
        CHECK_MSG(cuda.message().find("CUDA backend") != std::string::npos, cuda.message());
        return;
    }
    auto count = (*cuda)->deviceCount();
    if (!count) {
        CHECK_MSG(!count.message().empty(), "empty reason");
        CHECK((*cuda)->runtimeVersion() > 0);
        CHECK(!(*cuda)->deviceInfo(0));
        CHECK(!(*cuda)->gemm(0, Dtype::F32, 64, 64, 64, RepeatPolicy{}));
        return;
    }
    CHECK(*count >= 0);
}

TESSERA_TEST(deviceInfoIsSane) {
    auto cuda = backendWithDevice();
    auto info = cuda->deviceInfo(0);
    CHECK_MSG(info, info.message());
    CHECK(!info->name.empty());
    CHECK(info->totalMemoryBytes > (1ull << 30));
    CHECK(info->freeMemoryBytes <= info->totalMemoryBytes);
    CHECK(info->computeMajor >= 7);
    CHECK(info->pciBusId.size() == 12);
    CHECK(!cuda->deviceInfo(1000));
}

TESSERA_TEST(gemmMatchesCpuReferencePerDtype) {
    auto cuda = backendWithDevice();
    for (Dtype dtype : {Dtype::F32, Dtype::BF16, Dtype::F16}) {
        auto err = cuda->gemmMaxRelativeError(0, dtype, 67, 45, 131);
        CHECK_MSG(err, err.message());
        const double tolerance = dtype == Dtype::F32 ? 1e-5 : 1e-2;
        CHECK_MSG(*err <= tolerance, dtypeName(dtype) << " error " << *err);
    }
}

TESSERA_TEST(bandwidthAndGemmTimingsArePositive) {
    auto cuda = backendWithDevice();
    RepeatPolicy policy;
    policy.budgetSeconds = 0.05;
    for (auto sample :
         {cuda->gemm(0, Dtype::BF16, 1024, 1024, 1024, policy), cuda->deviceCopy(0, 64 << 20, policy),
          cuda->hostToDevice(0, 64 << 20, policy), cuda->deviceToHost(0, 64 << 20, policy)}) {
        CHECK_MSG(sample, sample.message());
        CHECK(sample->repeats() >= policy.minRepeats);
        CHECK(sample->median() > 0);
    }
}
