// Where one rank's local tiles live during the solve, and the operations the
// driver (core/driver.*) applies to them per outer iteration. The driver owns
// the order (look-ahead, checkpoints, broadcasts); a store owns the memory
// and how each operation runs:
//  - the host store (kernels/host_store.cpp) aliases the driver's host matrix
//    and calls the Backend kernels exactly as the driver always did (OpenMP
//    loops, the same kernel calls): CPU results and speed are unchanged;
//  - the device store (kernels/cuda_hip/device_store.cu, --backend cuda|hip)
//    keeps tiles, panels and the diagonal in device memory for the whole
//    solve; the host matrix is touched only by upload() at start/resume and
//    download() for checkpoints and the final write.
//
// Buffers handed to MPI (mpi_*) are host memory, or device memory when the
// store was made for GPU-aware MPI. The *_to_mpi / before_*_receive /
// *_from_mpi calls bracket every broadcast so a store can stage and order
// copies; for the host store they do nothing.
//
// Layout: the store is tile-major, `tiles` tiles of b x b floats (leading
// dimension b), padding of ragged tiles +inf; a panel set holds a row panel
// (row_panel_tiles tiles) and a column panel (col_panel_tiles tiles), each
// tile-major in panel-position order. No MPI here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace litpath::apsp {

class Backend;

struct StoreShape {
    std::int64_t tiles = 0;            // local tiles
    int b = 1;                         // tile edge = leading dimension
    std::int64_t row_panel_tiles = 0;  // local tile columns
    std::int64_t col_panel_tiles = 0;  // local tile rows
    int panel_sets = 1;                // 2 with look-ahead
    std::int64_t tile_elems() const { return static_cast<std::int64_t>(b) * b; }
};

// One tile of a panel update; its panel position is its index in the list.
struct PanelTile {
    std::int64_t tile;  // store tile index
    int extent;         // rows (column panel) or columns (row panel) of the tile
    bool diagonal;      // the diagonal tile itself: copied into the panel, not updated
};

// One tile of the outer product: store tile `tile` <- min(tile, col(col_pos) (x) row(row_pos)).
struct OuterTile {
    std::int64_t tile, col_pos, row_pos;
    int m, n;  // extent of the tile
};

class LocalMatrixStore {
public:
    virtual ~LocalMatrixStore() = default;
    virtual bool on_device() const = 0;
    virtual bool gpu_aware_mpi() const = 0;

    // Whole store from / to a host copy of tiles * b * b floats (no-ops when
    // `host` is the memory the store aliases). download waits for all work.
    virtual void upload(const float* host) = 0;
    virtual void download(float* host) = 0;

    // Floyd-Warshall closure of store tile `tile` (extent e) in place, then a
    // copy of it into the diagonal buffer (the A(k,k) of the panel updates).
    virtual void close_diagonal(std::int64_t tile, int extent) = 0;
    virtual float* mpi_diagonal() = 0;          // b*b floats
    virtual void diagonal_to_mpi() = 0;         // owner, before sending
    virtual void before_diagonal_receive() = 0; // receivers, before MPI writes mpi_diagonal()
    virtual void diagonal_from_mpi() = 0;       // receivers, after the broadcast completed

    // Row panel (tile row k, extent ek): for each position p, panel tile p <-
    // tile; unless diagonal, tile <- min(tile, diag (x) panel tile p) and panel
    // tile p <- tile. Column panel alike with tile <- min(tile, panel tile p (x) diag).
    virtual void update_row_panel(int set, int ek, const std::vector<PanelTile>& tiles, int threads) = 0;
    virtual void update_col_panel(int set, int ek, const std::vector<PanelTile>& tiles, int threads) = 0;
    virtual float* mpi_row_panel(int set) = 0;  // row_panel_tiles * b*b floats
    virtual float* mpi_col_panel(int set) = 0;  // col_panel_tiles * b*b floats
    virtual void panels_to_mpi(int set, bool row, bool col) = 0;    // roots, before sending
    virtual void before_panel_receive(int set) = 0;                 // before MPI writes into `set`
    virtual void panels_from_mpi(int set, bool row, bool col) = 0;  // after receiving

    // Outer product on `tiles` with panel set `set` (inner dimension ek).
    // With `poll`, it is called repeatedly until the work is done (look-ahead
    // relays the next panel broadcast meanwhile); without, a device store may
    // return before the work is done (later operations are ordered after it).
    virtual void outer_product(int set, int ek, const std::vector<OuterTile>& tiles, int threads,
                               const std::function<void()>& poll) = 0;
};

// The host store over `data` (tiles * b * b floats, owned by the caller),
// running `backend`'s kernels.
std::unique_ptr<LocalMatrixStore> make_host_store(float* data, const StoreShape& shape, const Backend& backend);

}  // namespace litpath::apsp
