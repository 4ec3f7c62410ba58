// The host execution target of the GPU source (--backend gpu-host): the
// CUDA/HIP kernels of minplus.cu and device_store.cu compiled by the host C++
// compiler and run on the CPU with the execution model kept. runtime.hpp
// includes this header when LITPATH_GPU_HOST is defined (minplus.host.cpp,
// device_store.host.cpp) and maps every gpu* name onto the functions below;
// host_runtime.cpp implements them.
//
// What a kernel sees (the contract the GPU gives, no more):
//  - a grid of blocks, a block of threads, threadIdx/blockIdx/blockDim/gridDim;
//  - each GPU thread of a block a fiber (ucontext) on the calling OS thread,
//    run to its next __syncthreads(); the barrier resumes the block's threads
//    only once all of them have reached it, in a fresh shuffled order per
//    phase (so a missing barrier reads stale or future data), and it is a
//    kernel fault when some threads reach a barrier that others leave the
//    kernel without. A block whose first thread ends without any barrier runs
//    its other threads as plain calls (a barrier there is the same fault);
//  - __shared__ is one copy per running block (blocks of a grid run one at a
//    time, in shuffled order, on one OS thread: a function-local thread_local
//    static is that copy); dynamic shared memory is poisoned with NaN bytes
//    at the start of every block;
//  - warpSize is a run-time value, LITPATH_GPU_HOST_WARP_SIZE (default 32);
//    there are no warp-level operations (shuffles, votes, __syncwarp): the
//    kernels use none, and one that starts to fails to compile here.
// What the host sees: one device; streams are in-order queues that run only
// when the host waits (stream/event synchronize, event query, device
// synchronize, free), which is the laziest schedule a device may take, so a
// missing wait shows up as wrong data; events mark queue positions; device
// and pinned memory are host allocations poisoned with 0xFF bytes, and every
// copy and memset must stay inside one allocation of the side its kind says.
#pragma once

#include <cmath>  // fminf and friends, as device code has them
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- the CUDA/HIP keywords the kernels use
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// One copy per OS thread, i.e. per running block (see above).
#define __shared__ static thread_local

struct uint3 {
    unsigned int x, y, z;
};

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct alignas(16) float4 {
    float x, y, z, w;
};

inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }

// The device's warp size, as device code sees it (LITPATH_GPU_HOST_WARP_SIZE).
extern const int warpSize;

namespace litpath::apsp::gpu::host {

enum Error : int {
    success = 0,
    not_ready,
    invalid_value,
    invalid_configuration,
    out_of_memory,
    invalid_device,
    kernel_fault,  // sticky, as after a device-side fault: every later call returns it
};

enum DeviceAttribute { attribute_warp_size, attribute_multiprocessors, attribute_clock_rate };
enum MemcpyKind { host_to_device, device_to_host, device_to_device };
enum FuncAttribute { max_dynamic_shared_bytes };
constexpr unsigned kStreamNonBlocking = 1;
constexpr unsigned kEventDisableTiming = 2;

struct Stream;  // opaque handles, as cudaStream_t / cudaEvent_t
struct Event;

struct DeviceProp {
    char name[128];
    int warpSize;
    int multiProcessorCount;
    int maxThreadsPerBlock;
    std::size_t sharedMemPerBlock;
};

const char* error_string(Error e);
Error get_last_error();
Error device_count(int* count);
Error set_device(int device);
Error get_device(int* device);
Error device_properties(DeviceProp* prop, int device);
Error device_attribute(int* value, DeviceAttribute attribute, int device);
Error device_synchronize();
Error mem_info(std::size_t* free_bytes, std::size_t* total_bytes);

Error malloc_device(void** p, std::size_t bytes);
Error free_device(void* p);
Error malloc_pinned(void** p, std::size_t bytes);
Error free_pinned(void* p);
Error memcpy_sync(void* dst, const void* src, std::size_t bytes, MemcpyKind kind);
Error memcpy_async(void* dst, const void* src, std::size_t bytes, MemcpyKind kind, Stream* stream);
Error memcpy_2d_async(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                      std::size_t height, MemcpyKind kind, Stream* stream);
Error memset_async(void* p, int byte, std::size_t bytes, Stream* stream);

Error stream_create(Stream** stream, unsigned flags);
Error stream_destroy(Stream* stream);
Error stream_synchronize(Stream* stream);
Error stream_wait_event(Stream* stream, Event* event, unsigned flags);
Error event_create(Event** event);
Error event_create_with_flags(Event** event, unsigned flags);
Error event_destroy(Event* event);
Error event_record(Event* event, Stream* stream);
Error event_query(Event* event);
Error event_synchronize(Event* event);
Error event_elapsed_ms(float* ms, Event* start, Event* stop);
Error func_set_attribute(const void* kernel, FuncAttribute attribute, int value);

// ---- inside a kernel
struct ThreadCoordinates {
    uint3 thread_idx, block_idx;
    dim3 block_dim, grid_dim;
};
// Of the GPU thread now running on this OS thread (set by the block scheduler).
inline thread_local ThreadCoordinates coordinates{};
inline const ThreadCoordinates& current() { return coordinates; }
void sync_threads();
void* dynamic_shared();

// ---- launching
struct LaunchConfig {
    const char* kernel;   // its name, for messages
    const void* address;  // its identity, for func_set_attribute
    dim3 grid, block;
    std::size_t shared_bytes;
};

// Checks `config` as a device would (a bad one is returned by the next
// get_last_error and nothing runs) and queues the grid on `stream`; each GPU
// thread runs `thread_body`.
void enqueue_launch(const LaunchConfig& config, Stream* stream, std::function<void()> thread_body);

template <typename... Params, typename... Args>
void launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
            Stream* stream, Args&&... args) {
    static_assert(sizeof...(Params) == sizeof...(Args), "kernel launched with the wrong number of arguments");
    // Converted to the parameter types and copied now, as a device launch does.
    std::tuple<std::decay_t<Params>...> values(std::forward<Args>(args)...);
    enqueue_launch({name, reinterpret_cast<const void*>(kernel), grid, block, shared_bytes}, stream,
                   [kernel, values] { std::apply(kernel, values); });
}

}  // namespace litpath::apsp::gpu::host

#define threadIdx (::litpath::apsp::gpu::host::current().thread_idx)
#define blockIdx (::litpath::apsp::gpu::host::current().block_idx)
#define blockDim (::litpath::apsp::gpu::host::current().block_dim)
#define gridDim (::litpath::apsp::gpu::host::current().grid_dim)
#define __syncthreads() ::litpath::apsp::gpu::host::sync_threads()

#define GPU_LAUNCH(kernel, grid, block, shared_bytes, stream, ...) \
    ::litpath::apsp::gpu::host::launch(#kernel, kernel, grid, block, shared_bytes, stream, __VA_ARGS__)
#define GPU_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::litpath::apsp::gpu::host::dynamic_shared())
