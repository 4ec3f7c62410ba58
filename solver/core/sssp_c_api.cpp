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
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "core/sssp.hpp"

#define LITPATH_SSSP_EXPORT extern "C" __attribute__((visibility("default")))

using litpath::sssp::CsrGraph;

namespace {

thread_local std::string last_error;

// Search workspaces of this thread, kept between queries (sized for one n).
thread_local std::unique_ptr<litpath::sssp::PathSpaces> path_spaces;
thread_local std::unique_ptr<litpath::sssp::SearchSpace> nearest_space;

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
                                                   const int64_t* rev_col_idx, const float* rev_cost, int64_t source,
                                                   int64_t target, double* distance_out, int64_t* path_out,
                                                   int64_t path_capacity, int64_t* path_length_out,
                                                   double deadline) {
    return guarded([&] {
        require(distance_out && path_length_out, "distance_out and path_length_out must not be null");
        require(path_capacity >= 0 && (path_capacity == 0 || path_out), "path_out must hold path_capacity entries");
        *path_length_out = 0;
        const litpath::sssp::Deadline until = deadline_of(deadline);
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
        if (!path_spaces || path_spaces->forward.vertex_count() != n)
            path_spaces = std::make_unique<litpath::sssp::PathSpaces>(n);
        const auto result =
            litpath::sssp::shortest_path(forward, have_reverse ? &reverse : nullptr, source, target, *path_spaces, until);
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
                                             const float* cost, int64_t source, const uint8_t* candidate_mask,
                                             int64_t k, int64_t* vertices_out, double* distances_out,
                                             int64_t* found_out, double deadline) {
    return guarded([&] {
        require(found_out != nullptr, "found_out must not be null");
        *found_out = 0;
        const litpath::sssp::Deadline until = deadline_of(deadline);
        const CsrGraph graph = graph_of(n, row_ptr, col_idx, cost, "CSR");
        require(k >= 0, "k = " + std::to_string(k) + " is negative");
        require(candidate_mask != nullptr, "candidate_mask must not be null");
        require(k == 0 || (vertices_out && distances_out), "vertices_out and distances_out must hold k entries");
        if (!nearest_space || nearest_space->vertex_count() != n)
            nearest_space = std::make_unique<litpath::sssp::SearchSpace>(n);
        const auto found = litpath::sssp::nearest(graph, source, candidate_mask, k, *nearest_space, until);
        for (std::size_t i = 0; i < found.size(); ++i) {
            vertices_out[i] = found[i].vertex;
            distances_out[i] = found[i].distance;
        }
        *found_out = static_cast<int64_t>(found.size());
    });
}

LITPATH_SSSP_EXPORT void litpath_sssp_release_workspace(void) {
    const bool held = path_spaces || nearest_space;
    path_spaces.reset();
    nearest_space.reset();
#ifdef __GLIBC__
    // glibc keeps freed blocks of a thread's arena for reuse: the workspaces'
    // pages stay resident (measured: half of them) until trimmed.
    if (held) malloc_trim(0);
#endif
}
