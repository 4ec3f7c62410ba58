// apsp-fw's dense solve: COAST's distributed blocked Floyd-Warshall (SC22
// Algorithm 1) on a Pr x Pc process grid, phase by phase. run_floyd_warshall()
// at the end of the file is the list of the phases; they come before it, in
// the order it runs them.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

#include "apps/job.hpp"
#include "apps/summary.hpp"
#include "core/collective.hpp"
#include "core/driver.hpp"
#include "core/grid.hpp"
#include "io/checkpoint.hpp"
#include "io/distances_output.hpp"
#include "io/graph_input.hpp"
#include "io/validate.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI: MPIX_Query_cuda_support / MPIX_Query_rocm_support
#endif

namespace litpath::apsp {
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

// What the run is, before it starts: the summary's fields that no phase measures.
SolveSummary describe_solve(const Job& job, const DenseSetup& setup, const GraphInfo& info, int b) {
    const Options& opt = job.opt;
    SolveSummary summary;
    summary.solver_version = kSolverVersion;
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
            std::cerr << "apsp-fw: resuming from checkpoint "
                      << checkpoint_iteration_dir(opt.checkpoint_dir, resumed_from) << " (" << resumed_from << " of "
                      << matrix.layout().tiling.nb << " iterations done)" << std::endl;
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

// --checksum: every rank's share, summed (modulo 2^64, like the shares).
std::uint64_t distances_checksum(const Job& job, const DistributedMatrix& matrix) {
    const std::uint64_t share = matrix.checksum_share();
    std::uint64_t total = 0;
    MPI_Allreduce(&share, &total, 1, MPI_UINT64_T, MPI_SUM, job.world);
    return total;
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
    attrs.solver_version = kSolverVersion;
    attrs.broadcast = broadcast_name(setup.broadcast.kind);
    const bool written = write_complete_output(job.opt.output, job.world, [&](const std::string& partial) {
        write_distances_bp(partial, matrix, job.world, attrs, job.opt.adios2_config);
    });
    if (!written) return false;
    summary.seconds.write = MPI_Wtime() - t0;
    return true;
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

}  // namespace

DenseSetup parse_dense_setup(const Options& opt, int ranks) {
    DenseSetup setup;
    setup.shape = parse_grid(opt.grid, ranks);
    setup.broadcast.kind = parse_broadcast(opt.broadcast);
    setup.broadcast.chunk_bytes = opt.chunk_bytes;
    setup.backend = make_backend(opt.backend);
    return setup;
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
        const CheckpointIdentity identity{info.digest, info.n, b, setup.shape};
        checkpointer = std::make_unique<Checkpointer>(opt.checkpoint_dir, identity, opt.checkpoint_every, world);
        if (!open_or_resume(job, *checkpointer, matrix, resumed_from)) return 2;
    }
    if (resumed_from < 0 && !load_edges(job, info, matrix)) return 2;
    MPI_Barrier(world);
    summary.seconds.read = MPI_Wtime() - t0;

    if (!solve(job, setup, grid, matrix, checkpointer.get(), std::max<std::int64_t>(resumed_from, 0), summary))
        return 2;
    if (opt.checksum) summary.distances_checksum = distances_checksum(job, matrix);
    if (opt.validate > 0 && !validate(job, info, matrix, summary)) return 2;
    if (!opt.output.empty() && summary.ok() && !write_distances(job, setup, info, matrix, summary)) return 2;
    summary.total_seconds = MPI_Wtime() - job.t_start;

    if (checkpointer)
        summary.checkpoint = CheckpointSummary{opt.checkpoint_dir, opt.checkpoint_every.to_string(),
                                               checkpointer->written(), resumed_from};
    print_summary(job, summary);
    return summary.ok() ? 0 : 3;
}

}  // namespace litpath::apsp
