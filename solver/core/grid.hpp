// The 2D process grid over MPI_COMM_WORLD: shape, this rank's coordinate, and
// the row and column communicators the broadcasts run on.
#pragma once

#include <mpi.h>

#include <string>

#include "core/tiling.hpp"

namespace litpath::apsp {

// Parses "RxC" (e.g. "2x3") or "auto". For "auto", picks the most square
// Pr x Pc = ranks with Pr <= Pc. Throws std::runtime_error with a clear message
// when the spec is malformed or does not match the number of ranks.
GridShape parse_grid(const std::string& spec, int ranks);

// The most square factorisation Pr x Pc of ranks with Pr <= Pc.
GridShape auto_grid(int ranks);

std::string grid_to_string(GridShape g);

struct ProcessGrid {
    GridShape shape;
    GridCoord me;
    int world_rank = 0;
    MPI_Comm row_comm = MPI_COMM_NULL;  // my process row; rank in it = my column
    MPI_Comm col_comm = MPI_COMM_NULL;  // my process column; rank in it = my row

    ProcessGrid(MPI_Comm world, GridShape shape);
    ~ProcessGrid();
    ProcessGrid(const ProcessGrid&) = delete;
    ProcessGrid& operator=(const ProcessGrid&) = delete;
};

}  // namespace litpath::apsp
