// fw-phase-bench: rates of apsp-fw's compute phases on one rank, for the
// performance model (pipeline/plan, HyPerMod). Prints one JSON object per line.
//
//   fw-phase-bench [--tiles 32,64,128,256] [--local 256,1024,4096] [--threads T]
//                  [--seconds S] [--backend cpu]
//
// For every tile edge b and local matrix edge L (elements; L x L floats owned by
// the rank, rounded up to whole tiles):
//   outer     one min-plus outer product sweep over all local tiles, split into
//             work items exactly as core/driver.cpp does (tiles, or row blocks of
//             multiples of 6 when tiles are fewer than 2 x threads), OpenMP
//             dynamic schedule: 2 b L^2 semiring ops per sweep;
//   diagonal  Floyd-Warshall closure of one b x b tile (2 b^3 ops), once per b.
// The sweep is repeated for about --seconds / (#cells) of wall time; the best
// repetition is kept (on a shared machine the best run is the undisturbed one).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/affinity.hpp"
#include "kernels/backend.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using litpath::apsp::Backend;

std::vector<int> parse_list(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(std::atoi(item.c_str()));
    return out;
}

struct Item {
    std::int64_t tile;
    int row_begin, row_end;
};

// The driver's work split (core/driver.cpp, minplus_outer_product).
std::vector<Item> work_items(std::int64_t tiles, int b, int threads) {
    int rows_per_item = b;
    const std::int64_t want = 2LL * threads;
    if (tiles < want) {
        const std::int64_t splits = (want + tiles - 1) / tiles;
        rows_per_item = static_cast<int>((b + splits - 1) / splits);
        rows_per_item = std::max(6, (rows_per_item + 5) / 6 * 6);
    }
    std::vector<Item> items;
    for (std::int64_t t = 0; t < tiles; ++t)
        for (int r0 = 0; r0 < b; r0 += rows_per_item) items.push_back({t, r0, std::min(b, r0 + rows_per_item)});
    return items;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> tiles = {32, 64, 128, 256}, locals = {256, 1024, 4096};
    int threads = omp_get_max_threads();
    double seconds = 4.0;
    std::string backend_name = "cpu";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--tiles") tiles = parse_list(value);
        else if (flag == "--local") locals = parse_list(value);
        else if (flag == "--threads") threads = std::max(1, std::atoi(value.c_str()));
        else if (flag == "--seconds") seconds = std::atof(value.c_str());
        else if (flag == "--backend") backend_name = value;
        else {
            std::fprintf(stderr,
                         "usage: fw-phase-bench [--tiles 32,64,...] [--local 256,1024,...] [--threads T] "
                         "[--seconds S] [--backend cpu]\n");
            return 2;
        }
    }
    if (argc % 2 == 0) {
        std::fprintf(stderr, "fw-phase-bench: option %s needs a value\n", argv[argc - 1]);
        return 2;
    }
    std::unique_ptr<Backend> backend;
    try {
        backend = litpath::apsp::make_backend(backend_name);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fw-phase-bench: %s\n", e.what());
        return 2;
    }
    // The same thread placement apsp-fw uses, so the model sees the solver's rates.
    const std::string placement = litpath::apsp::place_threads(threads, litpath::apsp::allowed_cpus());
    std::fprintf(stderr, "fw-phase-bench: %d threads, placement %s\n", threads, placement.c_str());
    const double per_cell = seconds / std::max<std::size_t>(1, tiles.size() * (locals.size() + 1));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> cost(0.0f, 10.0f);

    for (int b : tiles) {
        const std::int64_t tile_elems = static_cast<std::int64_t>(b) * b;
        // Diagonal update: FW closure of one tile (restored from a copy each time).
        {
            std::vector<float> pristine(static_cast<std::size_t>(tile_elems)), work(pristine.size());
            for (auto& x : pristine) x = cost(rng);
            for (int i = 0; i < b; ++i) pristine[static_cast<std::size_t>(i) * b + i] = 0.0f;
            double best = 1e30, spent = 0;
            int reps = 0;
            while (reps < 3 || (spent < per_cell && reps < 100000)) {
                std::copy(pristine.begin(), pristine.end(), work.begin());
                const auto t0 = Clock::now();
                backend->floyd_warshall_tile(work.data(), b, b);
                const double dt = seconds_since(t0);
                best = std::min(best, dt);
                spent += dt;
                ++reps;
            }
            std::printf("{\"phase\": \"diagonal\", \"tile\": %d, \"threads\": 1, \"seconds\": %.9g, \"ops\": %.6g, "
                        "\"rate\": %.6g, \"reps\": %d, \"isa\": \"%s\"}\n",
                        b, best, 2.0 * b * b * static_cast<double>(b), 2.0 * b * b * static_cast<double>(b) / best,
                        reps, backend->isa().c_str());
            std::fflush(stdout);
        }
        for (int local : locals) {
            const std::int64_t tiles_per_side = std::max<std::int64_t>(1, (local + b - 1) / b);
            const std::int64_t tile_count = tiles_per_side * tiles_per_side;
            const double bytes = static_cast<double>(tile_count) * tile_elems * sizeof(float);
            if (bytes > 4e9) continue;  // keep the benchmark's own memory modest
            std::vector<float> store(static_cast<std::size_t>(tile_count * tile_elems));
            std::vector<float> col_panel(static_cast<std::size_t>(tiles_per_side * tile_elems));
            std::vector<float> row_panel(col_panel.size());
            for (auto& x : store) x = 1e30f;
            for (auto& x : col_panel) x = cost(rng);
            for (auto& x : row_panel) x = cost(rng);
            const auto items = work_items(tile_count, b, threads);
            auto sweep = [&]() {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
                for (std::size_t w = 0; w < items.size(); ++w) {
                    const Item& it = items[w];
                    const std::int64_t lr = it.tile / tiles_per_side, lc = it.tile % tiles_per_side;
                    const float* a = col_panel.data() + lr * tile_elems + static_cast<std::int64_t>(it.row_begin) * b;
                    const float* bt = row_panel.data() + lc * tile_elems;
                    float* c = store.data() + it.tile * tile_elems + static_cast<std::int64_t>(it.row_begin) * b;
                    backend->minplus_accumulate(it.row_end - it.row_begin, b, b, a, b, bt, b, c, b);
                }
            };
            sweep();  // warm-up: first touch of the store
            double best = 1e30, spent = 0;
            int reps = 0;
            while (reps < 3 || (spent < per_cell && reps < 100000)) {
                const auto t0 = Clock::now();
                sweep();
                const double dt = seconds_since(t0);
                best = std::min(best, dt);
                spent += dt;
                ++reps;
            }
            const double ops = 2.0 * static_cast<double>(b) * tile_count * tile_elems;
            std::printf("{\"phase\": \"outer\", \"tile\": %d, \"local\": %lld, \"local_bytes\": %.6g, \"threads\": %d, "
                        "\"seconds\": %.9g, \"ops\": %.6g, \"rate\": %.6g, \"reps\": %d, \"isa\": \"%s\"}\n",
                        b, static_cast<long long>(tiles_per_side * b), bytes, threads, best, ops, ops / best, reps,
                        backend->isa().c_str());
            std::fflush(stdout);
        }
    }
    return 0;
}
