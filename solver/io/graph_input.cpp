#include "io/graph_input.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "core/size_math.hpp"
#include "io/sha256.hpp"

#ifdef LITPATH_HAVE_ADIOS2
#include <adios2.h>
#endif

namespace litpath::apsp {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_directory(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string describe_cost(float c) {
    std::ostringstream out;
    out << c;
    return out.str();
}

// --------------------------------------------------------------- Matrix Market
struct MtxHeader {
    std::string field;     // real | integer | pattern
    std::string symmetry;  // general | symmetric
    std::int64_t rows = 0, cols = 0, entries = 0;
    std::int64_t size_line = 0;  // line number of the size line
};

[[noreturn]] void mtx_error(const std::string& path, std::int64_t line, const std::string& what) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
}

MtxHeader read_mtx_header(std::istream& in, const std::string& path, std::int64_t& line_no) {
    std::string line;
    line_no = 0;
    if (!std::getline(in, line)) mtx_error(path, 1, "empty file, expected a '%%MatrixMarket' banner");
    ++line_no;
    std::istringstream banner(line);
    std::string tag, object, format, field, symmetry;
    banner >> tag >> object >> format >> field >> symmetry;
    if (tag != "%%MatrixMarket")
        mtx_error(path, 1, "not a Matrix Market file: the first line must start with '%%MatrixMarket'");
    object = lower(object), format = lower(format), field = lower(field), symmetry = lower(symmetry);
    if (object != "matrix") mtx_error(path, 1, "object '" + object + "' is not supported (need 'matrix')");
    if (format != "coordinate")
        mtx_error(path, 1, "format '" + format + "' is not supported (need 'coordinate': explicit entries are edges)");
    if (field != "real" && field != "integer" && field != "pattern" && field != "double")
        mtx_error(path, 1, "field '" + field + "' is not supported (need real, integer or pattern)");
    if (symmetry != "general" && symmetry != "symmetric")
        mtx_error(path, 1, "symmetry '" + symmetry + "' is not supported (need general or symmetric)");
    MtxHeader h;
    h.field = field;
    h.symmetry = symmetry;
    while (std::getline(in, line)) {
        ++line_no;
        const auto first = line.find_first_not_of(" \t\r");
        if (first == std::string::npos || line[first] == '%') continue;
        std::istringstream size(line);
        std::string extra;
        if (!(size >> h.rows >> h.cols >> h.entries) || (size >> extra))
            mtx_error(path, line_no, "malformed size line '" + line + "' (expected: rows cols entries)");
        if (h.rows != h.cols)
            mtx_error(path, line_no, "matrix is " + std::to_string(h.rows) + " x " + std::to_string(h.cols) +
                                         ", a cost matrix must be square");
        if (h.rows < 0 || h.entries < 0) mtx_error(path, line_no, "negative size");
        if (h.rows > kMaxVertices)
            mtx_error(path, line_no, "n = " + std::to_string(h.rows) + " vertices is more than apsp-fw can address (at most " +
                                         std::to_string(kMaxVertices) + ")");
        h.size_line = line_no;
        return h;
    }
    mtx_error(path, line_no, "no size line after the banner");
}

const char* skip_space(const char* p, const char* end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
    return p;
}

void read_mtx_edges(const GraphInfo& info, const std::function<bool(std::int64_t, std::int64_t)>& keep,
                    const std::function<void(const Edge&)>& visit) {
    std::ifstream in(info.path);
    if (!in) throw std::runtime_error(info.path + ": cannot open for reading");
    std::int64_t line_no = 0;
    const MtxHeader h = read_mtx_header(in, info.path, line_no);
    const bool pattern = h.field == "pattern";
    const bool symmetric = h.symmetry == "symmetric";
    std::string line;
    std::int64_t seen = 0;
    while (std::getline(in, line)) {
        ++line_no;
        const char* p = line.data();
        const char* end = p + line.size();
        p = skip_space(p, end);
        if (p == end || *p == '%') continue;
        if (seen == h.entries)
            mtx_error(info.path, line_no, "more entries than the " + std::to_string(h.entries) + " the size line declares");
        std::int64_t i = 0, j = 0;
        auto r = std::from_chars(p, end, i);
        if (r.ec != std::errc()) mtx_error(info.path, line_no, "malformed entry '" + line + "' (expected: row col value)");
        p = skip_space(r.ptr, end);
        r = std::from_chars(p, end, j);
        if (r.ec != std::errc()) mtx_error(info.path, line_no, "malformed entry '" + line + "' (expected: row col value)");
        p = skip_space(r.ptr, end);
        float cost = 1.0f;  // pattern: every explicit entry is an edge of cost 1
        if (!pattern) {
            if (p < end && *p == '+') ++p;
            auto rv = std::from_chars(p, end, cost);
            if (rv.ec == std::errc::result_out_of_range) {
                // Beyond float (1e999, 1e-999): strtof over the same characters rounds
                // to +inf or to 0 (or the nearest subnormal) instead of failing.
                const std::string number(p, rv.ptr);
                cost = std::strtof(number.c_str(), nullptr);
            } else if (rv.ec != std::errc()) {
                mtx_error(info.path, line_no, "malformed entry '" + line + "' (missing or bad value)");
            }
            p = skip_space(rv.ptr, end);
        }
        if (p != end) mtx_error(info.path, line_no, "malformed entry '" + line + "' (trailing text)");
        if (i < 1 || i > h.rows || j < 1 || j > h.cols)
            mtx_error(info.path, line_no, "entry (" + std::to_string(i) + ", " + std::to_string(j) +
                                              ") is outside the " + std::to_string(h.rows) + " x " +
                                              std::to_string(h.cols) + " matrix");
        if (std::isnan(cost)) mtx_error(info.path, line_no, "edge " + std::to_string(i) + " -> " + std::to_string(j) + " has a NaN cost");
        if (cost < 0)
            mtx_error(info.path, line_no, "negative weight " + describe_cost(cost) + " on edge " + std::to_string(i) +
                                              " -> " + std::to_string(j) +
                                              " (Floyd-Warshall here needs non-negative costs)");
        ++seen;
        const Edge e{i - 1, j - 1, cost};
        if (keep(e.src, e.dst)) visit(e);
        if (symmetric && i != j && keep(e.dst, e.src)) visit(Edge{e.dst, e.src, cost});
    }
    if (seen != h.entries)
        mtx_error(info.path, line_no, "file ends after " + std::to_string(seen) + " entries, the size line declares " +
                                          std::to_string(h.entries));
}

#ifdef LITPATH_HAVE_ADIOS2
// ------------------------------------------------------------------- graph.bp
std::int64_t read_scalar_n(adios2::IO& io, adios2::Engine& engine, const std::string& path) {
    if (auto v = io.InquireVariable<std::int64_t>("n")) {
        std::int64_t n = 0;
        engine.Get(v, &n, adios2::Mode::Sync);
        return n;
    }
    if (auto v = io.InquireVariable<std::uint64_t>("n")) {
        std::uint64_t n = 0;
        engine.Get(v, &n, adios2::Mode::Sync);
        if (n > static_cast<std::uint64_t>(kSaturated))
            throw std::runtime_error(path + ": n = " + std::to_string(n) + " is not an int64 vertex count");
        return static_cast<std::int64_t>(n);
    }
    if (auto v = io.InquireVariable<std::int32_t>("n")) {
        std::int32_t n = 0;
        engine.Get(v, &n, adios2::Mode::Sync);
        return n;
    }
    throw std::runtime_error(path + ": no scalar variable 'n' (int64) - is this a graph.bp?");
}

template <typename T>
adios2::Variable<T> require_array(adios2::IO& io, const std::string& name, const std::string& path,
                                  const char* type_name) {
    auto v = io.InquireVariable<T>(name);
    if (!v) throw std::runtime_error(path + ": missing variable '" + name + "' of type " + type_name);
    if (v.Shape().size() != 1) throw std::runtime_error(path + ": variable '" + name + "' must be one-dimensional");
    return v;
}

struct BpReader {
    adios2::ADIOS adios;
    adios2::IO io;
    adios2::Engine engine;
    explicit BpReader(const std::string& path) : adios(MPI_COMM_SELF), path_(path) {
        // Each rank opens its own reader: reads are independent selections,
        // and no rank can hang in a collective open when another failed.
        io = adios.DeclareIO("graph-input");
        io.SetEngine("BP5");
        try {
            engine = io.Open(path, adios2::Mode::ReadRandomAccess);
        } catch (const std::exception& e) {
            throw std::runtime_error(path + ": cannot open as ADIOS2 BP: " + e.what());
        }
    }
    ~BpReader() {
        if (!engine) return;
        engine.Close();
        // ADIOS2 2.12's BP5 reader writes /tmp/<file name>_<pid in hex>_profiling.json on every
        // Close, whatever the engine's Profile parameter says; each rank would leave one in a
        // shared /tmp (pipeline/store/adios.py: reader_profile_path does the same for Python).
        // The name is as ADIOS2 forms it: the text after the path's last '/'.
        char pid[32];
        std::snprintf(pid, sizeof pid, "%lx", static_cast<unsigned long>(::getpid()));
        const auto name = path_.substr(path_.find_last_of('/') + 1);  // npos + 1 == 0: no '/'
        std::remove(("/tmp/" + name + "_" + pid + "_profiling.json").c_str());
    }

  private:
    std::string path_;
};

std::string read_digest(adios2::IO& io) {
    for (const char* name : {"graph_digest", "digest"}) {
        auto a = io.InquireAttribute<std::string>(name);
        if (a && !a.Data().empty()) return a.Data().front();
    }
    return "";
}

// graph.bp's three CSR arrays, with their shapes checked against n.
struct BpCsrVariables {
    adios2::Variable<std::int64_t> row_ptr, col_idx;
    adios2::Variable<float> cost;
    std::int64_t nnz = 0;
};

BpCsrVariables open_csr_variables(BpReader& bp, const std::string& path, std::int64_t n) {
    BpCsrVariables v;
    v.row_ptr = require_array<std::int64_t>(bp.io, "row_ptr", path, "int64");
    v.col_idx = require_array<std::int64_t>(bp.io, "col_idx", path, "int64");
    v.cost = require_array<float>(bp.io, "cost", path, "float32");
    if (static_cast<std::int64_t>(v.row_ptr.Shape()[0]) != n + 1)
        throw std::runtime_error(path + ": row_ptr has " + std::to_string(v.row_ptr.Shape()[0]) +
                                 " entries, expected n + 1 = " + std::to_string(n + 1));
    v.nnz = static_cast<std::int64_t>(v.col_idx.Shape()[0]);
    if (static_cast<std::int64_t>(v.cost.Shape()[0]) != v.nnz)
        throw std::runtime_error(path + ": cost has " + std::to_string(v.cost.Shape()[0]) +
                                 " entries but col_idx has " + std::to_string(v.nnz));
    return v;
}

// row_ptr[r] = a, row_ptr[r + 1] = b must lie within [0, nnz] in order.
void check_bp_row(const std::string& path, std::int64_t r, std::int64_t a, std::int64_t b, std::int64_t nnz) {
    if (a > b || a < 0 || b > nnz)
        throw std::runtime_error(path + ": row_ptr is not non-decreasing within [0, nnz] at row " + std::to_string(r) +
                                 " (row_ptr[" + std::to_string(r) + "] = " + std::to_string(a) + ", row_ptr[" +
                                 std::to_string(r + 1) + "] = " + std::to_string(b) + ", nnz = " + std::to_string(nnz) +
                                 ")");
}

// Edge e (r -> c, cost w): column in range, cost a number >= 0.
void check_bp_edge(const std::string& path, std::int64_t e, std::int64_t r, std::int64_t c, float w, std::int64_t n) {
    if (c < 0 || c >= n)
        throw std::runtime_error(path + ": col_idx[" + std::to_string(e) + "] = " + std::to_string(c) + " (row " +
                                 std::to_string(r) + ") is outside 0.." + std::to_string(n - 1));
    if (std::isnan(w))
        throw std::runtime_error(path + ": cost[" + std::to_string(e) + "] of edge " + std::to_string(r) + " -> " +
                                 std::to_string(c) + " is NaN");
    if (w < 0)
        throw std::runtime_error(path + ": negative weight " + describe_cost(w) + " on edge " + std::to_string(r) +
                                 " -> " + std::to_string(c) + " (cost[" + std::to_string(e) +
                                 "]); Floyd-Warshall here needs non-negative costs");
}

void read_bp_edges(const GraphInfo& info, const LocalTiles& layout, bool read_all,
                   const std::function<bool(std::int64_t, std::int64_t)>& keep,
                   const std::function<void(const Edge&)>& visit) {
    BpReader bp(info.path);
    const std::string& path = info.path;
    const std::int64_t n = info.n;
    BpCsrVariables vars = open_csr_variables(bp, path, n);
    auto& row_ptr_var = vars.row_ptr;
    auto& col_var = vars.col_idx;
    auto& cost_var = vars.cost;
    const std::int64_t nnz = vars.nnz;

    // Row ranges to read: the tile rows this rank owns, or everything.
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    if (read_all) {
        ranges.emplace_back(0, n);
    } else {
        for (std::int64_t lr = 0; lr < layout.local_tile_rows; ++lr) {
            const std::int64_t tile = layout.global_tile_row(lr);
            const std::int64_t r0 = layout.tiling.first_vertex(tile);
            ranges.emplace_back(r0, r0 + layout.tiling.extent(tile));
        }
    }
    std::vector<std::int64_t> row_ptr, cols;
    std::vector<float> costs;
    for (auto [r0, r1] : ranges) {
        if (r1 <= r0) continue;
        row_ptr.resize(static_cast<std::size_t>(r1 - r0 + 1));
        row_ptr_var.SetSelection({{static_cast<std::size_t>(r0)}, {static_cast<std::size_t>(r1 - r0 + 1)}});
        bp.engine.Get(row_ptr_var, row_ptr.data(), adios2::Mode::Sync);
        for (std::int64_t r = r0; r < r1; ++r)
            check_bp_row(path, r, row_ptr[static_cast<std::size_t>(r - r0)], row_ptr[static_cast<std::size_t>(r - r0 + 1)],
                         nnz);
        const std::int64_t e0 = row_ptr.front(), e1 = row_ptr.back();
        if (e1 == e0) continue;
        cols.resize(static_cast<std::size_t>(e1 - e0));
        costs.resize(static_cast<std::size_t>(e1 - e0));
        col_var.SetSelection({{static_cast<std::size_t>(e0)}, {static_cast<std::size_t>(e1 - e0)}});
        cost_var.SetSelection({{static_cast<std::size_t>(e0)}, {static_cast<std::size_t>(e1 - e0)}});
        bp.engine.Get(col_var, cols.data(), adios2::Mode::Deferred);
        bp.engine.Get(cost_var, costs.data(), adios2::Mode::Deferred);
        bp.engine.PerformGets();
        for (std::int64_t r = r0; r < r1; ++r) {
            for (std::int64_t e = row_ptr[static_cast<std::size_t>(r - r0)]; e < row_ptr[static_cast<std::size_t>(r - r0 + 1)]; ++e) {
                const std::int64_t c = cols[static_cast<std::size_t>(e - e0)];
                const float w = costs[static_cast<std::size_t>(e - e0)];
                check_bp_edge(path, e, r, c, w, n);
                if (keep(r, c)) visit(Edge{r, c, w});
            }
        }
    }
}

GraphCsr read_bp_csr(const GraphInfo& info) {
    BpReader bp(info.path);
    const std::string& path = info.path;
    BpCsrVariables vars = open_csr_variables(bp, path, info.n);
    GraphCsr csr;
    csr.n = info.n;
    csr.row_ptr.resize(static_cast<std::size_t>(info.n + 1));
    csr.col_idx.resize(static_cast<std::size_t>(vars.nnz));
    csr.cost.resize(static_cast<std::size_t>(vars.nnz));
    bp.engine.Get(vars.row_ptr, csr.row_ptr.data(), adios2::Mode::Deferred);
    if (vars.nnz > 0) {
        bp.engine.Get(vars.col_idx, csr.col_idx.data(), adios2::Mode::Deferred);
        bp.engine.Get(vars.cost, csr.cost.data(), adios2::Mode::Deferred);
    }
    bp.engine.PerformGets();
    if (csr.row_ptr.front() != 0)
        throw std::runtime_error(path + ": row_ptr[0] = " + std::to_string(csr.row_ptr.front()) + ", must be 0");
    if (csr.row_ptr.back() != vars.nnz)
        throw std::runtime_error(path + ": row_ptr[n] = " + std::to_string(csr.row_ptr.back()) +
                                 " but col_idx has " + std::to_string(vars.nnz) + " entries");
    for (std::int64_t r = 0; r < info.n; ++r) {
        const std::int64_t a = csr.row_ptr[static_cast<std::size_t>(r)];
        const std::int64_t b = csr.row_ptr[static_cast<std::size_t>(r + 1)];
        check_bp_row(path, r, a, b, vars.nnz);
        for (std::int64_t e = a; e < b; ++e)
            check_bp_edge(path, e, r, csr.col_idx[static_cast<std::size_t>(e)], csr.cost[static_cast<std::size_t>(e)],
                          info.n);
    }
    return csr;
}
#endif  // LITPATH_HAVE_ADIOS2

// A .mtx file has no index: its entries are collected, then placed row by row.
GraphCsr read_mtx_csr(const GraphInfo& info) {
    std::vector<Edge> edges;
    edges.reserve(static_cast<std::size_t>(edge_count_bound(info)));
    read_mtx_edges(info, [](std::int64_t, std::int64_t) { return true; }, [&](const Edge& e) { edges.push_back(e); });
    GraphCsr csr;
    csr.n = info.n;
    csr.row_ptr.assign(static_cast<std::size_t>(info.n + 1), 0);
    for (const Edge& e : edges) ++csr.row_ptr[static_cast<std::size_t>(e.src + 1)];
    for (std::int64_t r = 0; r < info.n; ++r)
        csr.row_ptr[static_cast<std::size_t>(r + 1)] += csr.row_ptr[static_cast<std::size_t>(r)];
    csr.col_idx.resize(edges.size());
    csr.cost.resize(edges.size());
    std::vector<std::int64_t> next(csr.row_ptr.begin(), csr.row_ptr.end() - 1);
    for (const Edge& e : edges) {
        const auto slot = static_cast<std::size_t>(next[static_cast<std::size_t>(e.src)]++);
        csr.col_idx[slot] = e.dst;
        csr.cost[slot] = e.cost;
    }
    return csr;
}

}  // namespace

GraphFormat detect_format(const std::string& path) {
    if (!exists(path)) throw std::runtime_error(path + ": no such file or directory");
    if (ends_with(lower(path), ".mtx")) return GraphFormat::matrix_market;
    if (ends_with(lower(path), ".bp") || ends_with(lower(path), ".bp/") || is_directory(path)) return GraphFormat::adios_bp;
    std::ifstream in(path);
    std::string first;
    if (in && std::getline(in, first) && first.rfind("%%MatrixMarket", 0) == 0) return GraphFormat::matrix_market;
    throw std::runtime_error(path + ": unknown input format (expected graph.bp from the pipeline or a .mtx Matrix Market file)");
}

GraphInfo read_graph_info(const std::string& path, MPI_Comm) {
    GraphInfo info;
    info.path = path;
    info.format = detect_format(path);
    if (info.format == GraphFormat::matrix_market) {
        std::ifstream in(path);
        if (!in) throw std::runtime_error(path + ": cannot open for reading");
        std::int64_t line_no = 0;
        const MtxHeader h = read_mtx_header(in, path, line_no);
        info.n = h.rows;
        info.stored_entries = h.entries;
        info.symmetric = h.symmetry == "symmetric";
        info.digest = sha256_of_file(path);
        return info;
    }
#ifdef LITPATH_HAVE_ADIOS2
    BpReader bp(path);
    info.n = read_scalar_n(bp.io, bp.engine, path);
    if (info.n < 0) throw std::runtime_error(path + ": n = " + std::to_string(info.n) + " is negative");
    if (info.n > kMaxVertices)
        throw std::runtime_error(path + ": n = " + std::to_string(info.n) +
                                 " vertices is more than apsp-fw can address (at most " + std::to_string(kMaxVertices) +
                                 ")");
    if (auto col = bp.io.InquireVariable<std::int64_t>("col_idx"); col && col.Shape().size() == 1)
        info.stored_entries = static_cast<std::int64_t>(col.Shape()[0]);
    info.digest = read_digest(bp.io);
    return info;
#else
    throw std::runtime_error(path + ": reading graph.bp needs ADIOS2 (this apsp-fw was built with LITPATH_WITH_ADIOS2=OFF)");
#endif
}

void read_graph_edges(const GraphInfo& info, const LocalTiles& layout, bool read_all,
                      const std::function<bool(std::int64_t, std::int64_t)>& keep,
                      const std::function<void(const Edge&)>& visit) {
    if (info.format == GraphFormat::matrix_market) {
        read_mtx_edges(info, keep, visit);
        return;
    }
#ifdef LITPATH_HAVE_ADIOS2
    read_bp_edges(info, layout, read_all, keep, visit);
#else
    (void)layout, (void)read_all, (void)keep, (void)visit;
    throw std::runtime_error(info.path + ": reading graph.bp needs ADIOS2 (built with LITPATH_WITH_ADIOS2=OFF)");
#endif
}

GraphCsr read_graph_csr(const GraphInfo& info) {
    if (info.format == GraphFormat::matrix_market) return read_mtx_csr(info);
#ifdef LITPATH_HAVE_ADIOS2
    return read_bp_csr(info);
#else
    throw std::runtime_error(info.path + ": reading graph.bp needs ADIOS2 (built with LITPATH_WITH_ADIOS2=OFF)");
#endif
}

std::int64_t edge_count_bound(const GraphInfo& info) {
    return info.symmetric ? saturating_mul(2, info.stored_entries) : info.stored_entries;
}

}  // namespace litpath::apsp
