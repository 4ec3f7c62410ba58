#include "core/collective.hpp"

#include <iostream>

namespace litpath::apsp {

bool any_rank_failed(MPI_Comm comm, const std::string& error) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int mine = error.empty() ? size : rank, first = size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == size) return false;
    if (rank == first) std::cerr << "apsp-fw: error: " << error << std::endl;
    return true;
}

bool all_ranks(MPI_Comm comm, bool mine) {
    int flag = mine ? 1 : 0, all = 0;
    MPI_Allreduce(&flag, &all, 1, MPI_INT, MPI_MIN, comm);
    return all != 0;
}

std::string broadcast_string(std::string text, MPI_Comm comm, int root) {
    int size = static_cast<int>(text.size());
    MPI_Bcast(&size, 1, MPI_INT, root, comm);
    text.resize(static_cast<std::size_t>(size));
    if (size > 0) MPI_Bcast(text.data(), size, MPI_CHAR, root, comm);
    return text;
}

}  // namespace litpath::apsp
