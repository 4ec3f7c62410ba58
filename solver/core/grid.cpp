#include "core/grid.hpp"

#include <cctype>
#include <cmath>
#include <stdexcept>

namespace litpath::apsp {

GridShape auto_grid(int ranks) {
    int rows = static_cast<int>(std::sqrt(static_cast<double>(ranks)));
    while (rows > 1 && ranks % rows != 0) --rows;
    if (rows < 1) rows = 1;
    return {rows, ranks / rows};
}

std::string grid_to_string(GridShape g) { return std::to_string(g.rows) + "x" + std::to_string(g.cols); }

GridShape parse_grid(const std::string& spec, int ranks) {
    if (spec.empty() || spec == "auto") return auto_grid(ranks);
    const auto x = spec.find_first_of("xX");
    auto all_digits = [](const std::string& s) {
        if (s.empty()) return false;
        for (char c : s)
            if (!std::isdigit(static_cast<unsigned char>(c))) return false;
        return true;
    };
    if (x == std::string::npos || !all_digits(spec.substr(0, x)) || !all_digits(spec.substr(x + 1)))
        throw std::runtime_error("--grid '" + spec + "' is not of the form RxC (e.g. 2x3) or 'auto'");
    GridShape g{std::stoi(spec.substr(0, x)), std::stoi(spec.substr(x + 1))};
    if (g.rows < 1 || g.cols < 1)
        throw std::runtime_error("--grid '" + spec + "': rows and columns must be at least 1");
    if (g.size() != ranks)
        throw std::runtime_error("--grid " + spec + " needs " + std::to_string(g.size()) +
                                 " MPI ranks but the job has " + std::to_string(ranks) +
                                 " (use mpirun -n " + std::to_string(g.size()) + ", or --grid auto)");
    return g;
}

ProcessGrid::ProcessGrid(MPI_Comm world, GridShape s) : shape(s) {
    MPI_Comm_rank(world, &world_rank);
    me = coord_of_rank(world_rank, shape);
    MPI_Comm_split(world, me.row, me.col, &row_comm);
    MPI_Comm_split(world, me.col, me.row, &col_comm);
}

ProcessGrid::~ProcessGrid() {
    if (row_comm != MPI_COMM_NULL) MPI_Comm_free(&row_comm);
    if (col_comm != MPI_COMM_NULL) MPI_Comm_free(&col_comm);
}

}  // namespace litpath::apsp
