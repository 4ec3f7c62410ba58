// Kernel interface of the solver: the signatures every backend implements,
// declared once. The host core (solver/core) calls only these.
//
// Contract for all kernels:
//  - matrices are row-major float32 with a leading dimension (elements per row);
//  - +inf means "no path"; inf + x = inf, min(inf, x) = x (IEEE semantics);
//  - costs are non-negative, so a closed diagonal tile has zeros on its diagonal;
//  - kernels never allocate, and the caller owns every buffer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/matrix_store.hpp"

namespace litpath::apsp {

class Backend {
public:
    virtual ~Backend() = default;

    // Name as given on the command line ("cpu", "reference", "cuda", "hip",
    // "gpu-host": the CUDA/HIP source run on the CPU, kernels/cuda_hip/host_runtime.hpp).
    virtual std::string name() const = 0;

    // Instruction set actually used (e.g. "avx512", "avx2", "scalar").
    virtual std::string isa() const = 0;

    // Diagonal update: classic Floyd-Warshall closure of one b x b tile in place.
    virtual void floyd_warshall_tile(float* tile, int b, int ld) const = 0;

    // Min-plus accumulate: C[m x n] <- min(C, A[m x k] (x) B[k x n]),
    // (x) the min-plus product (C_ij = min_l A_il + B_lj). A, B and C must not
    // overlap (the caller copies a panel tile before updating it in place).
    virtual void minplus_accumulate(int m, int n, int k,
                                    const float* A, int lda,
                                    const float* B, int ldb,
                                    float* C, int ldc) const = 0;

    // A store keeping the local matrix in this backend's memory for the whole
    // solve (kernels/matrix_store.hpp), or nullptr when the backend computes on
    // host memory (the driver then uses make_host_store). With gpu_aware_mpi
    // the store hands device pointers to MPI; otherwise it stages through host
    // buffers. Throws when the memory cannot be had.
    virtual std::unique_ptr<LocalMatrixStore> make_resident_store(const StoreShape& shape,
                                                                  bool gpu_aware_mpi) const {
        return nullptr;
    }
};

// The backend selected by name. Throws std::runtime_error with
// "backend 'cuda' not compiled in" for a backend this build lacks, and
// "unknown backend 'x'" for a name that is none of the known ones.
std::unique_ptr<Backend> make_backend(const std::string& name);

// Backends known to this solver, and whether each is compiled in.
std::vector<std::pair<std::string, bool>> known_backends();

// Factories each backend's translation unit provides.
std::unique_ptr<Backend> make_reference_backend();
std::unique_ptr<Backend> make_cpu_backend();
std::unique_ptr<Backend> make_gpu_backend(const std::string& which);  // "cuda", "hip" or "gpu-host"
bool gpu_backend_compiled(const std::string& which);
// Whether `name` is one of the GPU source's backends (cuda, hip, gpu-host),
// compiled in or not: their stores hand MPI device memory when GPU-aware.
bool is_gpu_backend(const std::string& name);

// Which SIMD kernel the cpu backend dispatches to on this machine.
std::string cpu_kernel_isa();

// Direct entry points of the cpu kernel for a given ISA, for tests and the
// micro-benchmark; isa in {"avx512", "avx2", "generic"}. Returns false when the
// ISA is not supported by this CPU or build.
bool cpu_minplus_with_isa(const std::string& isa, int m, int n, int k,
                          const float* A, int lda, const float* B, int ldb,
                          float* C, int ldc);

}  // namespace litpath::apsp
