// Where a rank's OpenMP threads run. Launchers bind ranks (mpirun to one core
// by default, srun -c T to T CPUs); within that mask the Linux scheduler may
// still stack two threads on one core for the first milliseconds of every
// parallel region, which costs a short solve up to 2x. So when a rank has
// exactly one CPU per thread, apsp-fw pins thread i to the mask's i-th CPU —
// unless the user chose a placement (OMP_PROC_BIND / OMP_PLACES).
#pragma once

#include <string>
#include <vector>

namespace litpath::apsp {

/// The CPUs this process may run on (its affinity mask), in ascending order.
std::vector<int> allowed_cpus();

/// Pins OpenMP thread i of a `threads`-wide team to cpus[i], when cpus.size() == threads
/// > 1 and the environment sets no OpenMP placement. Later parallel regions with the
/// same team size reuse these threads. Returns what was done, for the run summary:
/// "pinned", "user" (OMP_PROC_BIND/OMP_PLACES set), or "os" (left to the scheduler).
std::string place_threads(int threads, const std::vector<int>& cpus);

}  // namespace litpath::apsp
