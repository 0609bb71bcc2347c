// SPDX-License-Identifier: Apache-2.0
#pragma once
// Owning handles for the CUDA objects a benchmark uses (device and pinned memory, events, a
// stream, a cuBLAS handle): when a call fails half-way, unwinding frees whatever was made.
// They are tiny and always used together, hence one header. Destructors ignore errors: there
// is nothing useful to do about a failed free while already reporting another failure.

#include "CudaCheck.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace tessera::gpu::cudaimpl {

// Device memory from cudaMalloc.
class DeviceBuffer {
public:
    explicit DeviceBuffer(std::size_t bytes)
        : m_bytes(bytes) {
        checkCuda(cudaMalloc(&m_data, bytes), "cudaMalloc(" + std::to_string(bytes) + " bytes)");
    }
    ~DeviceBuffer() { cudaFree(m_data); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    void* get() const { return m_data; }
    std::size_t bytes() const { return m_bytes; }

private:
    void* m_data = nullptr;
    std::size_t m_bytes = 0;
};

// Page-locked host memory from cudaMallocHost, so transfers run at full DMA speed.
class PinnedBuffer {
public:
    explicit PinnedBuffer(std::size_t bytes)
        : m_bytes(bytes) {
        checkCuda(cudaMallocHost(&m_data, bytes), "cudaMallocHost(" + std::to_string(bytes) + " bytes)");
    }
    ~PinnedBuffer() { cudaFreeHost(m_data); }
    PinnedBuffer(const PinnedBuffer&) = delete;
    PinnedBuffer& operator=(const PinnedBuffer&) = delete;

    void* get() const { return m_data; }
    std::size_t bytes() const { return m_bytes; }

private:
    void* m_data = nullptr;
    std::size_t m_bytes = 0;
};

// A CUDA event with timing enabled.
class CudaEvent {
public:
    CudaEvent() { checkCuda(cudaEventCreate(&m_event), "cudaEventCreate"); }
    ~CudaEvent() { cudaEventDestroy(m_event); }
    CudaEvent(const CudaEvent&) = delete;
    CudaEvent& operator=(const CudaEvent&) = delete;

    cudaEvent_t get() const { return m_event; }

private:
    cudaEvent_t m_event = nullptr;
};

// A non-blocking stream of our own, so the legacy default stream's implicit syncs stay out
// of the timings.
class CudaStream {
public:
    CudaStream() {
        checkCuda(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking), "cudaStreamCreate");
    }
    ~CudaStream() { cudaStreamDestroy(m_stream); }
    CudaStream(const CudaStream&) = delete;
    CudaStream& operator=(const CudaStream&) = delete;

    cudaStream_t get() const { return m_stream; }
    void synchronize() const { checkCuda(cudaStreamSynchronize(m_stream), "cudaStreamSynchronize"); }

private:
    cudaStream_t m_stream = nullptr;
};

// A cuBLAS handle, bound to the device that was current when it was made.
class CublasHandle {
public:
    CublasHandle() { checkCublas(cublasCreate(&m_handle), "cublasCreate"); }
    ~CublasHandle() { cublasDestroy(m_handle); }
    CublasHandle(const CublasHandle&) = delete;
    CublasHandle& operator=(const CublasHandle&) = delete;

    cublasHandle_t get() const { return m_handle; }

private:
    cublasHandle_t m_handle = nullptr;
};

// Seconds the work enqueued by `enqueue` took on `stream`, measured between two events.
template <class Enqueue>
double timeOnStream(cudaStream_t stream, Enqueue&& enqueue) {
    CudaEvent start;
    CudaEvent stop;
    checkCuda(cudaEventRecord(start.get(), stream), "cudaEventRecord");
    enqueue();
    checkCuda(cudaEventRecord(stop.get(), stream), "cudaEventRecord");
    checkCuda(cudaEventSynchronize(stop.get()), "cudaEventSynchronize");
    float ms = 0;
    checkCuda(cudaEventElapsedTime(&ms, start.get(), stop.get()), "cudaEventElapsedTime");
    return ms / 1000.0;
}

} // namespace tessera::gpu::cudaimpl
