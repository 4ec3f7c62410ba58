// GPU kernels against the reference kernels (CTest label "gpu"), and their
// timing. Host C++: it reaches the device only through gpu_kernels.hpp and
// the Backend interface, so the same file serves the CUDA and HIP builds.
//
//   test_gpu_kernels                       checks; exit 0 when all pass
//   test_gpu_kernels --bench 4096,8192 [--reps 5]
//                                          one JSON row per line: kernel, n, seconds, rate 2n^3/s
//
// Checks: min-plus NN and NT on odd sizes (not multiples of the 128 x 128
// block, nor of 4, with leading dimensions > width and odd ones or a base
// off by one float that disable float4), fresh random inputs with +inf and
// zero entries, outputs' padding poisoned with NaN and required untouched;
// the batched kernel on products of different shapes; the transpose;
// diagonal FW on both paths (shared memory and one launch per k); the
// staging Backend through make_backend; the device-resident matrix store
// against the host store (check_store), its +inf-filled buffers included.
//
// The same binary runs on the CPU in every CPU-only build (--backend
// gpu-host, kernels/cuda_hip/host_runtime.hpp; ctest label host-target, once
// per warp size through LITPATH_GPU_HOST_WARP_SIZE).
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

// Costs in [0, 10) with +inf at inf_fraction and exact zeros at zero_fraction.
std::vector<float> random_matrix(int rows, int ld, std::mt19937& rng, double inf_fraction,
                                 double zero_fraction = 0.1) {
    std::uniform_real_distribution<float> cost(0.0f, 10.0f);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<float> m(static_cast<std::size_t>(rows) * ld);
    for (auto& x : m) {
        const double r = u(rng);
        x = r < inf_fraction ? kInf : r < inf_fraction + zero_fraction ? 0.0f : cost(rng);
    }
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

// Records a failure naming `what` and the first differing element.
void expect_same(const std::vector<float>& got, const std::vector<float>& want, int rows, int cols, int ld,
                 const std::string& what) {
    std::string where;
    const bool ok = same(got, want, rows, cols, ld, &where);  // before `where` is read
    expect(ok, what + " " + where);
}

void check_minplus(const Backend& ref, std::mt19937& rng, void* stream) {
    const int sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {129, 131, 9}, {127, 257, 130}, {300, 97, 301}, {64, 64, 64},
                            {256, 256, 256}, {513, 385, 77}};
    // (leading-dimension padding, base offset in floats): ld % 4 != 0 or a
    // base that is not 16-byte aligned each disable the float4 path.
    const int layouts[][2] = {{0, 0}, {3, 0}, {4, 0}, {4, 1}};
    for (const auto& s : sizes) {
        for (const auto& layout : layouts) {
            for (bool nt : {false, true}) {
                const int pad = layout[0], off = layout[1];
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
                float* baseA = gpu::device_alloc(a.size() + off);
                float* baseB = gpu::device_alloc(bdev.size() + off);
                float* baseC = gpu::device_alloc(c.size() + off);
                float *dA = baseA + off, *dB = baseB + off, *dC = baseC + off;
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
                gpu::device_free(baseA);
                gpu::device_free(baseB);
                gpu::device_free(baseC);
                std::ostringstream name;
                name << (nt ? "minplus_nt" : "minplus_nn") << " m=" << m << " n=" << n << " k=" << k << " pad=" << pad
                     << " offset=" << off;
                expect_same(got, want, m, n, ldc, name.str());
            }
        }
    }
}

// minplus_batched on `count` products of different shapes: tiles of b x b
// (leading dimension b, as in the device store), A and B read at permuted
// tile offsets, C written at others, one C tile left untouched; b % 4 == 0
// takes the float4 path. Each product against the reference kernel.
void check_batched(const Backend& ref, std::mt19937& rng, int b, int k, void* stream) {
    static_assert(sizeof(gpu::BatchTile) % sizeof(float) == 0, "descriptors copied as floats");
    const int count = 5;
    const std::size_t te = static_cast<std::size_t>(b) * b;
    auto a = random_matrix(count * b, b, rng, 0.2), bm = random_matrix(count * b, b, rng, 0.2);
    auto c = random_matrix((count + 1) * b, b, rng, 0.5);
    const int shapes[count][2] = {{b, b}, {b - 3, 1}, {1, b}, {17, b - 5}, {b / 2, b / 3 + 1}};
    std::vector<gpu::BatchTile> batch;
    int max_m = 0, max_n = 0;
    for (int p = 0; p < count; ++p) {
        const int m = shapes[p][0], n = shapes[p][1];
        const auto tile = [te](int t) { return static_cast<std::int64_t>(t * te); };
        // A, B and C tiles all permuted; C tile 2 is no product's.
        batch.push_back({tile((p + 2) % count), tile(count - 1 - p), tile(p < 2 ? p : p + 1), m, n});
        max_m = std::max(max_m, m);
        max_n = std::max(max_n, n);
    }
    std::vector<float> want = c;
    for (const auto& t : batch)
        ref.minplus_accumulate(t.m, t.n, k, a.data() + t.a, b, bm.data() + t.b, b, want.data() + t.c, b);
    float* dA = gpu::device_alloc(a.size());
    float* dB = gpu::device_alloc(bm.size());
    float* dC = gpu::device_alloc(c.size());
    const std::size_t desc_floats = batch.size() * sizeof(gpu::BatchTile) / sizeof(float);
    float* dDesc = gpu::device_alloc(desc_floats);
    gpu::copy_to_device(dA, a.data(), a.size(), stream);
    gpu::copy_to_device(dB, bm.data(), bm.size(), stream);
    gpu::copy_to_device(dC, c.data(), c.size(), stream);
    gpu::copy_to_device(dDesc, reinterpret_cast<const float*>(batch.data()), desc_floats, stream);
    gpu::minplus_batched(k, dA, dB, dC, b, reinterpret_cast<const gpu::BatchTile*>(dDesc), count, max_m, max_n,
                         stream);
    std::vector<float> got(c.size(), 0.0f);
    gpu::copy_to_host(got.data(), dC, got.size(), stream);
    gpu::stream_synchronize(stream);
    for (float* p : {dA, dB, dC, dDesc}) gpu::device_free(p);
    expect_same(got, want, (count + 1) * b, b, b, "minplus_batched b=" + std::to_string(b) + " k=" + std::to_string(k));
}

// dst[n x m] = src[m x n]^T on shapes that are not multiples of the 32 x 32
// tile; dst's padding poisoned with NaN and required untouched.
void check_transpose(std::mt19937& rng, void* stream) {
    const int shapes[][2] = {{1, 1}, {31, 33}, {32, 32}, {65, 7}, {100, 129}};
    for (const auto& s : shapes) {
        const int m = s[0], n = s[1], lds = n + 3, ldd = m + 2;
        auto src = random_matrix(m, lds, rng, 0.2);
        std::vector<float> want(static_cast<std::size_t>(n) * ldd, std::nanf(""));
        for (int i = 0; i < m; ++i)
            for (int j = 0; j < n; ++j)
                want[static_cast<std::size_t>(j) * ldd + i] = src[static_cast<std::size_t>(i) * lds + j];
        std::vector<float> init(want.size(), std::nanf(""));
        float* dS = gpu::device_alloc(src.size());
        float* dD = gpu::device_alloc(init.size());
        gpu::copy_to_device(dS, src.data(), src.size(), stream);
        gpu::copy_to_device(dD, init.data(), init.size(), stream);
        gpu::transpose(m, n, dS, lds, dD, ldd, stream);
        std::vector<float> got(init.size(), 0.0f);
        gpu::copy_to_host(got.data(), dD, got.size(), stream);
        gpu::stream_synchronize(stream);
        gpu::device_free(dS);
        gpu::device_free(dD);
        expect_same(got, want, n, m, ldd, "transpose m=" + std::to_string(m) + " n=" + std::to_string(n));
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
        expect_same(got, want, b, b, ld, "floyd_warshall_tile b=" + std::to_string(b));
    }
}

void check_backend(const Backend& ref, const Backend& dev, std::mt19937& rng) {
    const int m = 133, n = 71, k = 45, ld = 150;
    auto a = random_matrix(m, ld, rng, 0.3), b = random_matrix(k, ld, rng, 0.3), c = random_matrix(m, ld, rng, 0.5);
    poison_padding(c, m, n, ld);
    std::vector<float> want = c, got = c;
    ref.minplus_accumulate(m, n, k, a.data(), ld, b.data(), ld, want.data(), ld);
    dev.minplus_accumulate(m, n, k, a.data(), ld, b.data(), ld, got.data(), ld);
    expect_same(got, want, m, n, ld, "backend minplus_accumulate");
    auto d = random_matrix(97, 101, rng, 0.85);
    for (int i = 0; i < 97; ++i) d[static_cast<std::size_t>(i) * 101 + i] = 0.0f;
    poison_padding(d, 97, 97, 101);
    std::vector<float> dw = d;
    ref.floyd_warshall_tile(dw.data(), 97, 101);
    dev.floyd_warshall_tile(d.data(), 97, 101);
    expect_same(d, dw, 97, 97, 101, "backend floyd_warshall_tile");
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
    if (gpu_aware) {
        // The device buffers MPI will see start as +inf (the store's fill kernel).
        void* stream = gpu::stream_create();
        std::ptrdiff_t not_inf = 0;
        auto count_not_inf = [&](const float* device, std::int64_t tiles) {
            std::vector<float> buffer(static_cast<std::size_t>(tiles) * te);
            gpu::copy_to_host(buffer.data(), device, buffer.size(), stream);
            gpu::stream_synchronize(stream);
            not_inf += std::count_if(buffer.begin(), buffer.end(), [](float x) { return x != kInf; });
        };
        for (int set = 0; set < 2; ++set) {
            count_not_inf(ds->mpi_row_panel(set), shape.row_panel_tiles);
            count_not_inf(ds->mpi_col_panel(set), shape.col_panel_tiles);
        }
        count_not_inf(ds->mpi_diagonal(), 1);
        gpu::stream_destroy(stream);
        expect(not_inf == 0, "device store buffers filled with +inf: " + std::to_string(not_inf) + " entries are not");
    }
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
    check_batched(*ref, rng, 37, 29, stream);   // scalar path
    check_batched(*ref, rng, 136, 136, stream); // float4 path, 2 x 2 blocks per product
    check_transpose(rng, stream);
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
