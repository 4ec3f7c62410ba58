// apsp-fw: exact all-pairs shortest paths with the COAST distributed blocked
// Floyd-Warshall (SC22) on a 2D block-cyclic process grid; or, with --sources,
// the distance rows of a set of sources by Dijkstra on the sparse graph (for
// graphs whose n x n matrix would not fit).
//
//   mpirun -n 4 apsp-fw --input graph.bp --output distances.bp --grid 2x2
//   mpirun -n 4 apsp-fw --input graph.bp --output distances.bp --sources ids.txt
//
// Exit status: 0 ok; 2 bad input, options or resources; 3 --validate failed.
//
// run() is the list of phases; each mode's phases follow, in the order they
// run. Every phase is collective: one that fails on any rank fails on all of
// them (collective_try), after the lowest failing rank printed why, so the
// ranks leave together. The command line is apps/options.*, the JSON summary
// apps/summary.*.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "apps/options.hpp"
#include "apps/summary.hpp"
#include "core/affinity.hpp"
#include "core/checkpoint.hpp"
#include "core/collective.hpp"
#include "core/distances_output.hpp"
#include "core/driver.hpp"
#include "core/graph_input.hpp"
#include "core/grid.hpp"
#include "core/size_math.hpp"
#include "core/source_rows.hpp"
#include "core/sssp.hpp"
#include "core/validate.hpp"
#include "kernels/backend.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support / MPIX_Query_rocm_support
#endif

#ifndef LITPATH_SOLVER_VERSION
#define LITPATH_SOLVER_VERSION "0.0.0"
#endif

using namespace litpath::apsp;

namespace {

// What every phase of a run shares.
struct Job {
    Options opt;
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_Comm node = MPI_COMM_NULL;  // the ranks on this node (shared memory)
    int rank = 0, ranks = 1, ranks_on_node = 1;
    std::string thread_placement;  // place_threads()
    double t_start = 0;            // MPI_Wtime() at the start
    bool root() const { return rank == 0; }
};

// The dense solve's choices, parsed with the options (identical on every rank).
struct DenseSetup {
    GridShape shape;
    BroadcastOptions broadcast;
    std::unique_ptr<Backend> backend;
};

// ------------------------------------------------------------------ helpers

// Whether this MPI library takes device pointers of `backend` (cuda, hip),
// asked at run time where the library has the query (Open MPI's extensions);
// false when it cannot tell.
bool mpi_reports_gpu_support(const std::string& backend) {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    if (backend == "cuda") return MPIX_Query_cuda_support() == 1;
#endif
#if defined(MPIX_ROCM_AWARE_SUPPORT) && MPIX_ROCM_AWARE_SUPPORT
    if (backend == "hip") return MPIX_Query_rocm_support() == 1;
#endif
    return false;
}

std::int64_t memory_available_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::int64_t value = 0;
    std::string unit;
    while (meminfo >> key >> value >> unit)
        if (key == "MemAvailable:") return value * 1024;
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return static_cast<std::int64_t>(pages) * page;
}

// Memory of this node for the run: --memory-limit, else MemAvailable.
struct MemoryBudget {
    std::int64_t bytes = 0;
    const char* source = "";  // how the error message names it
};

MemoryBudget memory_budget(const Options& opt) {
    if (opt.memory_limit > 0) return {opt.memory_limit, " (--memory-limit)"};
    return {memory_available_bytes(), " (MemAvailable)"};
}

std::string format_seconds(double s) {
    char buf[32];
    if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
    else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
    else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
    return buf;
}

std::string describe_bytes(std::int64_t bytes) {
    if (bytes == kSaturated) return "more than " + std::to_string(kSaturated) + " bytes (beyond int64)";
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double scaled = static_cast<double>(bytes);
    int unit = -1;
    while (scaled >= 1024 && unit < 3) scaled /= 1024, ++unit;
    char buf[64];
    if (unit < 0) std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
    else std::snprintf(buf, sizeof buf, "%lld bytes (%.1f %s)", static_cast<long long>(bytes), scaled, units[unit]);
    return buf;
}

// This rank's byte need summed over its node, and the largest over all ranks.
// The node sum is taken in double, then saturated: an int64 sum of saturated
// estimates (core/size_math.hpp) would wrap to a small number and "fit".
struct MemoryNeed {
    std::int64_t on_node = 0;
    std::int64_t most = 0;
};

MemoryNeed memory_need(std::int64_t mine, MPI_Comm node, MPI_Comm world) {
    MemoryNeed need;
    const double mine_double = static_cast<double>(mine);
    double on_node = 0;
    MPI_Allreduce(&mine_double, &on_node, 1, MPI_DOUBLE, MPI_SUM, node);
    need.on_node = on_node >= static_cast<double>(kSaturated) ? kSaturated : static_cast<std::int64_t>(on_node);
    MPI_Allreduce(&mine, &need.most, 1, MPI_INT64_T, MPI_MAX, world);
    return need;
}

// Writes `output` as `output`.partial through write(partial_path), collectively,
// and renames it only when complete, so a killed run never leaves a
// distances.bp that looks finished. False (the error printed) when any rank failed.
bool write_complete_output(const std::string& output, MPI_Comm world,
                           const std::function<void(const std::string&)>& write) {
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    const std::string partial = output + ".partial";
    const bool written = collective_try(world, [&] {
        if (rank == 0) std::filesystem::remove_all(partial);
        MPI_Barrier(world);
        write(partial);
    });
    if (!written) return false;
    MPI_Barrier(world);
    return collective_try(world, [&] {
        if (rank != 0) return;
        try {
            std::filesystem::remove_all(output);
            std::filesystem::rename(partial, output);
        } catch (const std::exception& e) {
            throw std::runtime_error("moving " + partial + " to " + output + ": " + e.what());
        }
    });
}

// --------------------------------------------------- phases of both modes

// --threads, else OMP_NUM_THREADS, else this node's cores divided among its
// ranks (and no more than this rank may use); warns when a rank has fewer
// CPUs than threads, then places the threads (core/affinity.hpp).
void choose_threads(Job& job) {
    Options& opt = job.opt;
    // CPUs this rank may run on: the launcher may have bound it (Open MPI binds a
    // rank to one core by default), and threads beyond that would share them.
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<int> rank_cpus = allowed_cpus();
    int allowed_cpu_count = rank_cpus.empty() ? hw : static_cast<int>(rank_cpus.size());
    if (opt.threads <= 0) {
        const char* env = std::getenv("OMP_NUM_THREADS");
        const long from_env = env ? std::strtol(env, nullptr, 10) : 0;  // strtol clamps, atoi would not
        opt.threads = from_env > 0 ? static_cast<int>(std::min<long>(from_env, kMaxThreads))
                                   : std::max(1, std::min(allowed_cpu_count, hw / job.ranks_on_node));
    }
    int worst_allowed = allowed_cpu_count;
    MPI_Allreduce(&allowed_cpu_count, &worst_allowed, 1, MPI_INT, MPI_MIN, job.world);
    if (job.root() && opt.threads > worst_allowed)
        std::cerr << "apsp-fw: warning: " << opt.threads << " threads per rank, but a rank may run on only "
                  << worst_allowed << " CPU(s) (the launcher bound it), so its threads share them; "
                  << "launch with mpirun --map-by slot:PE=" << opt.threads << " (or --bind-to none), "
                  << "or srun -c " << opt.threads << std::endl;
    job.thread_placement = place_threads(opt.threads, rank_cpus);
}

// ------------------------------------------------ phases of the dense solve

// The dense solve's grid, broadcast and backend. Throws on a bad choice.
DenseSetup parse_dense_setup(const Options& opt, int ranks) {
    DenseSetup setup;
    setup.shape = parse_grid(opt.grid, ranks);
    setup.broadcast.kind = parse_broadcast(opt.broadcast);
    setup.broadcast.chunk_bytes = opt.chunk_bytes;
    setup.backend = make_backend(opt.backend);
    return setup;
}

// Throws unless this node's ranks fit their tile stores and buffers: checked
// before anything large is allocated.
void check_memory(const Job& job, const LocalTiles& layout) {
    const auto [on_node, most] = memory_need(bytes_needed_per_rank(layout, job.opt.lookahead), job.node, job.world);
    const MemoryBudget available = memory_budget(job.opt);
    if (on_node <= available.bytes) return;
    std::ostringstream msg;
    msg << "n = " << layout.tiling.n << " does not fit: tile " << layout.tiling.b << " on grid "
        << grid_to_string(layout.grid) << " needs " << describe_bytes(most) << " on the largest rank and "
        << describe_bytes(on_node) << " on this node (" << job.ranks_on_node << " ranks), but only " << available.bytes
        << " bytes are available" << available.source
        << "; use more nodes, or --lookahead off to drop one panel buffer set";
    throw std::runtime_error(msg.str());
}

// --checkpoint-dir: claims the directory, then resumes from its newest valid
// checkpoint (--resume), or refuses to mix a fresh run into old checkpoints.
// resumed_from: the iterations the matrix now holds, or -1 (start from 0).
bool open_or_resume(const Job& job, Checkpointer& checkpointer, DistributedMatrix& matrix,
                    std::int64_t& resumed_from) {
    const Options& opt = job.opt;
    const bool opened = collective_try(job.world, [&] {
        checkpointer.claim();
        if (opt.resume) {
            resumed_from = checkpointer.resume(matrix);
        } else if (job.root() && !list_checkpoints(opt.checkpoint_dir).empty()) {
            throw std::runtime_error(opt.checkpoint_dir + " already holds checkpoints; pass --resume to continue "
                                     "from them, or remove the directory to start over");
        }
    });
    if (!opened) return false;
    if (job.root() && opt.resume) {
        if (resumed_from >= 0)
            std::cerr << "apsp-fw: resuming from checkpoint " << checkpoint_iteration_dir(opt.checkpoint_dir, resumed_from)
                      << " (" << resumed_from << " of " << matrix.layout().tiling.nb << " iterations done)" << std::endl;
        else
            std::cerr << "apsp-fw: no valid checkpoint in " << opt.checkpoint_dir << "; starting from iteration 0"
                      << std::endl;
    }
    return true;
}

// The edges this rank owns, into a matrix of +inf with a zero diagonal.
bool load_edges(const Job& job, const GraphInfo& info, DistributedMatrix& matrix) {
    return collective_try(job.world, [&] {
        // A failed resume may have left partial pieces in the store.
        std::fill(matrix.data(), matrix.data() + matrix.size(), std::numeric_limits<float>::infinity());
        read_graph_edges(
            info, matrix.layout(), false, [&](std::int64_t s, std::int64_t d) { return matrix.owns(s, d); },
            [&](const Edge& e) { matrix.add_edge(e.src, e.dst, e.cost); });
        matrix.set_zero_diagonal();
    });
}

// Rank 0's progress line after each iteration (at most one a second, and the
// last): iterations, elapsed, ETA and the semiring rate.
struct IterationProgress {
    double flops = 0;
    std::int64_t first_iteration = 0;
    double started = 0, last_print = 0;  // MPI_Wtime()

    void start(double now) { started = last_print = now; }
    void operator()(std::int64_t done, std::int64_t total) {
        const double now = MPI_Wtime(), elapsed = now - started;
        if (done < total && now - last_print < 1.0) return;
        last_print = now;
        // Rates and ETA count only this run's iterations (not those resumed).
        const auto run_done = static_cast<double>(std::max<std::int64_t>(1, done - first_iteration));
        const double eta = elapsed / run_done * static_cast<double>(total - done);
        const double rate = flops * run_done / static_cast<double>(total) / std::max(elapsed, 1e-9);
        char line[256];
        std::snprintf(line, sizeof line, "apsp-fw: iteration %lld/%lld (%.1f%%), elapsed %s, ETA %s, %.2f GF/s",
                      static_cast<long long>(done), static_cast<long long>(total),
                      100.0 * static_cast<double>(done) / static_cast<double>(total), format_seconds(elapsed).c_str(),
                      format_seconds(eta).c_str(), rate / 1e9);
        std::cerr << line << std::endl;
    }
};

// The blocked Floyd-Warshall from iteration first_iteration, checkpointing
// as --checkpoint-every says. Records its phase seconds (this rank's; solve:
// between barriers), where the tiles lived and whether MPI took device pointers.
bool solve(const Job& job, const DenseSetup& setup, const ProcessGrid& grid, DistributedMatrix& matrix,
           Checkpointer* checkpointer, std::int64_t first_iteration, SolveSummary& summary) {
    const Options& opt = job.opt;
    DriverOptions dopt;
    dopt.broadcast = setup.broadcast;
    dopt.lookahead = opt.lookahead;
    dopt.threads = opt.threads;
    // Decided on every rank alike: "on" trusts the user, "auto" asks MPI
    // (the same library everywhere); all ranks must agree, so take the AND.
    const std::string backend = setup.backend->name();
    const bool aware = is_gpu_backend(backend) && (opt.gpu_aware_mpi == "on" ||
                                                   (opt.gpu_aware_mpi == "auto" && mpi_reports_gpu_support(backend)));
    dopt.gpu_aware_mpi = all_ranks(job.world, aware);
    dopt.first_iteration = first_iteration;
    if (checkpointer && opt.checkpoint_every.enabled()) {
        dopt.checkpoint_due = [=](std::int64_t done, std::int64_t total) { return checkpointer->due(done, total); };
        dopt.checkpoint = [=, &matrix](std::int64_t done) { checkpointer->write(done, matrix); };
    }
    IterationProgress progress{summary.semiring_ops, first_iteration};
    if (job.root() && opt.progress) dopt.on_iteration = std::ref(progress);

    MPI_Barrier(job.world);
    const double solve_start = MPI_Wtime();
    progress.start(solve_start);
    BlockedFloydWarshall solver(matrix, grid, *setup.backend, dopt);
    // A checkpoint write failure throws on every rank.
    if (!collective_try(job.world, [&] { solver.run(); })) return false;
    MPI_Barrier(job.world);
    SolvePhaseSeconds& s = summary.seconds;
    s.solve = MPI_Wtime() - solve_start;
    const PhaseTimes& t = solver.times();
    s.diagonal = t.diagonal, s.panel = t.panel, s.broadcast = t.broadcast, s.outer = t.outer;
    s.checkpoint = t.checkpoint;
    summary.matrix_residency = solver.residency();
    summary.gpu_aware_mpi = solver.used_gpu_aware_mpi();
    return true;
}

// --validate, from memory, before anything is written: a result that fails
// the check never becomes a distances.bp that looks finished.
bool validate(const Job& job, const GraphInfo& info, const DistributedMatrix& matrix, SolveSummary& summary) {
    const double t0 = MPI_Wtime();
    const Options& opt = job.opt;
    const bool checked = collective_try(job.world, [&] {
        summary.validate = validate_rows(info, matrix, job.world, opt.validate, opt.validate_tol, opt.seed);
    });
    if (!checked) return false;
    summary.seconds.validate = MPI_Wtime() - t0;
    return true;
}

// --output: distances.bp, collectively, one Put per owned tile.
bool write_distances(const Job& job, const DenseSetup& setup, const GraphInfo& info, const DistributedMatrix& matrix,
                     SolveSummary& summary) {
    const double t0 = MPI_Wtime();
    DistanceAttributes attrs;
    attrs.graph_digest = info.digest;
    attrs.n = info.n;
    attrs.block_size = matrix.layout().tiling.b;
    attrs.process_grid = grid_to_string(setup.shape);
    attrs.solver_version = LITPATH_SOLVER_VERSION;
    attrs.broadcast = broadcast_name(setup.broadcast.kind);
    const bool written = write_complete_output(job.opt.output, job.world, [&](const std::string& partial) {
        write_distances_bp(partial, matrix, job.world, attrs, job.opt.adios2_config);
    });
    if (!written) return false;
    summary.seconds.write = MPI_Wtime() - t0;
    return true;
}

// What the run is, before it starts: the summary's fields that no phase measures.
SolveSummary describe_solve(const Job& job, const DenseSetup& setup, const GraphInfo& info, int b) {
    const Options& opt = job.opt;
    SolveSummary summary;
    summary.solver_version = LITPATH_SOLVER_VERSION;
    summary.input = opt.input;
    summary.output = opt.output;
    summary.graph_digest = info.digest;
    summary.n = info.n;
    summary.input_entries = info.stored_entries;
    summary.ranks = job.ranks;
    summary.grid = grid_to_string(setup.shape);
    summary.tile = b;
    summary.broadcast = broadcast_name(setup.broadcast.kind);
    summary.chunk_bytes = setup.broadcast.chunk_bytes;
    summary.lookahead = opt.lookahead;
    summary.backend = setup.backend->name();
    summary.isa = setup.backend->isa();
    summary.threads = opt.threads;
    summary.thread_placement = job.thread_placement;
    summary.semiring_ops = 2.0 * std::pow(static_cast<double>(info.n), 3);
    return summary;
}

// Each phase's slowest rank, then the JSON summary on rank 0 and, when the
// check failed, why.
void print_summary(const Job& job, SolveSummary& summary) {
    SolvePhaseSeconds& s = summary.seconds;
    double local[8] = {s.read, s.diagonal, s.panel, s.broadcast, s.outer, s.write, s.validate, s.checkpoint};
    double slowest[8];
    MPI_Reduce(local, slowest, 8, MPI_DOUBLE, MPI_MAX, 0, job.world);
    if (!job.root()) return;
    s.read = slowest[0], s.diagonal = slowest[1], s.panel = slowest[2], s.broadcast = slowest[3];
    s.outer = slowest[4], s.write = slowest[5], s.validate = slowest[6], s.checkpoint = slowest[7];
    publish_summary(summary.to_json(), job.opt.summary_json);
    if (summary.ok()) return;
    const ValidationResult& check = *summary.validate;
    std::cerr << "apsp-fw: error: validation failed on " << check.rows << " rows: max relative error "
              << check.max_rel_error << " (tolerance " << check.tolerance << "), " << check.reachability_mismatches
              << " reachability mismatches"
              << (job.opt.output.empty() ? "" : "; " + job.opt.output + " was not written") << std::endl;
}

// The dense solve: COAST's blocked Floyd-Warshall on the process grid.
int run_floyd_warshall(const Job& job, const DenseSetup& setup) {
    const Options& opt = job.opt;
    const MPI_Comm world = job.world;
    ProcessGrid grid(world, setup.shape);

    GraphInfo info;
    if (!collective_try(world, [&] { info = read_graph_info(opt.input, world); })) return 2;
    const int b = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(opt.tile, info.n)));
    const LocalTiles layout(Tiling(info.n, b), setup.shape, grid.me);
    if (!collective_try(world, [&] { check_memory(job, layout); })) return 2;
    SolveSummary summary = describe_solve(job, setup, info, b);

    // Read: resume from a checkpoint, or the owned edges of the input.
    const double t0 = MPI_Wtime();
    DistributedMatrix matrix(layout);
    std::unique_ptr<Checkpointer> checkpointer;
    std::int64_t resumed_from = -1;
    if (!opt.checkpoint_dir.empty()) {
        checkpointer = std::make_unique<Checkpointer>(opt.checkpoint_dir, CheckpointIdentity{info.digest, info.n, b, setup.shape},
                                                      opt.checkpoint_every, world);
        if (!open_or_resume(job, *checkpointer, matrix, resumed_from)) return 2;
    }
    if (resumed_from < 0 && !load_edges(job, info, matrix)) return 2;
    MPI_Barrier(world);
    summary.seconds.read = MPI_Wtime() - t0;

    if (!solve(job, setup, grid, matrix, checkpointer.get(), std::max<std::int64_t>(resumed_from, 0), summary))
        return 2;
    if (opt.validate > 0 && !validate(job, info, matrix, summary)) return 2;
    if (!opt.output.empty() && summary.ok() && !write_distances(job, setup, info, matrix, summary)) return 2;
    summary.total_seconds = MPI_Wtime() - job.t_start;

    if (checkpointer)
        summary.checkpoint = CheckpointSummary{opt.checkpoint_dir, opt.checkpoint_every.to_string(),
                                               checkpointer->written(), resumed_from};
    print_summary(job, summary);
    return summary.ok() ? 0 : 3;
}

// ------------------------------------------- phases of the rows (--sources)

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
    attrs.solver_version = LITPATH_SOLVER_VERSION;
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

    RowsSummary summary;
    double t0 = MPI_Wtime();
    GraphCsr csr;
    if (!load_graph(job, info, csr)) return 2;
    MPI_Barrier(world);
    summary.read_seconds = MPI_Wtime() - t0;

    std::vector<float> rows;
    if (!solve_rows(job, csr, sources, block, rows, summary.solve_seconds)) return 2;
    if (!opt.output.empty()) {
        t0 = MPI_Wtime();
        if (!write_rows(job, info, rows, block, sources)) return 2;
        summary.write_seconds = MPI_Wtime() - t0;
    }
    summary.total_seconds = MPI_Wtime() - job.t_start;

    summary.solver_version = LITPATH_SOLVER_VERSION;
    summary.input = opt.input;
    summary.output = opt.output;
    summary.sources_file = opt.sources;
    summary.graph_digest = info.digest;
    summary.n = info.n;
    summary.input_entries = info.stored_entries;
    summary.edges = csr.edge_count();
    summary.rows = m;
    summary.ranks = job.ranks;
    summary.threads = opt.threads;
    summary.thread_placement = job.thread_placement;
    print_rows_summary(job, summary);
    return 0;
}

// --------------------------------------------------------------------- run

int run(int argc, char** argv) {
    Job job;
    MPI_Comm_rank(job.world, &job.rank);
    MPI_Comm_size(job.world, &job.ranks);
    job.t_start = MPI_Wtime();

    DenseSetup setup;
    if (!collective_try(job.world, [&] {
            job.opt = parse_options(argc, argv);
            if (!job.opt.help && !job.opt.version) setup = parse_dense_setup(job.opt, job.ranks);
        }))
        return 2;
    if (job.opt.help) {
        if (job.root()) std::cout << kUsage;
        return 0;
    }
    if (job.opt.version) {
        if (job.root()) std::cout << "apsp-fw " << LITPATH_SOLVER_VERSION << "\n";
        return 0;
    }

    MPI_Comm_split_type(job.world, MPI_COMM_TYPE_SHARED, job.rank, MPI_INFO_NULL, &job.node);
    MPI_Comm_size(job.node, &job.ranks_on_node);
    choose_threads(job);
    const int status = job.opt.sources.empty() ? run_floyd_warshall(job, setup) : run_source_rows(job);
    MPI_Comm_free(&job.node);
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int status = 2;
    try {
        status = run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "apsp-fw: error: " << e.what() << std::endl;
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return status;
}
