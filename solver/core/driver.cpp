#include "core/driver.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

namespace litpath::apsp {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Message tags; panels alternate by iteration parity so that look-ahead's
// broadcast of k+1 can never match a receive of k.
constexpr int kTagDiagonalRow = 10;
constexpr int kTagDiagonalCol = 11;
constexpr int kTagRowPanel = 20;
constexpr int kTagColPanel = 30;

struct WorkItem {
    std::int64_t local_row, local_col;
    int row_begin, row_end;  // rows of the tile this item updates
};

}  // namespace

std::int64_t bytes_needed_per_rank(const LocalTiles& layout, bool lookahead) {
    const std::int64_t tile_bytes = layout.tile_elems() * static_cast<std::int64_t>(sizeof(float));
    const std::int64_t panel_sets = lookahead ? 2 : 1;
    const std::int64_t store = layout.tile_count() * tile_bytes;
    const std::int64_t panels = panel_sets * (layout.local_tile_rows + layout.local_tile_cols) * tile_bytes;
    const std::int64_t diagonal = tile_bytes;
    // Writing copies the ragged last tile row/column into contiguous buffers.
    const std::int64_t output_edges = (layout.local_tile_rows + layout.local_tile_cols) * tile_bytes;
    return store + panels + diagonal + output_edges;
}

// ------------------------------------------------------------- DistributedMatrix
DistributedMatrix::DistributedMatrix(const LocalTiles& layout)
    : layout_(layout), store_(static_cast<std::size_t>(layout.tile_count() * layout.tile_elems()), kInf) {}

bool DistributedMatrix::owns(std::int64_t src, std::int64_t dst) const {
    const auto& t = layout_.tiling;
    return layout_.owns_tile_row(t.tile_of(src)) && layout_.owns_tile_col(t.tile_of(dst));
}

void DistributedMatrix::add_edge(std::int64_t src, std::int64_t dst, float cost) {
    const auto& t = layout_.tiling;
    const std::int64_t ti = t.tile_of(src), tj = t.tile_of(dst);
    float* tile_ptr = tile(layout_.local_tile_row(ti), layout_.local_tile_col(tj));
    float& entry = tile_ptr[(src - t.first_vertex(ti)) * t.b + (dst - t.first_vertex(tj))];
    entry = std::min(entry, cost);  // duplicate edges keep the minimum
}

void DistributedMatrix::set_zero_diagonal() {
    const auto& t = layout_.tiling;
    for (std::int64_t k = 0; k < t.nb; ++k) {
        if (!layout_.owns_tile_row(k) || !layout_.owns_tile_col(k)) continue;
        float* d = tile(layout_.local_tile_row(k), layout_.local_tile_col(k));
        for (int i = 0; i < t.extent(k); ++i) d[static_cast<std::int64_t>(i) * t.b + i] = 0.0f;
    }
}

float DistributedMatrix::get(std::int64_t src, std::int64_t dst) const {
    const auto& t = layout_.tiling;
    const std::int64_t ti = t.tile_of(src), tj = t.tile_of(dst);
    const float* tile_ptr = tile(layout_.local_tile_row(ti), layout_.local_tile_col(tj));
    return tile_ptr[(src - t.first_vertex(ti)) * t.b + (dst - t.first_vertex(tj))];
}

// ----------------------------------------------------------- BlockedFloydWarshall
BlockedFloydWarshall::BlockedFloydWarshall(DistributedMatrix& matrix, const ProcessGrid& grid,
                                           const Backend& backend, const DriverOptions& options)
    : matrix_(matrix), grid_(grid), backend_(backend), options_(options), layout_(matrix.layout()) {
    const auto tile_elems = static_cast<std::size_t>(layout_.tile_elems());
    diagonal_.assign(tile_elems, kInf);
    const int sets = options_.lookahead ? 2 : 1;
    for (int s = 0; s < sets; ++s) {
        panels_[s].row.assign(tile_elems * static_cast<std::size_t>(layout_.local_tile_cols), kInf);
        panels_[s].col.assign(tile_elems * static_cast<std::size_t>(layout_.local_tile_rows), kInf);
    }
}

void BlockedFloydWarshall::diagonal_update(std::int64_t k) {
    if (!layout_.owns_tile_row(k) || !layout_.owns_tile_col(k)) return;
    const double t0 = MPI_Wtime();
    float* d = matrix_.tile(layout_.local_tile_row(k), layout_.local_tile_col(k));
    backend_.floyd_warshall_tile(d, layout_.tiling.extent(k), layout_.tiling.b);
    std::memcpy(diagonal_.data(), d, diagonal_.size() * sizeof(float));
    times_.diagonal += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::diagonal_broadcast(std::int64_t k) {
    const GridCoord owner = owner_of_tile(k, k, grid_.shape);
    const bool in_row = grid_.me.row == owner.row, in_col = grid_.me.col == owner.col;
    if (!in_row && !in_col) return;
    const double t0 = MPI_Wtime();
    Broadcast along_row, along_col;
    const auto count = static_cast<std::int64_t>(diagonal_.size());
    if (in_row) along_row.start(diagonal_.data(), count, owner.col, grid_.row_comm, kTagDiagonalRow, options_.broadcast);
    if (in_col) along_col.start(diagonal_.data(), count, owner.row, grid_.col_comm, kTagDiagonalCol, options_.broadcast);
    // Both directions progress together (EuroMPI'23 Algorithm 3). The owner
    // sends the same buffer both ways; other ranks receive in exactly one.
    while (!(along_row.progress() & along_col.progress())) std::this_thread::yield();
    times_.broadcast += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::panel_update(std::int64_t k, Panels& panels) {
    const auto& t = layout_.tiling;
    const int b = t.b, ek = t.extent(k);
    const auto tile_elems = layout_.tile_elems();
    const double t0 = MPI_Wtime();
    const float* diag = diagonal_.data();
    if (layout_.owns_tile_row(k)) {
        const std::int64_t lr = layout_.local_tile_row(k);
#pragma omp parallel for schedule(dynamic, 1) num_threads(options_.threads)
        for (std::int64_t lc = 0; lc < layout_.local_tile_cols; ++lc) {
            const std::int64_t gj = layout_.global_tile_col(lc);
            float* tile = matrix_.tile(lr, lc);
            float* copy = panels.row.data() + lc * tile_elems;
            std::memcpy(copy, tile, static_cast<std::size_t>(tile_elems) * sizeof(float));
            if (gj == k) continue;
            // A(k,j) <- A(k,j) (+) A(k,k) (x) A(k,j), reading the copy.
            backend_.minplus_accumulate(ek, t.extent(gj), ek, diag, b, copy, b, tile, b);
            std::memcpy(copy, tile, static_cast<std::size_t>(tile_elems) * sizeof(float));
        }
    }
    if (layout_.owns_tile_col(k)) {
        const std::int64_t lc = layout_.local_tile_col(k);
#pragma omp parallel for schedule(dynamic, 1) num_threads(options_.threads)
        for (std::int64_t lr = 0; lr < layout_.local_tile_rows; ++lr) {
            const std::int64_t gi = layout_.global_tile_row(lr);
            float* tile = matrix_.tile(lr, lc);
            float* copy = panels.col.data() + lr * tile_elems;
            std::memcpy(copy, tile, static_cast<std::size_t>(tile_elems) * sizeof(float));
            if (gi == k) continue;
            // A(i,k) <- A(i,k) (+) A(i,k) (x) A(k,k)
            backend_.minplus_accumulate(t.extent(gi), ek, ek, copy, b, diag, b, tile, b);
            std::memcpy(copy, tile, static_cast<std::size_t>(tile_elems) * sizeof(float));
        }
    }
    times_.panel += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::panel_broadcast_start(std::int64_t k, Panels& panels) {
    const double t0 = MPI_Wtime();
    const int parity = static_cast<int>(k & 1);
    // Row panel k lives on process row k mod Pr: down each process column.
    panels.row_bcast.start(panels.row.data(), static_cast<std::int64_t>(panels.row.size()),
                           static_cast<int>(k % grid_.shape.rows), grid_.col_comm, kTagRowPanel + parity,
                           options_.broadcast);
    // Column panel k lives on process column k mod Pc: along each process row.
    panels.col_bcast.start(panels.col.data(), static_cast<std::int64_t>(panels.col.size()),
                           static_cast<int>(k % grid_.shape.cols), grid_.row_comm, kTagColPanel + parity,
                           options_.broadcast);
    times_.broadcast += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::panel_broadcast_wait(Panels& panels) {
    const double t0 = MPI_Wtime();
    while (!(panels.row_bcast.progress() & panels.col_bcast.progress())) std::this_thread::yield();
    times_.broadcast += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::minplus_outer_product(std::int64_t k, const Panels& panels,
                                                 const std::function<bool(std::int64_t, std::int64_t)>& select,
                                                 Panels* pending) {
    const auto& t = layout_.tiling;
    const int b = t.b, ek = t.extent(k);
    const auto tile_elems = layout_.tile_elems();
    const int threads = std::max(1, options_.threads);

    std::vector<std::pair<std::int64_t, std::int64_t>> tiles;
    for (std::int64_t lr = 0; lr < layout_.local_tile_rows; ++lr) {
        const std::int64_t gi = layout_.global_tile_row(lr);
        if (gi == k) continue;
        for (std::int64_t lc = 0; lc < layout_.local_tile_cols; ++lc) {
            const std::int64_t gj = layout_.global_tile_col(lc);
            if (gj != k && select(gi, gj)) tiles.emplace_back(lr, lc);
        }
    }
    if (tiles.empty()) return;
    // Few tiles for many threads: split tiles into row blocks (multiples of
    // the kernel's 6-row register block) so every thread has work.
    int rows_per_item = b;
    const auto want_items = static_cast<std::int64_t>(2 * threads);
    if (static_cast<std::int64_t>(tiles.size()) < want_items) {
        const std::int64_t splits = (want_items + static_cast<std::int64_t>(tiles.size()) - 1) /
                                    static_cast<std::int64_t>(tiles.size());
        rows_per_item = static_cast<int>((b + splits - 1) / splits);
        rows_per_item = std::max(6, (rows_per_item + 5) / 6 * 6);
    }
    std::vector<WorkItem> items;
    for (auto [lr, lc] : tiles) {
        const int rows = t.extent(layout_.global_tile_row(lr));
        for (int r0 = 0; r0 < rows; r0 += rows_per_item)
            items.push_back({lr, lc, r0, std::min(rows, r0 + rows_per_item)});
    }

    const double t0 = MPI_Wtime();
    const std::size_t batch = pending ? static_cast<std::size_t>(4 * threads) : items.size();
    for (std::size_t begin = 0; begin < items.size(); begin += batch) {
        const std::size_t end = std::min(items.size(), begin + batch);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (std::size_t w = begin; w < end; ++w) {
            const WorkItem& it = items[w];
            const int n_cols = t.extent(layout_.global_tile_col(it.local_col));
            const float* a = panels.col.data() + it.local_row * tile_elems + static_cast<std::int64_t>(it.row_begin) * b;
            const float* bt = panels.row.data() + it.local_col * tile_elems;
            float* c = matrix_.tile(it.local_row, it.local_col) + static_cast<std::int64_t>(it.row_begin) * b;
            backend_.minplus_accumulate(it.row_end - it.row_begin, n_cols, ek, a, b, bt, b, c, b);
        }
        if (pending) {
            // Relay look-ahead broadcast chunks that arrived meanwhile.
            pending->row_bcast.progress();
            pending->col_bcast.progress();
        }
    }
    times_.outer += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::run() {
    const std::int64_t nb = layout_.tiling.nb;
    const std::int64_t first = std::min(std::max<std::int64_t>(0, options_.first_iteration), nb);
    if (first >= nb) return;
    Panels* current = &panels_[0];
    Panels* next = options_.lookahead ? &panels_[1] : &panels_[0];

    auto prepare_iteration = [&](std::int64_t k, Panels& panels) {
        diagonal_update(k);
        diagonal_broadcast(k);
        panel_update(k, panels);
        panel_broadcast_start(k, panels);
    };
    auto everything = [](std::int64_t, std::int64_t) { return true; };

    prepare_iteration(first, *current);
    for (std::int64_t k = first; k < nb; ++k) {
        panel_broadcast_wait(*current);
        const std::int64_t k1 = k + 1;
        // Asked while no broadcast is in flight (it may be collective). A
        // checkpoint needs every update of k done and none of k+1 started, so
        // that iteration skips the look-ahead.
        const bool checkpoint_now = k1 < nb && options_.checkpoint_due && options_.checkpoint &&
                                    options_.checkpoint_due(k1, nb);
        if (options_.lookahead && k1 < nb && !checkpoint_now) {
            minplus_outer_product(k, *current, [k1](std::int64_t gi, std::int64_t gj) { return gi == k1 || gj == k1; },
                                  nullptr);
            prepare_iteration(k1, *next);
            minplus_outer_product(k, *current, [k1](std::int64_t gi, std::int64_t gj) { return gi != k1 && gj != k1; },
                                  next);
        } else {
            minplus_outer_product(k, *current, everything, nullptr);
            if (checkpoint_now) {
                const double t0 = MPI_Wtime();
                options_.checkpoint(k1);
                times_.checkpoint += MPI_Wtime() - t0;
            }
            if (k1 < nb) prepare_iteration(k1, *next);
        }
        std::swap(current, next);
        if (options_.on_iteration) options_.on_iteration(k1, nb);
    }
}

}  // namespace litpath::apsp
