// Kernel tiers: the reference kernel on graphs checked by hand, then every
// SIMD path against the reference on sizes that are not multiples of the
// register block (6 x 32) or of a tile, with +inf entries. Min-plus is exact
// in floating point here (each candidate is one rounded add; min picks one),
// so results must be bitwise equal.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "kernels/backend.hpp"

using litpath::apsp::Backend;
using litpath::apsp::cpu_minplus_with_isa;
using litpath::apsp::make_backend;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> random_matrix(int rows, int ld, std::mt19937& rng, double inf_fraction) {
    std::uniform_real_distribution<float> cost(0.0f, 10.0f);
    std::bernoulli_distribution missing(inf_fraction);
    std::vector<float> m(static_cast<std::size_t>(rows) * ld);
    for (auto& x : m) x = missing(rng) ? kInf : cost(rng);
    return m;
}
}  // namespace

TEST(ReferenceKernel, FloydWarshallOnHandCheckedGraph) {
    // 0 -1-> 1 -2-> 2 -1-> 3, shortcut 0 -5-> 2 (longer), 3 has no out-edges,
    // 4 is isolated; zero-cost edge 2 -0-> 1.
    const int n = 5;
    std::vector<float> d(n * n, kInf);
    for (int i = 0; i < n; ++i) d[i * n + i] = 0;
    auto edge = [&](int u, int v, float w) { d[u * n + v] = w; };
    edge(0, 1, 1), edge(1, 2, 2), edge(2, 3, 1), edge(0, 2, 5), edge(2, 1, 0);
    make_backend("reference")->floyd_warshall_tile(d.data(), n, n);
    const std::vector<float> want = {
        0,    1,    3,    4,    kInf,  //
        kInf, 0,    2,    3,    kInf,  //
        kInf, 0,    0,    1,    kInf,  //
        kInf, kInf, kInf, 0,    kInf,  //
        kInf, kInf, kInf, kInf, 0};
    EXPECT_EQ(d, want);
}

TEST(ReferenceKernel, MinPlusAccumulateByHand) {
    // C <- min(C, A (x) B) with A 2x3, B 3x2.
    const std::vector<float> a = {1, 2, kInf,  //
                                  0, kInf, 3};
    const std::vector<float> b = {5, 1,  //
                                  1, kInf,  //
                                  0, 0};
    std::vector<float> c = {10, 0.5f,  //
                            kInf, kInf};
    make_backend("reference")->minplus_accumulate(2, 2, 3, a.data(), 3, b.data(), 2, c.data(), 2);
    const std::vector<float> want = {3, 0.5f,  //
                                     3, 1};
    EXPECT_EQ(c, want);
}

TEST(ReferenceKernel, LeadingDimensionIsRespected) {
    // 2x2 product inside 2x4 storage: columns 2..3 must not change.
    std::vector<float> a = {1, 1, -7, -7, 1, 1, -7, -7};
    std::vector<float> b = {1, 2, -7, -7, 3, 4, -7, -7};
    std::vector<float> c(8, kInf);
    make_backend("reference")->minplus_accumulate(2, 2, 2, a.data(), 4, b.data(), 4, c.data(), 4);
    EXPECT_EQ(c, (std::vector<float>{2, 3, kInf, kInf, 2, 3, kInf, kInf}));
}

class SimdVsReference : public ::testing::TestWithParam<std::string> {};

TEST_P(SimdVsReference, OddSizesWithInfinities) {
    const std::string isa = GetParam();
    {
        std::vector<float> probe(1, 0.0f);
        if (!cpu_minplus_with_isa(isa, 1, 1, 1, probe.data(), 1, probe.data(), 1, probe.data(), 1))
            GTEST_SKIP() << isa << " not supported on this CPU";
    }
    auto ref = make_backend("reference");
    std::mt19937 rng(42);
    const int shapes[][3] = {{1, 1, 1},   {5, 7, 3},    {6, 32, 1},  {7, 33, 2},    {13, 17, 19},
                             {12, 16, 8}, {37, 33, 41}, {64, 64, 64}, {100, 47, 71}, {6, 48, 5},
                             {127, 129, 3}, {1, 200, 9}, {200, 1, 9}};
    for (const auto& s : shapes) {
        const int m = s[0], n = s[1], k = s[2];
        for (double inf_fraction : {0.0, 0.3, 1.0}) {
            const int lda = k + 3, ldb = n + 5, ldc = n + 1;  // padded leading dimensions
            auto a = random_matrix(m, lda, rng, inf_fraction);
            auto b = random_matrix(k, ldb, rng, inf_fraction);
            auto c = random_matrix(m, ldc, rng, 0.5);
            auto want = c;
            ref->minplus_accumulate(m, n, k, a.data(), lda, b.data(), ldb, want.data(), ldc);
            ASSERT_TRUE(cpu_minplus_with_isa(isa, m, n, k, a.data(), lda, b.data(), ldb, c.data(), ldc));
            ASSERT_EQ(c, want) << isa << " m=" << m << " n=" << n << " k=" << k << " inf=" << inf_fraction;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Isa, SimdVsReference, ::testing::Values("avx512", "avx2", "generic"));

TEST(CpuBackend, FloydWarshallTileMatchesReference) {
    auto ref = make_backend("reference");
    auto cpu = make_backend("cpu");
    std::mt19937 rng(7);
    for (int b : {1, 3, 17, 50, 96}) {
        const int ld = b + 2;
        auto d = random_matrix(b, ld, rng, 0.8);
        for (int i = 0; i < b; ++i) d[static_cast<std::size_t>(i) * ld + i] = 0;
        auto want = d;
        ref->floyd_warshall_tile(want.data(), b, ld);
        cpu->floyd_warshall_tile(d.data(), b, ld);
        ASSERT_EQ(d, want) << "b=" << b;
    }
}

TEST(CpuBackend, DispatchesToBestIsa) {
    auto cpu = make_backend("cpu");
    EXPECT_EQ(cpu->name(), "cpu");
    EXPECT_FALSE(cpu->isa().empty());
    EXPECT_EQ(cpu->isa(), litpath::apsp::cpu_kernel_isa());
}

TEST(Backends, GpuBackendsNotCompiledInSayWhich) {
    for (const char* name : {"cuda", "hip"}) {
        try {
            make_backend(name);
            FAIL() << name << " should not be available in a CPU-only build";
        } catch (const std::runtime_error& e) {
            EXPECT_EQ(std::string(e.what()), std::string("backend '") + name + "' not compiled in");
        }
    }
    EXPECT_THROW(make_backend("fpga"), std::runtime_error);
}
