/* liblitpath_sssp.so: exact shortest paths on a CSR graph (core/sssp.hpp) behind
 * a small C ABI, for pipeline/sssp.py (ctypes) and any other caller.
 *
 * Conventions of every function:
 *  - the graph is a CSR of n vertices: the edges of u are u -> col_idx[e] with
 *    cost cost[e] for e in [row_ptr[u], row_ptr[u+1]); row_ptr has n + 1
 *    entries; costs are finite and >= 0. The caller owns every array, input and
 *    output; nothing is kept after a call returns (but see the workspaces).
 *  - The graph is NOT checked on each call (that is O(edges), as much as a
 *    query): call litpath_sssp_check_csr once per graph. Vertex ids and
 *    lengths are checked on every call.
 *  - Returns LITPATH_SSSP_OK (0) or an error code; then litpath_sssp_last_error()
 *    gives a message for the calling thread. No C++ exception crosses the ABI.
 *  - Distances are accumulated in double; unreachable is +inf.
 *  - Thread safety: every function may be called from several threads at once.
 *    shortest_path and nearest keep one search workspace per calling thread
 *    (O(n) memory, reused by later calls on that thread, so a query costs no
 *    O(n) clearing); litpath_sssp_release_workspace frees the caller's. At n
 *    vertices, a thread that has run both holds up to about 64 bytes a vertex:
 *    shortest_path two searches of a distance (double), a parent and a reached
 *    list (int64) each, 48 bytes; nearest one distance and reached list, 16
 *    bytes; plus 16 bytes a queued heap entry, about one a vertex reached.
 *  - Deadlines: shortest_path and nearest take `deadline`, an absolute time in
 *    seconds on CLOCK_MONOTONIC (clock_gettime; Python's time.monotonic() on
 *    Linux), or INFINITY for none. The search reads the clock about every
 *    millisecond of work (32768 settled vertices and scanned edges) and, past
 *    the deadline, stops with LITPATH_SSSP_DEADLINE_EXCEEDED, writing nothing
 *    else; the workspace stays valid for the next call. A deadline already past
 *    stops the search before it starts (source == target still answers 0).
 */
#ifndef LITPATH_SSSP_C_API_H
#define LITPATH_SSSP_C_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LITPATH_SSSP_ABI_VERSION 3 /* 3: deadline arguments */

enum litpath_sssp_status {
    LITPATH_SSSP_OK = 0,
    LITPATH_SSSP_INVALID_ARGUMENT = 1, /* bad vertex id, length, or graph (see the message) */
    LITPATH_SSSP_OUT_OF_MEMORY = 2,
    LITPATH_SSSP_BUFFER_TOO_SMALL = 3, /* shortest_path: *path_length_out says how many are needed */
    LITPATH_SSSP_INTERNAL_ERROR = 4,
    LITPATH_SSSP_DEADLINE_EXCEEDED = 5 /* shortest_path, nearest: stopped at `deadline`, no answer */
};

/* LITPATH_SSSP_ABI_VERSION of the library (callers check it matches). */
int litpath_sssp_abi_version(void);

/* Message of the last failed call on this thread ("" when none). Valid until
 * the next call on this thread. */
const char* litpath_sssp_last_error(void);

/* Checks a CSR completely: row_ptr[0] == 0 and non-decreasing, every column in
 * 0..n-1, every cost finite and >= 0. The message names the first bad entry. */
int litpath_sssp_check_csr(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost);

/* rows_out[i * n + v] = distance from sources[i] to v (float32 rounded from
 * double), for i < count: a row-major count x n matrix. OpenMP threads over the
 * sources; threads <= 0 takes OpenMP's default (OMP_NUM_THREADS, else the CPUs). */
int litpath_sssp_rows(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                      const int64_t* sources, int64_t count, int threads, float* rows_out);

/* Bytes litpath_sssp_rows (and apsp-fw --sources) needs besides the CSR and the
 * rows, for `rows` rows of a graph of n vertices and `edges` arcs on `threads`
 * threads (the planner's estimate is checked against this). */
int64_t litpath_sssp_rows_workspace_bytes(int64_t n, int64_t edges, int64_t rows, int threads);

/* The symmetric CSR of m undirected edges src[i] < dst[i] < n, given sorted by
 * (src, dst) and distinct: both directions, rows sorted by column, no diagonal
 * (the graph.bp layout). row_ptr_out has n + 1 entries, col_idx_out and
 * cost_out 2 * m. One counting pass, no sort. The message names the first edge
 * out of range or out of order. */
int litpath_sssp_symmetric_csr(int64_t n, int64_t m, const int64_t* src, const int64_t* dst, const float* cost,
                               int64_t* row_ptr_out, int64_t* col_idx_out, float* cost_out);

/* A shortest source -> target path by bidirectional Dijkstra. The reverse CSR
 * (rev_*: the transpose, row v lists the u with an edge u -> v) is searched
 * backward from the target; pass three NULLs when the graph is symmetric and
 * the forward CSR serves both ways. On success *distance_out is the distance
 * (+inf when unreachable; then *path_length_out = 0), and path_out[0 ..
 * *path_length_out) holds source .. target. The distance equals the sum, in
 * path order and in double, of the path's (cheapest parallel) edge costs. When
 * path_capacity is too small: LITPATH_SSSP_BUFFER_TOO_SMALL with
 * *path_length_out set to the length needed (call again with that much).
 * deadline: see the conventions (INFINITY: none). */
int litpath_sssp_shortest_path(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                               const int64_t* rev_row_ptr, const int64_t* rev_col_idx, const float* rev_cost,
                               int64_t source, int64_t target, double* distance_out, int64_t* path_out,
                               int64_t path_capacity, int64_t* path_length_out, double deadline);

/* The k vertices v != source with candidate_mask[v] != 0 nearest to source:
 * exactly the first min(k, reachable candidates) in (distance, vertex id)
 * order, written sorted that way to vertices_out[0 .. *found_out) and
 * distances_out (double); both buffers hold k entries. candidate_mask has n
 * bytes. deadline: see the conventions (INFINITY: none); past it *found_out
 * is 0. */
int litpath_sssp_nearest(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                         int64_t source, const uint8_t* candidate_mask, int64_t k, int64_t* vertices_out,
                         double* distances_out, int64_t* found_out, double deadline);

/* Frees the calling thread's shortest_path / nearest workspaces (the next call
 * on this thread allocates them again: O(n)) and, with glibc, returns the freed
 * pages to the system (malloc_trim). A pool thread that has been idle a while
 * should call it; a thread that holds none pays nothing. */
void litpath_sssp_release_workspace(void);

#ifdef __cplusplus
}
#endif

#endif /* LITPATH_SSSP_C_API_H */
