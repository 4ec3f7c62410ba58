// CPU backend: register-blocked SIMD min-plus kernel with runtime dispatch
// (AVX-512 where the CPU has it, AVX2 otherwise, an OpenMP-SIMD generic loop
// elsewhere). The kernels are serial; the driver runs many of them in parallel
// with OpenMP, one per tile (or per row block of a tile).
//
// Micro-kernel shape: MR rows x NV vectors of C live in registers while the
// k loop streams one row of B (NV vector loads) and MR broadcasts of A. With
// MR = 6 and NV = 2 there are 12 independent add+min chains, enough to hide
// the 4-cycle latency of vminps on two vector ports.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define LITPATH_X86 1
#endif

#include "kernels/backend.hpp"

// GCC 12 reports its own _mm512_undefined_ps() placeholders as uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace litpath::apsp {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int kRowBlock = 6;

// ----------------------------------------------------------------- generic --
void minplus_generic(int m, int n, int k, const float* A, int lda, const float* B, int ldb,
                     float* C, int ldc) {
    for (int i = 0; i < m; ++i) {
        float* c_row = C + static_cast<std::int64_t>(i) * ldc;
        for (int l = 0; l < k; ++l) {
            const float a = A[static_cast<std::int64_t>(i) * lda + l];
            if (a == kInf) continue;
            const float* b_row = B + static_cast<std::int64_t>(l) * ldb;
#pragma omp simd
            for (int j = 0; j < n; ++j) c_row[j] = std::min(c_row[j], a + b_row[j]);
        }
    }
}

#ifdef LITPATH_X86
// ----------------------------------------------------------------- AVX-512 --
template <int MR, int NV>
__attribute__((target("avx512f"))) inline void micro_avx512(int k, const float* A, int lda,
                                                            const float* B, int ldb, float* C,
                                                            int ldc, __mmask16 last_mask) {
    __m512 acc[MR][NV];
    __mmask16 mask[NV];
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v) mask[v] = (v == NV - 1) ? last_mask : static_cast<__mmask16>(0xFFFF);
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v)
            acc[r][v] = _mm512_maskz_loadu_ps(mask[v], C + static_cast<std::int64_t>(r) * ldc + 16 * v);
    for (int l = 0; l < k; ++l) {
        __m512 b[NV];
        const float* b_row = B + static_cast<std::int64_t>(l) * ldb;
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v) b[v] = _mm512_maskz_loadu_ps(mask[v], b_row + 16 * v);
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
            const __m512 a = _mm512_set1_ps(A[static_cast<std::int64_t>(r) * lda + l]);
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_min_ps(acc[r][v], _mm512_add_ps(a, b[v]));
        }
    }
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v)
            _mm512_mask_storeu_ps(C + static_cast<std::int64_t>(r) * ldc + 16 * v, mask[v], acc[r][v]);
}

template <int NV>
__attribute__((target("avx512f"))) void rows_avx512(int rows, int k, const float* A, int lda,
                                                    const float* B, int ldb, float* C, int ldc,
                                                    __mmask16 last_mask) {
    switch (rows) {
        case 6: micro_avx512<6, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 5: micro_avx512<5, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 4: micro_avx512<4, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 3: micro_avx512<3, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 2: micro_avx512<2, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 1: micro_avx512<1, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        default: break;
    }
}

// Per-thread scratch for a packed column strip of B (k x 32, contiguous).
// Packing matters: B's rows are ldb apart (often a power of two), so an
// unpacked strip maps onto a handful of L1 sets and is evicted while the row
// blocks of A pass over it.
float* packing_buffer(std::size_t floats) {
    thread_local std::vector<float> storage;
    if (storage.size() < floats + 16) storage.resize(floats + 16);
    auto address = reinterpret_cast<std::uintptr_t>(storage.data());
    return reinterpret_cast<float*>((address + 63) & ~std::uintptr_t{63});
}

__attribute__((target("avx512f"))) void minplus_avx512(int m, int n, int k, const float* A,
                                                       int lda, const float* B, int ldb, float* C,
                                                       int ldc) {
    // Column strips of 32 (two vectors) outermost: the packed k x 32 strip of
    // B stays in L1 while every row block of A and C passes over it.
    float* strip = packing_buffer(static_cast<std::size_t>(k) * 32);
    for (int j0 = 0; j0 < n; j0 += 32) {
        const int cols = std::min(32, n - j0);
        const int nv = cols > 16 ? 2 : 1;
        const int tail = cols - 16 * (nv - 1);
        const __mmask16 last_mask = static_cast<__mmask16>((1u << tail) - 1u);
        const __mmask16 first_mask = nv == 2 ? static_cast<__mmask16>(0xFFFF) : last_mask;
        for (int l = 0; l < k; ++l) {
            const float* src = B + static_cast<std::int64_t>(l) * ldb + j0;
            _mm512_store_ps(strip + 32 * l, _mm512_maskz_loadu_ps(first_mask, src));
            if (nv == 2) _mm512_store_ps(strip + 32 * l + 16, _mm512_maskz_loadu_ps(last_mask, src + 16));
        }
        for (int i0 = 0; i0 < m; i0 += kRowBlock) {
            const int rows = std::min(kRowBlock, m - i0);
            const float* a = A + static_cast<std::int64_t>(i0) * lda;
            float* c = C + static_cast<std::int64_t>(i0) * ldc + j0;
            if (nv == 2)
                rows_avx512<2>(rows, k, a, lda, strip, 32, c, ldc, last_mask);
            else
                rows_avx512<1>(rows, k, a, lda, strip, 32, c, ldc, last_mask);
        }
    }
}

// -------------------------------------------------------------------- AVX2 --
template <int MR, int NV>
__attribute__((target("avx2"))) inline void micro_avx2(int k, const float* A, int lda,
                                                       const float* B, int ldb, float* C, int ldc,
                                                       __m256i last_mask) {
    __m256 acc[MR][NV];
    __m256i mask[NV];
    _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v) mask[v] = (v == NV - 1) ? last_mask : _mm256_set1_epi32(-1);
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v)
            acc[r][v] = _mm256_maskload_ps(C + static_cast<std::int64_t>(r) * ldc + 8 * v, mask[v]);
    for (int l = 0; l < k; ++l) {
        __m256 b[NV];
        const float* b_row = B + static_cast<std::int64_t>(l) * ldb;
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v) b[v] = _mm256_maskload_ps(b_row + 8 * v, mask[v]);
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
            const __m256 a = _mm256_broadcast_ss(A + static_cast<std::int64_t>(r) * lda + l);
            _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v) acc[r][v] = _mm256_min_ps(acc[r][v], _mm256_add_ps(a, b[v]));
        }
    }
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
        _Pragma("GCC unroll 16") for (int v = 0; v < NV; ++v)
            _mm256_maskstore_ps(C + static_cast<std::int64_t>(r) * ldc + 8 * v, mask[v], acc[r][v]);
}

template <int NV>
__attribute__((target("avx2"))) void rows_avx2(int rows, int k, const float* A, int lda,
                                               const float* B, int ldb, float* C, int ldc,
                                               __m256i last_mask) {
    switch (rows) {
        case 6: micro_avx2<6, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 5: micro_avx2<5, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 4: micro_avx2<4, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 3: micro_avx2<3, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 2: micro_avx2<2, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        case 1: micro_avx2<1, NV>(k, A, lda, B, ldb, C, ldc, last_mask); break;
        default: break;
    }
}

__attribute__((target("avx2"))) void minplus_avx2(int m, int n, int k, const float* A, int lda,
                                                  const float* B, int ldb, float* C, int ldc) {
    for (int j0 = 0; j0 < n; j0 += 16) {
        const int cols = std::min(16, n - j0);
        const int nv = cols > 8 ? 2 : 1;
        const int tail = cols - 8 * (nv - 1);
        const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i last_mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), lanes);
        for (int i0 = 0; i0 < m; i0 += kRowBlock) {
            const int rows = std::min(kRowBlock, m - i0);
            const float* a = A + static_cast<std::int64_t>(i0) * lda;
            float* c = C + static_cast<std::int64_t>(i0) * ldc + j0;
            if (nv == 2)
                rows_avx2<2>(rows, k, a, lda, B + j0, ldb, c, ldc, last_mask);
            else
                rows_avx2<1>(rows, k, a, lda, B + j0, ldb, c, ldc, last_mask);
        }
    }
}

bool cpu_has_avx512() {
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}
bool cpu_has_avx2() {
    static const bool has = __builtin_cpu_supports("avx2");
    return has;
}
#endif  // LITPATH_X86

using MinplusFn = void (*)(int, int, int, const float*, int, const float*, int, float*, int);

MinplusFn select_minplus(std::string* isa) {
#ifdef LITPATH_X86
    if (cpu_has_avx512()) {
        if (isa) *isa = "avx512";
        return minplus_avx512;
    }
    if (cpu_has_avx2()) {
        if (isa) *isa = "avx2";
        return minplus_avx2;
    }
#endif
    if (isa) *isa = "generic";
    return minplus_generic;
}

// Diagonal update of one tile. Row k is read while row i is written; for i == k
// the update is a no-op (the diagonal is 0), so there is no carried dependency.
#if defined(LITPATH_X86) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void floyd_warshall_tile_simd(float* tile, int b, int ld) {
    for (int k = 0; k < b; ++k) {
        const float* k_row = tile + static_cast<std::int64_t>(k) * ld;
        for (int i = 0; i < b; ++i) {
            float* i_row = tile + static_cast<std::int64_t>(i) * ld;
            const float dik = i_row[k];
            if (dik == kInf) continue;
            // Unconditional store of a select: vectorises (std::min's
            // "store only if smaller" became a scalar branch).
#pragma omp simd
            for (int j = 0; j < b; ++j) {
                const float through_k = dik + k_row[j];
                const float current = i_row[j];
                i_row[j] = through_k < current ? through_k : current;
            }
        }
    }
}

class CpuBackend final : public Backend {
public:
    CpuBackend() : minplus_(select_minplus(&isa_)) {}
    std::string name() const override { return "cpu"; }
    std::string isa() const override { return isa_; }
    void floyd_warshall_tile(float* tile, int b, int ld) const override {
        floyd_warshall_tile_simd(tile, b, ld);
    }
    void minplus_accumulate(int m, int n, int k, const float* A, int lda, const float* B, int ldb,
                            float* C, int ldc) const override {
        if (m <= 0 || n <= 0 || k <= 0) return;
        minplus_(m, n, k, A, lda, B, ldb, C, ldc);
    }

private:
    std::string isa_;
    MinplusFn minplus_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

std::string cpu_kernel_isa() {
    std::string isa;
    select_minplus(&isa);
    return isa;
}

bool cpu_minplus_with_isa(const std::string& isa, int m, int n, int k, const float* A, int lda,
                          const float* B, int ldb, float* C, int ldc) {
    if (m <= 0 || n <= 0 || k <= 0) return true;
    if (isa == "generic") {
        minplus_generic(m, n, k, A, lda, B, ldb, C, ldc);
        return true;
    }
#ifdef LITPATH_X86
    if (isa == "avx512" && cpu_has_avx512()) {
        minplus_avx512(m, n, k, A, lda, B, ldb, C, ldc);
        return true;
    }
    if (isa == "avx2" && cpu_has_avx2()) {
        minplus_avx2(m, n, k, A, lda, B, ldb, C, ldc);
        return true;
    }
#endif
    return false;
}

}  // namespace litpath::apsp
