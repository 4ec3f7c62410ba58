// The small MPI collectives the solver repeats: ranks agreeing that a step
// failed (so that all of them leave together, never one rank alone while the
// others wait in the next collective), agreeing on a flag, and one rank's
// string or vector on every rank.
//
// Argument order: agreements take the communicator first; broadcasts follow
// MPI_Bcast (value, communicator, root).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace litpath::apsp {

// Collective. If `error` is not empty on some rank, the lowest such rank
// prints "apsp-fw: error: <error>" and every rank returns true.
bool any_rank_failed(MPI_Comm comm, const std::string& error);

// Collective: runs fn() on every rank and returns true when it returned
// normally on all of them; when it threw a std::exception on any rank, the
// lowest failing rank prints e.what() (as any_rank_failed does) and every
// rank returns false. Reads as the phase it guards:
//   if (!collective_try(world, [&] { info = read_graph_info(path, world); })) return 2;
template <typename Fn>
bool collective_try(MPI_Comm comm, Fn&& fn) {
    std::string error;
    try {
        fn();
    } catch (const std::exception& e) {
        error = e.what();
    }
    return !any_rank_failed(comm, error);
}

// Collective: true on every rank when `mine` is true on every rank.
bool all_ranks(MPI_Comm comm, bool mine);

// Collective: rank `root`'s text on every rank.
std::string broadcast_string(std::string text, MPI_Comm comm, int root = 0);

// Collective: rank 0's vector on every rank. MPI counts are int, so large
// vectors go in chunks of at most 1 GiB.
template <typename T>
void broadcast_vector(std::vector<T>& values, MPI_Comm comm) {
    auto size = static_cast<std::int64_t>(values.size());
    MPI_Bcast(&size, 1, MPI_INT64_T, 0, comm);
    values.resize(static_cast<std::size_t>(size));
    auto* bytes = reinterpret_cast<char*>(values.data());
    const std::size_t total = values.size() * sizeof(T);
    constexpr std::size_t chunk = std::size_t{1} << 30;
    for (std::size_t offset = 0; offset < total; offset += chunk)
        MPI_Bcast(bytes + offset, static_cast<int>(std::min(chunk, total - offset)), MPI_BYTE, 0, comm);
}

}  // namespace litpath::apsp
