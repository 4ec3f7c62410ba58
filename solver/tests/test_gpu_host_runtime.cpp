// The host execution target's runtime (kernels/cuda_hip/host_runtime.*)
// keeps the GPU execution model that test_gpu_kernels relies on: thread and
// block indices, __syncthreads() as a barrier, a missing barrier and a
// divergent one visible, streams that run only when waited for and in order,
// events, launch limits, bounds-checked copies. Kernels here are written as
// for a device and launched with GPU_LAUNCH, like minplus.cu's.
#define LITPATH_GPU_HOST 1
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda_hip/runtime.hpp"

namespace {

constexpr int kThreads = 256;

__global__ void write_coordinates(int* out) {
    const unsigned block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
    out[block * per_block + thread] = static_cast<int>(block * 1000 + thread);
}

// Each thread reads its neighbour's shared slot, after (or without) a barrier.
template <bool Barrier>
__global__ void rotate_through_shared(int* out) {
    __shared__ int slots[kThreads];
    const int t = static_cast<int>(threadIdx.x);
    slots[t] = static_cast<int>(blockIdx.x) * 1000 + t;
    if (Barrier) __syncthreads();
    const int read = slots[(t + 1) % kThreads];
    __syncthreads();  // a barrier in both variants: the threads run as fibers
    out[blockIdx.x * kThreads + t] = read;
}

__global__ void divergent_barrier(int* out) {
    if (threadIdx.x == 5) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

__global__ void read_dynamic_shared(float* out) {
    GPU_DYNAMIC_SHARED(float, s);
    out[threadIdx.x] = s[threadIdx.x];
}

__global__ void add_one(int* p, int n) {
    for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) p[i] += 1;
}

template <typename T>
T* device_array(std::size_t n) {
    void* p = nullptr;
    GPU_CHECK(gpuMalloc(&p, n * sizeof(T)));
    return static_cast<T*>(p);
}

std::vector<int> to_host(const int* device, std::size_t n) {
    std::vector<int> host(n);
    GPU_CHECK(gpuMemcpy(host.data(), device, n * sizeof(int), gpuMemcpyDeviceToHost));
    return host;
}

TEST(GpuHostRuntime, EveryThreadOfEveryBlockRunsOnceWithItsCoordinates) {
    const dim3 grid(2, 3, 2), block(4, 2, 3);
    const int total = 12 * 24;
    int* out = device_array<int>(total);
    GPU_LAUNCH(write_coordinates, grid, block, 0, nullptr, out);
    GPU_CHECK_LAUNCH();
    const auto got = to_host(out, total);
    for (int b = 0; b < 12; ++b)
        for (int t = 0; t < 24; ++t) EXPECT_EQ(got[b * 24 + t], b * 1000 + t);
    GPU_CHECK(gpuFree(out));
}

TEST(GpuHostRuntime, SyncthreadsIsABarrier) {
    int* out = device_array<int>(3 * kThreads);
    GPU_LAUNCH(rotate_through_shared<true>, 3, kThreads, 0, nullptr, out);
    GPU_CHECK_LAUNCH();
    const auto got = to_host(out, 3 * kThreads);
    for (int b = 0; b < 3; ++b)
        for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[b * kThreads + t], b * 1000 + (t + 1) % kThreads);
    GPU_CHECK(gpuFree(out));
}

TEST(GpuHostRuntime, AMissingBarrierReadsWrongData) {
    // Threads run in a shuffled order, so without the barrier some read a
    // neighbour's slot before the neighbour wrote it.
    int* out = device_array<int>(3 * kThreads);
    GPU_LAUNCH(rotate_through_shared<false>, 3, kThreads, 0, nullptr, out);
    GPU_CHECK_LAUNCH();
    const auto got = to_host(out, 3 * kThreads);
    int wrong = 0;
    for (int b = 0; b < 3; ++b)
        for (int t = 0; t < kThreads; ++t) wrong += got[b * kThreads + t] != b * 1000 + (t + 1) % kThreads;
    EXPECT_GT(wrong, kThreads / 4);
    GPU_CHECK(gpuFree(out));
}

TEST(GpuHostRuntime, DynamicSharedMemoryStartsAsNaN) {
    float* out = nullptr;
    GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&out), 64 * sizeof(float)));
    GPU_LAUNCH(read_dynamic_shared, 1, 64, 64 * sizeof(float), nullptr, out);
    GPU_CHECK_LAUNCH();
    std::vector<float> got(64);
    GPU_CHECK(gpuMemcpy(got.data(), out, 64 * sizeof(float), gpuMemcpyDeviceToHost));
    for (float x : got) EXPECT_TRUE(std::isnan(x));
    GPU_CHECK(gpuFree(out));
}

TEST(GpuHostRuntime, ADivergentBarrierIsAKernelFault) {
    // A fault is sticky for the process, as for a device context: run it in a child.
    EXPECT_EXIT(
        {
            void* out = nullptr;
            (void)gpuMalloc(&out, kThreads * sizeof(int));
            GPU_LAUNCH(divergent_barrier, 1, kThreads, 0, nullptr, static_cast<int*>(out));
            const gpuError_t e = gpuDeviceSynchronize();
            std::fprintf(stderr, "%s\n", gpuGetErrorString(e));
            std::exit(e == ::litpath::apsp::gpu::host::kernel_fault && gpuMalloc(&out, 4) == e ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "kernel divergent_barrier, block \\(0,0,0\\): __syncthreads\\(\\) reached by");
}

TEST(GpuHostRuntime, StreamsRunOnlyWhenWaitedForAndInOrder) {
    constexpr int n = 1000;
    std::vector<int> host(n, 7), back(n, -1);
    int* dev = device_array<int>(n);
    gpuStream_t a{}, b{};
    GPU_CHECK(gpuStreamCreateWithFlags(&a, gpuStreamNonBlocking));
    GPU_CHECK(gpuStreamCreateWithFlags(&b, gpuStreamNonBlocking));
    gpuEvent_t uploaded{}, done{};
    GPU_CHECK(gpuEventCreateWithFlags(&uploaded, gpuEventDisableTiming));
    GPU_CHECK(gpuEventCreateWithFlags(&done, gpuEventDisableTiming));

    GPU_CHECK(gpuMemcpyAsync(dev, host.data(), n * sizeof(int), gpuMemcpyHostToDevice, a));
    GPU_CHECK(gpuEventRecord(uploaded, a));
    host.assign(n, 100);  // the upload has not run yet: it reads this
    GPU_CHECK(gpuStreamWaitEvent(b, uploaded, 0));
    GPU_LAUNCH(add_one, 1, 128, 0, b, dev, n);
    GPU_CHECK_LAUNCH();
    GPU_CHECK(gpuMemcpyAsync(back.data(), dev, n * sizeof(int), gpuMemcpyDeviceToHost, b));
    GPU_CHECK(gpuEventRecord(done, b));
    EXPECT_EQ(back[0], -1);  // nothing ran: no wait yet

    int polls = 0;
    while (gpuEventQuery(done) == gpuErrorNotReady) ++polls;
    EXPECT_GE(polls, 1);  // each query runs one more operation
    for (int x : back) ASSERT_EQ(x, 101);  // upload (of 100s), then the kernel, then the download

    GPU_CHECK(gpuEventDestroy(uploaded));
    GPU_CHECK(gpuEventDestroy(done));
    GPU_CHECK(gpuStreamDestroy(a));
    GPU_CHECK(gpuStreamDestroy(b));
    GPU_CHECK(gpuFree(dev));
}

TEST(GpuHostRuntime, LaunchLimitsAreADevicesLimits) {
    int* out = device_array<int>(2048);
    GPU_LAUNCH(add_one, 1, 2048, 0, nullptr, out, 1);
    const gpuError_t e = gpuGetLastError();
    EXPECT_EQ(e, ::litpath::apsp::gpu::host::invalid_configuration);
    EXPECT_NE(std::string(gpuGetErrorString(e)).find("kernel add_one: block (2048,1,1)"), std::string::npos);
    EXPECT_EQ(gpuGetLastError(), gpuSuccess);  // read once, then cleared
    GPU_LAUNCH(read_dynamic_shared, 1, 32, 60 << 10, nullptr, reinterpret_cast<float*>(out));
    EXPECT_EQ(gpuGetLastError(), ::litpath::apsp::gpu::host::invalid_configuration);  // 60 KiB without opt-in
    GPU_CHECK(gpuFuncSetAttribute(read_dynamic_shared, gpuFuncAttributeMaxDynamicSharedMemorySize, 60 << 10));
    GPU_LAUNCH(read_dynamic_shared, 1, 32, 60 << 10, nullptr, reinterpret_cast<float*>(out));
    EXPECT_EQ(gpuGetLastError(), gpuSuccess);
    GPU_CHECK(gpuDeviceSynchronize());
    GPU_CHECK(gpuFree(out));
}

TEST(GpuHostRuntime, CopiesStayInsideTheirAllocationAndKind) {
    int* dev = device_array<int>(10);
    std::vector<int> host(20, 0);
    EXPECT_EQ(gpuMemcpyAsync(dev, host.data(), 11 * sizeof(int), gpuMemcpyHostToDevice, nullptr),
              ::litpath::apsp::gpu::host::invalid_value);
    EXPECT_NE(std::string(gpuGetErrorString(::litpath::apsp::gpu::host::invalid_value)).find("overrun"),
              std::string::npos);
    EXPECT_EQ(gpuMemcpyAsync(host.data(), dev, 4, gpuMemcpyHostToDevice, nullptr),
              ::litpath::apsp::gpu::host::invalid_value);  // kinds swapped
    EXPECT_EQ(gpuMemsetAsync(host.data(), 0, 4, nullptr), ::litpath::apsp::gpu::host::invalid_value);
    EXPECT_EQ(gpuMemcpyAsync(dev + 9, host.data(), sizeof(int), gpuMemcpyHostToDevice, nullptr), gpuSuccess);
    GPU_CHECK(gpuDeviceSynchronize());
    GPU_CHECK(gpuFree(dev));
}

TEST(GpuHostRuntime, WarpSizeIsTheConfiguredOne) {
    const char* v = std::getenv("LITPATH_GPU_HOST_WARP_SIZE");
    const int expected = v ? std::atoi(v) : 32;
    EXPECT_EQ(::litpath::apsp::gpu::device_warp_size(0), expected);
    EXPECT_EQ(warpSize, expected);
    EXPECT_EQ(::litpath::apsp::gpu::device_arch(0), "host-warp" + std::to_string(expected));
}

}  // namespace
