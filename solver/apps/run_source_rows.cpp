// apsp-fw --sources: the distance rows of a set of sources by Dijkstra on the
// sparse graph, for graphs whose n x n matrix would not fit. run_source_rows()
// at the end of the file is the list of the phases; they come before it, in
// the order it runs them.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/job.hpp"
#include "apps/summary.hpp"
#include "core/collective.hpp"
#include "core/source_rows.hpp"
#include "core/sssp.hpp"
#include "io/distances_output.hpp"
#include "io/graph_input.hpp"

namespace litpath::apsp {
namespace {

// Throws unless this node's ranks fit the whole graph, their rows and their
// search spaces: checked before anything large is allocated.
void check_rows_memory(const Job& job, const GraphInfo& info, const RowBlock& block, std::int64_t m) {
    const Options& opt = job.opt;
    const std::int64_t edges = edge_count_bound(info);
    const std::int64_t reading =
        job.root() && info.format == GraphFormat::matrix_market ? edges * static_cast<std::int64_t>(sizeof(Edge)) : 0;
    const RowsMemory need = rows_memory_per_rank(info.n, edges, block.count, opt.threads, reading);
    const auto [on_node, most] = memory_need(need.total(), job.node, job.world);
    const MemoryBudget available = memory_budget(opt);
    if (on_node <= available.bytes) return;
    std::ostringstream msg;
    msg << "--sources: " << m << " rows of n = " << info.n << " do not fit: each rank holds the whole graph ("
        << describe_bytes(need.graph) << "), its rows (" << describe_bytes(need.rows)
        << " here) and the search spaces of its " << opt.threads << " threads (" << describe_bytes(need.workspace)
        << " here); the largest rank needs " << describe_bytes(most) << " and this node's " << job.ranks_on_node
        << " ranks " << describe_bytes(on_node) << ", but only " << describe_bytes(available.bytes)
        << " are available" << available.source
        << "; run fewer ranks per node, spread the ranks over more nodes, or split the sources over several runs";
    throw std::runtime_error(msg.str());
}

// What the run is, before it starts: the summary's fields that no phase measures.
RowsSummary describe_rows(const Job& job, const GraphInfo& info, std::int64_t rows) {
    const Options& opt = job.opt;
    RowsSummary summary;
    summary.solver_version = kSolverVersion;
    summary.input = opt.input;
    summary.output = opt.output;
    summary.sources_file = opt.sources;
    summary.graph_digest = info.digest;
    summary.n = info.n;
    summary.input_entries = info.stored_entries;
    summary.rows = rows;
    summary.ranks = job.ranks;
    summary.threads = opt.threads;
    summary.thread_placement = job.thread_placement;
    return summary;
}

// Rank 0 reads the whole graph and broadcasts it: the file system sees one
// reader (not one per rank), a .mtx file is parsed once, and read errors come
// from one place; the broadcast (a tree, shared memory within a node) costs
// less than P parallel reads of the same file.
bool load_graph(const Job& job, const GraphInfo& info, GraphCsr& csr) {
    if (!collective_try(job.world, [&] {
            if (job.root()) csr = read_graph_csr(info);
        }))
        return false;
    csr.n = info.n;
    broadcast_vector(csr.row_ptr, job.world);
    broadcast_vector(csr.col_idx, job.world);
    broadcast_vector(csr.cost, job.world);
    return true;
}

// Rank 0's progress line after each of its rows (at most one a second, and the
// last): rows, elapsed, ETA and rows per second.
std::function<void(std::int64_t)> row_progress(std::int64_t rows) {
    const auto started = std::chrono::steady_clock::now();
    auto last_print = std::make_shared<std::chrono::steady_clock::time_point>(started - std::chrono::hours(1));
    // Called from the worker threads one at a time (distance_rows holds a mutex).
    return [=](std::int64_t done) {
        const auto now = std::chrono::steady_clock::now();
        if (done < rows && now - *last_print < std::chrono::seconds(1)) return;
        *last_print = now;
        const double elapsed = std::chrono::duration<double>(now - started).count();
        const double eta = elapsed / static_cast<double>(done) * static_cast<double>(rows - done);
        char line[256];
        std::snprintf(line, sizeof line, "apsp-fw: rows %lld/%lld on rank 0 (%.1f%%), elapsed %s, ETA %s, %.2f rows/s",
                      static_cast<long long>(done), static_cast<long long>(rows),
                      100.0 * static_cast<double>(done) / static_cast<double>(rows), format_seconds(elapsed).c_str(),
                      format_seconds(eta).c_str(), static_cast<double>(done) / std::max(elapsed, 1e-9));
        std::cerr << line << std::endl;
    };
}

// This rank's block of rows by Dijkstra, its threads over its sources.
// solve_seconds: between barriers.
bool solve_rows(const Job& job, const GraphCsr& csr, const std::vector<std::int64_t>& sources, const RowBlock& block,
                std::vector<float>& rows, double& solve_seconds) {
    const bool allocated = collective_try(job.world, [&] {
        try {
            rows.resize(static_cast<std::size_t>(block.count * csr.n));
        } catch (const std::bad_alloc&) {
            throw std::runtime_error("out of memory allocating " + describe_bytes(block.count * csr.n * 4) + " for " +
                                     std::to_string(block.count) + " rows");
        }
    });
    if (!allocated) return false;
    std::function<void(std::int64_t)> on_row_done;
    if (job.root() && job.opt.progress) on_row_done = row_progress(block.count);
    MPI_Barrier(job.world);
    const double solve_start = MPI_Wtime();
    const bool solved = collective_try(job.world, [&] {
        const litpath::sssp::CsrGraph graph{csr.n, csr.row_ptr.data(), csr.col_idx.data(), csr.cost.data()};
        litpath::sssp::distance_rows(graph, sources.data() + block.first, block.count, rows.data(), job.opt.threads,
                                     on_row_done);
    });
    if (!solved) return false;
    MPI_Barrier(job.world);
    solve_seconds = MPI_Wtime() - solve_start;
    return true;
}

// --output: distances.bp in the rows layout, one Put per rank's block of rows.
bool write_rows(const Job& job, const GraphInfo& info, const std::vector<float>& rows, const RowBlock& block,
                const std::vector<std::int64_t>& sources) {
    DistanceRowsAttributes attrs;
    attrs.graph_digest = info.digest;
    attrs.n = info.n;
    attrs.solver_version = kSolverVersion;
    return write_complete_output(job.opt.output, job.world, [&](const std::string& partial) {
        write_distance_rows_bp(partial, rows.data(), block.first, block.count, sources, job.world, attrs,
                               job.opt.adios2_config);
    });
}

// Each phase's slowest rank, then the JSON summary on rank 0.
void print_rows_summary(const Job& job, RowsSummary& summary) {
    double local[2] = {summary.read_seconds, summary.write_seconds};
    double slowest[2];
    MPI_Reduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, job.world);
    if (!job.root()) return;
    summary.read_seconds = slowest[0], summary.write_seconds = slowest[1];
    publish_summary(summary.to_json(), job.opt.summary_json);
}

}  // namespace

// apsp-fw --sources: the distance rows of the listed vertices by Dijkstra.
// Every rank needs the whole graph; the sources (sorted) are split over the
// ranks in contiguous blocks.
int run_source_rows(const Job& job) {
    const Options& opt = job.opt;
    const MPI_Comm world = job.world;

    GraphInfo info;
    std::vector<std::int64_t> sources;
    if (!collective_try(world, [&] {
            info = read_graph_info(opt.input, world);
            if (job.root()) sources = read_sources_file(opt.sources, info.n);
        }))
        return 2;
    broadcast_vector(sources, world);
    const auto m = static_cast<std::int64_t>(sources.size());
    const RowBlock block = row_block_of_rank(m, job.ranks, job.rank);
    if (!collective_try(world, [&] { check_rows_memory(job, info, block, m); })) return 2;

    RowsSummary summary = describe_rows(job, info, m);
    double t0 = MPI_Wtime();
    GraphCsr csr;
    if (!load_graph(job, info, csr)) return 2;
    MPI_Barrier(world);
    summary.read_seconds = MPI_Wtime() - t0;
    summary.edges = csr.edge_count();

    std::vector<float> rows;
    if (!solve_rows(job, csr, sources, block, rows, summary.solve_seconds)) return 2;
    if (!opt.output.empty()) {
        t0 = MPI_Wtime();
        if (!write_rows(job, info, rows, block, sources)) return 2;
        summary.write_seconds = MPI_Wtime() - t0;
    }
    summary.total_seconds = MPI_Wtime() - job.t_start;
    print_rows_summary(job, summary);
    return 0;
}

}  // namespace litpath::apsp
