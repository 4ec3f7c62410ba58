// The host LocalMatrixStore: the local matrix stays in the caller's host
// memory and every operation is the driver's original loop over the Backend
// kernels (same calls, same OpenMP schedule), so --backend cpu|reference
// behave exactly as before the store existed. MPI reads and writes the
// panel and diagonal buffers here directly; the staging hooks do nothing.
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "kernels/backend.hpp"
#include "kernels/matrix_store.hpp"

namespace litpath::apsp {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct WorkItem {
    std::int64_t tile, col_pos, row_pos;
    int n;
    int row_begin, row_end;  // rows of the tile this item updates
};

class HostMatrixStore final : public LocalMatrixStore {
public:
    HostMatrixStore(float* data, const StoreShape& shape, const Backend& backend)
        : data_(data), shape_(shape), backend_(backend) {
        const auto tile_elems = static_cast<std::size_t>(shape_.tile_elems());
        diagonal_.assign(tile_elems, kInf);
        for (int s = 0; s < std::min(2, std::max(1, shape_.panel_sets)); ++s) {
            row_[s].assign(tile_elems * static_cast<std::size_t>(shape_.row_panel_tiles), kInf);
            col_[s].assign(tile_elems * static_cast<std::size_t>(shape_.col_panel_tiles), kInf);
        }
    }

    bool on_device() const override { return false; }
    bool gpu_aware_mpi() const override { return false; }

    void upload(const float* host) override {
        if (host != data_) std::memcpy(data_, host, bytes());
    }
    void download(float* host) override {
        if (host != data_) std::memcpy(host, data_, bytes());
    }

    void close_diagonal(std::int64_t tile, int extent) override {
        float* d = tile_ptr(tile);
        backend_.floyd_warshall_tile(d, extent, shape_.b);
        std::memcpy(diagonal_.data(), d, diagonal_.size() * sizeof(float));
    }
    float* mpi_diagonal() override { return diagonal_.data(); }
    void diagonal_to_mpi() override {}
    void before_diagonal_receive() override {}
    void diagonal_from_mpi() override {}

    void update_row_panel(int set, int ek, const std::vector<PanelTile>& tiles, int threads) override {
        // A(k,j) <- A(k,j) (+) A(k,k) (x) A(k,j)
        panel_update(PanelSide::row, row_[set].data(), ek, tiles, threads);
    }

    void update_col_panel(int set, int ek, const std::vector<PanelTile>& tiles, int threads) override {
        // A(i,k) <- A(i,k) (+) A(i,k) (x) A(k,k)
        panel_update(PanelSide::column, col_[set].data(), ek, tiles, threads);
    }

    float* mpi_row_panel(int set) override { return row_[set].data(); }
    float* mpi_col_panel(int set) override { return col_[set].data(); }
    void panels_to_mpi(int, bool, bool) override {}
    void before_panel_receive(int) override {}
    void panels_from_mpi(int, bool, bool) override {}

    void outer_product(int set, int ek, const std::vector<OuterTile>& tiles, int threads_option,
                       const std::function<void()>& poll) override {
        if (tiles.empty()) return;
        const int b = shape_.b;
        const auto tile_elems = shape_.tile_elems();
        const int threads = std::max(1, threads_option);
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
        for (const OuterTile& t : tiles) {
            for (int r0 = 0; r0 < t.m; r0 += rows_per_item)
                items.push_back({t.tile, t.col_pos, t.row_pos, t.n, r0, std::min(t.m, r0 + rows_per_item)});
        }
        const float* col = col_[set].data();
        const float* row = row_[set].data();
        const std::size_t batch = poll ? static_cast<std::size_t>(4 * threads) : items.size();
        for (std::size_t begin = 0; begin < items.size(); begin += batch) {
            const std::size_t end = std::min(items.size(), begin + batch);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
            for (std::size_t w = begin; w < end; ++w) {
                const WorkItem& it = items[w];
                const float* a = col + it.col_pos * tile_elems + static_cast<std::int64_t>(it.row_begin) * b;
                const float* bt = row + it.row_pos * tile_elems;
                float* c = tile_ptr(it.tile) + static_cast<std::int64_t>(it.row_begin) * b;
                backend_.minplus_accumulate(it.row_end - it.row_begin, it.n, ek, a, b, bt, b, c, b);
            }
            if (poll) poll();  // relay look-ahead broadcast chunks that arrived meanwhile
        }
    }

private:
    float* tile_ptr(std::int64_t tile) { return data_ + tile * shape_.tile_elems(); }
    std::size_t bytes() const {
        return static_cast<std::size_t>(shape_.tiles * shape_.tile_elems()) * sizeof(float);
    }

    float* data_;
    StoreShape shape_;
    const Backend& backend_;
    std::vector<float> diagonal_;  // closed A(k,k) of the current iteration
    enum class PanelSide { row, column };

    /// The panel update of row or column k: each owned tile is copied into the panel buffer
    /// (the operand the kernel reads, and what is broadcast), updated in place with the
    /// closed diagonal tile on the left (row panel) or the right (column panel), and the
    /// result copied back into the buffer. The diagonal tile itself is only copied.
    void panel_update(PanelSide side, float* panel, int ek, const std::vector<PanelTile>& tiles,
                      int threads) {
        const int b = shape_.b;
        const auto tile_elems = shape_.tile_elems();
        const float* diag = diagonal_.data();
        const auto count = static_cast<std::int64_t>(tiles.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
        for (std::int64_t p = 0; p < count; ++p) {
            float* tile = tile_ptr(tiles[p].tile);
            float* copy = panel + p * tile_elems;
            std::memcpy(copy, tile, static_cast<std::size_t>(tile_elems) * sizeof(float));
            if (tiles[p].diagonal) continue;
            if (side == PanelSide::row) {
                backend_.minplus_accumulate(ek, tiles[p].extent, ek, diag, b, copy, b, tile, b);
            } else {
                backend_.minplus_accumulate(tiles[p].extent, ek, ek, copy, b, diag, b, tile, b);
            }
            std::memcpy(copy, tile, static_cast<std::size_t>(tile_elems) * sizeof(float));
        }
    }

    std::vector<float> row_[2], col_[2];
};

}  // namespace

std::unique_ptr<LocalMatrixStore> make_host_store(float* data, const StoreShape& shape, const Backend& backend) {
    if (shape.panel_sets < 1 || shape.panel_sets > 2) throw std::invalid_argument("panel_sets must be 1 or 2");
    return std::make_unique<HostMatrixStore>(data, shape, backend);
}

}  // namespace litpath::apsp
