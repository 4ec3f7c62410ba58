// The graph stage's symmetric CSR from its sorted edge list (sssp.hpp,
// symmetric_csr_of_sorted_edges). In numpy the reverse direction needed a
// stable sort of the destinations (about 3 s of the graph stage at 10M
// predications, 22M edges); a counting pass places every entry directly.
#include <stdexcept>
#include <string>
#include <vector>

#include "core/sssp.hpp"

namespace litpath::sssp {

namespace {

[[noreturn]] void bad_edge(std::int64_t i, std::int64_t s, std::int64_t d, const char* why) {
    throw std::invalid_argument("edge " + std::to_string(i) + " (" + std::to_string(s) + ", " + std::to_string(d) +
                                "): " + why);
}

}  // namespace

void symmetric_csr_of_sorted_edges(std::int64_t n, std::int64_t m, const std::int64_t* src, const std::int64_t* dst,
                                   const float* cost, std::int64_t* row_ptr, std::int64_t* col_idx, float* cost_out) {
    if (n < 0 || m < 0) throw std::invalid_argument("n and m must be >= 0");
    // Degrees (reverse entries of a row, then forward ones), checking order and range on the way.
    std::vector<std::int64_t> reverse_degree(static_cast<std::size_t>(n), 0);
    std::vector<std::int64_t> forward_degree(static_cast<std::size_t>(n), 0);
    for (std::int64_t i = 0; i < m; ++i) {
        const std::int64_t s = src[i], d = dst[i];
        if (s < 0 || s >= d || d >= n) bad_edge(i, s, d, "needs 0 <= src < dst < n");
        if (i > 0 && (s < src[i - 1] || (s == src[i - 1] && d <= dst[i - 1])))
            bad_edge(i, s, d, "not after the edge before it in (src, dst) order, or a repeat of it");
        ++forward_degree[static_cast<std::size_t>(s)];
        ++reverse_degree[static_cast<std::size_t>(d)];
    }
    // Each row's next free slot for reverse entries (its start) and for forward ones
    // (after its reverse entries).
    std::vector<std::int64_t> next_reverse(static_cast<std::size_t>(n));
    std::vector<std::int64_t>& next_forward = forward_degree;  // reused in place
    row_ptr[0] = 0;
    for (std::int64_t r = 0; r < n; ++r) {
        const auto k = static_cast<std::size_t>(r);
        const std::int64_t start = row_ptr[r];
        row_ptr[r + 1] = start + reverse_degree[k] + forward_degree[k];
        next_reverse[k] = start;
        next_forward[k] = start + reverse_degree[k];
    }
    for (std::int64_t i = 0; i < m; ++i) {
        const auto s = static_cast<std::size_t>(src[i]), d = static_cast<std::size_t>(dst[i]);
        const std::int64_t forward_slot = next_forward[s]++;
        col_idx[forward_slot] = dst[i];
        cost_out[forward_slot] = cost[i];
        const std::int64_t reverse_slot = next_reverse[d]++;
        col_idx[reverse_slot] = src[i];
        cost_out[reverse_slot] = cost[i];
    }
}

}  // namespace litpath::sssp
