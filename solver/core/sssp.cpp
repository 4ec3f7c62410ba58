#include "core/sssp.hpp"

#include "core/sssp_hub_rows.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace litpath::sssp {
namespace {

std::string index_text(const char* array, std::int64_t index) {
    return std::string(array) + "[" + std::to_string(index) + "]";
}

std::string number_text(float value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

}  // namespace

// ------------------------------------------------------------------ checks --
void check_csr(const CsrGraph& g, const char* what) {
    const std::string name = what ? what : "CSR";
    if (g.n < 0) throw std::invalid_argument(name + ": n = " + std::to_string(g.n) + " is negative");
    if (!g.row_ptr) throw std::invalid_argument(name + ": row_ptr is null");
    if (g.row_ptr[0] != 0)
        throw std::invalid_argument(name + ": row_ptr[0] = " + std::to_string(g.row_ptr[0]) + ", must be 0");
    for (std::int64_t u = 0; u < g.n; ++u)
        if (g.row_ptr[u + 1] < g.row_ptr[u])
            throw std::invalid_argument(name + ": row_ptr decreases at vertex " + std::to_string(u) + " (" +
                                        index_text("row_ptr", u) + " = " + std::to_string(g.row_ptr[u]) + ", " +
                                        index_text("row_ptr", u + 1) + " = " + std::to_string(g.row_ptr[u + 1]) + ")");
    const std::int64_t edges = g.edge_count();
    if (edges > 0 && (!g.col_idx || !g.cost)) throw std::invalid_argument(name + ": col_idx or cost is null");
    for (std::int64_t e = 0; e < edges; ++e) {
        const std::int64_t v = g.col_idx[e];
        if (v < 0 || v >= g.n)
            throw std::invalid_argument(name + ": " + index_text("col_idx", e) + " = " + std::to_string(v) +
                                        " is outside 0.." + std::to_string(g.n - 1));
        const float c = g.cost[e];
        if (!(c >= 0) || std::isinf(c))  // also catches NaN
            throw std::invalid_argument(name + ": " + index_text("cost", e) + " = " + number_text(c) +
                                        " (edge to " + std::to_string(v) + ") must be finite and >= 0");
    }
}

// -------------------------------------------------------------------- heap --
void RadixHeap::clear() {
    for (auto& bucket : buckets_) bucket.clear();
    last_ = 0;
    size_ = 0;
}

std::int64_t RadixHeap::bytes() const {
    std::int64_t total = 0;
    for (const auto& bucket : buckets_) total += static_cast<std::int64_t>(bucket.capacity() * sizeof(Entry));
    return total;
}

void RadixHeap::refill_bucket_zero() {
    if (!buckets_[0].empty()) return;
    int first = 1;
    while (buckets_[first].empty()) ++first;
    std::vector<Entry>& from = buckets_[first];
    std::uint64_t smallest = key_of(from.front().distance);
    for (const Entry& e : from) smallest = std::min(smallest, key_of(e.distance));
    last_ = smallest;
    // Every entry shares bits above `first` with the new last key, so each
    // lands in a lower bucket (the minimum itself in bucket 0).
    for (const Entry& e : from) buckets_[bucket_of(key_of(e.distance))].push_back(e);
    from.clear();
}

// ------------------------------------------------------------ search space --
SearchSpace::SearchSpace(std::int64_t n, bool with_parents)
    : distance(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), kUnreachable) {
    if (with_parents) parent.reset(new std::int64_t[distance.size()]);
    touched.reserve(distance.size());
}

void SearchSpace::reset() {
    for (const std::int64_t v : touched) distance[static_cast<std::size_t>(v)] = kUnreachable;
    touched.clear();
    heap.clear();
    settled_hubs.clear();
}

std::int64_t SearchSpace::bytes() const {
    const std::size_t n = distance.capacity();
    return static_cast<std::int64_t>(n * sizeof(double) + (parent ? distance.size() * sizeof(std::int64_t) : 0) +
                                     touched.capacity() * sizeof(std::int64_t) +
                                     (settled_hubs.capacity() + hub_cursor.capacity()) * sizeof(std::int64_t)) +
           heap.bytes();
}

namespace {

// Reaches `source` at distance 0 (the search space must be reset).
void start_search(SearchSpace& space, std::int64_t source) {
    space.distance[static_cast<std::size_t>(source)] = 0.0;
    space.touched.push_back(source);
    if (space.parent) space.parent[static_cast<std::size_t>(source)] = -1;
    space.heap.push(0.0, source);
}

// A heap entry whose `vertex` has this bit set is a hub's cursor (the rest is
// the hub's row in the path index), not a vertex: its key is the hub's
// distance plus the cost of the hub's next arc not yet relaxed.
constexpr std::int64_t kHubCursor = std::int64_t{1} << 62;
// A cursor that comes up relaxes the arcs of its cost and at least this many
// (relaxing an arc before its turn is always allowed; it saves heap round
// trips where a hub's costs are all distinct).
constexpr std::int64_t kHubBatch = 4;

// Drops outdated heap entries from the top, so top() is the distance of the
// next vertex to settle or hub arc to relax. Returns false when nothing is left.
bool clean_top(SearchSpace& space) {
    while (!space.heap.empty()) {
        const auto& top = space.heap.top();
        if ((top.vertex & kHubCursor) || top.distance <= space.distance[static_cast<std::size_t>(top.vertex)])
            return true;
        space.heap.pop();
    }
    return false;
}

// The mask of the searches that use every vertex and arc: compiled away.
struct NoMask {
    static constexpr bool kBounded = false;  // see RegionMask
    static constexpr bool allows(std::int64_t, std::int64_t) { return true; }
    static constexpr bool allows_edge(std::int64_t, std::int64_t) { return true; }
};

// The forward search of settle_shortest_path_region: what `base` allows, and
// only into a vertex that can still lie on a shortest path (reached at
// `through`, plus the lower bound of its distance to the target, within
// `bound`). Refusing the arc, rather than settling the vertex and then not
// expanding it, keeps the vertices a hub's arcs reach off the heap.
struct RegionMask {
    static constexpr bool kBounded = true;
    const SearchMask& base;
    const double* lower;  // the backward search's distances (+inf: not reached)
    double radius;        // every vertex not settled backward is at least this far
    double bound;

    bool allows(std::int64_t u, std::int64_t v) const { return base.allows(u, v); }
    bool allows_edge(std::int64_t u, std::int64_t v) const { return base.allows_edge(u, v); }
    bool admits(std::int64_t v, double through) const { return through + std::min(lower[v], radius) <= bound; }
};

// Relaxes the arc u -> v of cost c from the settled vertex u (distance du): if
// the mask allows the arc and v is reached more cheaply through u, v gets the
// new distance (and parent), is pushed, and is passed to on_improved(v, new
// distance).
template <bool kWithParents, typename Mask, typename OnImproved>
inline void relax_arc(SearchSpace& space, const Mask& mask, std::int64_t u, double du, std::int64_t v, float c,
                      OnImproved&& on_improved) {
    if (!mask.allows(u, v)) return;
    double* distance = space.distance.data();
    const double through = du + static_cast<double>(c);
    if constexpr (Mask::kBounded) {
        if (!mask.admits(v, through)) return;
    }
    if (through < distance[v]) {
        if (distance[v] == kUnreachable) space.touched.push_back(v);
        distance[v] = through;
        if constexpr (kWithParents) space.parent[static_cast<std::size_t>(v)] = u;
        space.heap.push(through, v);
        on_improved(v, through);
    }
}

// Relaxes every edge of the settled vertex u (distance du).
template <bool kWithParents, typename Mask = NoMask, typename OnImproved>
inline void relax_edges(const CsrGraph& graph, SearchSpace& space, std::int64_t u, double du,
                        OnImproved&& on_improved, const Mask& mask = Mask{}) {
    const std::int64_t end = graph.row_ptr[u + 1];
    for (std::int64_t e = graph.row_ptr[u]; e < end; ++e)
        relax_arc<kWithParents>(space, mask, u, du, graph.col_idx[e], graph.cost[e], on_improved);
}

// Hub row r has just been settled at distance du: nothing is scanned; its
// cursor is queued at its cheapest arc.
void queue_hub(const HubRows& hubs, SearchSpace& space, std::int64_t r, double du) {
    space.settled_hubs.push_back(r);
    const std::int64_t first = hubs.start[r];
    space.hub_cursor[static_cast<std::size_t>(r)] = first;
    if (first < hubs.start[r + 1]) space.heap.push(du + static_cast<double>(hubs.cost[first]), kHubCursor | r);
}

// Hub row r's cursor came up: relaxes its arcs of the cursor's cost (and at
// least kHubBatch), in cost order, then queues the cursor at the next arc.
// Returns the arcs relaxed.
template <bool kWithParents, typename Mask = NoMask, typename OnImproved>
std::int64_t advance_hub(const HubRows& hubs, SearchSpace& space, std::int64_t r, OnImproved&& on_improved,
                         const Mask& mask = Mask{}) {
    const std::int64_t u = hubs.vertex[r];
    const double du = space.distance[static_cast<std::size_t>(u)];  // settled: final
    const std::int64_t first = space.hub_cursor[static_cast<std::size_t>(r)], end = hubs.start[r + 1];
    const float group = hubs.cost[first];
    std::int64_t e = first;
    for (; e < end && (hubs.cost[e] == group || e - first < kHubBatch); ++e)
        relax_arc<kWithParents>(space, mask, u, du, hubs.col[e], hubs.cost[e], on_improved);
    space.hub_cursor[static_cast<std::size_t>(r)] = e;
    if (e < end) space.heap.push(du + static_cast<double>(hubs.cost[e]), kHubCursor | r);
    return e - first;
}

// Readies a search space for an index of `rows` hubs (sized once per index).
void prepare_hubs(SearchSpace& space, const HubRows* hubs) {
    if (hubs && space.hub_cursor.size() != static_cast<std::size_t>(hubs->rows))
        space.hub_cursor.assign(static_cast<std::size_t>(hubs->rows), 0);
}

void run_to_completion(const CsrGraph& graph, SearchSpace& space) {
    const double* distance = space.distance.data();
    while (!space.heap.empty()) {
        const auto [du, u] = space.heap.pop();
        if (du > distance[u]) continue;  // outdated entry: u was settled closer
        relax_edges<false>(graph, space, u, du, [](std::int64_t, double) {});
    }
}

// Copies the search's distances into row (float32) and resets the space.
void write_row_and_reset(SearchSpace& space, float* row) {
    const std::size_t n = space.distance.size();
    double* distance = space.distance.data();
    if (space.touched.size() * 8 > n) {
        // Most of the graph was reached: a sequential sweep beats scattered writes.
        for (std::size_t v = 0; v < n; ++v) row[v] = static_cast<float>(distance[v]);
        std::fill(distance, distance + n, kUnreachable);
    } else {
        std::fill(row, row + n, std::numeric_limits<float>::infinity());
        for (const std::int64_t v : space.touched) {
            row[v] = static_cast<float>(distance[v]);
            distance[v] = kUnreachable;
        }
    }
    space.touched.clear();
    space.heap.clear();
}

void check_vertex(const CsrGraph& graph, std::int64_t v, const char* what) {
    if (v < 0 || v >= graph.n)
        throw std::invalid_argument(std::string(what) + " " + std::to_string(v) + " is outside 0.." +
                                    std::to_string(graph.n - 1));
}

void check_space(const CsrGraph& graph, const SearchSpace& space) {
    if (space.vertex_count() != graph.n)
        throw std::invalid_argument("search space for " + std::to_string(space.vertex_count()) +
                                    " vertices used on a graph of " + std::to_string(graph.n));
}

// Counts a search's work and reads the clock every kDeadlineWork units (see
// Deadline). Without a deadline the count starts so high it never runs out, so
// the loop pays one subtraction and one branch a settled vertex.
class DeadlineMeter {
public:
    explicit DeadlineMeter(const Deadline& deadline) : deadline_(deadline) {
        if (deadline_.never()) {
            left_ = std::numeric_limits<std::int64_t>::max();
        } else {
            check();  // a search whose time is already up does not start
        }
    }

    // A vertex of `graph` settled: one unit, and one per edge it is about to scan.
    void settled(const CsrGraph& graph, std::int64_t u) {
        left_ -= 1 + graph.row_ptr[u + 1] - graph.row_ptr[u];
        if (left_ < 0) check();
        ++settled_;
    }
    // A hub settled (nothing scanned), or a hub's arcs relaxed from its cursor.
    void settled_hub() {
        work(1);
        ++settled_;
    }
    void work(std::int64_t units) {
        left_ -= units;
        if (left_ < 0) check();
    }

private:
    void check() {
        if (Deadline::Clock::now() >= deadline_.at)
            throw DeadlineExceeded("the search reached its deadline after settling " + std::to_string(settled_) +
                                   " vertices");
        left_ = kDeadlineWork;
    }

    const Deadline& deadline_;
    std::int64_t left_ = 0;
    std::int64_t settled_ = 0;
};

}  // namespace

// ------------------------------------------------------------- distance rows --
void distances_from(const CsrGraph& graph, std::int64_t source, SearchSpace& space, float* row) {
    check_vertex(graph, source, "source");
    check_space(graph, space);
    space.reset();
    start_search(space, source);
    run_to_completion(graph, space);
    write_row_and_reset(space, row);
}

// ------------------------------------------------------------ shortest path --
namespace {

// The cheapest u -> v edge of the graph; NaN when there is none.
double cheapest_edge_cost(const CsrGraph& graph, std::int64_t u, std::int64_t v) {
    double best = std::nan("");
    for (std::int64_t e = graph.row_ptr[u]; e < graph.row_ptr[u + 1]; ++e)
        if (graph.col_idx[e] == v && !(best <= graph.cost[e])) best = graph.cost[e];
    return best;
}

// Cuts loops out of a walk (a vertex seen again drops everything after its
// first visit). Loops on a shortest walk cost zero, so the distance holds.
std::vector<std::int64_t> without_loops(const std::vector<std::int64_t>& walk) {
    std::vector<std::int64_t> path;
    std::unordered_map<std::int64_t, std::size_t> position;
    for (const std::int64_t v : walk) {
        const auto seen = position.find(v);
        if (seen == position.end()) {
            position.emplace(v, path.size());
            path.push_back(v);
            continue;
        }
        for (std::size_t i = seen->second + 1; i < path.size(); ++i) position.erase(path[i]);
        path.resize(seen->second + 1);
    }
    return path;
}

// The cheapest u -> v arc in a row sorted by column (a hub's row: checked by
// check_hub_rows); NaN when there is none.
double cheapest_sorted_arc(const CsrGraph& graph, std::int64_t u, std::int64_t v) {
    const std::int64_t* first = graph.col_idx + graph.row_ptr[u];
    const std::int64_t* last = graph.col_idx + graph.row_ptr[u + 1];
    double best = std::nan("");
    for (const std::int64_t* it = std::lower_bound(first, last, v); it != last && *it == v; ++it)
        if (!(best <= graph.cost[it - graph.col_idx])) best = graph.cost[it - graph.col_idx];
    return best;
}

// The bidirectional search of shortest_path, on the arcs `mask` allows.
template <typename Mask>
PathResult bidirectional_search(const CsrGraph& forward, const CsrGraph* reverse, std::int64_t source,
                                std::int64_t target, PathSpaces& spaces, const Deadline& deadline,
                                const HubRows* hubs, const Mask& mask) {
    const CsrGraph& backward_graph = reverse ? *reverse : forward;
    check_vertex(forward, source, "source");
    check_vertex(forward, target, "target");
    check_space(forward, spaces.forward);
    check_space(backward_graph, spaces.backward);
    if (hubs && reverse)
        throw std::invalid_argument("a path index serves symmetric graphs only (no reverse CSR)");
    PathResult result;
    if (source == target) {
        result.distance = 0.0;
        result.vertices = {source};
        return result;
    }
    DeadlineMeter meter(deadline);
    SearchSpace& fwd = spaces.forward;
    SearchSpace& bwd = spaces.backward;
    fwd.reset();
    bwd.reset();
    prepare_hubs(fwd, hubs);
    prepare_hubs(bwd, hubs);
    start_search(fwd, source);
    start_search(bwd, target);

    // best: the shortest source -> target distance seen so far, over a path
    // made of source .. meet_forward on the forward tree, then meet_backward ..
    // target on the backward tree (meet_forward == meet_backward, the usual
    // case, or an edge between them: two hubs, see below). Checked whenever
    // either side's distance of a vertex improves, and when a vertex is settled.
    double best = kUnreachable;
    std::int64_t meet_forward = -1, meet_backward = -1;
    for (;;) {
        // A side with nothing left has settled everything it can reach, and
        // best is then exact (the other end is reached at its final distance).
        if (!clean_top(fwd) || !clean_top(bwd)) break;
        // No path through an unsettled vertex or an arc not yet relaxed can beat best any more.
        if (fwd.heap.top().distance + bwd.heap.top().distance >= best) break;
        // Grow the side with the smaller frontier: less work per settled vertex.
        const bool go_forward = fwd.heap.size() <= bwd.heap.size();
        SearchSpace& side = go_forward ? fwd : bwd;
        const SearchSpace& other = go_forward ? bwd : fwd;
        const CsrGraph& graph = go_forward ? forward : backward_graph;
        const auto on_improved = [&](std::int64_t v, double dv) {
            const double through_v = dv + other.distance[static_cast<std::size_t>(v)];
            if (through_v < best) {
                best = through_v;
                meet_forward = meet_backward = v;
            }
        };
        const auto [du, u] = side.heap.pop();
        if (u & kHubCursor) {  // only with an index
            meter.work(advance_hub<true>(*hubs, side, u & ~kHubCursor, on_improved, mask));
            continue;
        }
        const std::int64_t hub = hubs ? hubs->row_of(u) : -1;
        if (hub < 0) {
            meter.settled(graph, u);
            relax_edges<true>(graph, side, u, du, on_improved, mask);
            continue;
        }
        meter.settled_hub();
        // An edge between u and a hub the other side has settled is deferred at
        // both ends, so neither side's relaxations meet over it: look it up
        // (rows sorted by column), unless even u's cheapest arc to a hub could
        // not beat best. (An edge to a vertex that is not a hub needs nothing:
        // that end scans its whole row, relaxing the arc into u, and every
        // improvement on either side is checked against the other side's
        // distance of the same vertex.)
        for (const std::int64_t other_hub : other.settled_hubs) {
            const std::int64_t y = hubs->vertex[other_hub];
            const double dy = other.distance[static_cast<std::size_t>(y)];
            if (du + dy + static_cast<double>(hubs->min_hub_cost[hub]) >= best) continue;
            if (!mask.allows_edge(u, y)) continue;  // an edge a spur search may not use
            const double c = cheapest_sorted_arc(forward, u, y);
            if (!(du + c + dy < best)) continue;  // also when there is no such edge (NaN)
            best = du + c + dy;
            meet_forward = go_forward ? u : y;
            meet_backward = go_forward ? y : u;
        }
        queue_hub(*hubs, side, hub, du);
    }
    if (meet_forward < 0) return result;  // unreachable

    // source .. meet_forward on the forward tree, then meet_backward .. target on the backward tree.
    std::vector<std::int64_t> walk;
    for (std::int64_t v = meet_forward; v >= 0; v = fwd.parent[static_cast<std::size_t>(v)]) walk.push_back(v);
    std::reverse(walk.begin(), walk.end());
    for (std::int64_t v = meet_backward == meet_forward ? bwd.parent[static_cast<std::size_t>(meet_backward)]
                                                        : meet_backward;
         v >= 0; v = bwd.parent[static_cast<std::size_t>(v)])
        walk.push_back(v);
    result.vertices = without_loops(walk);
    double total = 0.0;
    for (std::size_t i = 1; i < result.vertices.size(); ++i) {
        const double c = cheapest_edge_cost(forward, result.vertices[i - 1], result.vertices[i]);
        if (std::isnan(c))
            throw std::invalid_argument("the reverse CSR is not the transpose of the forward CSR: it has an edge " +
                                        std::to_string(result.vertices[i - 1]) + " -> " +
                                        std::to_string(result.vertices[i]) + " that the forward CSR lacks");
        total += c;
    }
    result.distance = total;
    return result;
}

}  // namespace

PathResult shortest_path(const CsrGraph& forward, const CsrGraph* reverse, std::int64_t source, std::int64_t target,
                         PathSpaces& spaces, const Deadline& deadline, const HubRows* hubs) {
    return bidirectional_search(forward, reverse, source, target, spaces, deadline, hubs, NoMask{});
}

PathResult shortest_path(const CsrGraph& graph, std::int64_t source, std::int64_t target, const SearchMask& mask,
                         PathSpaces& spaces, const Deadline& deadline, const HubRows* hubs) {
    if (mask.cut_count > 0 && !mask.cut) throw std::invalid_argument("search mask: cut is null");
    check_vertex(graph, target, "target");
    if (source != target && ((mask.blocked && mask.blocked[target]) ||
                             (mask.allowed && !mask.allowed[target] && target != mask.exempt)))
        return PathResult{};  // the backward search would otherwise start from it
    SearchMask own = mask;
    own.exempt_source = source;  // the backward search may reach it, whatever the filter says
    return bidirectional_search(graph, nullptr, source, target, spaces, deadline, hubs, own);
}

double settle_shortest_path_region(const CsrGraph& graph, std::int64_t source, std::int64_t target,
                                   const SearchMask& mask, PathSpaces& spaces, const Deadline& deadline,
                                   const HubRows* hubs) {
    check_vertex(graph, source, "source");
    check_vertex(graph, target, "target");
    check_space(graph, spaces.forward);
    // 1. The distance D, by the pair search (cheap: two balls of about D / 2).
    const PathResult first = shortest_path(graph, source, target, mask, spaces, deadline, hubs);
    if (first.vertices.empty()) {
        spaces.forward.reset();
        return kUnreachable;
    }
    SearchMask own = mask;
    own.exempt_source = source;
    DeadlineMeter meter(deadline);
    const auto ignore = [](std::int64_t, double) {};
    // 2. Backward from the target, every vertex within half of D: afterwards
    // min(dt[u], radius) is a lower bound of u's distance to the target.
    SearchSpace& bwd = spaces.backward;
    const double radius = first.distance / 2;
    bwd.reset();
    prepare_hubs(bwd, hubs);
    start_search(bwd, target);
    while (clean_top(bwd) && bwd.heap.top().distance <= radius) {
        const auto [du, u] = bwd.heap.pop();
        if (u & kHubCursor) {
            meter.work(advance_hub<false>(*hubs, bwd, u & ~kHubCursor, ignore, own));
            continue;
        }
        const std::int64_t hub = hubs ? hubs->row_of(u) : -1;
        if (hub >= 0) {
            meter.settled_hub();
            queue_hub(*hubs, bwd, hub, du);
        } else {
            meter.settled(graph, u);
            relax_edges<false>(graph, bwd, u, du, ignore, own);
        }
    }
    // 3. Forward from the source up to the target's distance, expanding only
    // the vertices that can lie on a shortest path: dist(u) + the lower bound
    // <= D. The slack (1e-9 relative) only keeps more vertices than needed: it
    // absorbs the rounding between the two directions' sums, which is ~1e-16.
    const double* lower = bwd.distance.data();
    const double bound = first.distance * (1 + 1e-9) + 1e-12;
    const RegionMask region{own, lower, radius, bound};
    SearchSpace& fwd = spaces.forward;
    fwd.reset();
    prepare_hubs(fwd, hubs);
    start_search(fwd, source);
    const double* distance = fwd.distance.data();
    while (clean_top(fwd)) {
        // Everything at the target's distance is settled, ties over zero-cost
        // arcs included (and no hub arc not yet relaxed leads to anything at or below it).
        if (fwd.heap.top().distance > distance[target]) break;
        const auto [du, u] = fwd.heap.pop();
        if (u & kHubCursor) {  // only with an index
            meter.work(advance_hub<false>(*hubs, fwd, u & ~kHubCursor, ignore, region));
            continue;
        }
        if (du + std::min(lower[u], radius) > bound) continue;  // on no shortest path: not expanded
        const std::int64_t hub = hubs ? hubs->row_of(u) : -1;
        if (hub >= 0) {
            meter.settled_hub();
            queue_hub(*hubs, fwd, hub, du);
        } else {
            meter.settled(graph, u);
            relax_edges<false>(graph, fwd, u, du, ignore, region);
        }
    }
    return distance[target];
}

// ----------------------------------------------------------------- nearest --
std::vector<Neighbour> nearest(const CsrGraph& graph, std::int64_t source, const std::uint8_t* candidate_mask,
                               std::int64_t k, SearchSpace& space, const Deadline& deadline, const HubRows* hubs) {
    check_vertex(graph, source, "source");
    check_space(graph, space);
    std::vector<Neighbour> found;
    if (k <= 0) return found;
    DeadlineMeter meter(deadline);
    space.reset();
    prepare_hubs(space, hubs);
    start_search(space, source);
    const auto ignore = [](std::int64_t, double) {};
    double kth = kUnreachable;  // distance of the k-th candidate once found
    while (clean_top(space)) {
        // Past the k-th distance: every tie with it has been settled (and no
        // hub arc not yet relaxed leads to anything at or below it).
        if (space.heap.top().distance > kth) break;
        const auto [du, u] = space.heap.pop();
        if (u & kHubCursor) {  // only with an index
            meter.work(advance_hub<false>(*hubs, space, u & ~kHubCursor, ignore));
            continue;
        }
        if (u != source && candidate_mask[u] != 0) {
            found.push_back(Neighbour{u, du});
            if (static_cast<std::int64_t>(found.size()) == k) kth = du;
        }
        const std::int64_t hub = hubs ? hubs->row_of(u) : -1;
        if (hub >= 0) {
            meter.settled_hub();
            queue_hub(*hubs, space, hub, du);
        } else {
            meter.settled(graph, u);
            relax_edges<false>(graph, space, u, du, ignore);
        }
    }
    space.reset();
    std::sort(found.begin(), found.end(), [](const Neighbour& a, const Neighbour& b) {
        return a.distance < b.distance || (a.distance == b.distance && a.vertex < b.vertex);
    });
    if (static_cast<std::int64_t>(found.size()) > k) found.resize(static_cast<std::size_t>(k));
    return found;
}

}  // namespace litpath::sssp
