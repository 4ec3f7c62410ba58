// The device-resident LocalMatrixStore of --backend cuda|hip|gpu-host: one
// source compiled by nvcc (this file), hipcc (device_store.hip.cpp includes
// it) or the host compiler (device_store.host.cpp, the host target).
//
// Memory: the local tiles, the diagonal tile and one or two panel sets
// (look-ahead) live in device memory from upload() (start, resume) to the
// last download() (end of the solve); checkpoints download too. MPI sees
// pinned host mirrors of the diagonal and panel buffers (host staging), or,
// with GPU-aware MPI, the device buffers themselves.
//
// Streams and events (correct by construction, every hazard named):
//  - compute_: every kernel and every copy that touches tiles, in driver order.
//    A panel update copies its tiles into the panel buffer (one copy when they
//    are contiguous, as a row panel's are), updates them with one batched
//    launch, and copies them again; the outer product is one batched launch
//    (minplus_batched, blockIdx.z = tile) reading the panels in place.
//  - copy_: uploads of received panels (host staging). It first waits for an
//    event recorded on compute_ (earlier readers of those device panels are
//    done); panel_ready_[set] marks the upload done, compute_ waits for it
//    before anything later (the outer product of that panel set), and
//    before_panel_receive(set) waits for it before MPI may overwrite the
//    host mirror it reads.
//  - Data leaves for MPI only after compute_ is synchronized (*_to_mpi); with
//    GPU-aware MPI a receive into device buffers first synchronizes compute_
//    (before_*_receive), so no kernel still reads what MPI overwrites.
//  - Batch descriptors go through kSlots pinned/device slot pairs; a slot is
//    reused only after the event recorded behind its launch has completed.
//  - outer_product with a poll callback records done_ and polls until it
//    completes: the look-ahead's next panel broadcast progresses while the
//    device runs this iteration's outer product.
#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda_hip/gpu_kernels.hpp"
#include "kernels/cuda_hip/runtime.hpp"
#include "kernels/matrix_store.hpp"

namespace litpath::apsp::gpu {
namespace {

constexpr int kSlots = 4;

__global__ void fill_kernel(float* __restrict__ p, std::size_t n, float value) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = value;
}

class DeviceMatrixStore final : public LocalMatrixStore {
public:
    DeviceMatrixStore(const StoreShape& shape, bool gpu_aware_mpi)
        : shape_(shape), aware_(gpu_aware_mpi), te_(static_cast<std::size_t>(shape.tile_elems())) {
        if (shape_.panel_sets < 1 || shape_.panel_sets > 2) throw std::invalid_argument("panel_sets must be 1 or 2");
        sets_ = shape_.panel_sets;
        capacity_ = static_cast<std::size_t>(
            std::max<std::int64_t>({shape_.tiles, shape_.row_panel_tiles, shape_.col_panel_tiles, 1}));
        try {
            allocate();
        } catch (const std::exception& e) {
            release();
            std::size_t free_bytes = 0, total_bytes = 0;
            (void)gpuMemGetInfo(&free_bytes, &total_bytes);
            (void)gpuGetLastError();
            throw std::runtime_error(std::string("the local matrix needs ") + std::to_string(device_bytes()) +
                                     " bytes of device memory (tiles, diagonal, " + std::to_string(sets_) +
                                     " panel set(s)); " + std::to_string(free_bytes) + " of " +
                                     std::to_string(total_bytes) + " are free (" + e.what() +
                                     "); use more ranks or GPUs, or --lookahead off");
        }
    }
    ~DeviceMatrixStore() override { release(); }
    DeviceMatrixStore(const DeviceMatrixStore&) = delete;
    DeviceMatrixStore& operator=(const DeviceMatrixStore&) = delete;

    bool on_device() const override { return true; }
    bool gpu_aware_mpi() const override { return aware_; }

    void upload(const float* host) override {
        GPU_CHECK(gpuMemcpyAsync(store_, host, store_elems() * sizeof(float), gpuMemcpyHostToDevice, compute_));
        GPU_CHECK(gpuStreamSynchronize(compute_));
    }

    void download(float* host) override {
        GPU_CHECK(gpuStreamSynchronize(copy_));
        GPU_CHECK(gpuMemcpyAsync(host, store_, store_elems() * sizeof(float), gpuMemcpyDeviceToHost, compute_));
        GPU_CHECK(gpuStreamSynchronize(compute_));
    }

    void close_diagonal(std::int64_t tile, int extent) override {
        float* d = tile_ptr(tile);
        floyd_warshall_tile(d, extent, shape_.b, compute_);
        GPU_CHECK(gpuMemcpyAsync(diag_, d, te_ * sizeof(float), gpuMemcpyDeviceToDevice, compute_));
    }

    float* mpi_diagonal() override { return aware_ ? diag_ : host_diag_; }

    void diagonal_to_mpi() override {
        if (!aware_)
            GPU_CHECK(gpuMemcpyAsync(host_diag_, diag_, te_ * sizeof(float), gpuMemcpyDeviceToHost, compute_));
        GPU_CHECK(gpuStreamSynchronize(compute_));
    }

    void before_diagonal_receive() override {
        if (aware_)
            GPU_CHECK(gpuStreamSynchronize(compute_));  // no kernel still reads diag_
        else
            GPU_CHECK(gpuEventSynchronize(diag_uploaded_));  // the last upload has read host_diag_
    }

    void diagonal_from_mpi() override {
        if (aware_) return;  // MPI wrote diag_ itself
        GPU_CHECK(gpuMemcpyAsync(diag_, host_diag_, te_ * sizeof(float), gpuMemcpyHostToDevice, compute_));
        GPU_CHECK(gpuEventRecord(diag_uploaded_, compute_));
    }

    void update_row_panel(int set, int ek, const std::vector<PanelTile>& tiles, int) override {
        // tile <- min(tile, diag (x) copy): A = diag_ (ek x ek), B = the panel copy (ek x n).
        float* panel = row_[set];
        copy_into_panel(panel, tiles);
        std::vector<BatchTile> batch;
        int max_n = 0;
        for (std::size_t p = 0; p < tiles.size(); ++p) {
            if (tiles[p].diagonal) continue;
            batch.push_back({0, static_cast<std::int64_t>(p * te_), offset(tiles[p].tile), ek, tiles[p].extent});
            max_n = std::max(max_n, tiles[p].extent);
        }
        launch(ek, diag_, panel, batch, ek, max_n);
        copy_into_panel(panel, tiles);
    }

    void update_col_panel(int set, int ek, const std::vector<PanelTile>& tiles, int) override {
        // tile <- min(tile, copy (x) diag): A = the panel copy (m x ek), B = diag_ (ek x ek).
        float* panel = col_[set];
        copy_into_panel(panel, tiles);
        std::vector<BatchTile> batch;
        int max_m = 0;
        for (std::size_t p = 0; p < tiles.size(); ++p) {
            if (tiles[p].diagonal) continue;
            batch.push_back({static_cast<std::int64_t>(p * te_), 0, offset(tiles[p].tile), tiles[p].extent, ek});
            max_m = std::max(max_m, tiles[p].extent);
        }
        launch(ek, panel, diag_, batch, max_m, ek);
        copy_into_panel(panel, tiles);
    }

    float* mpi_row_panel(int set) override { return aware_ ? row_[set] : host_row_[set]; }
    float* mpi_col_panel(int set) override { return aware_ ? col_[set] : host_col_[set]; }

    void panels_to_mpi(int set, bool row, bool col) override {
        if (!row && !col) return;
        if (!aware_) {
            if (row)
                GPU_CHECK(gpuMemcpyAsync(host_row_[set], row_[set], row_elems() * sizeof(float),
                                         gpuMemcpyDeviceToHost, compute_));
            if (col)
                GPU_CHECK(gpuMemcpyAsync(host_col_[set], col_[set], col_elems() * sizeof(float),
                                         gpuMemcpyDeviceToHost, compute_));
        }
        GPU_CHECK(gpuStreamSynchronize(compute_));
    }

    void before_panel_receive(int set) override {
        if (aware_)
            GPU_CHECK(gpuStreamSynchronize(compute_));  // no kernel still reads these device panels
        else
            GPU_CHECK(gpuEventSynchronize(panel_ready_[set]));  // the last upload has read the host mirrors
    }

    void panels_from_mpi(int set, bool row, bool col) override {
        if (aware_ || (!row && !col)) return;  // GPU-aware: MPI wrote the device panels
        GPU_CHECK(gpuEventRecord(compute_mark_, compute_));
        GPU_CHECK(gpuStreamWaitEvent(copy_, compute_mark_, 0));
        if (row)
            GPU_CHECK(gpuMemcpyAsync(row_[set], host_row_[set], row_elems() * sizeof(float), gpuMemcpyHostToDevice,
                                     copy_));
        if (col)
            GPU_CHECK(gpuMemcpyAsync(col_[set], host_col_[set], col_elems() * sizeof(float), gpuMemcpyHostToDevice,
                                     copy_));
        GPU_CHECK(gpuEventRecord(panel_ready_[set], copy_));
        GPU_CHECK(gpuStreamWaitEvent(compute_, panel_ready_[set], 0));  // panel k ready for its outer product
    }

    void outer_product(int set, int ek, const std::vector<OuterTile>& tiles, int,
                       const std::function<void()>& poll) override {
        if (tiles.empty()) return;
        std::vector<BatchTile> batch;
        batch.reserve(tiles.size());
        int max_m = 0, max_n = 0;
        for (const OuterTile& t : tiles) {
            batch.push_back({t.col_pos * static_cast<std::int64_t>(te_), t.row_pos * static_cast<std::int64_t>(te_),
                             offset(t.tile), t.m, t.n});
            max_m = std::max(max_m, t.m);
            max_n = std::max(max_n, t.n);
        }
        launch(ek, col_[set], row_[set], batch, max_m, max_n);
        if (!poll) return;
        GPU_CHECK(gpuEventRecord(done_, compute_));
        for (;;) {
            const gpuError_t state = gpuEventQuery(done_);
            if (state == gpuSuccess) break;
            if (state != gpuErrorNotReady) GPU_CHECK(state);
            poll();
            std::this_thread::yield();
        }
    }

private:
    std::size_t store_elems() const { return static_cast<std::size_t>(shape_.tiles) * te_; }
    std::size_t row_elems() const { return static_cast<std::size_t>(shape_.row_panel_tiles) * te_; }
    std::size_t col_elems() const { return static_cast<std::size_t>(shape_.col_panel_tiles) * te_; }
    std::int64_t offset(std::int64_t tile) const { return tile * static_cast<std::int64_t>(te_); }
    float* tile_ptr(std::int64_t tile) { return store_ + offset(tile); }
    std::size_t device_bytes() const {
        return (store_elems() + te_ + static_cast<std::size_t>(sets_) * (row_elems() + col_elems())) * sizeof(float) +
               kSlots * capacity_ * sizeof(BatchTile);
    }

    // Panel tile p <- store tile tiles[p] (one copy when the tiles are contiguous).
    void copy_into_panel(float* panel, const std::vector<PanelTile>& tiles) {
        if (tiles.empty()) return;
        bool contiguous = true;
        for (std::size_t p = 1; p < tiles.size() && contiguous; ++p)
            contiguous = tiles[p].tile == tiles[0].tile + static_cast<std::int64_t>(p);
        if (contiguous) {
            GPU_CHECK(gpuMemcpyAsync(panel, tile_ptr(tiles[0].tile), tiles.size() * te_ * sizeof(float),
                                     gpuMemcpyDeviceToDevice, compute_));
            return;
        }
        for (std::size_t p = 0; p < tiles.size(); ++p)
            GPU_CHECK(gpuMemcpyAsync(panel + p * te_, tile_ptr(tiles[p].tile), te_ * sizeof(float),
                                     gpuMemcpyDeviceToDevice, compute_));
    }

    // One batched min-plus launch on compute_ into the store (C = store_).
    void launch(int k, const float* A, const float* B, const std::vector<BatchTile>& batch, int max_m, int max_n) {
        if (batch.empty()) return;
        if (batch.size() > capacity_) throw std::logic_error("device store: batch larger than its descriptor slots");
        const int slot = next_slot_;
        next_slot_ = (next_slot_ + 1) % kSlots;
        GPU_CHECK(gpuEventSynchronize(slot_free_[slot]));  // the launch that last read this slot is done
        std::memcpy(host_desc_[slot], batch.data(), batch.size() * sizeof(BatchTile));
        GPU_CHECK(gpuMemcpyAsync(dev_desc_[slot], host_desc_[slot], batch.size() * sizeof(BatchTile),
                                 gpuMemcpyHostToDevice, compute_));
        minplus_batched(k, A, B, store_, shape_.b, dev_desc_[slot], static_cast<int>(batch.size()), max_m, max_n,
                        compute_);
        GPU_CHECK(gpuEventRecord(slot_free_[slot], compute_));
    }

    template <typename T>
    static T* device_array(std::size_t elems) {
        void* p = nullptr;
        GPU_CHECK(gpuMalloc(&p, std::max<std::size_t>(1, elems) * sizeof(T)));
        return static_cast<T*>(p);
    }
    template <typename T>
    static T* pinned_array(std::size_t elems) {
        void* p = nullptr;
        GPU_CHECK(gpuHostAlloc(&p, std::max<std::size_t>(1, elems) * sizeof(T)));
        return static_cast<T*>(p);
    }
    void fill_inf(float* p, std::size_t n) {
        if (n == 0) return;
        const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>(4096, (n + 255) / 256));
        GPU_LAUNCH(fill_kernel, blocks, 256, 0, compute_, p, n, std::numeric_limits<float>::infinity());
        GPU_CHECK_LAUNCH();
    }

    void allocate() {
        GPU_CHECK(gpuStreamCreateWithFlags(&compute_, gpuStreamNonBlocking));
        GPU_CHECK(gpuStreamCreateWithFlags(&copy_, gpuStreamNonBlocking));
        for (gpuEvent_t* e : {&compute_mark_, &diag_uploaded_, &done_, &panel_ready_[0], &panel_ready_[1],
                              &slot_free_[0], &slot_free_[1], &slot_free_[2], &slot_free_[3]})
            GPU_CHECK(gpuEventCreateWithFlags(e, gpuEventDisableTiming));
        static_assert(kSlots == 4, "events listed above");
        store_ = device_array<float>(store_elems());
        diag_ = device_array<float>(te_);
        fill_inf(diag_, te_);
        for (int s = 0; s < sets_; ++s) {
            row_[s] = device_array<float>(row_elems());
            col_[s] = device_array<float>(col_elems());
            fill_inf(row_[s], row_elems());
            fill_inf(col_[s], col_elems());
            if (!aware_) {
                host_row_[s] = pinned_array<float>(row_elems());
                host_col_[s] = pinned_array<float>(col_elems());
                std::fill(host_row_[s], host_row_[s] + row_elems(), std::numeric_limits<float>::infinity());
                std::fill(host_col_[s], host_col_[s] + col_elems(), std::numeric_limits<float>::infinity());
            }
        }
        if (!aware_) {
            host_diag_ = pinned_array<float>(te_);
            std::fill(host_diag_, host_diag_ + te_, std::numeric_limits<float>::infinity());
        }
        for (int s = 0; s < kSlots; ++s) {
            dev_desc_[s] = device_array<BatchTile>(capacity_);
            host_desc_[s] = pinned_array<BatchTile>(capacity_);
        }
        // Every event starts recorded (complete once compute_ drains), so the
        // first waits on it return.
        for (gpuEvent_t e : {diag_uploaded_, done_, panel_ready_[0], panel_ready_[1], slot_free_[0], slot_free_[1],
                             slot_free_[2], slot_free_[3]})
            GPU_CHECK(gpuEventRecord(e, compute_));
        GPU_CHECK(gpuStreamSynchronize(compute_));
    }

    // Frees whatever was made; never throws (destructor, failed constructor).
    void release() noexcept {
        if (compute_) (void)gpuStreamSynchronize(compute_);
        if (copy_) (void)gpuStreamSynchronize(copy_);
        for (float* p : {store_, diag_, row_[0], row_[1], col_[0], col_[1]})
            if (p) (void)gpuFree(p);
        for (float* p : {host_diag_, host_row_[0], host_row_[1], host_col_[0], host_col_[1]})
            if (p) (void)gpuFreeHost(p);
        for (int s = 0; s < kSlots; ++s) {
            if (dev_desc_[s]) (void)gpuFree(dev_desc_[s]);
            if (host_desc_[s]) (void)gpuFreeHost(host_desc_[s]);
            dev_desc_[s] = host_desc_[s] = nullptr;
        }
        for (gpuEvent_t* e : {&compute_mark_, &diag_uploaded_, &done_, &panel_ready_[0], &panel_ready_[1],
                              &slot_free_[0], &slot_free_[1], &slot_free_[2], &slot_free_[3]}) {
            if (*e) (void)gpuEventDestroy(*e);
            *e = nullptr;
        }
        if (compute_) (void)gpuStreamDestroy(compute_);
        if (copy_) (void)gpuStreamDestroy(copy_);
        compute_ = copy_ = nullptr;
        store_ = diag_ = host_diag_ = nullptr;
        row_[0] = row_[1] = col_[0] = col_[1] = nullptr;
        host_row_[0] = host_row_[1] = host_col_[0] = host_col_[1] = nullptr;
    }

    StoreShape shape_;
    bool aware_;
    std::size_t te_;
    int sets_ = 1;
    std::size_t capacity_ = 1;  // descriptors per slot
    gpuStream_t compute_ = nullptr, copy_ = nullptr;
    gpuEvent_t compute_mark_ = nullptr, diag_uploaded_ = nullptr, done_ = nullptr;
    gpuEvent_t panel_ready_[2] = {nullptr, nullptr};
    gpuEvent_t slot_free_[kSlots] = {nullptr, nullptr, nullptr, nullptr};
    float* store_ = nullptr;  // device: tile-major local tiles
    float* diag_ = nullptr;   // device: closed A(k,k)
    float* row_[2] = {nullptr, nullptr};
    float* col_[2] = {nullptr, nullptr};
    float* host_diag_ = nullptr;  // pinned mirrors for MPI (host staging only)
    float* host_row_[2] = {nullptr, nullptr};
    float* host_col_[2] = {nullptr, nullptr};
    BatchTile* dev_desc_[kSlots] = {};
    BatchTile* host_desc_[kSlots] = {};
    int next_slot_ = 0;
};

}  // namespace

std::unique_ptr<LocalMatrixStore> make_device_store(const StoreShape& shape, bool gpu_aware_mpi) {
    return std::make_unique<DeviceMatrixStore>(shape, gpu_aware_mpi);
}

}  // namespace litpath::apsp::gpu
