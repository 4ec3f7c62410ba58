// Exact shortest paths on a sparse graph without the dense n x n matrix:
// Dijkstra's algorithm on a CSR, for graphs of millions of vertices.
//
//   distances_from      one source, every vertex (a distance row)
//   distance_rows       many sources, OpenMP threads over the sources
//   shortest_path       one pair: bidirectional Dijkstra, distance and path
//   nearest             the k nearest candidate vertices of a source
//   shortest_path with a SearchMask, settle_shortest_path_region
//                       the same search without some vertices or edges, and the
//                       region of a pair's shortest paths: the steps of
//                       core/sssp_k_paths.hpp (k shortest paths, tie counts)
//
// shortest_path and nearest serve the path service's queries and take a
// Deadline: one unreachable pair explores a whole component (seconds at
// millions of vertices), and a request must be able to give up.
//
// No MPI and no ADIOS2 here: apsp-fw --sources and liblitpath_sssp.so (the C ABI
// in sssp_c_api.cpp, used by pipeline/sssp.py) both build on this file.
//
// Contract shared by every function:
//  - the graph is a CSR: the edges of u are u -> col_idx[e] with cost cost[e]
//    for e in [row_ptr[u], row_ptr[u+1]); duplicates and self-loops are allowed
//    (the cheapest parallel edge wins); the caller owns the arrays;
//  - costs are finite and >= 0 (zero allowed); check_csr says whether they are;
//  - distances accumulate in double; rows written as float32 are rounded from
//    the double result once, at the end; unreachable is +inf.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

namespace litpath::sssp {

struct HubRows;  // core/sssp_hub_rows.hpp: the path index

inline constexpr double kUnreachable = std::numeric_limits<double>::infinity();

// A borrowed view of a CSR graph with n vertices (nothing is copied).
struct CsrGraph {
    std::int64_t n = 0;
    const std::int64_t* row_ptr = nullptr;  // n + 1 entries, row_ptr[0] == 0
    const std::int64_t* col_idx = nullptr;  // row_ptr[n] entries, each in [0, n)
    const float* cost = nullptr;            // row_ptr[n] entries, finite, >= 0

    std::int64_t edge_count() const { return n > 0 ? row_ptr[n] : 0; }
};

// Throws std::invalid_argument naming the first bad entry (e.g. "col_idx[17] =
// 40 is outside 0..31"): row_ptr starts at 0 and never decreases, columns are in
// range, costs are finite and non-negative. `what` prefixes the message
// ("reverse CSR"). Costs O(n + edges): done once per graph, not per query.
void check_csr(const CsrGraph& graph, const char* what = "CSR");

// The priority queue of Dijkstra's algorithm: a radix heap (Ahuja, Mehlhorn,
// Orlin and Tarjan 1990) over the bit patterns of non-negative doubles, which
// order like the doubles themselves. It relies on Dijkstra's pushes being
// monotone (never below the last popped distance): bucket 0 holds the entries
// equal to the last popped key, bucket i > 0 those whose highest bit differing
// from it is bit i - 1. A push is an append; a pop that finds bucket 0 empty
// takes the first non-empty bucket, makes its minimum the new last key and
// re-buckets its entries lower. Measured against a 4-ary heap, one source on
// random graphs: 110 -> 66 ms at 0.2M vertices / 2M arcs, 2.5 -> 1.4 s at 2M /
// 22M: appends and sequential bucket scans instead of cache misses down a tree.
// Lazy deletion: a vertex whose distance improves is pushed again, and the
// outdated entry is skipped when it surfaces (its key exceeds the distance).
class RadixHeap {
public:
    struct Entry {
        double distance;
        std::int64_t vertex;
    };

    bool empty() const { return size_ == 0; }
    std::size_t size() const { return size_; }
    // The entry with the smallest distance (the heap must not be empty).
    const Entry& top() {
        refill_bucket_zero();
        return buckets_[0].back();
    }
    // distance must be >= the distance of the last pop (Dijkstra's order).
    void push(double distance, std::int64_t vertex) {
        buckets_[bucket_of(key_of(distance))].push_back(Entry{distance, vertex});
        ++size_;
    }
    Entry pop() {
        refill_bucket_zero();
        const Entry entry = buckets_[0].back();
        buckets_[0].pop_back();
        --size_;
        return entry;
    }
    // Empty again, ready for a new search from distance 0 (keeps the memory).
    void clear();
    // Bytes the buckets hold (their capacities).
    std::int64_t bytes() const;

private:
    static std::uint64_t key_of(double distance) {
        std::uint64_t key;
        std::memcpy(&key, &distance, sizeof key);
        return key;
    }
    int bucket_of(std::uint64_t key) const { return key == last_ ? 0 : 64 - __builtin_clzll(key ^ last_); }
    void refill_bucket_zero();

    std::vector<Entry> buckets_[65];
    std::uint64_t last_ = 0;  // key of the last popped minimum
    std::size_t size_ = 0;
};

// Per-thread state of one search, sized for n vertices and reused from search
// to search. Invariant between searches: every distance is +inf, `touched` and
// the heap are empty. A search appends each vertex it reaches to `touched`, and
// reset() restores only those, so a search that reaches few vertices costs no
// O(n) clearing. `parent` is kept only for path queries (with_parents).
struct SearchSpace {
    explicit SearchSpace(std::int64_t n, bool with_parents = false);

    std::int64_t vertex_count() const { return static_cast<std::int64_t>(distance.size()); }

    // Back to "nothing reached"; O(vertices reached since the last reset).
    void reset();

    // Bytes held now (the arrays' capacities, the heap's buckets included).
    std::int64_t bytes() const;

    std::vector<double> distance;      // +inf until reached
    // Predecessor on the search tree (paths only). Left uninitialised: a
    // vertex's parent is written when it is reached, and read only then.
    std::unique_ptr<std::int64_t[]> parent;
    std::vector<std::int64_t> touched;  // vertices reached, in the order reached
    RadixHeap heap;
    // With a path index (HubRows): the hub rows this search has settled, in
    // order, and for each of those the next arc of its cost-ordered row to
    // relax. hub_cursor is sized for the index's rows on first use and read
    // only for settled hubs, so reset() just empties settled_hubs.
    std::vector<std::int64_t> settled_hubs;
    std::vector<std::int64_t> hub_cursor;
};

// Distances from `source` to every vertex into row[0..n), float32 rounded from
// the double distances; row[v] = +inf when v is unreachable.
void distances_from(const CsrGraph& graph, std::int64_t source, SearchSpace& space, float* row);

// rows[i * n + v] = distance from sources[i] to v, for i < count (a row-major
// count x n float32 matrix owned by the caller). Not the heap search above: each
// row is a Dijkstra by distance buckets, whose relaxations are binned by the
// block of the vertex they update and applied a block at a time (see
// core/distance_rows.cpp for why and what it gains); the distances are the same
// (exact, accumulated in double). OpenMP threads take sources one at a time (a
// dynamic schedule: rows in a small component finish quickly). threads <= 0:
// OpenMP's default. on_row_done(done) is called after each row, from the thread
// that finished it, one call at a time (a mutex serialises them); `done` counts
// this call's finished rows. Results do not depend on the threads.
void distance_rows(const CsrGraph& graph, const std::int64_t* sources, std::int64_t count, float* rows,
                   int threads, const std::function<void(std::int64_t done)>& on_row_done = {});

// Bytes distance_rows needs besides the graph and the rows, for `rows` rows of
// a graph of n vertices and `edges` arcs on `threads` threads: the packed copy
// of the edges (8 bytes an arc) and each thread's search (about 32 bytes a
// vertex plus its bins, at most 96 MB).
std::int64_t distance_rows_workspace_bytes(std::int64_t n, std::int64_t edges, std::int64_t rows, int threads);

namespace detail {
// distance_rows with 8-byte vertex ids, which it uses only past 2^32 - 1
// vertices: for the tests, which check this path on small graphs.
void distance_rows_wide_ids(const CsrGraph& graph, const std::int64_t* sources, std::int64_t count, float* rows,
                            int threads);
}  // namespace detail

// The symmetric CSR (both directions, rows sorted by column, no diagonal) of m
// undirected edges src[i] < dst[i] < n given sorted by (src, dst) and distinct,
// the order of the graph stage's edges table. One counting pass, no sort: row r
// receives its reverse entries (s, r) in ascending s (the edges come in
// ascending src), then its forward entries (r, d) in ascending d, and every s < r
// < d. row_ptr has n + 1 entries, col_idx and cost_out 2 * m. Throws
// std::invalid_argument naming the first edge out of range or out of order.
void symmetric_csr_of_sorted_edges(std::int64_t n, std::int64_t m, const std::int64_t* src, const std::int64_t* dst,
                                   const float* cost, std::int64_t* row_ptr, std::int64_t* col_idx, float* cost_out);

// When a query search must give up: a point on the steady clock (CLOCK_MONOTONIC
// on Linux, the clock of Python's time.monotonic()). The default never comes. A
// search reads the clock each time it has done kDeadlineWork units of work (a
// settled vertex is one, each edge it scans one more: counting edges keeps a few
// hubs of a million edges from hiding seconds between two readings), about a
// millisecond apart, and once before it starts; past the deadline it throws
// DeadlineExceeded. Its search space is left as the next search's reset() expects.
struct Deadline {
    using Clock = std::chrono::steady_clock;
    Clock::time_point at = Clock::time_point::max();

    bool never() const { return at == Clock::time_point::max(); }
};

inline constexpr std::int64_t kDeadlineWork = std::int64_t{1} << 15;

class DeadlineExceeded : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct PathResult {
    // Shortest distance from source to target; +inf when target is unreachable.
    // It is the sum, in path order and in double, of the costs of the returned
    // path's edges (the cheapest of parallel edges), so summing the path gives it
    // back exactly.
    double distance = kUnreachable;
    std::vector<std::int64_t> vertices;  // source .. target; empty when unreachable
};

// Both directions of a bidirectional search, reused from query to query.
struct PathSpaces {
    explicit PathSpaces(std::int64_t n) : forward(n, true), backward(n, true) {}
    std::int64_t vertex_count() const { return forward.vertex_count(); }
    std::int64_t bytes() const {
        return forward.bytes() + backward.bytes() + static_cast<std::int64_t>(root_marks.capacity());
    }
    SearchSpace forward, backward;
    // k_shortest_paths' marks of the root path's vertices (core/sssp_k_paths.cpp):
    // n bytes, allocated on first use, all zero between calls.
    std::vector<std::uint8_t> root_marks;
};

// A shortest source -> target path by bidirectional Dijkstra: forward from the
// source on `forward`, backward from the target on `reverse` (the transpose of
// `forward`: row v lists the u with an edge u -> v). reverse == nullptr means
// the graph is symmetric and `forward` serves both ways. The searches stop once
// top_forward + top_backward >= the best meeting distance found, which proves
// it shortest. The path is simple (no repeated vertex) even with zero-cost
// cycles. source == target gives distance 0 and the path [source].
// `hubs` (core/sssp_hub_rows.hpp, checked once with check_hub_rows against this
// graph; symmetric graphs only) relaxes the hubs' arcs in cost order as the
// search reaches them instead of all at once: the same distance, far fewer arcs.
// Throws std::invalid_argument when `reverse` is not the transpose of `forward`
// (an edge on the path is missing from `forward`) or `hubs` comes with a
// `reverse`, DeadlineExceeded past `deadline`.
PathResult shortest_path(const CsrGraph& forward, const CsrGraph* reverse, std::int64_t source,
                         std::int64_t target, PathSpaces& spaces, const Deadline& deadline = {},
                         const HubRows* hubs = nullptr);

// What a masked search may not use (core/sssp_k_paths.hpp: Yen's spur searches
// remove the vertices of the root path and some edges of the spur vertex; the
// semantic-type filters remove vertices). Nothing is copied.
struct SearchMask {
    static constexpr bool kBounded = false;  // no bound on the distances reached (core/sssp.cpp)
    // n bytes; blocked[v] != 0: no arc into v is relaxed (null: none blocked).
    // The search's own source is reached whatever it says.
    const std::uint8_t* blocked = nullptr;
    // n bytes; allowed[v] == 0: no arc into v is relaxed either, except into
    // `exempt` and `exempt_source` (the query's target and the search's own
    // source, which a filter on intermediate vertices never removes; the masked
    // shortest_path sets exempt_source itself). Null: every vertex allowed.
    const std::uint8_t* allowed = nullptr;
    std::int64_t exempt = -1;
    std::int64_t exempt_source = -1;
    // The undirected edges between cut_vertex and each of cut[0 .. cut_count)
    // are removed, both ways (every parallel edge of such a pair).
    std::int64_t cut_vertex = -1;
    const std::int64_t* cut = nullptr;
    std::int64_t cut_count = 0;

    bool allows(std::int64_t u, std::int64_t v) const {
        if (blocked && blocked[v]) return false;
        if (allowed && !allowed[v] && v != exempt && v != exempt_source) return false;
        return allows_edge(u, v);
    }
    // Whether the edge u - v is not cut (whatever its ends' marks).
    bool allows_edge(std::int64_t u, std::int64_t v) const {
        if (cut_count == 0) return true;
        if (u == cut_vertex) return !cuts(v);
        if (v == cut_vertex) return !cuts(u);
        return true;
    }
    bool cuts(std::int64_t w) const {
        for (std::int64_t i = 0; i < cut_count; ++i)
            if (cut[i] == w) return true;
        return false;
    }
};

// shortest_path on a symmetric graph without what `mask` removes: the same
// search (hubs included), with every arc checked against the mask. A blocked
// target is unreachable.
PathResult shortest_path(const CsrGraph& graph, std::int64_t source, std::int64_t target, const SearchMask& mask,
                         PathSpaces& spaces, const Deadline& deadline = {}, const HubRows* hubs = nullptr);

// The shortest-path region of source -> target on the arcs `mask` allows, for
// counting shortest paths (core/sssp_k_paths.hpp): afterwards
// spaces.forward.distance holds the exact distance from the source of every
// vertex on a shortest path (and of others, some of them overestimated: those
// are on no shortest path). Returns the target's distance (+inf: unreachable).
// How: the pair search gives the distance D; a backward search settles every
// vertex within D / 2 of the target, so min(dt, D / 2) bounds any vertex's
// distance to the target from below; the forward search then settles every
// vertex up to the target's distance (zero-cost ties included) but expands only
// those with dist + bound <= D (plus a 1e-9 relative slack for rounding), which
// every vertex of a shortest path satisfies -- two balls of about D / 2 instead
// of one of D. `hubs`: as for shortest_path. Throws DeadlineExceeded past
// `deadline`; the next search's reset() clears the spaces.
double settle_shortest_path_region(const CsrGraph& graph, std::int64_t source, std::int64_t target,
                                   const SearchMask& mask, PathSpaces& spaces, const Deadline& deadline = {},
                                   const HubRows* hubs = nullptr);

struct Neighbour {
    std::int64_t vertex;
    double distance;
};

// The k candidate vertices nearest to `source`: v with candidate_mask[v] != 0,
// v != source, reachable. Guarantee: the result is exactly the first
// min(k, reachable candidates) of all reachable candidates ordered by
// (distance, vertex id), with distances in double. Ties at the k-th distance are
// settled completely before choosing, so the smaller ids win even when an equal
// distance is reached late (over zero-cost edges). Sorted by (distance, id).
// Throws DeadlineExceeded past `deadline` (nothing found so far is returned).
// `hubs`: as for shortest_path (the same result, fewer arcs relaxed).
std::vector<Neighbour> nearest(const CsrGraph& graph, std::int64_t source, const std::uint8_t* candidate_mask,
                               std::int64_t k, SearchSpace& space, const Deadline& deadline = {},
                               const HubRows* hubs = nullptr);

}  // namespace litpath::sssp
