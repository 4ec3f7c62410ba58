// distance_rows (declared in core/sssp.hpp): the distance rows of many sources,
// by Dijkstra's algorithm with distance buckets and blocked relaxations.
//
// Why not the heap searches of sssp.cpp: on a graph of millions of vertices a
// heap-ordered search is a chain of cache misses -- every relaxation reads the
// distance of a random vertex in an array far larger than the cache (16 MB at
// 2M vertices) -- and a row of the 10M-predication synth graph cost ~0.9 s of a
// thread that way. Three ideas turn most of those misses into streams or cache hits:
//
//  1. Buckets of width delta (Dial 1969; Dinitz 1978). When delta is at most
//     the smallest edge cost, every vertex in the lowest non-empty bucket
//     [k delta, (k+1) delta) already has its final distance (a path through any
//     other unsettled vertex costs at least (k+1) delta), so the whole bucket is
//     settled as a set, in any order -- here in vertex order, which walks the
//     CSR forwards instead of jumping around it. Edges cheaper than delta (zero
//     costs, or a delta raised because the cost range is huge) can improve a
//     vertex of the current bucket after it was expanded; it is then expanded
//     again in a further round of the same bucket (the label-correcting rounds
//     of Meyer and Sanders' delta-stepping), so the distances stay exact.
//  2. Blocked relaxations (propagation blocking: Beamer, Asanovic and Patterson,
//     IPDPS 2017). Expanding a vertex does not touch its neighbours' distances:
//     it appends (neighbour, candidate distance) to the bin of the neighbour's
//     block of 2^kBlockShift vertices. The bins are applied one block at a time,
//     so the distance updates stay within 512 KB, which the L2 cache holds.
//  3. The hubs in cache. The search reads a copy of the graph renumbered by
//     degree, largest first, packed (a 4-byte column and the float cost side by
//     side: 8 bytes an edge instead of 12 in two arrays) and built once per call
//     for all threads. The first block then holds the hubs, which most edges
//     reach (the concepts of a concept-abstract graph); its distances stay in
//     the L2 cache, so its edges are relaxed at once, without a bin.
//
// Measured on the full graph of the 10M-predication synth corpus (2.0M
// vertices, 56M arcs; AMD EPYC, 2 threads, 32 rows, one run each on a quiet
// machine): the interleaved radix-heap searches this replaced 14.0 s; buckets
// and bins with std::sort 9.8 s (1.2 s of it sorting); radix sort 9.6 s;
// renumbered 9.3 s; first block relaxed at once 7.8 s. bench/sssp_rows.py
// compares with scipy.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sssp.hpp"

namespace litpath::sssp {
namespace {

// A block of 65,536 vertices: 512 KB of double distances.
constexpr int kBlockShift = 16;
// delta is never below (largest cost) / kMaxBucketsPerCost, which bounds the
// ring of buckets at about that many (the cost of a very small smallest cost
// is a few more label-correcting rounds, not a huge ring).
constexpr double kMaxBucketsPerCost = 4096;
// Candidates held before they are applied, over all bins: 4 per vertex, within
// these bounds (at most 96 MB a search; a few KB on a graph of a few vertices).
constexpr std::int64_t kMinPendingCandidates = 64;
constexpr std::int64_t kMaxPendingCandidates = std::int64_t{1} << 23;
constexpr std::size_t kMinBinCapacity = 64;
// How many vertices ahead of the one expanded its CSR row is prefetched.
constexpr std::size_t kRowPrefetch = 8;

// A vertex with a distance: a candidate in a bin, or an entry of a bucket.
// Packed: 12 bytes with 4-byte vertex ids (the streams are the cost here).
template <typename Vertex>
struct __attribute__((packed)) Labelled {
    Vertex vertex;
    double distance;
};

template <typename Vertex>
struct PackedEdge {
    Vertex to;
    float cost;
};

// The graph as the searches read it, and the bucket width it allows. Its
// vertices are renumbered by degree, largest first (`position[v]` is the new
// number of vertex v): the hubs a search relaxes again and again then share a
// few cache lines of distances, and most candidates go to the first block,
// which stays in cache (see the measurements at the top of the file).
template <typename Vertex>
struct PackedGraph {
    std::int64_t n = 0;
    std::vector<std::int64_t> row_ptr;     // n + 1 entries, in the new numbering
    std::vector<PackedEdge<Vertex>> edges;  // targets in the new numbering
    std::vector<Vertex> position;           // old vertex id -> new
    double bucket_width = 1.0;
    std::size_t ring_size = 2;  // buckets that can hold entries at one time
};

// Vertex ids ordered by degree, largest first (ties by id: deterministic).
template <typename Vertex>
std::vector<Vertex> by_degree(const CsrGraph& graph) {
    std::vector<Vertex> order(static_cast<std::size_t>(graph.n));
    for (std::int64_t v = 0; v < graph.n; ++v) order[static_cast<std::size_t>(v)] = static_cast<Vertex>(v);
    const std::int64_t* row_ptr = graph.row_ptr;
    std::stable_sort(order.begin(), order.end(), [row_ptr](Vertex a, Vertex b) {
        return row_ptr[a + 1] - row_ptr[a] > row_ptr[b + 1] - row_ptr[b];
    });
    return order;
}

template <typename Vertex>
PackedGraph<Vertex> pack(const CsrGraph& graph, int threads) {
    PackedGraph<Vertex> packed;
    const std::int64_t n = graph.n;
    packed.n = n;
    const std::vector<Vertex> order = by_degree<Vertex>(graph);
    packed.position.resize(static_cast<std::size_t>(n));
    packed.row_ptr.assign(static_cast<std::size_t>(n) + 1, 0);
    for (std::int64_t i = 0; i < n; ++i) {
        const Vertex old = order[static_cast<std::size_t>(i)];
        packed.position[old] = static_cast<Vertex>(i);
        packed.row_ptr[static_cast<std::size_t>(i) + 1] =
            packed.row_ptr[static_cast<std::size_t>(i)] + graph.row_ptr[old + 1] - graph.row_ptr[old];
    }
    packed.edges.resize(static_cast<std::size_t>(graph.edge_count()));
    float smallest_positive = std::numeric_limits<float>::infinity();
    float largest = 0.0f;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 4096) reduction(min : smallest_positive) \
    reduction(max : largest)
    for (std::int64_t i = 0; i < n; ++i) {
        const Vertex old = order[static_cast<std::size_t>(i)];
        std::int64_t to = packed.row_ptr[static_cast<std::size_t>(i)];
        for (std::int64_t e = graph.row_ptr[old]; e < graph.row_ptr[old + 1]; ++e, ++to) {
            const float c = graph.cost[e];
            packed.edges[static_cast<std::size_t>(to)] = PackedEdge<Vertex>{packed.position[graph.col_idx[e]], c};
            if (c > 0.0f) smallest_positive = std::min(smallest_positive, c);
            largest = std::max(largest, c);
        }
    }
    if (largest > 0.0f) {
        packed.bucket_width = std::max(static_cast<double>(smallest_positive), largest / kMaxBucketsPerCost);
        // While bucket k is settled, new entries have distances below
        // (k + 1) delta + largest, i.e. buckets k .. k + ceil(largest / delta) + 1
        // (one more for rounding): a ring that size never mixes two of them.
        packed.ring_size = static_cast<std::size_t>(std::ceil(largest / packed.bucket_width)) + 3;
    }  // else every cost is zero: all distances are 0 or +inf, one bucket (width 1) holds them
    return packed;
}

// The bins of a search on n vertices: one per block, each holding `capacity`
// candidates (the pending candidates shared out, at least kMinBinCapacity).
struct BinLayout {
    std::size_t blocks = 1;
    std::size_t capacity = kMinBinCapacity;
};
BinLayout bin_layout(std::int64_t n) {
    BinLayout layout;
    layout.blocks = static_cast<std::size_t>(((std::max<std::int64_t>(n, 1) - 1) >> kBlockShift) + 1);
    const auto pending = std::clamp<std::int64_t>(4 * n, kMinPendingCandidates, kMaxPendingCandidates);
    layout.capacity = std::max<std::size_t>(static_cast<std::size_t>(pending) / layout.blocks, kMinBinCapacity);
    return layout;
}

// One thread's search, reused from source to source.
template <typename Vertex>
class BucketSearch {
public:
    explicit BucketSearch(const PackedGraph<Vertex>& graph)
        : graph_(graph),
          distance_(static_cast<std::size_t>(graph.n), kUnreachable),
          ring_(graph.ring_size),
          blocks_(bin_layout(graph.n).blocks),
          bin_capacity_(bin_layout(graph.n).capacity),
          bins_(blocks_ * bin_capacity_),
          bin_fill_(blocks_, 0),
          vertex_bits_(graph.n > 1 ? 64 - __builtin_clzll(static_cast<unsigned long long>(graph.n - 1)) : 1) {}

    // The distances from source into row[0..n) (float32, +inf unreachable),
    // both in the graph's own vertex numbering.
    void run(std::int64_t source, float* row) {
        const Vertex start = graph_.position[static_cast<std::size_t>(source)];
        distance_[start] = 0.0;
        push(start, 0.0);
        for (std::size_t k = 0; pending_ > 0; ++k) settle_bucket(ring_[k % ring_.size()]);
        const auto n = static_cast<std::size_t>(graph_.n);
        const Vertex* position = graph_.position.data();
        for (std::size_t v = 0; v < n; ++v) row[v] = static_cast<float>(distance_[position[v]]);
        std::fill(distance_.begin(), distance_.end(), kUnreachable);
    }

private:
    void push(Vertex v, double distance) {
        ring_[static_cast<std::size_t>(distance / graph_.bucket_width) % ring_.size()].push_back({v, distance});
        ++pending_;
    }

    // Settles every vertex of the lowest bucket: expands its entries in vertex
    // order, applies their candidates, and repeats while those put entries back
    // in this bucket (only edges cheaper than the bucket width can).
    void settle_bucket(std::vector<Labelled<Vertex>>& bucket) {
        while (!bucket.empty()) {
            current_.swap(bucket);
            pending_ -= current_.size();
            sort_by_vertex();
            expand_current();
            current_.clear();
            apply_bins();
        }
    }

    // Sorts current_ by vertex: a radix sort (11 bits a pass) for the large
    // rounds, where std::sort cost 14% of a search.
    void sort_by_vertex() {
        if (current_.size() < 4096) {
            std::sort(current_.begin(), current_.end(),
                      [](const Labelled<Vertex>& a, const Labelled<Vertex>& b) { return a.vertex < b.vertex; });
            return;
        }
        constexpr int kBits = 11;
        constexpr std::size_t kDigits = std::size_t{1} << kBits;
        sorted_.resize(current_.size());
        for (int shift = 0; shift < vertex_bits_; shift += kBits) {
            std::vector<std::size_t> start(kDigits + 1, 0);
            const auto digit = [shift](Vertex v) { return (static_cast<std::uint64_t>(v) >> shift) & (kDigits - 1); };
            for (const auto& entry : current_) ++start[digit(entry.vertex) + 1];
            for (std::size_t d = 0; d < kDigits; ++d) start[d + 1] += start[d];
            for (const auto& entry : current_) sorted_[start[digit(entry.vertex)]++] = entry;
            current_.swap(sorted_);
        }
    }

    // Appends a candidate for every edge of every up-to-date entry of current_.
    void expand_current() {
        const std::int64_t* row_ptr = graph_.row_ptr.data();
        const PackedEdge<Vertex>* edges = graph_.edges.data();
        const std::size_t count = current_.size();
        for (std::size_t i = 0; i < count; ++i) {
            if (i + kRowPrefetch < count) __builtin_prefetch(edges + row_ptr[current_[i + kRowPrefetch].vertex]);
            const Vertex u = current_[i].vertex;
            const double du = current_[i].distance;
            if (du != distance_[u]) continue;  // outdated: u was reached more cheaply since
            const std::int64_t end = row_ptr[u + 1];
            for (std::int64_t e = row_ptr[u]; e < end; ++e) {
                const PackedEdge<Vertex> edge = edges[e];
                const double through = du + static_cast<double>(edge.cost);
                const std::size_t block = static_cast<std::size_t>(edge.to) >> kBlockShift;
                if (block == 0) {
                    // The first block -- the hubs, after the renumbering by degree --
                    // is in cache: relax it at once instead of through a bin.
                    if (through < distance_[edge.to]) {
                        distance_[edge.to] = through;
                        push(edge.to, through);
                    }
                    continue;
                }
                bins_[block * bin_capacity_ + bin_fill_[block]] = {edge.to, through};
                if (++bin_fill_[block] == bin_capacity_) apply_bins();
            }
        }
    }

    // Applies the candidates block by block: an improved vertex gets its new
    // distance and an entry in the bucket of that distance.
    void apply_bins() {
        for (std::size_t block = 0; block < blocks_; ++block) {
            const Labelled<Vertex>* bin = bins_.data() + block * bin_capacity_;
            const std::size_t fill = bin_fill_[block];
            for (std::size_t i = 0; i < fill; ++i) {
                const Vertex v = bin[i].vertex;
                const double d = bin[i].distance;
                if (d < distance_[v]) {
                    distance_[v] = d;
                    push(v, d);
                }
            }
            bin_fill_[block] = 0;
        }
    }

    const PackedGraph<Vertex>& graph_;
    std::vector<double> distance_;
    std::vector<std::vector<Labelled<Vertex>>> ring_;  // bucket k is ring_[k % size]
    std::vector<Labelled<Vertex>> current_;            // the entries being expanded
    std::vector<Labelled<Vertex>> sorted_;             // the radix sort's other buffer
    std::size_t pending_ = 0;                          // entries in the ring
    std::size_t blocks_;
    std::size_t bin_capacity_;
    std::vector<Labelled<Vertex>> bins_;  // block b's bin: [b * capacity, b * capacity + fill[b])
    std::vector<std::size_t> bin_fill_;
    int vertex_bits_;  // bits of the largest vertex id (the radix sort's passes)
};

template <typename Vertex>
void bucket_rows(const CsrGraph& graph, const std::int64_t* sources, std::int64_t count, float* rows, int threads,
                 const std::function<void(std::int64_t)>& on_row_done) {
    if (count <= 0) return;
    for (std::int64_t i = 0; i < count; ++i)
        if (sources[i] < 0 || sources[i] >= graph.n)
            throw std::invalid_argument("source " + std::to_string(sources[i]) + " is outside 0.." +
                                        std::to_string(graph.n - 1));
    int team = threads > 0 ? threads : omp_get_max_threads();
    const PackedGraph<Vertex> packed = pack<Vertex>(graph, team);
    team = static_cast<int>(std::min<std::int64_t>(team, count));
    std::mutex mutex;  // guards `done`, `failure` and on_row_done
    std::int64_t done = 0;
    std::exception_ptr failure;
    std::atomic<bool> failed{false};  // a thread failed: hand out no more rows
    std::atomic<std::int64_t> next_row{0};
#pragma omp parallel num_threads(team)
    {
        try {
            BucketSearch<Vertex> search(packed);
            // Rows are handed out one at a time to whichever thread is free (a
            // dynamic schedule: rows of a small component finish quickly).
            for (;;) {
                if (failed) break;
                const std::int64_t row = next_row.fetch_add(1);
                if (row >= count) break;
                search.run(sources[row], rows + static_cast<std::size_t>(row) * static_cast<std::size_t>(graph.n));
                std::lock_guard<std::mutex> lock(mutex);
                ++done;
                if (on_row_done) on_row_done(done);
            }
        } catch (...) {
            failed = true;
            std::lock_guard<std::mutex> lock(mutex);
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

bool fits_narrow_ids(std::int64_t n) { return n <= std::int64_t{std::numeric_limits<std::uint32_t>::max()}; }

}  // namespace

void distance_rows(const CsrGraph& graph, const std::int64_t* sources, std::int64_t count, float* rows, int threads,
                   const std::function<void(std::int64_t)>& on_row_done) {
    if (fits_narrow_ids(graph.n))
        bucket_rows<std::uint32_t>(graph, sources, count, rows, threads, on_row_done);
    else
        bucket_rows<std::int64_t>(graph, sources, count, rows, threads, on_row_done);
}

namespace detail {
void distance_rows_wide_ids(const CsrGraph& graph, const std::int64_t* sources, std::int64_t count, float* rows,
                            int threads) {
    bucket_rows<std::int64_t>(graph, sources, count, rows, threads, {});
}
}  // namespace detail

std::int64_t distance_rows_workspace_bytes(std::int64_t n, std::int64_t edges, std::int64_t rows, int threads) {
    if (rows <= 0 || n <= 0) return 0;
    const bool narrow = fits_narrow_ids(n);
    const std::int64_t id_bytes = narrow ? 4 : 8;
    const std::int64_t labelled = id_bytes + 8;  // Labelled<Vertex>
    // The packed copy, shared: edges, row_ptr, the renumbering (and the degree
    // order it is built from).
    const std::int64_t packed = (narrow ? 8 : 16) * edges + 8 * (n + 1) + 2 * id_bytes * n;
    // A search: its distances, its bins, and its bucket entries with the radix
    // sort's buffer (entries: about 1.2 per vertex reached on the graphs
    // measured; counted at 2, and 1 for the buffer).
    const BinLayout bins = bin_layout(n);
    const auto bin_slots = static_cast<std::int64_t>(bins.blocks * bins.capacity);
    const std::int64_t search = 8 * n + labelled * bin_slots + labelled * 3 * n;
    const std::int64_t team = std::min<std::int64_t>(std::max(threads, 1), rows);
    return packed + team * search;
}

}  // namespace litpath::sssp
