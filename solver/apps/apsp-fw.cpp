// apsp-fw: exact all-pairs shortest paths with the COAST distributed blocked
// Floyd-Warshall (SC22) on a 2D block-cyclic process grid; or, with --sources,
// the distance rows of a set of sources by Dijkstra on the sparse graph (for
// graphs whose n x n matrix would not fit).
//
//   mpirun -n 4 apsp-fw --input graph.bp --output distances.bp --grid 2x2
//   mpirun -n 4 apsp-fw --input graph.bp --output distances.bp --sources ids.txt
//
// Exit status: 0 ok; 2 bad input, options or resources; 3 --validate failed.
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <mutex>
#include <set>
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
    std::string error;
    try {
        if (rank == 0) std::filesystem::remove_all(partial);
        MPI_Barrier(world);
        write(partial);
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (any_rank_failed(world, error)) return false;
    MPI_Barrier(world);
    if (rank == 0) {
        try {
            std::filesystem::remove_all(output);
            std::filesystem::rename(partial, output);
        } catch (const std::exception& e) {
            error = "moving " + partial + " to " + output + ": " + e.what();
        }
    }
    return !any_rank_failed(world, error);
}

// apsp-fw --sources: the distance rows of the listed vertices by Dijkstra.
// Rank 0 reads the sources file and the whole graph and broadcasts them: the
// file system sees one reader (not one per rank), a .mtx file is parsed once,
// and read errors come from one place; the broadcast (a tree, shared memory
// within a node) costs less than P parallel reads of the same file.
int run_source_rows(const Options& opt, MPI_Comm world, MPI_Comm node, int ranks_on_node,
                    const std::string& thread_placement, double t_start) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &ranks);
    const bool root = rank == 0;
    std::string error;

    // ---- graph header and sources ----
    GraphInfo info;
    std::vector<std::int64_t> sources;
    try {
        info = read_graph_info(opt.input, world);
        if (root) sources = read_sources_file(opt.sources, info.n);
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (any_rank_failed(world, error)) return 2;
    broadcast_vector(sources, world);
    const auto m = static_cast<std::int64_t>(sources.size());
    const RowBlock block = row_block_of_rank(m, ranks, rank);

    // ---- memory check, before anything large is allocated ----
    {
        const std::int64_t edges = edge_count_bound(info);
        const std::int64_t reading =
            root && info.format == GraphFormat::matrix_market ? edges * static_cast<std::int64_t>(sizeof(Edge)) : 0;
        const RowsMemory need = rows_memory_per_rank(info.n, edges, block.count, opt.threads, reading);
        const auto [on_node, most] = memory_need(need.total(), node, world);
        const std::int64_t available = opt.memory_limit > 0 ? opt.memory_limit : memory_available_bytes();
        if (on_node > available) {
            std::ostringstream msg;
            msg << "--sources: " << m << " rows of n = " << info.n << " do not fit: each rank holds the whole graph ("
                << describe_bytes(need.graph) << "), its rows (" << describe_bytes(need.rows)
                << " here) and the search spaces of its " << opt.threads << " threads ("
                << describe_bytes(need.workspace) << " here); the largest rank needs " << describe_bytes(most)
                << " and this node's " << ranks_on_node << " ranks " << describe_bytes(on_node) << ", but only "
                << describe_bytes(available) << " are available"
                << (opt.memory_limit > 0 ? " (--memory-limit)" : " (MemAvailable)")
                << "; run fewer ranks per node, spread the ranks over more nodes, or split the sources over several runs";
            error = msg.str();
        }
    }
    if (any_rank_failed(world, error)) return 2;

    // ---- read (rank 0) and broadcast the graph ----
    double t0 = MPI_Wtime();
    GraphCsr csr;
    if (root) {
        try {
            csr = read_graph_csr(info);
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    if (any_rank_failed(world, error)) return 2;
    csr.n = info.n;
    broadcast_vector(csr.row_ptr, world);
    broadcast_vector(csr.col_idx, world);
    broadcast_vector(csr.cost, world);
    MPI_Barrier(world);
    const double read_seconds = MPI_Wtime() - t0;
    const std::int64_t edges = csr.edge_count();

    // ---- solve: this rank's block of rows, threads over its sources ----
    std::vector<float> rows;
    try {
        rows.resize(static_cast<std::size_t>(block.count * info.n));
    } catch (const std::bad_alloc&) {
        error = "out of memory allocating " + describe_bytes(block.count * info.n * 4) + " for " +
                std::to_string(block.count) + " rows";
    }
    if (any_rank_failed(world, error)) return 2;
    std::function<void(std::int64_t)> on_row_done;
    const auto started = std::chrono::steady_clock::now();
    auto last_print = started - std::chrono::hours(1);
    if (root && opt.progress) {
        // Called from the worker threads one at a time (distance_rows holds a mutex).
        on_row_done = [&](std::int64_t done) {
            const auto now = std::chrono::steady_clock::now();
            if (done < block.count && now - last_print < std::chrono::seconds(1)) return;
            last_print = now;
            const double elapsed = std::chrono::duration<double>(now - started).count();
            const double eta = elapsed / static_cast<double>(done) * static_cast<double>(block.count - done);
            char line[256];
            std::snprintf(line, sizeof line, "apsp-fw: rows %lld/%lld on rank 0 (%.1f%%), elapsed %s, ETA %s, %.2f rows/s",
                          static_cast<long long>(done), static_cast<long long>(block.count),
                          100.0 * static_cast<double>(done) / static_cast<double>(block.count),
                          format_seconds(elapsed).c_str(), format_seconds(eta).c_str(),
                          static_cast<double>(done) / std::max(elapsed, 1e-9));
            std::cerr << line << std::endl;
        };
    }
    MPI_Barrier(world);
    const double solve_start = MPI_Wtime();
    try {
        const litpath::sssp::CsrGraph graph{csr.n, csr.row_ptr.data(), csr.col_idx.data(), csr.cost.data()};
        litpath::sssp::distance_rows(graph, sources.data() + block.first, block.count, rows.data(), opt.threads, on_row_done);
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (any_rank_failed(world, error)) return 2;
    const double my_solve_seconds = MPI_Wtime() - solve_start;
    MPI_Barrier(world);
    const double solve_seconds = MPI_Wtime() - solve_start;

    // ---- write ----
    double write_seconds = 0;
    if (!opt.output.empty()) {
        t0 = MPI_Wtime();
        DistanceRowsAttributes attrs;
        attrs.graph_digest = info.digest;
        attrs.n = info.n;
        attrs.solver_version = LITPATH_SOLVER_VERSION;
        const bool written = write_complete_output(opt.output, world, [&](const std::string& partial) {
            write_distance_rows_bp(partial, rows.data(), block.first, block.count, sources, world, attrs,
                                   opt.adios2_config);
        });
        if (!written) return 2;
        write_seconds = MPI_Wtime() - t0;
    }
    const double total_seconds = MPI_Wtime() - t_start;

    // ---- summary: each phase's slowest rank ----
    double local[3] = {read_seconds, my_solve_seconds, write_seconds};
    double slowest[3];
    MPI_Reduce(local, slowest, 3, MPI_DOUBLE, MPI_MAX, 0, world);
    if (root) {
        RowsSummary summary;
        summary.solver_version = LITPATH_SOLVER_VERSION;
        summary.input = opt.input;
        summary.output = opt.output;
        summary.sources_file = opt.sources;
        summary.graph_digest = info.digest;
        summary.n = info.n;
        summary.input_entries = info.stored_entries;
        summary.edges = edges;
        summary.rows = m;
        summary.ranks = ranks;
        summary.threads = opt.threads;
        summary.thread_placement = thread_placement;
        summary.read_seconds = slowest[0];
        summary.solve_seconds = solve_seconds;
        summary.write_seconds = slowest[2];
        summary.total_seconds = total_seconds;
        publish_summary(summary.to_json(), opt.summary_json);
    }
    return 0;
}

int run(int argc, char** argv) {
    MPI_Comm world = MPI_COMM_WORLD;
    int rank = 0, ranks = 1;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &ranks);
    const bool root = rank == 0;
    const double t_start = MPI_Wtime();

    // ---- options, grid, backend (identical on every rank) ----
    Options opt;
    GridShape shape;
    BroadcastOptions bcast;
    std::unique_ptr<Backend> backend;
    std::string error;
    try {
        opt = parse_options(argc, argv);
        if (!opt.help && !opt.version) {
            shape = parse_grid(opt.grid, ranks);
            bcast.kind = parse_broadcast(opt.broadcast);
            bcast.chunk_bytes = opt.chunk_bytes;
            backend = make_backend(opt.backend);
        }
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (any_rank_failed(world, error)) return 2;
    if (opt.help) {
        if (root) std::cout << kUsage;
        return 0;
    }
    if (opt.version) {
        if (root) std::cout << "apsp-fw " << LITPATH_SOLVER_VERSION << "\n";
        return 0;
    }

    MPI_Comm node;
    MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int ranks_on_node = 1;
    MPI_Comm_size(node, &ranks_on_node);
    // CPUs this rank may run on: the launcher may have bound it (Open MPI binds a
    // rank to one core by default), and threads beyond that would share them.
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::vector<int> rank_cpus = allowed_cpus();
    int allowed_cpu_count = rank_cpus.empty() ? hw : static_cast<int>(rank_cpus.size());
    if (opt.threads <= 0) {
        const char* env = std::getenv("OMP_NUM_THREADS");
        const long from_env = env ? std::strtol(env, nullptr, 10) : 0;  // strtol clamps, atoi would not
        opt.threads = from_env > 0 ? static_cast<int>(std::min<long>(from_env, kMaxThreads))
                                   : std::max(1, std::min(allowed_cpu_count, hw / ranks_on_node));
    }
    {
        int worst_allowed = allowed_cpu_count;
        MPI_Allreduce(&allowed_cpu_count, &worst_allowed, 1, MPI_INT, MPI_MIN, world);
        if (root && opt.threads > worst_allowed)
            std::cerr << "apsp-fw: warning: " << opt.threads << " threads per rank, but a rank may run on only "
                      << worst_allowed << " CPU(s) (the launcher bound it), so its threads share them; "
                      << "launch with mpirun --map-by slot:PE=" << opt.threads << " (or --bind-to none), "
                      << "or srun -c " << opt.threads << std::endl;
    }
    const std::string thread_placement = place_threads(opt.threads, rank_cpus);

    if (!opt.sources.empty()) {
        const int status = run_source_rows(opt, world, node, ranks_on_node, thread_placement, t_start);
        MPI_Comm_free(&node);
        return status;
    }

    ProcessGrid grid(world, shape);
    PhaseTimes times;

    // ---- input header, memory check ----
    GraphInfo info;
    try {
        info = read_graph_info(opt.input, world);
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (any_rank_failed(world, error)) return 2;
    const int b = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(opt.tile, info.n)));
    const Tiling tiling(info.n, b);
    const LocalTiles layout(tiling, shape, grid.me);
    {
        const auto [on_node, most] = memory_need(bytes_needed_per_rank(layout, opt.lookahead), node, world);
        const std::int64_t available = opt.memory_limit > 0 ? opt.memory_limit : memory_available_bytes();
        if (on_node > available) {
            std::ostringstream msg;
            msg << "n = " << info.n << " does not fit: tile " << b << " on grid " << grid_to_string(shape)
                << " needs " << describe_bytes(most) << " on the largest rank and " << describe_bytes(on_node)
                << " on this node (" << ranks_on_node << " ranks), but only " << available << " bytes are available"
                << (opt.memory_limit > 0 ? " (--memory-limit)" : " (MemAvailable)")
                << "; use more nodes, or --lookahead off to drop one panel buffer set";
            error = msg.str();
        }
    }
    if (any_rank_failed(world, error)) return 2;

    // ---- checkpoint: resume, or refuse to mix a fresh run into old checkpoints ----
    double t0 = MPI_Wtime();
    DistributedMatrix matrix(layout);
    std::unique_ptr<Checkpointer> checkpointer;
    std::int64_t resumed_from = -1;
    if (!opt.checkpoint_dir.empty()) {
        CheckpointIdentity identity{info.digest, info.n, b, shape};
        checkpointer = std::make_unique<Checkpointer>(opt.checkpoint_dir, identity, opt.checkpoint_every, world);
        try {
            checkpointer->claim();
            if (opt.resume) {
                resumed_from = checkpointer->resume(matrix);
            } else if (root && !list_checkpoints(opt.checkpoint_dir).empty()) {
                error = opt.checkpoint_dir + " already holds checkpoints; pass --resume to continue from them, or "
                        "remove the directory to start over";
            }
        } catch (const std::exception& e) {
            error = e.what();
        }
        if (any_rank_failed(world, error)) return 2;
        if (root && opt.resume) {
            if (resumed_from >= 0)
                std::cerr << "apsp-fw: resuming from checkpoint " << checkpoint_iteration_dir(opt.checkpoint_dir, resumed_from)
                          << " (" << resumed_from << " of " << tiling.nb << " iterations done)" << std::endl;
            else
                std::cerr << "apsp-fw: no valid checkpoint in " << opt.checkpoint_dir << "; starting from iteration 0"
                          << std::endl;
        }
    }

    // ---- read owned edges (unless resumed) ----
    if (resumed_from < 0) {
        try {
            // A failed resume may have left partial pieces in the store.
            std::fill(matrix.data(), matrix.data() + matrix.size(), std::numeric_limits<float>::infinity());
            read_graph_edges(
                info, layout, false, [&](std::int64_t s, std::int64_t d) { return matrix.owns(s, d); },
                [&](const Edge& e) { matrix.add_edge(e.src, e.dst, e.cost); });
            matrix.set_zero_diagonal();
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    if (any_rank_failed(world, error)) return 2;
    MPI_Barrier(world);
    times.read = MPI_Wtime() - t0;

    // ---- solve ----
    const double flops = 2.0 * std::pow(static_cast<double>(info.n), 3);
    DriverOptions dopt;
    dopt.broadcast = bcast;
    dopt.lookahead = opt.lookahead;
    dopt.threads = opt.threads;
    {
        // Decided on every rank alike: "on" trusts the user, "auto" asks MPI
        // (the same library everywhere); all ranks must agree, so take the AND.
        const bool gpu = is_gpu_backend(backend->name());
        const bool aware = gpu && (opt.gpu_aware_mpi == "on" ||
                                   (opt.gpu_aware_mpi == "auto" && mpi_reports_gpu_support(backend->name())));
        dopt.gpu_aware_mpi = all_ranks(world, aware);
    }
    const std::int64_t first_iteration = std::max<std::int64_t>(resumed_from, 0);
    dopt.first_iteration = first_iteration;
    if (checkpointer && opt.checkpoint_every.enabled()) {
        dopt.checkpoint_due = [&](std::int64_t done, std::int64_t total) { return checkpointer->due(done, total); };
        dopt.checkpoint = [&](std::int64_t done) { checkpointer->write(done, matrix); };
    }
    double solve_start = 0, last_print = 0;
    if (root && opt.progress) {
        dopt.on_iteration = [&](std::int64_t done, std::int64_t total) {
            const double now = MPI_Wtime(), elapsed = now - solve_start;
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
        };
    }
    MPI_Barrier(world);
    solve_start = last_print = MPI_Wtime();
    BlockedFloydWarshall solver(matrix, grid, *backend, dopt);
    try {
        solver.run();  // a checkpoint write failure throws on every rank
    } catch (const std::exception& e) {
        error = e.what();
    }
    if (any_rank_failed(world, error)) return 2;
    MPI_Barrier(world);
    const double solve_seconds = MPI_Wtime() - solve_start;
    const PhaseTimes& st = solver.times();
    times.diagonal = st.diagonal, times.panel = st.panel, times.broadcast = st.broadcast, times.outer = st.outer;

    // ---- validate, from memory, before anything is written: a result that fails
    // the check never becomes a distances.bp that looks finished ----
    ValidationResult check;
    if (opt.validate > 0) {
        t0 = MPI_Wtime();
        try {
            check = validate_rows(info, matrix, world, opt.validate, opt.validate_tol, opt.seed);
        } catch (const std::exception& e) {
            error = e.what();
        }
        if (any_rank_failed(world, error)) return 2;
        times.validate = MPI_Wtime() - t0;
    }

    // ---- write ----
    if (!opt.output.empty() && check.ok) {
        t0 = MPI_Wtime();
        DistanceAttributes attrs;
        attrs.graph_digest = info.digest;
        attrs.n = info.n;
        attrs.block_size = b;
        attrs.process_grid = grid_to_string(shape);
        attrs.solver_version = LITPATH_SOLVER_VERSION;
        attrs.broadcast = broadcast_name(bcast.kind);
        const bool written = write_complete_output(opt.output, world, [&](const std::string& partial) {
            write_distances_bp(partial, matrix, world, attrs, opt.adios2_config);
        });
        if (!written) return 2;
        times.write = MPI_Wtime() - t0;
    }
    const double total_seconds = MPI_Wtime() - t_start;

    // ---- summary: each phase's slowest rank ----
    double local[8] = {times.read, times.diagonal, times.panel, times.broadcast, times.outer, times.write, times.validate,
                       st.checkpoint};
    double slowest[8];
    MPI_Reduce(local, slowest, 8, MPI_DOUBLE, MPI_MAX, 0, world);
    if (root) {
        SolveSummary summary;
        summary.solver_version = LITPATH_SOLVER_VERSION;
        summary.input = opt.input;
        summary.output = opt.output;
        summary.graph_digest = info.digest;
        summary.n = info.n;
        summary.input_entries = info.stored_entries;
        summary.ranks = ranks;
        summary.grid = grid_to_string(shape);
        summary.tile = b;
        summary.broadcast = broadcast_name(bcast.kind);
        summary.chunk_bytes = bcast.chunk_bytes;
        summary.lookahead = opt.lookahead;
        summary.backend = backend->name();
        summary.isa = backend->isa();
        summary.threads = opt.threads;
        summary.thread_placement = thread_placement;
        summary.matrix_residency = solver.residency();
        summary.gpu_aware_mpi = solver.used_gpu_aware_mpi();
        summary.seconds = {slowest[0], slowest[1], slowest[2], slowest[3], slowest[4],
                           slowest[5], slowest[6], slowest[7], solve_seconds};
        if (checkpointer)
            summary.checkpoint = CheckpointSummary{opt.checkpoint_dir, opt.checkpoint_every.to_string(),
                                                   checkpointer->written(), resumed_from};
        summary.total_seconds = total_seconds;
        summary.semiring_ops = flops;
        if (opt.validate > 0) summary.validate = check;
        publish_summary(summary.to_json(), opt.summary_json);
        if (!check.ok)
            std::cerr << "apsp-fw: error: validation failed on " << check.rows << " rows: max relative error "
                      << check.max_rel_error << " (tolerance " << check.tolerance << "), "
                      << check.reachability_mismatches << " reachability mismatches"
                      << (opt.output.empty() ? "" : "; " + opt.output + " was not written") << std::endl;
    }
    MPI_Comm_free(&node);
    return check.ok ? 0 : 3;
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
