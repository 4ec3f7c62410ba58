#include "core/sssp_k_paths.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace litpath::sssp {
namespace {

void check_vertex(const CsrGraph& graph, std::int64_t v, const char* what) {
    if (v < 0 || v >= graph.n)
        throw std::invalid_argument(std::string(what) + " " + std::to_string(v) + " is outside 0.." +
                                    std::to_string(graph.n - 1));
}

// The cheapest u - v edge of a symmetric graph (the shorter of the two rows is
// scanned); NaN when there is none.
double cheapest_edge(const CsrGraph& graph, std::int64_t u, std::int64_t v) {
    if (graph.row_ptr[v + 1] - graph.row_ptr[v] < graph.row_ptr[u + 1] - graph.row_ptr[u]) std::swap(u, v);
    double best = std::nan("");
    for (std::int64_t e = graph.row_ptr[u]; e < graph.row_ptr[u + 1]; ++e)
        if (graph.col_idx[e] == v && !(best <= graph.cost[e])) best = graph.cost[e];
    return best;
}

// A path's cost: its edges summed in double, in path order (see the header).
double path_cost(const CsrGraph& graph, const std::vector<std::int64_t>& path) {
    double total = 0.0;
    for (std::size_t i = 1; i < path.size(); ++i) total += cheapest_edge(graph, path[i - 1], path[i]);
    return total;
}

// A candidate of Yen's algorithm: a loopless path, its cost, and the index of
// its spur vertex (where it leaves the accepted path it was derived from).
struct Candidate {
    double cost;
    std::vector<std::int64_t> vertices;
    std::size_t deviation;

    bool operator<(const Candidate& other) const {
        return cost < other.cost || (cost == other.cost && vertices < other.vertices);
    }
};

// Marks the root path's vertices (all but the spur vertex) as blocked for one
// spur search, and clears them however the search ends (a deadline included),
// so that the workspace's marks are all zero between calls.
class RootMarks {
public:
    RootMarks(std::vector<std::uint8_t>& marks, const std::vector<std::int64_t>& path, std::size_t spur_index)
        : marks_(marks), path_(path), count_(spur_index) {
        for (std::size_t i = 0; i < count_; ++i) marks_[static_cast<std::size_t>(path_[i])] = 1;
    }
    ~RootMarks() {
        for (std::size_t i = 0; i < count_; ++i) marks_[static_cast<std::size_t>(path_[i])] = 0;
    }
    RootMarks(const RootMarks&) = delete;
    RootMarks& operator=(const RootMarks&) = delete;

private:
    std::vector<std::uint8_t>& marks_;
    const std::vector<std::int64_t>& path_;
    std::size_t count_;
};

// Reads the clock every 4096 calls of tick() (the counting's own loops, after
// the search has met its own deadline checks).
class ClockCheck {
public:
    explicit ClockCheck(const Deadline& deadline) : deadline_(deadline) {}
    void tick() {
        if (deadline_.never() || (++calls_ & 4095) != 0) return;
        if (Deadline::Clock::now() >= deadline_.at)
            throw DeadlineExceeded("counting the shortest paths reached its deadline");
    }

private:
    const Deadline& deadline_;
    std::uint64_t calls_ = 0;
};

// a + b with a ceiling at INT64_MAX (setting `saturated` when it is hit).
std::int64_t saturating_add(std::int64_t a, std::int64_t b, bool& saturated) {
    if (a > std::numeric_limits<std::int64_t>::max() - b) {
        saturated = true;
        return std::numeric_limits<std::int64_t>::max();
    }
    return a + b;
}

}  // namespace

// --------------------------------------------------------- k shortest paths --
std::vector<PathResult> k_shortest_paths(const CsrGraph& graph, std::int64_t source, std::int64_t target,
                                         std::int64_t k, const std::uint8_t* allowed, PathSpaces& spaces,
                                         const Deadline& deadline, const HubRows* hubs) {
    check_vertex(graph, source, "source");
    check_vertex(graph, target, "target");
    if (k < 0) throw std::invalid_argument("k = " + std::to_string(k) + " is negative");
    std::vector<PathResult> accepted;
    if (k == 0) return accepted;
    if (source == target) {
        accepted.push_back(PathResult{0.0, {source}});
        return accepted;
    }
    std::vector<std::uint8_t>& marks = spaces.root_marks;
    if (marks.size() != static_cast<std::size_t>(graph.n)) marks.assign(static_cast<std::size_t>(graph.n), 0);
    SearchMask mask;
    mask.blocked = marks.data();
    mask.allowed = allowed;
    mask.exempt = target;

    PathResult first = shortest_path(graph, source, target, mask, spaces, deadline, hubs);
    if (first.vertices.empty()) return accepted;  // unreachable (on the filtered graph)
    accepted.push_back(std::move(first));
    std::vector<std::size_t> deviation{0};  // accepted[i]'s spur index

    std::set<Candidate> candidates;              // ordered by (cost, vertices)
    std::set<std::vector<std::int64_t>> known;  // every path accepted or queued, queued once
    known.insert(accepted.front().vertices);
    std::vector<std::int64_t> cut;
    while (static_cast<std::int64_t>(accepted.size()) < k) {
        const std::vector<std::int64_t> previous = accepted.back().vertices;
        for (std::size_t j = deviation.back(); j + 1 < previous.size(); ++j) {
            // The spur vertex previous[j], reached over the root previous[0..j]:
            // the edges out of it that an accepted path with this root takes
            // are cut, so the spur search finds a path not accepted yet.
            const std::int64_t spur = previous[j];
            cut.clear();
            for (const PathResult& path : accepted)
                if (path.vertices.size() > j + 1 && std::equal(previous.begin(), previous.begin() + j + 1,
                                                               path.vertices.begin()))
                    cut.push_back(path.vertices[j + 1]);
            mask.cut_vertex = spur;
            mask.cut = cut.data();
            mask.cut_count = static_cast<std::int64_t>(cut.size());
            PathResult spur_path;
            {
                RootMarks root(marks, previous, j);  // the root's vertices before the spur
                spur_path = shortest_path(graph, spur, target, mask, spaces, deadline, hubs);
            }
            if (spur_path.vertices.empty()) continue;
            std::vector<std::int64_t> whole(previous.begin(), previous.begin() + static_cast<std::ptrdiff_t>(j));
            whole.insert(whole.end(), spur_path.vertices.begin(), spur_path.vertices.end());
            if (!known.insert(whole).second) continue;
            const double cost = path_cost(graph, whole);
            candidates.insert(Candidate{cost, std::move(whole), j});
        }
        if (candidates.empty()) break;  // every loopless path has been found
        Candidate next = std::move(candidates.extract(candidates.begin()).value());
        accepted.push_back(PathResult{next.cost, std::move(next.vertices)});
        deviation.push_back(next.deviation);
    }
    return accepted;
}

// ------------------------------------------------------ shortest-path ties --
TieCount count_shortest_paths(const CsrGraph& graph, std::int64_t source, std::int64_t target,
                              const std::uint8_t* allowed, PathSpaces& spaces, const Deadline& deadline,
                              const HubRows* hubs) {
    check_vertex(graph, source, "source");
    check_vertex(graph, target, "target");
    TieCount tie;
    if (source == target) {
        tie.distance = 0.0;
        tie.paths = 1;
        return tie;
    }
    SearchMask mask;
    mask.allowed = allowed;
    mask.exempt = target;
    tie.distance = settle_shortest_path_region(graph, source, target, mask, spaces, deadline, hubs);
    if (!(tie.distance < kUnreachable)) return tie;
    const double* dist = spaces.forward.distance.data();
    ClockCheck clock(deadline);

    // The vertices that reach the target over tight edges, found backwards from
    // it, each with its tight predecessors (local indices). A vertex reached by
    // the search is allowed (or is the source), so the filter needs no check here.
    std::vector<std::int64_t> vertices{target};
    std::unordered_map<std::int64_t, std::int64_t> local{{target, 0}};
    std::vector<std::vector<std::int64_t>> predecessors;
    for (std::size_t i = 0; i < vertices.size(); ++i) {
        const std::int64_t v = vertices[i];
        const double dv = dist[v];
        std::vector<std::int64_t> tight;
        for (std::int64_t e = graph.row_ptr[v]; e < graph.row_ptr[v + 1]; ++e) {
            clock.tick();
            const std::int64_t u = graph.col_idx[e];
            if (u == v || !(dist[u] + static_cast<double>(graph.cost[e]) == dv)) continue;
            auto [it, added] = local.emplace(u, static_cast<std::int64_t>(vertices.size()));
            if (added) vertices.push_back(u);
            tight.push_back(it->second);
        }
        std::sort(tight.begin(), tight.end());  // parallel edges count once
        tight.erase(std::unique(tight.begin(), tight.end()), tight.end());
        predecessors.push_back(std::move(tight));
    }

    // Counting in order of distance: paths[x] = the tight loopless paths from
    // the source to x. A level is a set of vertices of one distance; a path
    // enters it once (from a lower level, or at the source), may cross it over
    // zero-cost edges, and leaves it for good.
    std::vector<std::int64_t> order(vertices.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
    std::sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        return dist[vertices[static_cast<std::size_t>(a)]] < dist[vertices[static_cast<std::size_t>(b)]];
    });
    std::vector<std::int64_t> paths(vertices.size(), 0), entering(vertices.size(), 0);
    std::vector<std::uint8_t> on_walk(vertices.size(), 0);
    std::int64_t plateau_work = 0;
    for (std::size_t first = 0; first < order.size();) {
        const double level = dist[vertices[static_cast<std::size_t>(order[first])]];
        std::size_t last = first;
        bool plateau = false;  // some tight edge inside the level (zero cost)
        while (last < order.size() && dist[vertices[static_cast<std::size_t>(order[last])]] == level) ++last;
        for (std::size_t i = first; i < last; ++i) {
            const auto x = static_cast<std::size_t>(order[i]);
            std::int64_t in = vertices[x] == source ? 1 : 0;
            for (const std::int64_t u : predecessors[x]) {
                if (dist[vertices[static_cast<std::size_t>(u)]] == level) {
                    plateau = true;
                    continue;
                }
                in = saturating_add(in, paths[static_cast<std::size_t>(u)], tie.saturated);
            }
            entering[x] = in;
            paths[x] = plateau ? 0 : in;
        }
        if (plateau) {
            // Every loopless walk inside the level from an entry vertex a ends
            // at some x: it adds entering[a] paths to x. (A tight edge of zero
            // cost is tight both ways, so predecessors inside the level are
            // neighbours.) Depth-first, with an explicit stack of (vertex, next
            // predecessor to try).
            for (std::size_t i = first; i < last; ++i) paths[static_cast<std::size_t>(order[i])] = 0;
            for (std::size_t i = first; i < last && !tie.saturated; ++i) {
                const auto a = static_cast<std::size_t>(order[i]);
                if (entering[a] == 0) continue;
                std::vector<std::pair<std::size_t, std::size_t>> stack{{a, 0}};
                on_walk[a] = 1;
                paths[a] = saturating_add(paths[a], entering[a], tie.saturated);
                while (!stack.empty()) {
                    auto& [x, next] = stack.back();
                    if (next == predecessors[x].size()) {
                        on_walk[x] = 0;
                        stack.pop_back();
                        continue;
                    }
                    const auto y = static_cast<std::size_t>(predecessors[x][next++]);
                    if (on_walk[y] || dist[vertices[y]] != level) continue;
                    clock.tick();
                    if (++plateau_work > kPlateauWork) {
                        tie.saturated = true;  // the walks are a lower bound from here on
                        for (const auto& frame : stack) on_walk[frame.first] = 0;
                        break;
                    }
                    // The walk may not pass through the target: it would end there.
                    paths[y] = saturating_add(paths[y], entering[a], tie.saturated);
                    if (vertices[y] == target) continue;
                    on_walk[y] = 1;
                    stack.emplace_back(y, 0);
                }
            }
        }
        first = last;
    }
    tie.paths = paths.at(0);  // the target is local vertex 0
    return tie;
}

}  // namespace litpath::sssp
