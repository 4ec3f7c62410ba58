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
 *  - Search workspaces: shortest_path, nearest, k_shortest_paths and
 *    count_shortest_paths search in a workspace of
 *    O(n) memory taken from one pool shared by all threads and given back when
 *    the call returns, so a query costs no O(n) allocation or clearing.
 *    litpath_sssp_set_workspace_limit bounds how many exist at once (a call that
 *    finds them all busy waits, until its deadline at most);
 *    litpath_sssp_release_idle_workspaces frees those unused for a while. At n
 *    vertices one workspace holds two searches of a distance (double), a parent
 *    and a reached list (int64): 48 bytes a vertex once a search has reached
 *    every vertex, plus 16 bytes a queued heap entry (about one a vertex
 *    reached), and one byte a vertex once k_shortest_paths has used it (its
 *    root-path marks); a search that reaches few vertices touches few of those pages.
 *  - Path index (struct litpath_sssp_hub_rows, core/sssp_hub_rows.hpp): the
 *    rows of the highest-degree vertices sorted by cost, which shortest_path
 *    and nearest relax in cost order as far as they need: the same distances,
 *    far fewer arcs. NULL: the plain search. Like the CSR it is checked once
 *    (litpath_sssp_hub_rows_check), not on each call.
 *  - Deadlines: the four searches above take `deadline`, an absolute time in
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

#define LITPATH_SSSP_ABI_VERSION 5 /* 3: deadline arguments; 4: path index, shared workspaces;
                                      5: k_shortest_paths, count_shortest_paths */

enum litpath_sssp_status {
    LITPATH_SSSP_OK = 0,
    LITPATH_SSSP_INVALID_ARGUMENT = 1, /* bad vertex id, length, or graph (see the message) */
    LITPATH_SSSP_OUT_OF_MEMORY = 2,
    LITPATH_SSSP_BUFFER_TOO_SMALL = 3, /* shortest_path: *path_length_out says how many are needed */
    LITPATH_SSSP_INTERNAL_ERROR = 4,
    LITPATH_SSSP_DEADLINE_EXCEEDED = 5 /* shortest_path, nearest: stopped at `deadline`, no answer */
};

/* A path index over a graph of n vertices (every array owned by the caller):
 * hub r is vertex vertex[r] (strictly ascending), its arcs are col[e], cost[e]
 * for e in [start[r], start[r + 1]) sorted by (cost, column), and
 * min_hub_cost[r] is its cheapest arc to another hub (+inf: none), as
 * litpath_sssp_hub_rows_check computes it. */
typedef struct litpath_sssp_hub_rows {
    int64_t rows;
    const int64_t* vertex;
    const int64_t* start;
    const uint32_t* col;
    const float* cost;
    const float* min_hub_cost;
} litpath_sssp_hub_rows;

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
 * the forward CSR serves both ways. hubs: a path index of this graph, or NULL
 * (symmetric graphs only). On success *distance_out is the distance (+inf when
 * unreachable; then *path_length_out = 0), and path_out[0 ..
 * *path_length_out) holds source .. target. The distance equals the sum, in
 * path order and in double, of the path's (cheapest parallel) edge costs. When
 * path_capacity is too small: LITPATH_SSSP_BUFFER_TOO_SMALL with
 * *path_length_out set to the length needed (call again with that much).
 * deadline: see the conventions (INFINITY: none). */
int litpath_sssp_shortest_path(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                               const int64_t* rev_row_ptr, const int64_t* rev_col_idx, const float* rev_cost,
                               const litpath_sssp_hub_rows* hubs, int64_t source, int64_t target,
                               double* distance_out, int64_t* path_out, int64_t path_capacity,
                               int64_t* path_length_out, double deadline);

/* The k vertices v != source with candidate_mask[v] != 0 nearest to source:
 * exactly the first min(k, reachable candidates) in (distance, vertex id)
 * order, written sorted that way to vertices_out[0 .. *found_out) and
 * distances_out (double); both buffers hold k entries. candidate_mask has n
 * bytes. hubs: a path index of this graph, or NULL. deadline: see the
 * conventions (INFINITY: none); past it *found_out is 0. */
int litpath_sssp_nearest(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                         const litpath_sssp_hub_rows* hubs, int64_t source, const uint8_t* candidate_mask, int64_t k,
                         int64_t* vertices_out, double* distances_out, int64_t* found_out, double deadline);

/* The k shortest loopless source -> target paths of a symmetric graph, cheapest
 * first (Yen's algorithm, each spur search the bidirectional Dijkstra above;
 * core/sssp_k_paths.hpp). allowed: n bytes, 0 = the vertex may not be an
 * intermediate vertex of a path (the two endpoints are never filtered), or NULL
 * for no filter. hubs: a path index of this graph, or NULL. On success
 * *found_out paths (at most k) are written: path i is vertices_out[offsets_out[i]
 * .. offsets_out[i + 1]) with cost costs_out[i] (the sum of its edge costs in
 * double, in path order). costs_out holds k entries, offsets_out k + 1. When
 * vertices_capacity is too small: LITPATH_SSSP_BUFFER_TOO_SMALL with
 * *vertices_needed_out set to the number needed (call again with that many).
 * deadline: see the conventions (INFINITY: none); past it *found_out is 0. */
int litpath_sssp_k_shortest_paths(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                                  const litpath_sssp_hub_rows* hubs, int64_t source, int64_t target, int64_t k,
                                  const uint8_t* allowed, double* costs_out, int64_t* offsets_out,
                                  int64_t* vertices_out, int64_t vertices_capacity, int64_t* vertices_needed_out,
                                  int64_t* found_out, double deadline);

/* How many distinct loopless source -> target paths share the shortest distance
 * (on the vertices `allowed` keeps, as above): *distance_out (+inf when
 * unreachable, then *paths_out = 0) and *paths_out; *saturated_out = 1 when the
 * count is a lower bound (it reached INT64_MAX, or the enumeration of paths
 * across zero-cost edges reached its work bound; core/sssp_k_paths.hpp). */
int litpath_sssp_count_shortest_paths(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                                      const litpath_sssp_hub_rows* hubs, int64_t source, int64_t target,
                                      const uint8_t* allowed, double* distance_out, int64_t* paths_out,
                                      int* saturated_out, double deadline);

/* The hubs of a path index: the rows of at least min_degree arcs, largest
 * first (ties: smaller id first), as many as fit in max_arcs arcs in all,
 * written ascending to vertex_out[0 .. *rows_out). When capacity is too small:
 * LITPATH_SSSP_BUFFER_TOO_SMALL with *rows_out set to the count needed. */
int litpath_sssp_hub_rows_choose(int64_t n, const int64_t* row_ptr, int64_t min_degree, int64_t max_arcs,
                                 int64_t* vertex_out, int64_t capacity, int64_t* rows_out);

/* Builds the path index of the `rows` hubs vertex[0 .. rows) (strictly
 * ascending): start_out (rows + 1 entries) and col_out, cost_out (start_out[rows]
 * = the hubs' degrees summed: ask litpath_sssp_hub_rows_choose's caller) hold
 * each hub's row sorted by (cost, column). threads <= 0: OpenMP's default.
 * Needs n <= 2^32 (32-bit columns). */
int litpath_sssp_hub_rows_build(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                                int64_t rows, const int64_t* vertex, int64_t* start_out, uint32_t* col_out,
                                float* cost_out, int threads);

/* Checks a path index against its graph (hubs->min_hub_cost is not read) and
 * writes min_hub_cost_out (hubs->rows entries): ids ascending and in range,
 * each row the same arcs as the graph's (compared by count and by an
 * order-independent 64-bit hash) sorted by (cost, column), each hub's graph row
 * sorted by column. The message names the first problem. O(indexed arcs). */
int litpath_sssp_hub_rows_check(int64_t n, const int64_t* row_ptr, const int64_t* col_idx, const float* cost,
                                const litpath_sssp_hub_rows* hubs, float* min_hub_cost_out, int threads);

/* At most `limit` search workspaces exist at once (0: no limit, the default);
 * a shortest_path or nearest call that finds them all busy waits for one, at
 * most until its deadline (then LITPATH_SSSP_DEADLINE_EXCEEDED). Idle
 * workspaces beyond a lowered limit are freed. */
void litpath_sssp_set_workspace_limit(int64_t limit);

/* Frees the idle workspaces unused for at least idle_seconds (0: every idle
 * one) and, with glibc, returns the freed pages to the system (malloc_trim).
 * Returns the bytes freed. Workspaces in use are never touched. */
int64_t litpath_sssp_release_idle_workspaces(double idle_seconds);

/* How many workspaces are in use and idle, and the bytes the idle ones hold. */
void litpath_sssp_workspace_stats(int64_t* busy_out, int64_t* idle_out, int64_t* idle_bytes_out);

#ifdef __cplusplus
}
#endif

#endif /* LITPATH_SSSP_C_API_H */
