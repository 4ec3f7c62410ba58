// FP32 add+min instruction peak of this GPU: the ceiling of the min-plus
// kernel (2 semiring operations per add+min pair, as for the CPU in
// solver/bench/minplus_bench.cpp). Many independent chains per thread so the
// add/min latency is hidden; the result is stored so nothing is eliminated.
//
//   nvcc  -O3 -std=c++17 -arch=sm_90 -I solver bench/gpu/addmin_peak.cu -o addmin_peak
//   hipcc -O3 -std=c++17 --offload-arch=gfx90a -x hip -I solver bench/gpu/addmin_peak.cu -o addmin_peak
//
// Prints one JSON object: device, arch, warp size, multiprocessors, rate
// (semiring ops/s, i.e. 2 x add+min pairs per second) for the best of the
// launch shapes tried.
#include <cstdio>
#include <string>

#include "kernels/cuda_hip/runtime.hpp"

namespace {

constexpr int kChains = 16;     // independent accumulators per thread
constexpr int kIters = 4096;    // loop trips, each kChains add+min pairs

__global__ void addmin_loop(float* out, float a0, float step) {
    float acc[kChains];
    float b[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
        acc[c] = 1e30f + static_cast<float>(threadIdx.x + c);
        b[c] = a0 + static_cast<float>(c) * step;
    }
    float a = a0 + static_cast<float>(blockIdx.x) * step;
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) acc[c] = fminf(acc[c], a + b[c]);
        a += step;  // a changes each trip: the adds cannot be hoisted
    }
    float r = acc[0];
#pragma unroll
    for (int c = 1; c < kChains; ++c) r = fminf(r, acc[c]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

}  // namespace

int main() {
    using namespace litpath::apsp::gpu;
    int device = 0;
    GPU_CHECK(gpuSetDevice(device));
    const int sms = device_multiprocessors(device);
    const int warp = device_warp_size(device);
    gpuStream_t stream{};
    GPU_CHECK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
    double best = 0;
    int best_threads = 0, best_blocks_per_sm = 0;
    for (int threads : {4 * warp, 8 * warp, 16 * warp}) {
        if (threads > 1024) continue;
        for (int per_sm : {2, 4, 8}) {
            const int blocks = sms * per_sm;
            float* out = nullptr;
            GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&out), sizeof(float) * blocks * threads));
            GPU_LAUNCH(addmin_loop, blocks, threads, 0, stream, out, 1.0f, 1e-3f);  // warm-up
            GPU_CHECK_LAUNCH();
            EventTimer timer;
            const int reps = 5;
            timer.start(stream);
            for (int r = 0; r < reps; ++r) GPU_LAUNCH(addmin_loop, blocks, threads, 0, stream, out, 1.0f, 1e-3f);
            const double s = timer.stop_ms(stream) * 1e-3 / reps;
            GPU_CHECK_LAUNCH();
            GPU_CHECK(gpuFree(out));
            const double pairs = static_cast<double>(blocks) * threads * kIters * kChains;
            const double rate = 2.0 * pairs / s;
            if (rate > best) best = rate, best_threads = threads, best_blocks_per_sm = per_sm;
        }
    }
    std::printf("{\"api\": \"%s\", \"device\": \"%s\", \"arch\": \"%s\", \"warp_size\": %d, "
                "\"multiprocessors\": %d, \"threads\": %d, \"blocks_per_sm\": %d, \"addmin_peak_rate\": %.6e}\n",
                LITPATH_GPU_API, device_name(device).c_str(), device_arch(device).c_str(), warp, sms, best_threads,
                best_blocks_per_sm, best);
    GPU_CHECK(gpuStreamDestroy(stream));
    return 0;
}
