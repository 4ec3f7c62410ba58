#include "core/driver.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "core/collective.hpp"
#include "core/size_math.hpp"

namespace litpath::apsp {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Message tags; panels alternate by iteration parity so that look-ahead's
// broadcast of k+1 can never match a receive of k.
constexpr int kTagDiagonalRow = 10;
constexpr int kTagDiagonalCol = 11;
constexpr int kTagRowPanel = 20;
constexpr int kTagColPanel = 30;

}  // namespace

std::int64_t bytes_needed_per_rank(const LocalTiles& layout, bool lookahead) {
    // Saturating: a huge n with a small tile overflows int64 long before it fits anywhere.
    const std::int64_t tile_bytes = saturating_mul(layout.tile_elems(), static_cast<std::int64_t>(sizeof(float)));
    const std::int64_t panel_sets = lookahead ? 2 : 1;
    const std::int64_t store = saturating_mul(saturating_mul(layout.local_tile_rows, layout.local_tile_cols), tile_bytes);
    const std::int64_t edge_tiles = saturating_add(layout.local_tile_rows, layout.local_tile_cols);
    const std::int64_t panels = saturating_mul(saturating_mul(panel_sets, edge_tiles), tile_bytes);
    const std::int64_t diagonal = tile_bytes;
    // Writing copies the ragged last tile row/column into contiguous buffers.
    const std::int64_t output_edges = saturating_mul(edge_tiles, tile_bytes);
    return saturating_add(saturating_add(store, panels), saturating_add(diagonal, output_edges));
}

// ------------------------------------------------------------- DistributedMatrix
namespace {

// Floats in a rank's tile store; throws rather than size a store too small.
std::size_t store_elements(const LocalTiles& layout) {
    const std::int64_t tiles = checked_mul(layout.local_tile_rows, layout.local_tile_cols, "local tile count");
    return static_cast<std::size_t>(checked_mul(tiles, layout.tile_elems(), "local matrix elements"));
}

}  // namespace

DistributedMatrix::DistributedMatrix(const LocalTiles& layout) : layout_(layout), store_(store_elements(layout), kInf) {}

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

namespace {
// SplitMix64's finaliser: a bijective mix of 64 bits.
std::uint64_t mix64(std::uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
}  // namespace

std::uint64_t DistributedMatrix::checksum_share() const {
    const auto& t = layout_.tiling;
    const std::int64_t tiles = layout_.tile_count();
    std::uint64_t sum = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : sum)
    for (std::int64_t tile_index = 0; tile_index < tiles; ++tile_index) {
        const std::int64_t lr = tile_index / layout_.local_tile_cols, lc = tile_index % layout_.local_tile_cols;
        const std::int64_t ti = layout_.global_tile_row(lr), tj = layout_.global_tile_col(lc);
        const float* d = tile(lr, lc);
        for (int i = 0; i < t.extent(ti); ++i) {
            const auto row = static_cast<std::uint64_t>(t.first_vertex(ti) + i) * static_cast<std::uint64_t>(t.n);
            for (int j = 0; j < t.extent(tj); ++j) {
                std::uint32_t bits;
                std::memcpy(&bits, &d[static_cast<std::int64_t>(i) * t.b + j], sizeof bits);
                const std::uint64_t position = row + static_cast<std::uint64_t>(t.first_vertex(tj) + j);
                sum += mix64(mix64(position) ^ bits);
            }
        }
    }
    return sum;
}

// ----------------------------------------------------------- BlockedFloydWarshall
BlockedFloydWarshall::BlockedFloydWarshall(DistributedMatrix& matrix, const ProcessGrid& grid,
                                           const Backend& backend, const DriverOptions& options)
    : matrix_(matrix), grid_(grid), backend_(backend), options_(options), layout_(matrix.layout()) {
    panels_[0].set = 0;
    panels_[1].set = options_.lookahead ? 1 : 0;
}

BlockedFloydWarshall::~BlockedFloydWarshall() = default;

void BlockedFloydWarshall::make_store() {
    StoreShape shape;
    shape.tiles = layout_.tile_count();
    shape.b = layout_.tiling.b;
    shape.row_panel_tiles = layout_.local_tile_cols;
    shape.col_panel_tiles = layout_.local_tile_rows;
    shape.panel_sets = options_.lookahead ? 2 : 1;
    // Every rank has the same backend, so all of them take the same branch.
    std::string error;
    try {
        store_ = backend_.make_resident_store(shape, options_.gpu_aware_mpi);
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (store_ || !error.empty()) {
        // A device allocation that fails on one rank fails the run on all: the
        // grid's ranks agree along my process row, then down my process column.
        if (!all_ranks(grid_.col_comm, all_ranks(grid_.row_comm, error.empty()))) {
            store_.reset();
            throw std::runtime_error(error.empty() ? "device matrix store failed on another rank"
                                                   : "device matrix store: " + error);
        }
        residency_ = store_->on_device() ? "device" : "host";
        gpu_aware_used_ = store_->gpu_aware_mpi();
        return;
    }
    store_ = make_host_store(matrix_.data(), shape, backend_);
}

std::int64_t BlockedFloydWarshall::store_tile(std::int64_t local_row, std::int64_t local_col) const {
    return local_row * layout_.local_tile_cols + local_col;
}

void BlockedFloydWarshall::diagonal_update(std::int64_t k) {
    if (!layout_.owns_tile_row(k) || !layout_.owns_tile_col(k)) return;
    const double t0 = MPI_Wtime();
    store_->close_diagonal(store_tile(layout_.local_tile_row(k), layout_.local_tile_col(k)), layout_.tiling.extent(k));
    times_.diagonal += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::diagonal_broadcast(std::int64_t k) {
    const GridCoord owner = owner_of_tile(k, k, grid_.shape);
    const bool in_row = grid_.me.row == owner.row, in_col = grid_.me.col == owner.col;
    if (!in_row && !in_col) return;
    const double t0 = MPI_Wtime();
    const bool is_owner = in_row && in_col;
    if (is_owner)
        store_->diagonal_to_mpi();
    else
        store_->before_diagonal_receive();
    float* diagonal = store_->mpi_diagonal();
    Broadcast along_row, along_col;
    const auto count = layout_.tile_elems();
    if (in_row) along_row.start(diagonal, count, owner.col, grid_.row_comm, kTagDiagonalRow, options_.broadcast);
    if (in_col) along_col.start(diagonal, count, owner.row, grid_.col_comm, kTagDiagonalCol, options_.broadcast);
    // Both directions progress together (EuroMPI'23 Algorithm 3). The owner
    // sends the same buffer both ways; other ranks receive in exactly one.
    while (!(along_row.progress() & along_col.progress())) std::this_thread::yield();
    if (!is_owner) store_->diagonal_from_mpi();
    times_.broadcast += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::panel_update(std::int64_t k, Panels& panels) {
    const auto& t = layout_.tiling;
    const int ek = t.extent(k);
    const double t0 = MPI_Wtime();
    panels.k = k;
    if (layout_.owns_tile_row(k)) {
        const std::int64_t lr = layout_.local_tile_row(k);
        std::vector<PanelTile> tiles;
        tiles.reserve(static_cast<std::size_t>(layout_.local_tile_cols));
        for (std::int64_t lc = 0; lc < layout_.local_tile_cols; ++lc) {
            const std::int64_t gj = layout_.global_tile_col(lc);
            tiles.push_back({store_tile(lr, lc), t.extent(gj), gj == k});
        }
        store_->update_row_panel(panels.set, ek, tiles, options_.threads);
    }
    if (layout_.owns_tile_col(k)) {
        const std::int64_t lc = layout_.local_tile_col(k);
        std::vector<PanelTile> tiles;
        tiles.reserve(static_cast<std::size_t>(layout_.local_tile_rows));
        for (std::int64_t lr = 0; lr < layout_.local_tile_rows; ++lr) {
            const std::int64_t gi = layout_.global_tile_row(lr);
            tiles.push_back({store_tile(lr, lc), t.extent(gi), gi == k});
        }
        store_->update_col_panel(panels.set, ek, tiles, options_.threads);
    }
    times_.panel += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::panel_broadcast_start(std::int64_t k, Panels& panels) {
    const double t0 = MPI_Wtime();
    const int parity = static_cast<int>(k & 1);
    const bool row_root = grid_.me.row == static_cast<int>(k % grid_.shape.rows);
    const bool col_root = grid_.me.col == static_cast<int>(k % grid_.shape.cols);
    store_->panels_to_mpi(panels.set, row_root, col_root);
    if (!row_root || !col_root) store_->before_panel_receive(panels.set);
    const auto tile_elems = layout_.tile_elems();
    // Row panel k lives on process row k mod Pr: down each process column.
    panels.row_bcast.start(store_->mpi_row_panel(panels.set), tile_elems * layout_.local_tile_cols,
                           static_cast<int>(k % grid_.shape.rows), grid_.col_comm, kTagRowPanel + parity,
                           options_.broadcast);
    // Column panel k lives on process column k mod Pc: along each process row.
    panels.col_bcast.start(store_->mpi_col_panel(panels.set), tile_elems * layout_.local_tile_rows,
                           static_cast<int>(k % grid_.shape.cols), grid_.row_comm, kTagColPanel + parity,
                           options_.broadcast);
    times_.broadcast += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::panel_broadcast_wait(Panels& panels) {
    const double t0 = MPI_Wtime();
    while (!(panels.row_bcast.progress() & panels.col_bcast.progress())) std::this_thread::yield();
    const bool row_root = grid_.me.row == static_cast<int>(panels.k % grid_.shape.rows);
    const bool col_root = grid_.me.col == static_cast<int>(panels.k % grid_.shape.cols);
    if (!row_root || !col_root) store_->panels_from_mpi(panels.set, !row_root, !col_root);
    times_.broadcast += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::minplus_outer_product(std::int64_t k, const Panels& panels,
                                                 const std::function<bool(std::int64_t, std::int64_t)>& select,
                                                 Panels* pending) {
    const auto& t = layout_.tiling;
    const int ek = t.extent(k);
    std::vector<OuterTile> tiles;
    for (std::int64_t lr = 0; lr < layout_.local_tile_rows; ++lr) {
        const std::int64_t gi = layout_.global_tile_row(lr);
        if (gi == k) continue;
        for (std::int64_t lc = 0; lc < layout_.local_tile_cols; ++lc) {
            const std::int64_t gj = layout_.global_tile_col(lc);
            if (gj != k && select(gi, gj)) tiles.push_back({store_tile(lr, lc), lr, lc, t.extent(gi), t.extent(gj)});
        }
    }
    if (tiles.empty()) return;
    const double t0 = MPI_Wtime();
    std::function<void()> poll;
    if (pending) {
        poll = [pending] {
            pending->row_bcast.progress();
            pending->col_bcast.progress();
        };
    }
    store_->outer_product(panels.set, ek, tiles, options_.threads, poll);
    times_.outer += MPI_Wtime() - t0;
}

void BlockedFloydWarshall::run() {
    const std::int64_t nb = layout_.tiling.nb;
    const std::int64_t first = std::min(std::max<std::int64_t>(0, options_.first_iteration), nb);
    if (first >= nb) return;
    make_store();
    store_->upload(matrix_.data());  // no-op for the host store (it is the matrix)
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
                store_->download(matrix_.data());  // device tiles to the host for the checkpoint
                options_.checkpoint(k1);
                times_.checkpoint += MPI_Wtime() - t0;
            }
            if (k1 < nb) prepare_iteration(k1, *next);
        }
        std::swap(current, next);
        if (options_.on_iteration) options_.on_iteration(k1, nb);
    }
    const double t0 = MPI_Wtime();
    store_->download(matrix_.data());  // waits for the device; no-op for the host store
    times_.outer += MPI_Wtime() - t0;
}

}  // namespace litpath::apsp
