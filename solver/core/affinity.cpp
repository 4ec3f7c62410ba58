#include "core/affinity.hpp"

#include <omp.h>
#include <sched.h>

#include <cstdlib>

namespace litpath::apsp {

std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &mask)) cpus.push_back(cpu);
    return cpus;
}

std::string place_threads(int threads, const std::vector<int>& cpus) {
    if (std::getenv("OMP_PROC_BIND") || std::getenv("OMP_PLACES")) return "user";
    // More CPUs than threads: the rank is not bound to its share (e.g. mpirun
    // --bind-to none with several ranks); pinning here would stack every rank's
    // thread 0 on the same CPU.
    if (threads < 2 || static_cast<int>(cpus.size()) != threads) return "os";
    int failures = 0;
#pragma omp parallel num_threads(threads) reduction(+ : failures)
    {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[static_cast<std::size_t>(omp_get_thread_num())], &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0) ++failures;  // 0: the calling thread
    }
    return failures == 0 ? "pinned" : "os";
}

}  // namespace litpath::apsp
