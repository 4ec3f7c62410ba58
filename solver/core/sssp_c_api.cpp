// The C ABI of liblitpath_sssp.so (sssp_c_api.h) over core/sssp.hpp. Every
// entry point catches everything: an exception must never unwind into a C (or
// ctypes) caller.
#include "core/sssp_c_api.h"

#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sssp.hpp"
#include "core/sssp_hub_rows.hpp"
#include "core/sssp_k_paths.hpp"

#define LITPATH_SSSP_EXPORT extern "C" __attribute__((visibility("default")))

using litpath::sssp::CsrGraph;

namespace {

thread_local std::string last_error;

using litpath::sssp::Deadline;
using litpath::sssp::PathSpaces;

// The search workspaces of shortest_path and nearest, shared by every calling
// thread. Kept between queries because making one costs O(n) (filling n
// distances with +inf: tens of ms at millions of vertices, more than an indexed
// query); bounded because each holds O(n) bytes and a service may run many
// threads. Before this pool each thread kept its own, which at 6M vertices and
// ten threads was 4 GB held for searches of which two at most could run at once
// on two cores.
class WorkspacePool {
public:
    // A workspace for graphs of n vertices, the caller's until give_back.
    std::unique_ptr<PathSpaces> take(std::int64_t n, const Deadline& deadline) {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            // The most recently used fitting one: its pages are the likeliest to be warm.
            for (auto it = idle_.rbegin(); it != idle_.rend(); ++it)
                if (it->spaces->vertex_count() == n) {
                    auto spaces = std::move(it->spaces);
                    idle_.erase(std::next(it).base());
                    ++busy_;
                    return spaces;
                }
            if (limit_ == 0 || busy_ + static_cast<std::int64_t>(idle_.size()) < limit_) break;
            if (!idle_.empty()) {  // at the limit, but an idle one is for another graph: drop it
                idle_.erase(idle_.begin());
                continue;
            }
            if (deadline.never()) {
                available_.wait(lock);
            } else if (available_.wait_until(lock, deadline.at) == std::cv_status::timeout) {
                throw litpath::sssp::DeadlineExceeded("all " + std::to_string(limit_) +
                                                      " search workspaces were busy until the deadline");
            }
        }
        ++busy_;
        lock.unlock();
        try {
            return std::make_unique<PathSpaces>(n);
        } catch (...) {
            give_back(nullptr);
            throw;
        }
    }

    void give_back(std::unique_ptr<PathSpaces> spaces) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            --busy_;
            if (spaces && (limit_ == 0 || busy_ + static_cast<std::int64_t>(idle_.size()) < limit_))
                idle_.push_back(Idle{std::move(spaces), Deadline::Clock::now()});
        }
        available_.notify_one();
    }

    void set_limit(std::int64_t limit) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            limit_ = std::max<std::int64_t>(limit, 0);
            while (limit_ > 0 && !idle_.empty() && busy_ + static_cast<std::int64_t>(idle_.size()) > limit_)
                idle_.erase(idle_.begin());
        }
        available_.notify_all();
    }

    std::int64_t release_idle(double idle_seconds) {
        std::vector<std::unique_ptr<PathSpaces>> freed;
        std::int64_t bytes = 0;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            const auto now = Deadline::Clock::now();
            for (auto it = idle_.begin(); it != idle_.end();) {
                if (std::chrono::duration<double>(now - it->since).count() >= idle_seconds) {
                    bytes += it->spaces->bytes();
                    freed.push_back(std::move(it->spaces));
                    it = idle_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        freed.clear();  // outside the lock
#ifdef __GLIBC__
        // glibc keeps freed blocks for reuse: the workspaces' pages stay
        // resident (measured: half of them) until trimmed.
        if (bytes > 0) malloc_trim(0);
#endif
        return bytes;
    }

    void stats(std::int64_t* busy, std::int64_t* idle, std::int64_t* idle_bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (busy) *busy = busy_;
        if (idle) *idle = static_cast<std::int64_t>(idle_.size());
        if (idle_bytes) {
            std::int64_t total = 0;
            for (const Idle& i : idle_) total += i.spaces->bytes();
            *idle_bytes = total;
        }
    }

private:
    struct Idle {
        std::unique_ptr<PathSpaces> spaces;
        Deadline::Clock::time_point since;
    };
    std::mutex mutex_;
    std::condition_variable available_;
    std::vector<Idle> idle_;
    std::int64_t busy_ = 0;
    std::int64_t limit_ = 0;  // 0: no limit
};

WorkspacePool& workspaces() {
    static WorkspacePool pool;  // never destroyed before a caller's last use: function-local
    return pool;
}

// A workspace taken from the pool for one call, given back however the call ends.
class Lease {
public:
    Lease(std::int64_t n, const Deadline& deadline) : spaces_(workspaces().take(n, deadline)) {}
    ~Lease() { workspaces().give_back(std::move(spaces_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    PathSpaces& operator*() { return *spaces_; }

private:
    std::unique_ptr<PathSpaces> spaces_;
};

struct ArgumentError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

struct BufferTooSmall : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Runs body, turning exceptions into a status code and a message.
template <typename Body>
int guarded(Body&& body) {
    last_error.clear();
    try {
        body();
        return LITPATH_SSSP_OK;
    } catch (const BufferTooSmall& e) {
        last_error = e.what();
        return LITPATH_SSSP_BUFFER_TOO_SMALL;
    } catch (const litpath::sssp::DeadlineExceeded& e) {
        last_error = e.what();
        return LITPATH_SSSP_DEADLINE_EXCEEDED;
    } catch (const std::bad_alloc&) {
        last_error = "out of memory";
        return LITPATH_SSSP_OUT_OF_MEMORY;
    } catch (const std::invalid_argument& e) {
        last_error = e.what();
        return LITPATH_SSSP_INVALID_ARGUMENT;
    } catch (const std::exception& e) {
        last_error = e.what();
        return LITPATH_SSSP_INTERNAL_ERROR;
    } catch (...) {
        last_error = "unknown error";
        return LITPATH_SSSP_INTERNAL_ERROR;
    }
}

// The cheap checks of every call (the full O(edges) one is check_csr's).
CsrGraph graph_of(std::int64_t n, const std::int64_t* row_ptr, const std::int64_t* col_idx, const float* cost,
                  const char* what) {
    if (n < 0) throw ArgumentError(std::string(what) + ": n = " + std::to_string(n) + " is negative");
    if (!row_ptr || (!col_idx && n > 0) || (!cost && n > 0))
        throw ArgumentError(std::string(what) + ": row_ptr, col_idx and cost must not be null");
    if (row_ptr[0] != 0 || row_ptr[n] < 0)
        throw ArgumentError(std::string(what) + ": row_ptr must start at 0 and end at the edge count");
    return CsrGraph{n, row_ptr, col_idx, cost};
}

void require(bool ok, const std::string& message) {
    if (!ok) throw ArgumentError(message);
}

// The ABI's path index as the search's view: the cheap checks of every call.
litpath::sssp::HubRows hub_rows_of(const litpath_sssp_hub_rows* hubs, bool need_min_cost) {
    litpath::sssp::HubRows view;
    if (!hubs) return view;
    require(hubs->rows >= 0, "path index: rows = " + std::to_string(hubs->rows) + " is negative");
    view.rows = hubs->rows;
    view.vertex = hubs->vertex;
    view.start = hubs->start;
    view.col = hubs->col;
    view.cost = hubs->cost;
    view.min_hub_cost = hubs->min_hub_cost;
    require(view.rows == 0 || (view.vertex && view.start && (!need_min_cost || view.min_hub_cost)),
            "path index: vertex, start and min_hub_cost must not be null");
    require(view.rows == 0 || view.start[0] == 0, "path index: start[0] must be 0");
    require(view.arc_count() == 0 || (view.col && view.cost), "path index: col and cost must not be null");
    return view;
}

// The ABI's deadline (seconds on CLOCK_MONOTONIC, +inf for none) as a point on
// the steady clock the search reads. Converted through the time left rather than
// by assuming both clocks share an epoch (they do on Linux with libstdc++, but
// nothing promises it).
litpath::sssp::Deadline deadline_of(double seconds) {
    using litpath::sssp::Deadline;
    require(!std::isnan(seconds), "deadline is NaN (INFINITY means none)");
    if (seconds == HUGE_VAL) return Deadline{};
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double monotonic_now = static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
    // Clamped so that the conversion cannot overflow: -1 s is as past as -inf,
    // and a year is as good as never for a query.
    const double left = std::clamp(seconds - monotonic_now, -1.0, 365.0 * 86400.0);
    return Deadline{Deadline::Clock::now() +
                    std::chrono::duration_cast<Deadline::Clock::duration>(std::chrono::duration<double>(left))};
}

}  // namespace

LITPATH_SSSP_EXPORT int litpath_sssp_abi_version(void) { return LITPATH_SSSP_ABI_VERSION; }

LITPATH_SSSP_EXPORT const char* litpath_sssp_last_error(void) { return last_error.c_str(); }

LITPATH_SSSP_EXPORT int litpath_sssp_check_csr(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                               const float* cost) {
    return guarded([&] {
        require(n >= 0 && row_ptr != nullptr, "CSR: n must be >= 0 and row_ptr not null");
        litpath::sssp::check_csr(CsrGraph{n, row_ptr, col_idx, cost}, "CSR");
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_rows(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                                          const int64_t* sources, int64_t count, int threads, float* rows_out) {
    return guarded([&] {
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        require(count >= 0, "count = " + std::to_string(count) + " is negative");
        require(count == 0 || (sources && rows_out), "sources and rows_out must not be null");
        litpath::sssp::distance_rows(graph, sources, count, rows_out, threads);
    });
}

LITPATH_SSSP_EXPORT int64_t litpath_sssp_rows_workspace_bytes(int64_t n, int64_t edges, int64_t rows, int threads) {
    return litpath::sssp::distance_rows_workspace_bytes(n, edges, rows, threads);
}

LITPATH_SSSP_EXPORT int litpath_sssp_symmetric_csr(int64_t n, int64_t m, const int64_t* src, const int64_t* dst,
                                                    const float* cost, int64_t* row_ptr_out, int64_t* col_idx_out,
                                                    float* cost_out) {
    return guarded([&] {
        require(n >= 0 && m >= 0, "n and m must be >= 0");
        require(row_ptr_out != nullptr, "row_ptr_out must not be null");
        require(m == 0 || (src && dst && cost && col_idx_out && cost_out), "the edge and CSR arrays must not be null");
        litpath::sssp::symmetric_csr_of_sorted_edges(n, m, src, dst, cost, row_ptr_out, col_idx_out, cost_out);
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_shortest_path(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                                   const float* cost, const int64_t* rev_row_ptr,
                                                   const int64_t* rev_col_idx, const float* rev_cost,
                                                   const litpath_sssp_hub_rows* hubs, int64_t source, int64_t target,
                                                   double* distance_out, int64_t* path_out, int64_t path_capacity,
                                                   int64_t* path_length_out, double deadline) {
    return guarded([&] {
        require(distance_out && path_length_out, "distance_out and path_length_out must not be null");
        require(path_capacity >= 0 && (path_capacity == 0 || path_out), "path_out must hold path_capacity entries");
        *path_length_out = 0;
        const Deadline until = deadline_of(deadline);
        const CsrGraph forward = graph_of(n, row_ptr, col_idx, cost, "CSR");
        const bool have_reverse = rev_row_ptr || rev_col_idx || rev_cost;
        CsrGraph reverse;
        if (have_reverse) {
            reverse = graph_of(n, rev_row_ptr, rev_col_idx, rev_cost, "reverse CSR");
            if (reverse.edge_count() != forward.edge_count())
                throw ArgumentError("the reverse CSR has " + std::to_string(reverse.edge_count()) +
                                    " edges, the forward one " + std::to_string(forward.edge_count()) +
                                    ": it is not the transpose");
        }
        const litpath::sssp::HubRows index = hub_rows_of(hubs, true);
        Lease spaces(n, until);
        const auto result = litpath::sssp::shortest_path(forward, have_reverse ? &reverse : nullptr, source, target,
                                                         *spaces, until, hubs ? &index : nullptr);
        *distance_out = result.distance;
        const auto length = static_cast<int64_t>(result.vertices.size());
        *path_length_out = length;
        if (length > path_capacity)
            throw BufferTooSmall("the path has " + std::to_string(length) + " vertices, path_out holds " +
                                 std::to_string(path_capacity));
        std::copy(result.vertices.begin(), result.vertices.end(), path_out);
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_nearest(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                             const float* cost, const litpath_sssp_hub_rows* hubs, int64_t source,
                                             const uint8_t* candidate_mask, int64_t k, int64_t* vertices_out,
                                             double* distances_out, int64_t* found_out, double deadline) {
    return guarded([&] {
        require(found_out != nullptr, "found_out must not be null");
        *found_out = 0;
        const Deadline until = deadline_of(deadline);
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        require(k >= 0, "k = " + std::to_string(k) + " is negative");
        require(candidate_mask != nullptr, "candidate_mask must not be null");
        require(k == 0 || (vertices_out && distances_out), "vertices_out and distances_out must hold k entries");
        const litpath::sssp::HubRows index = hub_rows_of(hubs, false);
        Lease spaces(n, until);
        const auto found = litpath::sssp::nearest(graph, source, candidate_mask, k, (*spaces).forward, until,
                                                  hubs ? &index : nullptr);
        for (std::size_t i = 0; i < found.size(); ++i) {
            vertices_out[i] = found[i].vertex;
            distances_out[i] = found[i].distance;
        }
        *found_out = static_cast<int64_t>(found.size());
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_k_shortest_paths(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                                      const float* cost, const litpath_sssp_hub_rows* hubs,
                                                      int64_t source, int64_t target, int64_t k,
                                                      const uint8_t* allowed, double* costs_out,
                                                      int64_t* offsets_out, int64_t* vertices_out,
                                                      int64_t vertices_capacity, int64_t* vertices_needed_out,
                                                      int64_t* found_out, double deadline) {
    return guarded([&] {
        require(found_out && vertices_needed_out, "found_out and vertices_needed_out must not be null");
        *found_out = 0;
        *vertices_needed_out = 0;
        const Deadline until = deadline_of(deadline);
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        require(k >= 0, "k = " + std::to_string(k) + " is negative");
        require(k == 0 || (costs_out && offsets_out), "costs_out and offsets_out must hold k and k + 1 entries");
        require(vertices_capacity >= 0 && (vertices_capacity == 0 || vertices_out),
                "vertices_out must hold vertices_capacity entries");
        const litpath::sssp::HubRows index = hub_rows_of(hubs, true);
        Lease spaces(n, until);
        const auto paths = litpath::sssp::k_shortest_paths(graph, source, target, k, allowed, *spaces, until,
                                                           hubs ? &index : nullptr);
        std::int64_t needed = 0;
        for (const auto& path : paths) needed += static_cast<std::int64_t>(path.vertices.size());
        *vertices_needed_out = needed;
        if (needed > vertices_capacity)
            throw BufferTooSmall("the paths have " + std::to_string(needed) + " vertices, vertices_out holds " +
                                 std::to_string(vertices_capacity));
        std::int64_t at = 0;
        for (std::size_t i = 0; i < paths.size(); ++i) {
            costs_out[i] = paths[i].distance;
            offsets_out[i] = at;
            std::copy(paths[i].vertices.begin(), paths[i].vertices.end(), vertices_out + at);
            at += static_cast<std::int64_t>(paths[i].vertices.size());
        }
        offsets_out[paths.size()] = at;
        *found_out = static_cast<int64_t>(paths.size());
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_count_shortest_paths(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                                          const float* cost, const litpath_sssp_hub_rows* hubs,
                                                          int64_t source, int64_t target, const uint8_t* allowed,
                                                          double* distance_out, int64_t* paths_out,
                                                          int* saturated_out, double deadline) {
    return guarded([&] {
        require(distance_out && paths_out && saturated_out,
                "distance_out, paths_out and saturated_out must not be null");
        *paths_out = 0;
        *saturated_out = 0;
        const Deadline until = deadline_of(deadline);
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        const litpath::sssp::HubRows index = hub_rows_of(hubs, false);
        Lease spaces(n, until);
        const auto tie = litpath::sssp::count_shortest_paths(graph, source, target, allowed, *spaces, until,
                                                             hubs ? &index : nullptr);
        *distance_out = tie.distance;
        *paths_out = tie.paths;
        *saturated_out = tie.saturated ? 1 : 0;
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_hub_rows_choose(int64_t n, const int64_t* row_ptr, int64_t min_degree,
                                                     int64_t max_arcs, int64_t* vertex_out, int64_t capacity,
                                                     int64_t* rows_out) {
    return guarded([&] {
        require(rows_out != nullptr, "rows_out must not be null");
        require(n >= 0 && row_ptr != nullptr, "n must be >= 0 and row_ptr not null");
        require(capacity >= 0 && (capacity == 0 || vertex_out), "vertex_out must hold capacity entries");
        const auto hubs = litpath::sssp::choose_hubs(CsrGraph{n, row_ptr, nullptr, nullptr}, min_degree, max_arcs);
        *rows_out = static_cast<int64_t>(hubs.size());
        if (*rows_out > capacity)
            throw BufferTooSmall(std::to_string(hubs.size()) + " hubs, vertex_out holds " + std::to_string(capacity));
        std::copy(hubs.begin(), hubs.end(), vertex_out);
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_hub_rows_build(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                                    const float* cost, int64_t rows, const int64_t* vertex,
                                                    int64_t* start_out, uint32_t* col_out, float* cost_out,
                                                    int threads) {
    return guarded([&] {
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        require(rows >= 0 && start_out != nullptr, "rows must be >= 0 and start_out not null");
        require(rows == 0 || (vertex && col_out && cost_out), "vertex, col_out and cost_out must not be null");
        litpath::sssp::build_hub_rows(graph, vertex, rows, start_out, col_out, cost_out, threads);
    });
}

LITPATH_SSSP_EXPORT int litpath_sssp_hub_rows_check(int64_t n, const int64_t* row_ptr, const int64_t* col_idx,
                                                    const float* cost, const litpath_sssp_hub_rows* hubs,
                                                    float* min_hub_cost_out, int threads) {
    return guarded([&] {
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        require(hubs != nullptr, "hubs must not be null");
        require(hubs->rows == 0 || min_hub_cost_out, "min_hub_cost_out must hold hubs->rows entries");
        litpath::sssp::check_hub_rows(graph, hub_rows_of(hubs, false), min_hub_cost_out, threads);
    });
}

LITPATH_SSSP_EXPORT void litpath_sssp_set_workspace_limit(int64_t limit) { workspaces().set_limit(limit); }

LITPATH_SSSP_EXPORT int64_t litpath_sssp_release_idle_workspaces(double idle_seconds) {
    return workspaces().release_idle(std::isnan(idle_seconds) ? 0.0 : idle_seconds);
}

LITPATH_SSSP_EXPORT void litpath_sssp_workspace_stats(int64_t* busy_out, int64_t* idle_out, int64_t* idle_bytes_out) {
    workspaces().stats(busy_out, idle_out, idle_bytes_out);
}
