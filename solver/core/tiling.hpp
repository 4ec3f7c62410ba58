// Tiling and 2D block-cyclic ownership (host only, no MPI, no device code).
//
// The n x n matrix is cut into nb x nb tiles of b x b (nb = ceil(n / b)); the
// last tile row/column is padded with +inf up to b and the padding is never
// written out. Tile (i, j) lives on process (i mod Pr, j mod Pc). A process
// stores its tiles densely: local tile row li holds global tile row
// li * Pr + my_row, local tile column lj holds global tile column lj * Pc + my_col.
#pragma once

#include <cstdint>

namespace litpath::apsp {

struct GridShape {
    int rows = 1;  // Pr
    int cols = 1;  // Pc
    int size() const { return rows * cols; }
};

struct GridCoord {
    int row = 0;
    int col = 0;
    bool operator==(const GridCoord& o) const { return row == o.row && col == o.col; }
};

// Rank numbering of the process grid: row-major (rank = row * Pc + col).
inline int rank_of(GridCoord c, GridShape g) { return c.row * g.cols + c.col; }
inline GridCoord coord_of_rank(int rank, GridShape g) { return {rank / g.cols, rank % g.cols}; }

// The process that owns global tile (tile_row, tile_col).
inline GridCoord owner_of_tile(std::int64_t tile_row, std::int64_t tile_col, GridShape g) {
    return {static_cast<int>(tile_row % g.rows), static_cast<int>(tile_col % g.cols)};
}

// How many of `count` tiles, dealt cyclically to `parts` owners, owner `part` gets.
inline std::int64_t cyclic_count(std::int64_t count, int parts, int part) {
    if (part >= count) return 0;
    return (count - part + parts - 1) / parts;
}

struct Tiling {
    std::int64_t n = 0;   // vertices
    int b = 1;            // tile edge
    std::int64_t nb = 0;  // tiles per dimension

    Tiling() = default;
    // ceil(n / b) without forming n + b - 1 (no overflow for any n >= 0, b >= 1).
    Tiling(std::int64_t n_, int b_) : n(n_), b(b_), nb(n_ / b_ + (n_ % b_ != 0 ? 1 : 0)) {}

    std::int64_t tile_of(std::int64_t vertex) const { return vertex / b; }
    std::int64_t first_vertex(std::int64_t tile) const { return tile * b; }
    // Real (unpadded) extent of a tile along one dimension.
    int extent(std::int64_t tile) const {
        const std::int64_t rest = n - tile * b;
        return static_cast<int>(rest < b ? rest : b);
    }
};

// The tiles one process owns, and the mapping between local and global indices.
struct LocalTiles {
    Tiling tiling;
    GridShape grid;
    GridCoord me;
    std::int64_t local_tile_rows = 0;
    std::int64_t local_tile_cols = 0;

    LocalTiles() = default;
    LocalTiles(const Tiling& t, GridShape g, GridCoord c)
        : tiling(t),
          grid(g),
          me(c),
          local_tile_rows(cyclic_count(t.nb, g.rows, c.row)),
          local_tile_cols(cyclic_count(t.nb, g.cols, c.col)) {}

    std::int64_t global_tile_row(std::int64_t local_row) const { return local_row * grid.rows + me.row; }
    std::int64_t global_tile_col(std::int64_t local_col) const { return local_col * grid.cols + me.col; }
    bool owns_tile_row(std::int64_t tile_row) const { return tile_row % grid.rows == me.row; }
    bool owns_tile_col(std::int64_t tile_col) const { return tile_col % grid.cols == me.col; }
    // Valid only when the tile row/column is owned.
    std::int64_t local_tile_row(std::int64_t tile_row) const { return tile_row / grid.rows; }
    std::int64_t local_tile_col(std::int64_t tile_col) const { return tile_col / grid.cols; }

    std::int64_t tile_count() const { return local_tile_rows * local_tile_cols; }
    std::int64_t tile_elems() const { return static_cast<std::int64_t>(tiling.b) * tiling.b; }
    // Offset (in floats) of local tile (lr, lc) in the tile-major local store.
    std::int64_t tile_offset(std::int64_t local_row, std::int64_t local_col) const {
        return (local_row * local_tile_cols + local_col) * tile_elems();
    }
};

}  // namespace litpath::apsp
