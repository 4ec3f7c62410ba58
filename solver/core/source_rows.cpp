#include "core/source_rows.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

#include "core/sssp.hpp"

namespace litpath::apsp {
namespace {

[[noreturn]] void sources_error(const std::string& path, std::int64_t line, const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
}

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos) return "";
    const auto last = text.find_last_not_of(" \t\r");
    return text.substr(first, last - first + 1);
}

}  // namespace

std::vector<std::int64_t> read_sources_file(const std::string& path, std::int64_t n) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": cannot open the sources file for reading");
    std::vector<std::int64_t> sources;
    std::unordered_map<std::int64_t, std::int64_t> first_line;  // vertex -> line it was listed on
    std::string line;
    std::int64_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        const std::string text = trimmed(line.substr(0, line.find('#')));
        if (text.empty()) continue;
        std::int64_t vertex = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), vertex);
        if (ec != std::errc() || end != text.data() + text.size())
            sources_error(path, line_no, "'" + text + "' is not a vertex id (one integer per line, # comments)");
        if (vertex < 0 || vertex >= n)
            sources_error(path, line_no, "vertex " + text + " is outside 0.." + std::to_string(n - 1) +
                                             " (the graph has n = " + std::to_string(n) + ")");
        const auto [seen, fresh] = first_line.emplace(vertex, line_no);
        if (!fresh)
            sources_error(path, line_no, "vertex " + text + " is listed twice (first on line " +
                                             std::to_string(seen->second) + ")");
        sources.push_back(vertex);
    }
    if (in.bad()) throw std::runtime_error(path + ": read error after line " + std::to_string(line_no));
    if (sources.empty()) throw std::runtime_error(path + ": no vertex ids in the sources file");
    // Rows are stored in ascending vertex order, so a reader finds a source's
    // row by binary search.
    std::sort(sources.begin(), sources.end());
    return sources;
}

RowBlock row_block_of_rank(std::int64_t rows, int ranks, int rank) {
    const std::int64_t base = rows / ranks, extra = rows % ranks;
    RowBlock block;
    block.first = rank * base + std::min<std::int64_t>(rank, extra);
    block.count = base + (rank < extra ? 1 : 0);
    return block;
}

RowsMemory rows_memory_per_rank(std::int64_t n, std::int64_t edges, std::int64_t rows_on_rank, int threads,
                                std::int64_t reading_bytes) {
    RowsMemory m;
    // Saturating (see core/size_math.hpp): an estimate beyond int64 simply does not fit.
    m.graph = saturating_add(saturating_mul(saturating_add(n, 1), static_cast<std::int64_t>(sizeof(std::int64_t))),
                             saturating_mul(edges, static_cast<std::int64_t>(sizeof(std::int64_t) + sizeof(float))));
    m.rows = saturating_mul(saturating_mul(rows_on_rank, n), static_cast<std::int64_t>(sizeof(float)));
    m.workspace = sssp::distance_rows_workspace_bytes(n, edges, rows_on_rank, threads);
    m.reading = reading_bytes;
    return m;
}

}  // namespace litpath::apsp
