// The runtime of the host execution target (host_runtime.hpp): GPU threads
// as fibers under a barrier-keeping block scheduler, streams as lazily run
// in-order queues, device memory as bounds-checked host allocations.
//
// Why fibers (ucontext, glibc): __syncthreads() must stop a thread in the
// middle of the kernel and resume it once the whole block has arrived, which
// needs a stack per waiting thread. OS threads would do too, but a block of
// 1024 threads meeting at a barrier a hundred times is ~100k context
// switches through the kernel scheduler; a fiber switch is a few hundred ns
// on this VM (glibc's swapcontext saves the signal mask with one system
// call) and needs no new dependency (Boost.Context would). Blocks that never
// reach a barrier (found out by their first thread) run their other threads
// as plain calls, so the grid-wide kernels cost a call per thread.
//
// One device, one lock: every API call and every kernel runs under
// `runtime_mutex`, on the calling OS thread.
#include "kernels/cuda_hip/host_runtime.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace litpath::apsp::gpu::host {

// In-order operations of one stream, run only when the host waits.
struct Queue {
    std::deque<std::function<void()>> ops;
    std::uint64_t enqueued = 0, executed = 0;
    bool running = false;
};

struct Stream {
    std::shared_ptr<Queue> queue = std::make_shared<Queue>();
};

struct Event {
    struct Stamp {
        std::uint64_t generation = 0;  // of the last record
        std::chrono::steady_clock::time_point reached_at{};
    };
    std::shared_ptr<Queue> queue;  // where it was last recorded (null: never)
    std::uint64_t position = 0;    // reached once queue->executed is this
    bool timing = true;
    // Shared with the pending record operations, which may outlive the event.
    std::shared_ptr<Stamp> stamp = std::make_shared<Stamp>();
};

namespace {

std::recursive_mutex runtime_mutex;
using Lock = std::lock_guard<std::recursive_mutex>;

// ------------------------------------------------------------------ errors

const char* const kErrorNames[] = {"no error",      "operation not ready", "invalid value", "invalid configuration",
                                   "out of memory", "invalid device",      "kernel fault"};
std::string error_text[kernel_fault + 1];  // name and the last message of each error
Error last_launch_error = success;
Error sticky_error = success;  // a kernel fault: the "device" is unusable from then on

Error fail(Error e, const std::string& detail) {
    error_text[e] = std::string(kErrorNames[e]) + ": " + detail;
    return e;
}

// A broken execution-model rule inside a kernel (a divergent barrier, ...).
struct KernelFault : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string coords(uint3 v) {
    return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

// ------------------------------------------------------------------ device

constexpr std::size_t kSharedBytesDefault = 48 << 10;  // without opt-in, both vendors
constexpr std::size_t kSharedBytesOptIn = 64 << 10;    // the smaller vendor's opt-in limit (AMD LDS)

int configured_warp_size() {
    static const int warp = [] {
        const char* v = std::getenv("LITPATH_GPU_HOST_WARP_SIZE");
        if (!v || !*v) return 32;
        char* end = nullptr;
        const long w = std::strtol(v, &end, 10);
        return (*end == '\0' && w >= 1 && w <= 1024 && (w & (w - 1)) == 0) ? static_cast<int>(w) : -1;
    }();
    return warp;
}

Error check_device(int device) {
    if (device != 0) return fail(invalid_device, "the host target has one device, 0");
    if (configured_warp_size() < 0)
        return fail(invalid_device, "LITPATH_GPU_HOST_WARP_SIZE must be a power of two from 1 to 1024");
    return success;
}

// ------------------------------------------------------------------ memory

struct Allocation {
    std::size_t bytes;
    bool device;  // device memory, else pinned host memory
};
std::map<std::uintptr_t, Allocation> allocations;  // by base address

const Allocation* allocation_of(const void* p, std::uintptr_t* base) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return nullptr;
    --it;
    if (a >= it->first + it->second.bytes) return nullptr;
    *base = it->first;
    return &it->second;
}

// A device range must lie inside one device allocation; a host range must not
// touch device memory (a wrong copy kind is an error on a device too).
Error check_range(const void* p, std::size_t bytes, bool device, const char* what) {
    if (bytes == 0) return success;
    if (!p) return fail(invalid_value, std::string(what) + " is a null pointer");
    std::uintptr_t base = 0;
    const Allocation* a = allocation_of(p, &base);
    const bool in_device = a && a->device;
    if (device && !in_device) return fail(invalid_value, std::string(what) + " is not device memory");
    if (!device && in_device)
        return fail(invalid_value, std::string(what) + " is device memory, the copy kind says host");
    if (a && reinterpret_cast<std::uintptr_t>(p) + bytes > base + a->bytes)
        return fail(invalid_value, std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                                       std::to_string(reinterpret_cast<std::uintptr_t>(p) - base) +
                                       " overrun the allocation of " + std::to_string(a->bytes));
    return success;
}

Error check_copy(void* dst, std::size_t dst_span, const void* src, std::size_t src_span, MemcpyKind kind) {
    const bool dst_device = kind != device_to_host, src_device = kind != host_to_device;
    if (Error e = check_range(dst, dst_span, dst_device, "copy destination")) return e;
    return check_range(src, src_span, src_device, "copy source");
}

Error allocate(void** p, std::size_t bytes, bool device) {
    if (!p) return fail(invalid_value, "null result pointer");
    const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;  // 256-byte aligned, as cudaMalloc
    void* memory = std::aligned_alloc(256, rounded);
    if (!memory) return fail(out_of_memory, "cannot allocate " + std::to_string(bytes) + " bytes");
    std::memset(memory, 0xFF, rounded);  // uninitialized: NaN floats, -1 integers
    allocations[reinterpret_cast<std::uintptr_t>(memory)] = {std::max<std::size_t>(bytes, 1), device};
    *p = memory;
    return success;
}

// ------------------------------------------------------------------ streams

Stream default_stream;
std::set<Stream*> streams;  // created, not yet destroyed

Stream& resolve(Stream* s) { return s ? *s : default_stream; }
Queue& queue_of(Stream* s) { return *resolve(s).queue; }

void enqueue(Stream* s, std::function<void()> op) {
    Queue& q = queue_of(s);
    q.ops.push_back(std::move(op));
    ++q.enqueued;
}

// Runs q's operations in order until `position` of them have run. After a
// kernel fault the rest are dropped, as a faulted device context does.
void run_until(Queue& q, std::uint64_t position) {
    while (q.executed < position) {
        if (q.running) throw std::logic_error("gpu-host: a stream waits on its own later work");
        std::function<void()> op = std::move(q.ops.front());
        q.ops.pop_front();
        q.running = true;
        if (sticky_error == success) {
            try {
                op();
            } catch (const std::exception& e) {
                sticky_error = fail(kernel_fault, e.what());
            }
        }
        q.running = false;
        ++q.executed;
    }
}

void run_all() {
    run_until(*default_stream.queue, default_stream.queue->enqueued);
    for (Stream* s : streams) run_until(*s->queue, s->queue->enqueued);
}

bool reached(const Event& e) { return !e.queue || e.queue->executed >= e.position; }

// ------------------------------------------------------------------ blocks

// A tiny deterministic generator for the shuffled orders (splitmix64).
struct Shuffler {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    template <typename T>
    void shuffle(std::vector<T>& v) {
        for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[next() % i]);
    }
};
std::uint64_t launches = 0;  // seeds each grid's orders: reproducible runs, different grids

constexpr std::size_t kStackBytes = 256 << 10;

struct Fiber {
    ucontext_t context;
    void* stack = nullptr;  // mapping base (guard page first)
    uint3 index{};
    bool finished = false;
    std::exception_ptr error;
};

// Stacks of one OS thread, kept across blocks: mmap'd with a guard page, so a
// thread that overflows its stack faults instead of corrupting a neighbour.
struct StackPool {
    std::vector<void*> free;
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    ~StackPool() {
        for (void* p : free) munmap(p, page + kStackBytes);
    }
    void* take() {
        if (!free.empty()) {
            void* p = free.back();
            free.pop_back();
            return p;
        }
        void* p = mmap(nullptr, page + kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        mprotect(p, page, PROT_NONE);
        return p;
    }
};

// The block now running on this OS thread.
struct BlockState {
    const std::function<void()>* body = nullptr;  // one GPU thread's work
    bool direct = false;                          // threads run as plain calls (no barrier expected)
    uint3 first_done{};                           // the thread that ended without a barrier (direct mode)
    Fiber* running = nullptr;
    ucontext_t scheduler;
    std::vector<Fiber> fibers;
    StackPool stacks;
    std::unique_ptr<float4[]> shared;  // dynamic shared memory
    std::size_t shared_capacity = 0, shared_bytes = 0;
};
thread_local BlockState block_state;

void fiber_main() {
    BlockState& st = block_state;
    Fiber* f = st.running;
    try {
        (*st.body)();
    } catch (...) {
        f->error = std::current_exception();
    }
    f->finished = true;
    setcontext(&st.scheduler);  // back to the last resume(); this fiber is never resumed again
}

void start(Fiber& f, uint3 index) {
    BlockState& st = block_state;
    f.stack = st.stacks.take();
    f.index = index;
    f.finished = false;
    f.error = nullptr;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = static_cast<char*>(f.stack) + st.stacks.page;
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_main, 0);
}

// Runs f until its next barrier or its end.
void resume(Fiber& f) {
    BlockState& st = block_state;
    st.running = &f;
    coordinates.thread_idx = f.index;
    swapcontext(&st.scheduler, &f.context);
    st.running = nullptr;
}

uint3 thread_index(dim3 b, unsigned t) { return uint3{t % b.x, (t / b.x) % b.y, t / (b.x * b.y)}; }

void run_block(dim3 shape, Shuffler& rng) {
    BlockState& st = block_state;
    const unsigned count = shape.x * shape.y * shape.z;
    auto index_of = [shape](unsigned t) { return thread_index(shape, t); };
    std::vector<unsigned> order(count);
    std::iota(order.begin(), order.end(), 0u);
    rng.shuffle(order);
    if (st.fibers.size() < count) st.fibers.resize(count);
    unsigned started = 0;
    // Stacks go back to the pool however the block ends. A fiber abandoned at
    // a barrier (after a fault) holds only trivially destructible kernel locals.
    struct Release {
        BlockState& st;
        unsigned& started;
        ~Release() {
            for (unsigned i = 0; i < started; ++i) st.stacks.free.push_back(st.fibers[i].stack);
            st.direct = false;
        }
    } release{st, started};
    auto rethrow_errors = [&](unsigned n) {
        for (unsigned i = 0; i < n; ++i)
            if (st.fibers[i].error) std::rethrow_exception(st.fibers[i].error);
    };

    start(st.fibers[0], index_of(order[0]));
    started = 1;
    resume(st.fibers[0]);
    rethrow_errors(1);
    if (st.fibers[0].finished) {
        // No barrier in this kernel (it is reached by all threads or none):
        // the others are plain calls, and a barrier among them a fault.
        st.direct = true;
        st.first_done = st.fibers[0].index;
        for (unsigned i = 1; i < count; ++i) {
            coordinates.thread_idx = index_of(order[i]);
            (*st.body)();
        }
        return;
    }
    for (unsigned i = 1; i < count; ++i) {
        start(st.fibers[i], index_of(order[i]));
        started = i + 1;
        resume(st.fibers[i]);
    }
    std::vector<unsigned> live(count);
    std::iota(live.begin(), live.end(), 0u);
    for (;;) {  // each pass: every thread has run to a barrier or to its end
        rethrow_errors(count);
        unsigned arrived = 0, ended = 0;
        uint3 one_ended{}, one_arrived{};
        for (unsigned i : live) {
            if (st.fibers[i].finished) {
                ++ended;
                one_ended = st.fibers[i].index;
            } else {
                ++arrived;
                one_arrived = st.fibers[i].index;
            }
        }
        if (arrived == 0) return;
        if (ended > 0)
            throw KernelFault("__syncthreads() reached by " + std::to_string(arrived) + " of " +
                              std::to_string(arrived + ended) + " threads (e.g. " + coords(one_arrived) + "), while " +
                              std::to_string(ended) + " (e.g. " + coords(one_ended) + ") left the kernel");
        rng.shuffle(live);
        for (unsigned i : live) resume(st.fibers[i]);
    }
}

void run_grid(const LaunchConfig& config, const std::function<void()>& body) {
    BlockState& st = block_state;
    const dim3 g = config.grid, b = config.block;
    coordinates.grid_dim = g;
    coordinates.block_dim = b;
    Shuffler rng{++launches};
    if (config.shared_bytes > st.shared_capacity) {
        st.shared.reset(new float4[(config.shared_bytes + sizeof(float4) - 1) / sizeof(float4)]);
        st.shared_capacity = config.shared_bytes;
    }
    st.shared_bytes = config.shared_bytes;
    const std::uint64_t blocks = static_cast<std::uint64_t>(g.x) * g.y * g.z;
    std::vector<std::uint64_t> block_order(blocks);
    std::iota(block_order.begin(), block_order.end(), std::uint64_t{0});
    rng.shuffle(block_order);
    st.body = &body;
    struct Reset {
        BlockState& st;
        ~Reset() { st.body = nullptr; }
    } reset{st};
    for (const std::uint64_t id : block_order) {
        const uint3 block{static_cast<unsigned>(id % g.x), static_cast<unsigned>((id / g.x) % g.y),
                          static_cast<unsigned>(id / (static_cast<std::uint64_t>(g.x) * g.y))};
        coordinates.block_idx = block;
        if (st.shared_bytes) std::memset(st.shared.get(), 0xFF, st.shared_bytes);
        try {
            run_block(b, rng);
        } catch (const std::exception& e) {
            throw KernelFault(std::string("kernel ") + config.kernel + ", block " + coords(block) + ": " + e.what());
        }
    }
}

std::map<const void*, std::size_t> shared_limits;  // func_set_attribute(max_dynamic_shared_bytes)

std::string check_launch(const LaunchConfig& c) {
    const dim3 g = c.grid, b = c.block;
    if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0) return "a zero grid or block dimension";
    if (g.x > 0x7FFFFFFFu || g.y > 65535 || g.z > 65535) return "grid " + coords({g.x, g.y, g.z}) + " too large";
    if (b.x > 1024 || b.y > 1024 || b.z > 64 || static_cast<std::uint64_t>(b.x) * b.y * b.z > 1024)
        return "block " + coords({b.x, b.y, b.z}) + " has more than 1024 threads or a dimension too large";
    const auto limit = shared_limits.find(c.address);
    const std::size_t max_shared = limit == shared_limits.end() ? kSharedBytesDefault : limit->second;
    if (c.shared_bytes > max_shared)
        return std::to_string(c.shared_bytes) + " bytes of dynamic shared memory, more than " +
               std::to_string(max_shared);
    return {};
}

}  // namespace

// ------------------------------------------------------------------ API

const char* error_string(Error e) {
    if (e < success || e > kernel_fault) return "unknown error";
    Lock lock(runtime_mutex);
    return error_text[e].empty() ? kErrorNames[e] : error_text[e].c_str();
}

Error get_last_error() {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    const Error e = last_launch_error;
    last_launch_error = success;
    return e;
}

Error device_count(int* count) {
    *count = 1;
    return success;
}

Error set_device(int device) {
    Lock lock(runtime_mutex);
    return check_device(device);
}

Error get_device(int* device) {
    *device = 0;
    return success;
}

Error device_properties(DeviceProp* prop, int device) {
    Lock lock(runtime_mutex);
    if (Error e = check_device(device)) return e;
    *prop = DeviceProp{};
    const std::string name = "CPU (litpath gpu-host target, warp " + std::to_string(configured_warp_size()) + ")";
    std::snprintf(prop->name, sizeof prop->name, "%s", name.c_str());
    prop->warpSize = configured_warp_size();
    prop->multiProcessorCount = 1;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = kSharedBytesDefault;
    return success;
}

Error device_attribute(int* value, DeviceAttribute attribute, int device) {
    Lock lock(runtime_mutex);
    if (Error e = check_device(device)) return e;
    switch (attribute) {
        case attribute_warp_size: *value = configured_warp_size(); break;
        case attribute_multiprocessors: *value = 1; break;  // blocks run one at a time
        case attribute_clock_rate: *value = 0; break;
        default: return fail(invalid_value, "unknown device attribute");
    }
    return success;
}

Error device_synchronize() {
    Lock lock(runtime_mutex);
    run_all();
    return sticky_error;
}

Error mem_info(std::size_t* free_bytes, std::size_t* total_bytes) {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    *free_bytes = static_cast<std::size_t>(sysconf(_SC_AVPHYS_PAGES)) * page;
    *total_bytes = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) * page;
    return success;
}

Error malloc_device(void** p, std::size_t bytes) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    return allocate(p, bytes, true);
}

Error malloc_pinned(void** p, std::size_t bytes) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    return allocate(p, bytes, false);
}

namespace {
Error release(void* p, bool device) {
    if (!p) return success;
    Lock lock(runtime_mutex);
    run_all();  // freeing waits for the device, as cudaFree does
    const auto it = allocations.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == allocations.end() || it->second.device != device)
        return fail(invalid_value, std::string("free of a pointer that is no ") + (device ? "device" : "pinned") +
                                       " allocation");
    allocations.erase(it);
    std::free(p);
    return sticky_error;
}
}  // namespace

Error free_device(void* p) { return release(p, true); }
Error free_pinned(void* p) { return release(p, false); }

Error memcpy_async(void* dst, const void* src, std::size_t bytes, MemcpyKind kind, Stream* stream) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (Error e = check_copy(dst, bytes, src, bytes, kind)) return e;
    if (bytes) enqueue(stream, [dst, src, bytes] { std::memmove(dst, src, bytes); });
    return success;
}

Error memcpy_sync(void* dst, const void* src, std::size_t bytes, MemcpyKind kind) {
    Lock lock(runtime_mutex);
    if (Error e = memcpy_async(dst, src, bytes, kind, nullptr)) return e;
    run_until(*default_stream.queue, default_stream.queue->enqueued);
    return sticky_error;
}

Error memcpy_2d_async(void* dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                      std::size_t height, MemcpyKind kind, Stream* stream) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (width > dpitch || width > spitch) return fail(invalid_value, "2D copy wider than its pitch");
    if (height == 0 || width == 0) return success;
    if (Error e = check_copy(dst, dpitch * (height - 1) + width, src, spitch * (height - 1) + width, kind)) return e;
    enqueue(stream, [=] {
        for (std::size_t r = 0; r < height; ++r)
            std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
    });
    return success;
}

Error memset_async(void* p, int byte, std::size_t bytes, Stream* stream) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (Error e = check_range(p, bytes, true, "memset destination")) return e;
    if (bytes) enqueue(stream, [p, byte, bytes] { std::memset(p, byte, bytes); });
    return success;
}

Error stream_create(Stream** stream, unsigned) {
    Lock lock(runtime_mutex);
    *stream = new Stream;
    streams.insert(*stream);
    return success;
}

Error stream_destroy(Stream* stream) {
    Lock lock(runtime_mutex);
    if (!stream || !streams.count(stream)) return fail(invalid_value, "destroy of an unknown stream");
    run_until(*stream->queue, stream->queue->enqueued);  // its work completes, as on a device
    streams.erase(stream);
    delete stream;
    return sticky_error;
}

Error stream_synchronize(Stream* stream) {
    Lock lock(runtime_mutex);
    Queue& q = queue_of(stream);
    run_until(q, q.enqueued);
    return sticky_error;
}

Error stream_wait_event(Stream* stream, Event* event, unsigned) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (!event) return fail(invalid_value, "wait on a null event");
    if (reached(*event)) return success;
    // The event's position now (a later record does not move this wait).
    enqueue(stream, [queue = event->queue, position = event->position] { run_until(*queue, position); });
    return success;
}

Error event_create_with_flags(Event** event, unsigned flags) {
    Lock lock(runtime_mutex);
    *event = new Event;
    (*event)->timing = (flags & kEventDisableTiming) == 0;
    return success;
}

Error event_create(Event** event) { return event_create_with_flags(event, 0); }

Error event_destroy(Event* event) {
    Lock lock(runtime_mutex);
    if (!event) return fail(invalid_value, "destroy of a null event");
    delete event;
    return success;
}

Error event_record(Event* event, Stream* stream) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (!event) return fail(invalid_value, "record of a null event");
    const std::uint64_t generation = ++event->stamp->generation;
    enqueue(stream, [stamp = event->stamp, generation] {
        if (stamp->generation == generation) stamp->reached_at = std::chrono::steady_clock::now();
    });
    event->queue = resolve(stream).queue;
    event->position = event->queue->enqueued;
    return success;
}

Error event_query(Event* event) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (!event) return fail(invalid_value, "query of a null event");
    if (reached(*event)) return success;
    // The device makes some progress between polls: one more operation.
    run_until(*event->queue, event->queue->executed + 1);
    return sticky_error ? sticky_error : not_ready;
}

Error event_synchronize(Event* event) {
    Lock lock(runtime_mutex);
    if (!event) return fail(invalid_value, "synchronize on a null event");
    if (event->queue) run_until(*event->queue, event->position);
    return sticky_error;
}

Error event_elapsed_ms(float* ms, Event* start, Event* stop) {
    Lock lock(runtime_mutex);
    if (sticky_error) return sticky_error;
    if (!start || !stop || !start->timing || !stop->timing || !start->queue || !stop->queue)
        return fail(invalid_value, "elapsed time needs two recorded timing events");
    if (!reached(*start) || !reached(*stop)) return not_ready;
    *ms = std::chrono::duration<float, std::milli>(stop->stamp->reached_at - start->stamp->reached_at).count();
    return success;
}

Error func_set_attribute(const void* kernel, FuncAttribute attribute, int value) {
    Lock lock(runtime_mutex);
    if (attribute != max_dynamic_shared_bytes || value < 0 || static_cast<std::size_t>(value) > kSharedBytesOptIn)
        return fail(invalid_value,
                    "dynamic shared memory opt-in beyond " + std::to_string(kSharedBytesOptIn) + " bytes");
    shared_limits[kernel] = static_cast<std::size_t>(value);
    return success;
}

void enqueue_launch(const LaunchConfig& config, Stream* stream, std::function<void()> thread_body) {
    Lock lock(runtime_mutex);
    if (sticky_error) return;
    const std::string problem = check_launch(config);
    if (!problem.empty()) {
        last_launch_error = fail(invalid_configuration, std::string("kernel ") + config.kernel + ": " + problem);
        return;
    }
    enqueue(stream, [config, body = std::move(thread_body)] { run_grid(config, body); });
}

void sync_threads() {
    BlockState& st = block_state;
    if (!st.body) throw KernelFault("__syncthreads() outside a kernel");
    if (st.direct)
        throw KernelFault("__syncthreads() reached by thread " + coords(coordinates.thread_idx) + ", while thread " +
                          coords(st.first_done) + " left the kernel without one");
    Fiber* self = st.running;
    swapcontext(&self->context, &st.scheduler);
    // Resumed: every thread of the block has arrived.
}

void* dynamic_shared() { return block_state.shared_bytes ? block_state.shared.get() : nullptr; }

}  // namespace litpath::apsp::gpu::host

extern const int warpSize = litpath::apsp::gpu::host::configured_warp_size();
