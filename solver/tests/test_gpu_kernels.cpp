// GPU kernels against the reference kernels (CTest label "gpu"), and their
// timing. Host C++: it reaches the device only through gpu_kernels.hpp and
// the Backend interface, so the same file serves the CUDA and HIP builds.
//
//   test_gpu_kernels                       checks; exit 0 when all pass
//   test_gpu_kernels --bench 4096,8192 [--reps 5]
//                                          one JSON row per line: kernel, n, seconds, rate 2n^3/s
//
// Checks: min-plus NN and NT on odd sizes (not multiples of the 128 x 128
// block, nor of 4, with leading dimensions > width and odd ones that disable
// float4), fresh random inputs with +inf entries, outputs' padding poisoned
// with NaN and required untouched; diagonal FW on both paths (shared memory
// and one launch per k); the staging Backend through make_backend; the
// device-resident matrix store against the host store (check_store).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cuda_hip/gpu_kernels.hpp"

using namespace litpath::apsp;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
int failures = 0;

void expect(bool ok, const std::string& what) {
    if (!ok) {
        ++failures;
        std::printf("FAIL %s\n", what.c_str());
    }
}

std::vector<float> random_matrix(int rows, int ld, std::mt19937& rng, double inf_fraction) {
    std::uniform_real_distribution<float> cost(0.0f, 10.0f);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<float> m(static_cast<std::size_t>(rows) * ld);
    for (auto& x : m) x = u(rng) < inf_fraction ? kInf : cost(rng);
    return m;
}

// Poisons the padding columns [cols, ld) of every row with NaN.
void poison_padding(std::vector<float>& m, int rows, int cols, int ld) {
    for (int r = 0; r < rows; ++r)
        for (int c = cols; c < ld; ++c) m[static_cast<std::size_t>(r) * ld + c] = std::nanf("");
}

// Bitwise equality on [rows x cols] and NaN kept in the padding.
bool same(const std::vector<float>& got, const std::vector<float>& want, int rows, int cols, int ld,
          std::string* where) {
    for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < ld; ++c) {
            const float g = got[static_cast<std::size_t>(r) * ld + c], w = want[static_cast<std::size_t>(r) * ld + c];
            const bool ok = c < cols ? std::memcmp(&g, &w, sizeof g) == 0 : std::isnan(g);
            if (!ok) {
                std::ostringstream s;
                s << "(" << r << "," << c << ") got " << g << " want " << w;
                *where = s.str();
                return false;
            }
        }
    }
    return true;
}

void check_minplus(const Backend& ref, std::mt19937& rng, void* stream) {
    const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {129, 131, 9}, {127, 257, 130}, {300, 97, 301}, {64, 64, 64},
                            {256, 256, 256}, {513, 385, 77}};
    for (const auto& s : sizes) {
        for (int pad : {0, 3, 4}) {
            for (bool nt : {false, true}) {
                const int m = s[0], n = s[1], k = s[2];
                const int lda = k + pad, ldb = (nt ? k : n) + pad, ldc = n + pad;
                auto a = random_matrix(m, lda, rng, 0.2);
                auto b = random_matrix(k, n, rng, 0.2);  // B as k x n, ld n
                auto c = random_matrix(m, ldc, rng, 0.5);
                poison_padding(c, m, n, ldc);
                std::vector<float> want = c;
                ref.minplus_accumulate(m, n, k, a.data(), lda, b.data(), n, want.data(), ldc);

                // Device operand B: as given (NN, ld ldb) or transposed (NT).
                std::vector<float> bdev(static_cast<std::size_t>(nt ? n : k) * ldb, kInf);
                for (int l = 0; l < k; ++l)
                    for (int j = 0; j < n; ++j)
                        (nt ? bdev[static_cast<std::size_t>(j) * ldb + l] : bdev[static_cast<std::size_t>(l) * ldb + j]) =
                            b[static_cast<std::size_t>(l) * n + j];
                float* dA = gpu::device_alloc(a.size());
                float* dB = gpu::device_alloc(bdev.size());
                float* dC = gpu::device_alloc(c.size());
                gpu::copy_to_device(dA, a.data(), a.size(), stream);
                gpu::copy_to_device(dB, bdev.data(), bdev.size(), stream);
                gpu::copy_to_device(dC, c.data(), c.size(), stream);
                if (nt)
                    gpu::minplus_nt(m, n, k, dA, lda, dB, ldb, dC, ldc, stream);
                else
                    gpu::minplus_nn(m, n, k, dA, lda, dB, ldb, dC, ldc, stream);
                std::vector<float> got(c.size(), 0.0f);
                gpu::copy_to_host(got.data(), dC, got.size(), stream);
                gpu::stream_synchronize(stream);
                gpu::device_free(dA);
                gpu::device_free(dB);
                gpu::device_free(dC);
                std::string where;
                std::ostringstream name;
                name << (nt ? "minplus_nt" : "minplus_nn") << " m=" << m << " n=" << n << " k=" << k << " pad=" << pad;
                expect(same(got, want, m, n, ldc, &where), name.str() + " " + where);
            }
        }
    }
}

void check_floyd_warshall(const Backend& ref, std::mt19937& rng, void* stream) {
    for (int b : {1, 2, 17, 64, 110, 111, 200, 257}) {
        const int ld = b + 5;
        auto d = random_matrix(b, ld, rng, 0.8);
        for (int i = 0; i < b; ++i) d[static_cast<std::size_t>(i) * ld + i] = 0.0f;
        poison_padding(d, b, b, ld);
        std::vector<float> want = d;
        ref.floyd_warshall_tile(want.data(), b, ld);
        float* dd = gpu::device_alloc(d.size());
        gpu::copy_to_device(dd, d.data(), d.size(), stream);
        gpu::floyd_warshall_tile(dd, b, ld, stream);
        std::vector<float> got(d.size(), 0.0f);
        gpu::copy_to_host(got.data(), dd, got.size(), stream);
        gpu::stream_synchronize(stream);
        gpu::device_free(dd);
        std::string where;
        expect(same(got, want, b, b, ld, &where), "floyd_warshall_tile b=" + std::to_string(b) + " " + where);
    }
}

void check_backend(const Backend& ref, const Backend& dev, std::mt19937& rng) {
    const int m = 133, n = 71, k = 45, ld = 150;
    auto a = random_matrix(m, ld, rng, 0.3), b = random_matrix(k, ld, rng, 0.3), c = random_matrix(m, ld, rng, 0.5);
    poison_padding(c, m, n, ld);
    std::vector<float> want = c, got = c;
    ref.minplus_accumulate(m, n, k, a.data(), ld, b.data(), ld, want.data(), ld);
    dev.minplus_accumulate(m, n, k, a.data(), ld, b.data(), ld, got.data(), ld);
    std::string where;
    expect(same(got, want, m, n, ld, &where), "backend minplus_accumulate " + where);
    auto d = random_matrix(97, 101, rng, 0.85);
    for (int i = 0; i < 97; ++i) d[static_cast<std::size_t>(i) * 101 + i] = 0.0f;
    poison_padding(d, 97, 97, 101);
    std::vector<float> dw = d;
    ref.floyd_warshall_tile(dw.data(), 97, 101);
    dev.floyd_warshall_tile(d.data(), 97, 101);
    expect(same(d, dw, 97, 97, 101, &where), "backend floyd_warshall_tile " + where);
    expect(dev.name() == gpu::device_info().api, "backend name " + dev.name());
}

// The device-resident store against the host store (reference kernels) on a
// whole single-rank blocked Floyd-Warshall driven through the store interface
// alone, ragged last tile, both panel sets, MPI staging round trips
// (to_mpi, then from_mpi as a receiver would), a poll callback; results must
// be bit-identical. b = 20 takes the float4 path, b = 13 the scalar one.
void check_store(std::mt19937& rng, int n, int b, bool gpu_aware) {
    const auto ref_backend = make_reference_backend();
    const Backend& ref = *ref_backend;
    const int nb = (n + b - 1) / b;
    auto extent = [&](int t) { return std::min(b, n - t * b); };
    StoreShape shape;
    shape.tiles = static_cast<std::int64_t>(nb) * nb;
    shape.b = b;
    shape.row_panel_tiles = nb;
    shape.col_panel_tiles = nb;
    shape.panel_sets = 2;
    const std::size_t te = static_cast<std::size_t>(b) * b;
    std::vector<float> host(static_cast<std::size_t>(shape.tiles) * te, kInf);
    std::uniform_real_distribution<float> cost(0.0f, 10.0f);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
            float& x = host[(static_cast<std::size_t>(i / b) * nb + j / b) * te + static_cast<std::size_t>(i % b) * b + j % b];
            x = i == j ? 0.0f : (u(rng) < 0.8 ? kInf : cost(rng));
        }
    std::vector<float> want = host;
    auto hs = make_host_store(want.data(), shape, ref);
    auto ds = gpu::make_device_store(shape, gpu_aware);
    ds->upload(host.data());
    int polls = 0;
    std::function<void()> poll = [&polls] { ++polls; };
    for (int k = 0; k < nb; ++k) {
        const int set = k & 1, ek = extent(k);
        const std::int64_t kk = static_cast<std::int64_t>(k) * nb + k;
        std::vector<PanelTile> row, col;
        std::vector<OuterTile> outer;
        for (int j = 0; j < nb; ++j) row.push_back({static_cast<std::int64_t>(k) * nb + j, extent(j), j == k});
        for (int i = 0; i < nb; ++i) col.push_back({static_cast<std::int64_t>(i) * nb + k, extent(i), i == k});
        for (int i = 0; i < nb; ++i)
            for (int j = 0; j < nb; ++j)
                if (i != k && j != k) outer.push_back({static_cast<std::int64_t>(i) * nb + j, i, j, extent(i), extent(j)});
        for (LocalMatrixStore* s : {hs.get(), ds.get()}) {
            s->close_diagonal(kk, ek);
            s->diagonal_to_mpi();
            s->before_diagonal_receive();
            s->diagonal_from_mpi();
            s->update_row_panel(set, ek, row, 1);
            s->update_col_panel(set, ek, col, 1);
            s->panels_to_mpi(set, true, true);
            s->before_panel_receive(set);
            s->panels_from_mpi(set, true, true);
            s->outer_product(set, ek, outer, 1, (k & 2) ? poll : std::function<void()>());
        }
    }
    std::vector<float> got(host.size(), -1.0f);
    ds->download(got.data());
    std::size_t bad = 0;
    for (std::size_t e = 0; e < got.size(); ++e)
        if (std::memcmp(&got[e], &want[e], sizeof(float)) != 0) ++bad;
    expect(bad == 0, "device store vs host store, n " + std::to_string(n) + " b " + std::to_string(b) +
                         (gpu_aware ? " gpu-aware" : " staged") + ": " + std::to_string(bad) + " entries differ");
    expect(ds->on_device() && ds->gpu_aware_mpi() == gpu_aware, "device store flags");
}

struct BenchArgs {
    int n;
    const float *A, *B;
    float* C;
    bool nt;
};

void bench_call(void* arg, void* stream) {
    auto* a = static_cast<BenchArgs*>(arg);
    if (a->nt)
        gpu::minplus_nt(a->n, a->n, a->n, a->A, a->n, a->B, a->n, a->C, a->n, stream);
    else
        gpu::minplus_nn(a->n, a->n, a->n, a->A, a->n, a->B, a->n, a->C, a->n, stream);
}

int bench(const std::vector<int>& sizes, int reps) {
    const auto info = gpu::device_info();
    std::mt19937 rng(7);
    void* stream = gpu::stream_create();
    for (int n : sizes) {
        auto host = random_matrix(n, n, rng, 0.0);
        float* dA = gpu::device_alloc(host.size());
        float* dB = gpu::device_alloc(host.size());
        float* dC = gpu::device_alloc(host.size());
        gpu::copy_to_device(dA, host.data(), host.size(), stream);
        gpu::copy_to_device(dB, host.data(), host.size(), stream);
        gpu::copy_to_device(dC, host.data(), host.size(), stream);
        for (bool nt : {false, true}) {
            BenchArgs args{n, dA, dB, dC, nt};
            gpu::time_ms(bench_call, &args, 1, stream);  // warm-up
            const double ms = gpu::time_ms(bench_call, &args, reps, stream) / reps;
            const double rate = 2.0 * n * static_cast<double>(n) * n / (ms * 1e-3);
            std::printf("{\"kernel\": \"%s\", \"api\": \"%s\", \"device\": \"%s\", \"arch\": \"%s\", \"n\": %d, "
                        "\"seconds\": %.6e, \"rate\": %.6e}\n",
                        nt ? "minplus_nt" : "minplus_nn", info.api.c_str(), info.name.c_str(), info.arch.c_str(), n,
                        ms * 1e-3, rate);
        }
        // Diagonal tile closure at typical tile sizes.
        if (n <= 2048) {
            gpu::stream_synchronize(stream);
            const auto t0 = std::chrono::steady_clock::now();
            gpu::floyd_warshall_tile(dC, n, n, stream);
            gpu::stream_synchronize(stream);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::printf("{\"kernel\": \"floyd_warshall_tile\", \"api\": \"%s\", \"n\": %d, \"seconds\": %.6e, "
                        "\"rate\": %.6e}\n",
                        info.api.c_str(), n, s, 2.0 * n * static_cast<double>(n) * n / s);
        }
        std::fflush(stdout);
        gpu::device_free(dA);
        gpu::device_free(dB);
        gpu::device_free(dC);
    }
    gpu::stream_destroy(stream);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes;
    int reps = 5;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--bench" && i + 1 < argc) {
            std::stringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::stoi(item));
        } else if (arg == "--reps" && i + 1 < argc) {
            reps = std::stoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--bench n1,n2,... [--reps R]]\n", argv[0]);
            return 2;
        }
    }
    if (gpu::device_count() == 0) {
        std::fprintf(stderr, "test_gpu_kernels: no GPU device visible\n");
        return 1;
    }
    gpu::select_device_for_local_rank();
    if (!sizes.empty()) return bench(sizes, reps);

    const auto info = gpu::device_info();
    std::printf("device: %s %s (%s), warp size %d, %d multiprocessors\n", info.api.c_str(), info.name.c_str(),
                info.arch.c_str(), info.warp_size, info.multiprocessors);
    const unsigned seed = std::random_device{}();  // fresh inputs every run, printed to reproduce
    std::printf("seed %u\n", seed);
    std::mt19937 rng(seed);
    const auto ref = make_reference_backend();
    const auto dev = make_backend(info.api);
    void* stream = gpu::stream_create();
    check_minplus(*ref, rng, stream);
    check_floyd_warshall(*ref, rng, stream);
    check_backend(*ref, *dev, rng);
    check_store(rng, 53, 20, false);
    check_store(rng, 53, 20, true);
    check_store(rng, 61, 13, false);
    check_store(rng, 300, 136, false);  // more than one 128 x 128 block per tile
    gpu::stream_destroy(stream);
    std::printf("%s (%d failures)\n", failures == 0 ? "PASS" : "FAIL", failures);
    return failures == 0 ? 0 : 1;
}
