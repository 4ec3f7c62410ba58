// GPU backend: min-plus kernels and the Backend implementation, one source
// compiled by nvcc (this file, LANGUAGE CUDA), by hipcc (minplus.hip.cpp
// includes it) or by the host compiler for the host execution target
// (minplus.host.cpp, --backend gpu-host). API names, GPU_LAUNCH and
// GPU_DYNAMIC_SHARED come from runtime.hpp only.
//
// Kernels (seed paper SIV-C and appendix C, OPTSSRGEMM):
//  - minplus_tiled<NT>: C <- min(C, A (x) B) with B given as B (NN) or as B^T
//    (NT). A 128 x 128 block tile per 256 threads, k in steps of 8 through
//    double-buffered shared memory (global loads of step s+1 overlap the
//    arithmetic of step s), an 8 x 8 register block per thread, float4 global
//    loads where the leading dimension and base allow, +inf padding at the
//    ragged edges (inf + x = inf never wins a min).
//  - diagonal Floyd-Warshall: one block in shared memory for tiles up to
//    kSharedFwMax; beyond that one grid-wide launch per k. In iteration k row
//    and column k do not change (non-negative costs, zero diagonal), so the
//    in-place update is race-free and bit-identical to the scalar reference.
//
// Backend choice (documented in solver/README.md): kernels/backend.hpp is
// host-pointer based and the driver keeps the local matrix in host memory, so
// this backend stages each call (H2D, kernel, D2H) on a per-thread stream
// taken from a pool; the driver's OpenMP threads therefore overlap copies and
// kernels of different tiles, and MPI always sees host buffers. The
// device-pointer entry points (gpu_kernels.hpp) are the building blocks of a
// device-resident driver: device_store.cu builds the --backend cuda|hip
// LocalMatrixStore from them, and the driver uses that store, so the staging
// methods below serve only direct Backend callers (tests, benchmarks).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cuda_hip/gpu_kernels.hpp"
#include "kernels/cuda_hip/runtime.hpp"

namespace litpath::apsp::gpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Block tile of the min-plus kernel: kBM x kBN outputs per block of kThreads,
// each thread an kTM x kTN register block in two 4-wide halves per dimension
// (rows ty*4.., 64+ty*4..; columns tx*4.., 64+tx*4..) so shared-memory float4
// reads of a warp are contiguous.
constexpr int kBM = 128, kBN = 128, kBK = 8;
constexpr int kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
static_assert(kThreads == 256, "loader mapping below assumes 256 threads");
static_assert(kBM * kBK == 4 * kThreads && kBN * kBK == 4 * kThreads, "one float4 per thread per operand");

// Largest diagonal tile closed in one block's shared memory (48 KiB, the
// limit without opt-in on both vendors).
constexpr int kSharedFwMax = 110;

__device__ __forceinline__ void load4(const float* __restrict__ p, int ld, int r, int c, int rows, int cols,
                                      bool vec, float out[4]) {
    if (r < rows && vec && c + 3 < cols) {
        const float4 v = *reinterpret_cast<const float4*>(p + static_cast<std::int64_t>(r) * ld + c);
        out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
        return;
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
        out[i] = (r < rows && c + i < cols) ? p[static_cast<std::int64_t>(r) * ld + c + i] : kInf;
}

// One kBM x kBN block of C at (row0, col0), by the calling block's threads
// (the body of both the single and the batched kernel).
template <bool NT>
__device__ __forceinline__ void minplus_block(int m, int n, int k, const float* __restrict__ A, int lda,
                                              const float* __restrict__ B, int ldb, float* __restrict__ C, int ldc,
                                              bool vec_a, bool vec_b, bool vec_c, int row0, int col0,
                                              float (&As)[2][kBK][kBM], float (&Bs)[2][kBK][kBN]) {
    const int tid = static_cast<int>(threadIdx.x);
    const int tx = tid % (kBN / kTN), ty = tid / (kBN / kTN);

    // Loader coordinates: a kBM x kBK slab of A (and of B^T for NT) is 2
    // float4 per row; a kBK x kBN slab of B (NN) is 32 float4 per row.
    const int a_r = tid >> 1, a_k = (tid & 1) * 4;
    const int b_k = tid / (kBN / 4), b_c = (tid % (kBN / 4)) * 4;

    float ra[4], rb[4];
    auto fetch = [&](int k0) {
        load4(A, lda, row0 + a_r, k0 + a_k, m, k, vec_a, ra);
        if (NT)
            load4(B, ldb, col0 + a_r, k0 + a_k, n, k, vec_b, rb);
        else
            load4(B, ldb, k0 + b_k, col0 + b_c, k, n, vec_b, rb);
    };
    auto stash = [&](int buf) {
#pragma unroll
        for (int i = 0; i < 4; ++i) As[buf][a_k + i][a_r] = ra[i];
        if (NT) {
#pragma unroll
            for (int i = 0; i < 4; ++i) Bs[buf][a_k + i][a_r] = rb[i];
        } else {
            *reinterpret_cast<float4*>(&Bs[buf][b_k][b_c]) = make_float4(rb[0], rb[1], rb[2], rb[3]);
        }
    };

    float acc[kTM][kTN];
#pragma unroll
    for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] = kInf;

    const int steps = (k + kBK - 1) / kBK;
    fetch(0);
    stash(0);
    __syncthreads();
    for (int s = 0; s < steps; ++s) {
        const int cur = s & 1;
        if (s + 1 < steps) fetch((s + 1) * kBK);  // in flight during the arithmetic below
#pragma unroll
        for (int kk = 0; kk < kBK; ++kk) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][kk][kBM / 2 + ty * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][kk][kBN / 2 + tx * 4]);
            const float a[kTM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[kTN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < kTM; ++i)
#pragma unroll
                for (int j = 0; j < kTN; ++j) acc[i][j] = fminf(acc[i][j], a[i] + b[j]);
        }
        if (s + 1 < steps) stash(cur ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < kTM; ++i) {
        const int r = row0 + (i < 4 ? ty * 4 + i : kBM / 2 + ty * 4 + (i - 4));
        if (r >= m) continue;
        float* crow = C + static_cast<std::int64_t>(r) * ldc;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int c = col0 + (h == 0 ? tx * 4 : kBN / 2 + tx * 4);
            const float* v = &acc[i][h * 4];
            if (vec_c && c + 3 < n) {
                float4 old = *reinterpret_cast<float4*>(crow + c);
                old.x = fminf(old.x, v[0]), old.y = fminf(old.y, v[1]);
                old.z = fminf(old.z, v[2]), old.w = fminf(old.w, v[3]);
                *reinterpret_cast<float4*>(crow + c) = old;
            } else {
                for (int j = 0; j < 4 && c + j < n; ++j) crow[c + j] = fminf(crow[c + j], v[j]);
            }
        }
    }
}

template <bool NT>
__global__ void __launch_bounds__(kThreads, 2)
    minplus_tiled(int m, int n, int k, const float* __restrict__ A, int lda, const float* __restrict__ B, int ldb,
                  float* __restrict__ C, int ldc, bool vec_a, bool vec_b, bool vec_c) {
    __shared__ __align__(16) float As[2][kBK][kBM];
    __shared__ __align__(16) float Bs[2][kBK][kBN];
    minplus_block<NT>(m, n, k, A, lda, B, ldb, C, ldc, vec_a, vec_b, vec_c, static_cast<int>(blockIdx.y) * kBM,
                      static_cast<int>(blockIdx.x) * kBN, As, Bs);
}

// blockIdx.z picks the product of the batch; blocks beyond its m x n leave at once.
template <bool Vec>
__global__ void __launch_bounds__(kThreads, 2)
    minplus_batched_kernel(int k, const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                           int ld, const BatchTile* __restrict__ tiles) {
    __shared__ __align__(16) float As[2][kBK][kBM];
    __shared__ __align__(16) float Bs[2][kBK][kBN];
    const BatchTile t = tiles[blockIdx.z];
    const int row0 = static_cast<int>(blockIdx.y) * kBM, col0 = static_cast<int>(blockIdx.x) * kBN;
    if (row0 >= t.m || col0 >= t.n) return;  // the whole block: no __syncthreads is skipped by part of it
    minplus_block<false>(t.m, t.n, k, A + t.a, ld, B + t.b, ld, C + t.c, ld, Vec, Vec, Vec, row0, col0, As, Bs);
}

// Whole tile in one block's shared memory; dynamic shared size b*b floats.
__global__ void fw_tile_shared(float* __restrict__ d, int b, int ld) {
    GPU_DYNAMIC_SHARED(float, s);
    const int total = b * b;
    for (int e = static_cast<int>(threadIdx.x); e < total; e += static_cast<int>(blockDim.x))
        s[e] = d[static_cast<std::int64_t>(e / b) * ld + e % b];
    __syncthreads();
    for (int k = 0; k < b; ++k) {
        for (int e = static_cast<int>(threadIdx.x); e < total; e += static_cast<int>(blockDim.x)) {
            const int i = e / b, j = e % b;
            s[e] = fminf(s[e], s[i * b + k] + s[k * b + j]);
        }
        __syncthreads();
    }
    for (int e = static_cast<int>(threadIdx.x); e < total; e += static_cast<int>(blockDim.x))
        d[static_cast<std::int64_t>(e / b) * ld + e % b] = s[e];
}

// One k of Floyd-Warshall over the whole tile (grid-wide).
__global__ void fw_tile_round(float* __restrict__ d, int b, int ld, int k) {
    const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    const int i = static_cast<int>(blockIdx.y);
    if (j >= b) return;
    float* row = d + static_cast<std::int64_t>(i) * ld;
    row[j] = fminf(row[j], row[k] + d[static_cast<std::int64_t>(k) * ld + j]);
}

constexpr int kTransposeTile = 32;
__global__ void transpose_kernel(int m, int n, const float* __restrict__ src, int lds, float* __restrict__ dst,
                                 int ldd) {
    __shared__ float t[kTransposeTile][kTransposeTile + 1];
    const int c = static_cast<int>(blockIdx.x) * kTransposeTile + static_cast<int>(threadIdx.x);
    const int r0 = static_cast<int>(blockIdx.y) * kTransposeTile;
    for (int y = static_cast<int>(threadIdx.y); y < kTransposeTile; y += static_cast<int>(blockDim.y))
        if (r0 + y < m && c < n) t[y][threadIdx.x] = src[static_cast<std::int64_t>(r0 + y) * lds + c];
    __syncthreads();
    const int oc = r0 + static_cast<int>(threadIdx.x);
    const int or0 = static_cast<int>(blockIdx.x) * kTransposeTile;
    for (int y = static_cast<int>(threadIdx.y); y < kTransposeTile; y += static_cast<int>(blockDim.y))
        if (or0 + y < n && oc < m) dst[static_cast<std::int64_t>(or0 + y) * ldd + oc] = t[threadIdx.x][y];
}

gpuStream_t as_stream(void* s) { return static_cast<gpuStream_t>(s); }

bool vec_ok(const float* p, int ld) {
    return ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

int current_device() {
    int d = 0;
    GPU_CHECK(gpuGetDevice(&d));
    return d;
}

template <bool NT>
void launch_minplus(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    void* stream) {
    if (m <= 0 || n <= 0 || k <= 0) return;
    const dim3 grid(static_cast<unsigned>((n + kBN - 1) / kBN), static_cast<unsigned>((m + kBM - 1) / kBM));
    GPU_LAUNCH(minplus_tiled<NT>, grid, kThreads, 0, as_stream(stream), m, n, k, A, lda, B, ldb, C, ldc,
               vec_ok(A, lda), vec_ok(B, ldb), vec_ok(C, ldc));
    GPU_CHECK_LAUNCH();
}

}  // namespace

int device_count() {
    int n = 0;
    if (gpuGetDeviceCount(&n) != gpuSuccess) {
        (void)gpuGetLastError();  // clear the sticky "no device" error
        return 0;
    }
    return n;
}

DeviceInfo device_info() {
    DeviceInfo info;
    info.api = LITPATH_GPU_API;
    info.device = current_device();
    info.name = device_name(info.device);
    info.arch = device_arch(info.device);
    info.warp_size = device_warp_size(info.device);
    info.multiprocessors = device_multiprocessors(info.device);
    GPU_CHECK(gpuMemGetInfo(&info.free_bytes, &info.total_bytes));
    return info;
}

int select_device_for_local_rank() {
    const int count = device_count();
    if (count == 0) throw std::runtime_error(std::string("backend '") + LITPATH_GPU_API + "' found no GPU device");
    int device = 0;
    if (const char* forced = std::getenv("LITPATH_GPU_DEVICE")) {
        device = std::atoi(forced);
    } else {
        for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                                "SLURM_LOCALID", "PMI_LOCAL_RANK"}) {
            if (const char* v = std::getenv(var)) {
                device = std::atoi(v);
                break;
            }
        }
    }
    device = ((device % count) + count) % count;
    GPU_CHECK(gpuSetDevice(device));
    return device;
}

void minplus_nn(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                void* stream) {
    launch_minplus<false>(m, n, k, A, lda, B, ldb, C, ldc, stream);
}

void minplus_nt(int m, int n, int k, const float* A, int lda, const float* Bt, int ldb, float* C, int ldc,
                void* stream) {
    launch_minplus<true>(m, n, k, A, lda, Bt, ldb, C, ldc, stream);
}

void minplus_batched(int k, const float* A, const float* B, float* C, int ld, const BatchTile* tiles, int count,
                     int max_m, int max_n, void* stream) {
    if (count <= 0 || k <= 0 || max_m <= 0 || max_n <= 0) return;
    // Offsets are multiples of 4 when ld is (see gpu_kernels.hpp), so the bases decide.
    const bool vec = vec_ok(A, ld) && vec_ok(B, ld) && vec_ok(C, ld);
    constexpr int kMaxZ = 65535;
    for (int first = 0; first < count; first += kMaxZ) {
        const int z = std::min(kMaxZ, count - first);
        const dim3 grid(static_cast<unsigned>((max_n + kBN - 1) / kBN), static_cast<unsigned>((max_m + kBM - 1) / kBM),
                        static_cast<unsigned>(z));
        if (vec)
            GPU_LAUNCH(minplus_batched_kernel<true>, grid, kThreads, 0, as_stream(stream), k, A, B, C, ld,
                       tiles + first);
        else
            GPU_LAUNCH(minplus_batched_kernel<false>, grid, kThreads, 0, as_stream(stream), k, A, B, C, ld,
                       tiles + first);
        GPU_CHECK_LAUNCH();
    }
}

void floyd_warshall_tile(float* tile, int b, int ld, void* stream) {
    if (b <= 0) return;
    if (b <= kSharedFwMax) {
        // Threads: a multiple of the device's warp size, at most 1024.
        const int warp = device_warp_size(current_device());
        const int threads = std::min(1024, (std::min(b * b, 1024) + warp - 1) / warp * warp);
        const std::size_t shared = static_cast<std::size_t>(b) * b * sizeof(float);
        GPU_LAUNCH(fw_tile_shared, 1, threads, shared, as_stream(stream), tile, b, ld);
        GPU_CHECK_LAUNCH();
        return;
    }
    const int threads = 256;
    const dim3 grid(static_cast<unsigned>((b + threads - 1) / threads), static_cast<unsigned>(b));
    for (int k = 0; k < b; ++k) {
        GPU_LAUNCH(fw_tile_round, grid, threads, 0, as_stream(stream), tile, b, ld, k);
        GPU_CHECK_LAUNCH();
    }
}

void transpose(int m, int n, const float* src, int lds, float* dst, int ldd, void* stream) {
    if (m <= 0 || n <= 0) return;
    const dim3 grid(static_cast<unsigned>((n + kTransposeTile - 1) / kTransposeTile),
                    static_cast<unsigned>((m + kTransposeTile - 1) / kTransposeTile));
    GPU_LAUNCH(transpose_kernel, grid, dim3(kTransposeTile, 8), 0, as_stream(stream), m, n, src, lds, dst, ldd);
    GPU_CHECK_LAUNCH();
}

float* device_alloc(std::size_t elems) {
    void* p = nullptr;
    GPU_CHECK(gpuMalloc(&p, std::max<std::size_t>(1, elems) * sizeof(float)));
    return static_cast<float*>(p);
}

void device_free(float* p) {
    if (p) GPU_CHECK(gpuFree(p));
}

void copy_to_device(float* dst, const float* src, std::size_t elems, void* stream) {
    GPU_CHECK(gpuMemcpyAsync(dst, src, elems * sizeof(float), gpuMemcpyHostToDevice, as_stream(stream)));
}

void copy_to_host(float* dst, const float* src, std::size_t elems, void* stream) {
    GPU_CHECK(gpuMemcpyAsync(dst, src, elems * sizeof(float), gpuMemcpyDeviceToHost, as_stream(stream)));
}

void fill_bytes(float* p, unsigned char byte, std::size_t elems, void* stream) {
    GPU_CHECK(gpuMemsetAsync(p, byte, elems * sizeof(float), as_stream(stream)));
}

void* stream_create() {
    gpuStream_t s{};
    GPU_CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    return s;
}

void stream_destroy(void* stream) {
    if (stream) GPU_CHECK(gpuStreamDestroy(as_stream(stream)));
}

void stream_synchronize(void* stream) { GPU_CHECK(gpuStreamSynchronize(as_stream(stream))); }

double time_ms(void (*fn)(void*, void*), void* arg, int reps, void* stream) {
    EventTimer timer;
    timer.start(as_stream(stream));
    for (int r = 0; r < reps; ++r) fn(arg, stream);
    return timer.stop_ms(as_stream(stream));
}

}  // namespace litpath::apsp::gpu

// ------------------------------------------------------------------ Backend
namespace litpath::apsp {
namespace {

// Host-pointer Backend over the device kernels, staging every call through
// device buffers on a stream leased from a pool (one per concurrent caller).
class GpuBackend final : public Backend {
public:
    GpuBackend() : device_(gpu::select_device_for_local_rank()), arch_(gpu::device_arch(device_)) {}
    ~GpuBackend() override {
        for (auto& c : pool_) {
            gpu::device_free(c->buffer);
            gpu::stream_destroy(c->stream);
        }
    }

    std::string name() const override { return LITPATH_GPU_API; }
    std::string isa() const override { return arch_; }

    // The driver's store: tiles resident on this device for the whole solve.
    std::unique_ptr<LocalMatrixStore> make_resident_store(const StoreShape& shape,
                                                          bool gpu_aware_mpi) const override {
        GPU_CHECK(gpuSetDevice(device_));
        return gpu::make_device_store(shape, gpu_aware_mpi);
    }

    void floyd_warshall_tile(float* tile, int b, int ld) const override {
        if (b <= 0) return;
        Lease lease(*this);
        Context& c = lease.get();
        const std::size_t pitch = static_cast<std::size_t>(b);
        float* d = c.reserve(pitch * b);
        GPU_CHECK(gpuMemcpy2DAsync(d, pitch * sizeof(float), tile, static_cast<std::size_t>(ld) * sizeof(float),
                                   static_cast<std::size_t>(b) * sizeof(float), b, gpuMemcpyHostToDevice,
                                   gpu::as_stream(c.stream)));
        gpu::floyd_warshall_tile(d, b, b, c.stream);
        GPU_CHECK(gpuMemcpy2DAsync(tile, static_cast<std::size_t>(ld) * sizeof(float), d, pitch * sizeof(float),
                                   static_cast<std::size_t>(b) * sizeof(float), b, gpuMemcpyDeviceToHost,
                                   gpu::as_stream(c.stream)));
        gpu::stream_synchronize(c.stream);
    }

    void minplus_accumulate(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C,
                            int ldc) const override {
        if (m <= 0 || n <= 0 || k <= 0) return;
        Lease lease(*this);
        Context& c = lease.get();
        // Device copies with leading dimensions rounded up to 4 (float4 loads).
        const int dla = round4(k), dlb = round4(n), dlc = round4(n);
        const std::size_t sa = static_cast<std::size_t>(m) * dla, sb = static_cast<std::size_t>(k) * dlb;
        const std::size_t sc = static_cast<std::size_t>(m) * dlc;
        float* base = c.reserve(sa + sb + sc);
        float *dA = base, *dB = base + sa, *dC = base + sa + sb;
        auto s = gpu::as_stream(c.stream);
        auto up = [&](float* dst, int dld, const float* src, int sld, int rows, int cols) {
            GPU_CHECK(gpuMemcpy2DAsync(dst, static_cast<std::size_t>(dld) * sizeof(float), src,
                                       static_cast<std::size_t>(sld) * sizeof(float),
                                       static_cast<std::size_t>(cols) * sizeof(float), rows, gpuMemcpyHostToDevice,
                                       s));
        };
        up(dA, dla, A, lda, m, k);
        up(dB, dlb, B, ldb, k, n);
        up(dC, dlc, C, ldc, m, n);
        gpu::minplus_nn(m, n, k, dA, dla, dB, dlb, dC, dlc, c.stream);
        GPU_CHECK(gpuMemcpy2DAsync(C, static_cast<std::size_t>(ldc) * sizeof(float), dC,
                                   static_cast<std::size_t>(dlc) * sizeof(float),
                                   static_cast<std::size_t>(n) * sizeof(float), m, gpuMemcpyDeviceToHost, s));
        gpu::stream_synchronize(c.stream);
    }

private:
    static int round4(int x) { return (x + 3) / 4 * 4; }

    struct Context {
        void* stream = nullptr;
        float* buffer = nullptr;  // device staging, grown on demand
        std::size_t capacity = 0;
        float* reserve(std::size_t elems) {
            if (elems > capacity) {
                gpu::stream_synchronize(stream);
                gpu::device_free(buffer);
                buffer = nullptr;
                capacity = 0;
                buffer = gpu::device_alloc(elems);
                capacity = elems;
            }
            return buffer;
        }
    };

    // A context for the calling thread's duration of one kernel call.
    class Lease {
    public:
        explicit Lease(const GpuBackend& owner) : owner_(owner) {
            GPU_CHECK(gpuSetDevice(owner_.device_));  // the current device is per host thread
            std::lock_guard<std::mutex> lock(owner_.mutex_);
            if (owner_.free_.empty()) {
                owner_.pool_.push_back(std::make_unique<Context>());
                owner_.pool_.back()->stream = gpu::stream_create();
                owner_.free_.push_back(owner_.pool_.back().get());
            }
            context_ = owner_.free_.back();
            owner_.free_.pop_back();
        }
        ~Lease() {
            std::lock_guard<std::mutex> lock(owner_.mutex_);
            owner_.free_.push_back(context_);
        }
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        Context& get() { return *context_; }

    private:
        const GpuBackend& owner_;
        Context* context_ = nullptr;
    };

    int device_;
    std::string arch_;
    mutable std::mutex mutex_;
    mutable std::vector<std::unique_ptr<Context>> pool_;
    mutable std::vector<Context*> free_;
};

}  // namespace

bool gpu_backend_compiled(const std::string& which) { return which == LITPATH_GPU_API; }

std::unique_ptr<Backend> make_gpu_backend(const std::string& which) {
    if (!gpu_backend_compiled(which)) throw std::runtime_error("backend '" + which + "' not compiled in");
    return std::make_unique<GpuBackend>();
}

}  // namespace litpath::apsp
