// Reference scalar kernels: the plain triple loops every other backend is
// tested against. No SIMD, no threads, no blocking.
#include <algorithm>

#include "kernels/backend.hpp"

namespace litpath::apsp {
namespace {

class ReferenceBackend final : public Backend {
public:
    std::string name() const override { return "reference"; }
    std::string isa() const override { return "scalar"; }

    void floyd_warshall_tile(float* tile, int b, int ld) const override {
        for (int k = 0; k < b; ++k) {
            for (int i = 0; i < b; ++i) {
                const float dik = tile[i * ld + k];
                for (int j = 0; j < b; ++j) {
                    const float through_k = dik + tile[k * ld + j];
                    if (through_k < tile[i * ld + j]) tile[i * ld + j] = through_k;
                }
            }
        }
    }

    void minplus_accumulate(int m, int n, int k, const float* A, int lda,
                            const float* B, int ldb, float* C,
                            int ldc) const override {
        for (int i = 0; i < m; ++i) {
            for (int j = 0; j < n; ++j) {
                float best = C[i * ldc + j];
                for (int l = 0; l < k; ++l) best = std::min(best, A[i * lda + l] + B[l * ldb + j]);
                C[i * ldc + j] = best;
            }
        }
    }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace litpath::apsp
