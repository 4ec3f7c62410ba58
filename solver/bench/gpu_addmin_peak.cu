// gpu-addmin-peak: the FP32 add+min instruction peak of this GPU, the ceiling
// of the min-plus kernel (2 semiring operations per add+min pair, as for the
// CPU in minplus_bench.cpp). Many independent chains per thread hide the
// add/min latency; the result is stored so nothing is eliminated.
//
//   gpu-addmin-peak [--iters N] [--reps R] [--quick]
//
// Built by CMake for CUDA (solver/bench/CMakeLists.txt) and for the host
// execution target (gpu_addmin_peak.host.cpp: the rehearsal of
// bench/gpu/run_device.sh on a machine without a GPU, --quick); for HIP:
//   hipcc -O3 -std=c++17 --offload-arch=gfx90a -x hip -I solver solver/bench/gpu_addmin_peak.cu
//
// Prints one JSON object: device, arch, warp size, multiprocessors, the clock
// the runtime reports (kHz; the boost clock, not necessarily the one it ran
// at), the launch shape that was fastest, and addmin_peak_rate (semiring ops/s:
// 2 x add+min pairs per second, the median of R timed launches of that shape)
// with pairs_per_clock_per_sm (the rate over the reported clock: 64 means one
// add+min pair per lane of a 4 x 32-lane multiprocessor every other clock).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda_hip/runtime.hpp"

namespace {

// Chains: independent accumulators per thread. Each trip of the loop adds one
// add for the operand that changes (a += step) and the loop's own compare and
// branch to the CHAINS add+min pairs; unrolled by 4 and with 32 chains that
// overhead is about 2 % of the issue slots, with 16 chains and no unrolling
// about 9 % (the first run on an H200 measured 53 of the 64 pairs per clock
// per SM that 4 schedulers issuing one instruction per clock allow).
template <int Chains>
__global__ void addmin_loop(float* out, float a0, float step, int iters) {
    float acc[Chains];
    float b[Chains];
#pragma unroll
    for (int c = 0; c < Chains; ++c) {
        acc[c] = 1e30f + static_cast<float>(threadIdx.x + c);
        b[c] = a0 + static_cast<float>(c) * step;
    }
    float a = a0 + static_cast<float>(blockIdx.x) * step;
#pragma unroll 4
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < Chains; ++c) acc[c] = fminf(acc[c], a + b[c]);
        a += step;  // a changes each trip: the adds cannot be hoisted
    }
    float r = acc[0];
#pragma unroll
    for (int c = 1; c < Chains; ++c) r = fminf(r, acc[c]);
    out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

// The median rate of `reps` launches of addmin_loop<Chains> in one shape.
template <int Chains>
double time_shape(int blocks, int threads, int iters, int reps, gpuStream_t stream) {
    using namespace litpath::apsp::gpu;
    float* out = nullptr;
    GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&out), sizeof(float) * blocks * threads));
    GPU_LAUNCH(addmin_loop<Chains>, blocks, threads, 0, stream, out, 1.0f, 1e-3f, iters);  // warm-up
    GPU_CHECK_LAUNCH();
    GPU_CHECK(gpuStreamSynchronize(stream));
    std::vector<double> seconds;
    for (int r = 0; r < reps; ++r) {
        EventTimer timer;
        timer.start(stream);
        GPU_LAUNCH(addmin_loop<Chains>, blocks, threads, 0, stream, out, 1.0f, 1e-3f, iters);
        seconds.push_back(timer.stop_ms(stream) * 1e-3);
        GPU_CHECK_LAUNCH();
    }
    GPU_CHECK(gpuFree(out));
    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
    const double pairs = static_cast<double>(blocks) * threads * iters * Chains;
    return 2.0 * pairs / seconds[seconds.size() / 2];
}

int int_arg(int argc, char** argv, const char* flag, int fallback) {
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
    return fallback;
}

bool flag_given(int argc, char** argv, const char* flag) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], flag) == 0) return true;
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace litpath::apsp::gpu;
    if (flag_given(argc, argv, "--help")) {  // also run_device.sh's check that the binary starts
        std::printf("usage: %s [--iters N] [--reps R] [--quick]\n", argv[0]);
        return 0;
    }
    const bool quick = flag_given(argc, argv, "--quick");  // the host target: one small shape
    const int iters = int_arg(argc, argv, "--iters", quick ? 64 : 4096);
    const int reps = std::max(1, int_arg(argc, argv, "--reps", quick ? 1 : 7));
    int device = 0;
    GPU_CHECK(gpuSetDevice(device));
    const int sms = device_multiprocessors(device);
    const int warp = device_warp_size(device);
    int clock_khz = 0;
    GPU_CHECK(gpuDeviceGetAttribute(&clock_khz, gpuDevAttrClockRate, device));
    gpuStream_t stream{};
    GPU_CHECK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
    std::vector<int> thread_counts = {4 * warp, 8 * warp, 16 * warp}, per_sm_counts = {2, 4, 8};
    if (quick) thread_counts = {warp}, per_sm_counts = {1};
    double best = 0;
    int best_threads = 0, best_blocks_per_sm = 0, best_chains = 0;
    for (int chains : {16, 32}) {
        for (int threads : thread_counts) {
            if (threads > 1024) continue;
            for (int per_sm : per_sm_counts) {
                const int blocks = sms * per_sm;
                const double rate = chains == 16 ? time_shape<16>(blocks, threads, iters, reps, stream)
                                                 : time_shape<32>(blocks, threads, iters, reps, stream);
                if (rate > best) best = rate, best_threads = threads, best_blocks_per_sm = per_sm, best_chains = chains;
            }
        }
    }
    const double per_clock = clock_khz > 0 ? best / 2.0 / (static_cast<double>(sms) * clock_khz * 1e3) : 0.0;
    std::printf("{\"api\": \"%s\", \"device\": \"%s\", \"arch\": \"%s\", \"warp_size\": %d, "
                "\"multiprocessors\": %d, \"clock_khz\": %d, \"chains\": %d, \"threads\": %d, \"blocks_per_sm\": %d, "
                "\"iters\": %d, \"reps\": %d, \"addmin_peak_rate\": %.6e, \"pairs_per_clock_per_sm\": %.2f}\n",
                LITPATH_GPU_API, device_name(device).c_str(), device_arch(device).c_str(), warp, sms, clock_khz,
                best_chains, best_threads, best_blocks_per_sm, iters, reps, best, per_clock);
    GPU_CHECK(gpuStreamDestroy(stream));
    return 0;
}
