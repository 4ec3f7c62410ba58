// The distributed blocked Floyd-Warshall (COAST, SC22 Algorithm 1) on a 2D
// block-cyclic tile layout. Host only: the arithmetic goes through Backend.
//
// Per outer iteration k (tile row/column k):
//   diagonal_update      owner of tile (k,k) closes it (Floyd-Warshall in a tile)
//   diagonal_broadcast   ... along its process row and process column
//   panel_update         row k:  A(k,j) <- A(k,j) (+) A(k,k) (x) A(k,j)
//                        col k:  A(i,k) <- A(i,k) (+) A(i,k) (x) A(k,k)
//   panel_broadcast      row panel down process columns, column panel along rows
//   minplus_outer_product A(i,j) <- A(i,j) (+) A(i,k) (x) A(k,j), i,j != k
// With look-ahead, iteration k's outer product first updates tile row/column
// k+1, so iteration k+1's diagonal and panel work and its panel broadcast can
// start while the rest of iteration k's outer product runs.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/broadcast.hpp"
#include "core/grid.hpp"
#include "core/tiling.hpp"
#include "kernels/backend.hpp"

namespace litpath::apsp {

struct PhaseTimes {
    double read = 0, diagonal = 0, panel = 0, broadcast = 0, outer = 0, write = 0, validate = 0;
    double checkpoint = 0;  // writing checkpoints (inside the solve)
};

struct DriverOptions {
    BroadcastOptions broadcast;
    bool lookahead = true;
    int threads = 1;
    // With a device-resident store: hand device pointers to MPI (GPU-aware MPI)
    // instead of staging broadcasts through host buffers. Ignored on the host.
    bool gpu_aware_mpi = false;
    // Called on rank 0 after each outer iteration: (iterations done, total).
    std::function<void(std::int64_t, std::int64_t)> on_iteration;
    // Resume: iterations already complete in the matrix (from a checkpoint).
    std::int64_t first_iteration = 0;
    // Checkpointing, on every rank. checkpoint_due(done, total) is asked once per
    // iteration and must answer the same on every rank; when true, the driver
    // finishes iteration done-1 completely (no look-ahead into the next one) and
    // calls checkpoint(done) with the matrix exactly as an uninterrupted run has
    // it after `done` iterations, before any work of the next.
    std::function<bool(std::int64_t, std::int64_t)> checkpoint_due;
    std::function<void(std::int64_t)> checkpoint;
};

// Bytes one rank needs for its tiles and buffers (computed before allocating).
std::int64_t bytes_needed_per_rank(const LocalTiles& layout, bool lookahead);

class DistributedMatrix {
public:
    explicit DistributedMatrix(const LocalTiles& layout);
    const LocalTiles& layout() const { return layout_; }
    float* tile(std::int64_t local_row, std::int64_t local_col) {
        return store_.data() + layout_.tile_offset(local_row, local_col);
    }
    const float* tile(std::int64_t local_row, std::int64_t local_col) const {
        return store_.data() + layout_.tile_offset(local_row, local_col);
    }
    // Min-assigns the cost of edge src -> dst (global vertex ids) if owned here.
    void add_edge(std::int64_t src, std::int64_t dst, float cost);
    bool owns(std::int64_t src, std::int64_t dst) const;
    // Zero diagonal for every real vertex on an owned diagonal tile.
    void set_zero_diagonal();
    float get(std::int64_t src, std::int64_t dst) const;  // owned entries only
    // This rank's share of the distances checksum (apsp-fw --checksum): a sum,
    // modulo 2^64, of one hash per real entry of its global position (i, j) and
    // its float's bits; padding is not counted. The shares of all ranks add up
    // to a function of the distances alone, whatever the grid and tile, so two
    // solves agree on it when their distances are bit for bit equal (up to hash
    // collisions).
    std::uint64_t checksum_share() const;
    // The whole tile-major local store, padding included (checkpoint pieces).
    float* data() { return store_.data(); }
    const float* data() const { return store_.data(); }
    std::size_t size() const { return store_.size(); }

private:
    LocalTiles layout_;
    std::vector<float> store_;  // tile-major; padding stays +inf
};

class BlockedFloydWarshall {
public:
    BlockedFloydWarshall(DistributedMatrix& matrix, const ProcessGrid& grid, const Backend& backend,
                         const DriverOptions& options);
    ~BlockedFloydWarshall();
    // Solves in place; on return the matrix holds the result (downloaded from
    // a device store). Collective: a store that cannot be made on one rank
    // throws on every rank.
    void run();
    const PhaseTimes& times() const { return times_; }
    // "device" or "host" (where the tiles lived during run()), and whether
    // broadcasts used device pointers.
    std::string residency() const { return residency_; }
    bool used_gpu_aware_mpi() const { return gpu_aware_used_; }

private:
    // The store's panel set `set` (tiles A(k, j) for my local tile columns and
    // A(i, k) for my local tile rows) and its broadcasts.
    struct Panels {
        int set = 0;
        std::int64_t k = -1;  // iteration whose panels these are
        Broadcast row_bcast;  // along my process column
        Broadcast col_bcast;  // along my process row
    };

    void make_store();
    std::int64_t store_tile(std::int64_t local_row, std::int64_t local_col) const;
    void diagonal_update(std::int64_t k);
    void diagonal_broadcast(std::int64_t k);
    void panel_update(std::int64_t k, Panels& panels);
    void panel_broadcast_start(std::int64_t k, Panels& panels);
    void panel_broadcast_wait(Panels& panels);
    // Outer product of iteration k on owned tiles that `select` accepts
    // (by global tile row, column); polls `pending` between batches.
    void minplus_outer_product(std::int64_t k, const Panels& panels,
                               const std::function<bool(std::int64_t, std::int64_t)>& select,
                               Panels* pending);

    DistributedMatrix& matrix_;
    const ProcessGrid& grid_;
    const Backend& backend_;
    DriverOptions options_;
    LocalTiles layout_;
    std::unique_ptr<LocalMatrixStore> store_;  // made in run()
    Panels panels_[2];
    PhaseTimes times_;
    std::string residency_ = "host";
    bool gpu_aware_used_ = false;
};

}  // namespace litpath::apsp
