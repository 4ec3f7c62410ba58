#include "io/validate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>

#include "core/collective.hpp"

namespace litpath::apsp {

std::vector<double> dijkstra_row(const std::vector<std::vector<std::pair<std::int64_t, float>>>& adjacency,
                                 std::int64_t source) {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> dist(adjacency.size(), inf);
    using Item = std::pair<double, std::int64_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
    dist[static_cast<std::size_t>(source)] = 0;
    queue.emplace(0.0, source);
    while (!queue.empty()) {
        auto [d, u] = queue.top();
        queue.pop();
        if (d > dist[static_cast<std::size_t>(u)]) continue;
        for (auto [v, w] : adjacency[static_cast<std::size_t>(u)]) {
            const double through = d + static_cast<double>(w);
            if (through < dist[static_cast<std::size_t>(v)]) {
                dist[static_cast<std::size_t>(v)] = through;
                queue.emplace(through, v);
            }
        }
    }
    return dist;
}

ValidationResult validate_rows(const GraphInfo& info, const DistributedMatrix& matrix, MPI_Comm world,
                               std::int64_t rows, double tolerance, std::uint64_t seed) {
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    const std::int64_t n = info.n;
    ValidationResult result;
    result.tolerance = tolerance;
    rows = std::min(rows, n);
    result.rows = rows;
    if (rows <= 0) return result;

    // The same sample on every rank: a seeded shuffle.
    std::vector<std::int64_t> sample(static_cast<std::size_t>(n));
    std::iota(sample.begin(), sample.end(), 0);
    std::mt19937_64 rng(seed);
    std::shuffle(sample.begin(), sample.end(), rng);
    sample.resize(static_cast<std::size_t>(rows));
    std::sort(sample.begin(), sample.end());

    // Rank 0 reads the graph; a failure there fails every rank here, before the
    // reductions below (an exception on rank 0 alone would leave the others waiting).
    std::vector<std::vector<std::pair<std::int64_t, float>>> adjacency;
    std::string read_error;
    if (rank == 0) {
        try {
            adjacency.resize(static_cast<std::size_t>(n));
            read_graph_edges(info, matrix.layout(), /*read_all=*/true, [](std::int64_t, std::int64_t) { return true; },
                             [&](const Edge& e) { adjacency[static_cast<std::size_t>(e.src)].emplace_back(e.dst, e.cost); });
        } catch (const std::exception& e) {
            read_error = e.what();
        }
    }
    read_error = broadcast_string(read_error, world);
    if (!read_error.empty()) throw std::runtime_error("--validate: " + read_error);

    const LocalTiles& layout = matrix.layout();
    const Tiling& t = layout.tiling;
    const std::int64_t batch = std::max<std::int64_t>(1, std::min<std::int64_t>(rows, (64 << 20) / std::max<std::int64_t>(1, n)));
    std::vector<float> gathered(static_cast<std::size_t>(batch * n));
    std::vector<float> reduced(rank == 0 ? gathered.size() : 0);
    double max_abs = 0, max_rel = 0;
    std::int64_t mismatches = 0;
    for (std::int64_t first = 0; first < rows; first += batch) {
        const std::int64_t count = std::min(batch, rows - first);
        std::fill(gathered.begin(), gathered.end(), std::numeric_limits<float>::infinity());
        for (std::int64_t s = 0; s < count; ++s) {
            const std::int64_t row = sample[static_cast<std::size_t>(first + s)];
            if (!layout.owns_tile_row(t.tile_of(row))) continue;
            for (std::int64_t lc = 0; lc < layout.local_tile_cols; ++lc) {
                const std::int64_t gj = layout.global_tile_col(lc);
                for (int c = 0; c < t.extent(gj); ++c) {
                    const std::int64_t col = t.first_vertex(gj) + c;
                    gathered[static_cast<std::size_t>(s * n + col)] = matrix.get(row, col);
                }
            }
        }
        // Each entry has exactly one owner; everyone else contributes +inf.
        MPI_Reduce(gathered.data(), rank == 0 ? reduced.data() : nullptr, static_cast<int>(count * n), MPI_FLOAT,
                   MPI_MIN, 0, world);
        if (rank != 0) continue;
        for (std::int64_t s = 0; s < count; ++s) {
            const std::vector<double> reference = dijkstra_row(adjacency, sample[static_cast<std::size_t>(first + s)]);
            for (std::int64_t col = 0; col < n; ++col) {
                const double got = reduced[static_cast<std::size_t>(s * n + col)];
                const double want = reference[static_cast<std::size_t>(col)];
                if (std::isinf(got) || std::isinf(want)) {
                    if (std::isinf(got) != std::isinf(want)) ++mismatches;
                    continue;
                }
                const double err = std::abs(got - want);
                max_abs = std::max(max_abs, err);
                max_rel = std::max(max_rel, err / std::max(1.0, std::abs(want)));
            }
        }
    }
    double values[2] = {max_abs, max_rel};
    MPI_Bcast(values, 2, MPI_DOUBLE, 0, world);
    MPI_Bcast(&mismatches, 1, MPI_INT64_T, 0, world);
    result.max_abs_error = values[0];
    result.max_rel_error = values[1];
    result.reachability_mismatches = mismatches;
    result.ok = mismatches == 0 && result.max_rel_error <= tolerance;
    return result;
}

}  // namespace litpath::apsp
