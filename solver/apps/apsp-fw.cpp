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
// This file: the command line, the threads, and the choice of mode. The modes
// are run_floyd_warshall.cpp and run_source_rows.cpp (apps/job.hpp), the
// command line apps/options.*, the JSON summary apps/summary.*.
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "apps/job.hpp"
#include "apps/options.hpp"
#include "core/affinity.hpp"
#include "core/collective.hpp"

using namespace litpath::apsp;

namespace {

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
        if (job.root()) std::cout << "apsp-fw " << kSolverVersion << "\n";
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
