// Device-pointer entry points of the GPU backend, for callers compiled by the
// host compiler (tests, benchmarks, a future device-resident driver). No GPU
// API types appear here: streams are passed as void* (cudaStream_t /
// hipStream_t, nullptr = the default stream). Defined in minplus.cu; present
// in builds with LITPATH_WITH_CUDA, LITPATH_WITH_HIP or the host target
// (LITPATH_WITH_GPU_HOST, the default without either).
//
// Same contract as kernels/backend.hpp (row-major float32, leading
// dimensions, +inf = no path, non-negative costs), but every matrix pointer is
// device memory and calls are asynchronous on the given stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/matrix_store.hpp"

namespace litpath::apsp::gpu {

struct DeviceInfo {
    std::string api;       // "cuda" or "hip"
    std::string name;      // e.g. "NVIDIA H100 80GB HBM3"
    std::string arch;      // e.g. "sm_90", "gfx90a"
    int device = 0;        // ordinal in use
    int warp_size = 0;     // from the device: 32 (NVIDIA) or 64 (most AMD)
    int multiprocessors = 0;
    std::size_t free_bytes = 0, total_bytes = 0;
};

// Number of visible devices (0 when the runtime finds none; never throws).
int device_count();
// Info for the device in use by the calling thread.
DeviceInfo device_info();
// Picks the device for this process: local rank (Open MPI, MPICH, Slurm
// environment) modulo the device count; returns the ordinal.
int select_device_for_local_rank();

// C[m x n] <- min(C, A[m x k] (x) B[k x n]), B row-major k x n ("NN").
void minplus_nn(int m, int n, int k, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                void* stream);
// C[m x n] <- min(C, A[m x k] (x) Bt^T), Bt row-major n x k ("NT", the layout
// the seed paper's OPTSSRGEMM-NT tunes for).
void minplus_nt(int m, int n, int k, const float* A, int lda, const float* Bt, int ldb, float* C, int ldc,
                void* stream);
// One product of a batch: C + c <- min(C + c, (A + a) (x) (B + b)), m x n
// outputs, offsets in elements. With ld % 4 == 0 the offsets must be
// multiples of 4 (tile offsets are, being multiples of b*b).
struct BatchTile {
    std::int64_t a, b, c;
    int m, n;
};
// Every product of `tiles` (device memory, `count` entries) in one launch
// (several beyond 65535): the NN kernel, inner dimension k, leading dimension
// ld for all operands; max_m / max_n bound the entries' m / n. The C regions
// must not overlap each other nor any A or B region.
void minplus_batched(int k, const float* A, const float* B, float* C, int ld, const BatchTile* tiles, int count,
                     int max_m, int max_n, void* stream);

// Floyd-Warshall closure of one b x b tile in place.
void floyd_warshall_tile(float* tile, int b, int ld, void* stream);
// dst[n x m] = src[m x n]^T (to build the NT operand of a row panel).
void transpose(int m, int n, const float* src, int lds, float* dst, int ldd, void* stream);

// Memory and streams, so host-compiled callers need no GPU headers.
float* device_alloc(std::size_t elems);
void device_free(float* p);
void copy_to_device(float* dst, const float* src, std::size_t elems, void* stream);
void copy_to_host(float* dst, const float* src, std::size_t elems, void* stream);
void fill_bytes(float* p, unsigned char byte, std::size_t elems, void* stream);  // 0xFF = NaN poison
void* stream_create();
void stream_destroy(void* stream);
void stream_synchronize(void* stream);

// The device-resident LocalMatrixStore (device_store.cu) on the current
// device: tiles, panels and the diagonal in device memory; MPI buffers staged
// through pinned host memory, or device pointers with gpu_aware_mpi.
std::unique_ptr<LocalMatrixStore> make_device_store(const StoreShape& shape, bool gpu_aware_mpi);

// Milliseconds of `reps` calls of fn(stream) between two events on `stream`.
double time_ms(void (*fn)(void*, void*), void* arg, int reps, void* stream);

}  // namespace litpath::apsp::gpu
