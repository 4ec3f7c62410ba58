// Thin portability layer of the GPU backend: one source (minplus.cu,
// device_store.cu) compiled as CUDA by nvcc, as HIP by hipcc, or by the host
// C++ compiler for the host execution target (LITPATH_GPU_HOST, --backend
// gpu-host: host_runtime.hpp). Everything API-specific is named here, once;
// the kernels and the backend use only the gpu* names below, launch kernels
// only with GPU_LAUNCH and declare dynamic shared memory only with
// GPU_DYNAMIC_SHARED, so all three targets share every kernel line.
//
// The warp (wavefront) size is never a constant of this code: 32 on NVIDIA,
// 64 on most AMD GPUs, either on the host target. Host code asks the device
// (device_warp_size); device code that needs it uses GPU_WARP_SIZE_DEVICE
// (the compiler's warpSize).
#pragma once

#include <stdexcept>
#include <string>

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
#include <hip/hip_runtime.h>

#define LITPATH_GPU_API "hip"
using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuGetErrorString hipGetErrorString
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrWarpSize hipDeviceAttributeWarpSize
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuDevAttrClockRate hipDeviceAttributeClockRate
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc(ptr, bytes) hipHostMalloc((ptr), (bytes), hipHostMallocDefault)
#define gpuFreeHost hipHostFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpy2DAsync hipMemcpy2DAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemGetInfo hipMemGetInfo
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreate hipEventCreate
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventQuery hipEventQuery
#define gpuErrorNotReady hipErrorNotReady
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuGetLastError hipGetLastError
#define gpuFuncSetAttribute(f, attr, v) hipFuncSetAttribute(reinterpret_cast<const void*>(f), (attr), (v))
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define GPU_WARP_SIZE_DEVICE warpSize

#elif defined(__CUDACC__)
#include <cuda_runtime.h>

#define LITPATH_GPU_API "cuda"
using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrWarpSize cudaDevAttrWarpSize
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc(ptr, bytes) cudaMallocHost((ptr), (bytes))
#define gpuFreeHost cudaFreeHost
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpy2DAsync cudaMemcpy2DAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreate cudaEventCreate
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventQuery cudaEventQuery
#define gpuErrorNotReady cudaErrorNotReady
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuGetLastError cudaGetLastError
#define gpuFuncSetAttribute(f, attr, v) cudaFuncSetAttribute((f), (attr), (v))
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define GPU_WARP_SIZE_DEVICE warpSize

#elif defined(LITPATH_GPU_HOST)
#include "kernels/cuda_hip/host_runtime.hpp"

#define LITPATH_GPU_API "gpu-host"
using gpuError_t = ::litpath::apsp::gpu::host::Error;
using gpuStream_t = ::litpath::apsp::gpu::host::Stream*;
using gpuEvent_t = ::litpath::apsp::gpu::host::Event*;
using gpuDeviceProp = ::litpath::apsp::gpu::host::DeviceProp;
#define gpuSuccess ::litpath::apsp::gpu::host::success
#define gpuGetErrorString ::litpath::apsp::gpu::host::error_string
#define gpuGetDeviceCount ::litpath::apsp::gpu::host::device_count
#define gpuSetDevice ::litpath::apsp::gpu::host::set_device
#define gpuGetDevice ::litpath::apsp::gpu::host::get_device
#define gpuGetDeviceProperties ::litpath::apsp::gpu::host::device_properties
#define gpuDeviceGetAttribute ::litpath::apsp::gpu::host::device_attribute
#define gpuDevAttrWarpSize ::litpath::apsp::gpu::host::attribute_warp_size
#define gpuDevAttrMultiProcessorCount ::litpath::apsp::gpu::host::attribute_multiprocessors
#define gpuDevAttrClockRate ::litpath::apsp::gpu::host::attribute_clock_rate
#define gpuMalloc ::litpath::apsp::gpu::host::malloc_device
#define gpuFree ::litpath::apsp::gpu::host::free_device
#define gpuHostAlloc(ptr, bytes) ::litpath::apsp::gpu::host::malloc_pinned((ptr), (bytes))
#define gpuFreeHost ::litpath::apsp::gpu::host::free_pinned
#define gpuMemcpy ::litpath::apsp::gpu::host::memcpy_sync
#define gpuMemcpyAsync ::litpath::apsp::gpu::host::memcpy_async
#define gpuMemcpy2DAsync ::litpath::apsp::gpu::host::memcpy_2d_async
#define gpuMemsetAsync ::litpath::apsp::gpu::host::memset_async
#define gpuMemGetInfo ::litpath::apsp::gpu::host::mem_info
#define gpuMemcpyHostToDevice ::litpath::apsp::gpu::host::host_to_device
#define gpuMemcpyDeviceToHost ::litpath::apsp::gpu::host::device_to_host
#define gpuMemcpyDeviceToDevice ::litpath::apsp::gpu::host::device_to_device
#define gpuStreamCreateWithFlags ::litpath::apsp::gpu::host::stream_create
#define gpuStreamNonBlocking ::litpath::apsp::gpu::host::kStreamNonBlocking
#define gpuStreamDestroy ::litpath::apsp::gpu::host::stream_destroy
#define gpuStreamSynchronize ::litpath::apsp::gpu::host::stream_synchronize
#define gpuStreamWaitEvent ::litpath::apsp::gpu::host::stream_wait_event
#define gpuEventCreate ::litpath::apsp::gpu::host::event_create
#define gpuEventCreateWithFlags ::litpath::apsp::gpu::host::event_create_with_flags
#define gpuEventDisableTiming ::litpath::apsp::gpu::host::kEventDisableTiming
#define gpuEventQuery ::litpath::apsp::gpu::host::event_query
#define gpuErrorNotReady ::litpath::apsp::gpu::host::not_ready
#define gpuEventDestroy ::litpath::apsp::gpu::host::event_destroy
#define gpuEventRecord ::litpath::apsp::gpu::host::event_record
#define gpuEventSynchronize ::litpath::apsp::gpu::host::event_synchronize
#define gpuEventElapsedTime ::litpath::apsp::gpu::host::event_elapsed_ms
#define gpuDeviceSynchronize ::litpath::apsp::gpu::host::device_synchronize
#define gpuGetLastError ::litpath::apsp::gpu::host::get_last_error
#define gpuFuncSetAttribute(f, attr, v) \
    ::litpath::apsp::gpu::host::func_set_attribute(reinterpret_cast<const void*>(f), (attr), (v))
#define gpuFuncAttributeMaxDynamicSharedMemorySize ::litpath::apsp::gpu::host::max_dynamic_shared_bytes
#define GPU_WARP_SIZE_DEVICE warpSize

#else
#error "solver/kernels/cuda_hip is compiled only by nvcc (CUDA), hipcc (HIP) or as the host target (LITPATH_GPU_HOST)"
#endif

#if !defined(LITPATH_GPU_HOST)
// The one launch form of every kernel (the host target defines its own).
#define GPU_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
    kernel<<<(grid), (block), (shared_bytes), (stream)>>>(__VA_ARGS__)
// The kernel's dynamic shared memory (the launch's shared_bytes) as type[].
#define GPU_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

namespace litpath::apsp::gpu {

// Throws std::runtime_error naming the failed call and where it was made.
inline void check(gpuError_t err, const char* what, const char* file, int line) {
    if (err != gpuSuccess)
        throw std::runtime_error(std::string(LITPATH_GPU_API) + " error: " + what + ": " + gpuGetErrorString(err) +
                                 " (" + file + ":" + std::to_string(line) + ")");
}

}  // namespace litpath::apsp::gpu

#define GPU_CHECK(call) ::litpath::apsp::gpu::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors surface here.
#define GPU_CHECK_LAUNCH() ::litpath::apsp::gpu::check(gpuGetLastError(), "kernel launch", __FILE__, __LINE__)

namespace litpath::apsp::gpu {

inline int device_warp_size(int device) {
    int w = 0;
    GPU_CHECK(gpuDeviceGetAttribute(&w, gpuDevAttrWarpSize, device));
    return w;
}

inline int device_multiprocessors(int device) {
    int n = 0;
    GPU_CHECK(gpuDeviceGetAttribute(&n, gpuDevAttrMultiProcessorCount, device));
    return n;
}

// "sm_90" on CUDA, "gfx90a" (without feature suffixes) on HIP, "host-warp32" on the host target.
inline std::string device_arch(int device) {
    gpuDeviceProp p{};
    GPU_CHECK(gpuGetDeviceProperties(&p, device));
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__)
    std::string arch = p.gcnArchName;
    return arch.substr(0, arch.find(':'));
#elif defined(LITPATH_GPU_HOST)
    return "host-warp" + std::to_string(p.warpSize);
#else
    return "sm_" + std::to_string(p.major) + std::to_string(p.minor);
#endif
}

inline std::string device_name(int device) {
    gpuDeviceProp p{};
    GPU_CHECK(gpuGetDeviceProperties(&p, device));
    return p.name;
}

// RAII event pair for timing on a stream (milliseconds).
class EventTimer {
public:
    EventTimer() {
        GPU_CHECK(gpuEventCreate(&start_));
        GPU_CHECK(gpuEventCreate(&stop_));
    }
    ~EventTimer() {
        (void)gpuEventDestroy(start_);
        (void)gpuEventDestroy(stop_);
    }
    EventTimer(const EventTimer&) = delete;
    EventTimer& operator=(const EventTimer&) = delete;
    void start(gpuStream_t s) { GPU_CHECK(gpuEventRecord(start_, s)); }
    float stop_ms(gpuStream_t s) {
        GPU_CHECK(gpuEventRecord(stop_, s));
        GPU_CHECK(gpuEventSynchronize(stop_));
        float ms = 0;
        GPU_CHECK(gpuEventElapsedTime(&ms, start_, stop_));
        return ms;
    }

private:
    gpuEvent_t start_{}, stop_{};
};

}  // namespace litpath::apsp::gpu
