#include "io/distances_output.hpp"

#include <deque>
#include <stdexcept>
#include <vector>

#ifdef LITPATH_HAVE_ADIOS2
#include <adios2.h>
#endif

namespace litpath::apsp {

#ifdef LITPATH_HAVE_ADIOS2
void write_distances_bp(const std::string& path, const DistributedMatrix& matrix, MPI_Comm comm,
                        const DistanceAttributes& attributes, const std::string& adios2_config) {
    adios2::ADIOS adios = adios2_config.empty() ? adios2::ADIOS(comm) : adios2::ADIOS(adios2_config, comm);
    adios2::IO io = adios.DeclareIO("distances");
    if (!io.InConfigFile()) io.SetEngine("BP5");

    const auto n = static_cast<std::size_t>(attributes.n);
    auto distance = io.DefineVariable<float>("distance", {n, n}, {0, 0}, {n, n});
    io.DefineAttribute<std::string>("graph_digest", attributes.graph_digest);
    io.DefineAttribute<std::int64_t>("n", attributes.n);
    io.DefineAttribute<std::int64_t>("block_size", attributes.block_size);
    io.DefineAttribute<std::string>("process_grid", attributes.process_grid);
    io.DefineAttribute<std::string>("algorithm", attributes.algorithm);
    io.DefineAttribute<std::string>("solver_version", attributes.solver_version);
    io.DefineAttribute<std::string>("semiring", attributes.semiring);
    io.DefineAttribute<std::string>("broadcast", attributes.broadcast);

    adios2::Engine writer;
    try {
        writer = io.Open(path, adios2::Mode::Write);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": cannot open for writing: " + e.what());
    }
    writer.BeginStep();
    const LocalTiles& layout = matrix.layout();
    const Tiling& t = layout.tiling;
    // Ragged tiles (last tile column) are copied to contiguous buffers that
    // must outlive EndStep: Put is deferred.
    std::deque<std::vector<float>> ragged;
    for (std::int64_t lr = 0; lr < layout.local_tile_rows; ++lr) {
        const std::int64_t gi = layout.global_tile_row(lr);
        const int rows = t.extent(gi);
        for (std::int64_t lc = 0; lc < layout.local_tile_cols; ++lc) {
            const std::int64_t gj = layout.global_tile_col(lc);
            const int cols = t.extent(gj);
            distance.SetSelection({{static_cast<std::size_t>(t.first_vertex(gi)), static_cast<std::size_t>(t.first_vertex(gj))},
                                   {static_cast<std::size_t>(rows), static_cast<std::size_t>(cols)}});
            const float* tile = matrix.tile(lr, lc);
            if (cols == t.b) {
                // rows x b leading rows of a b x b tile are contiguous.
                writer.Put(distance, tile, adios2::Mode::Deferred);
            } else {
                auto& copy = ragged.emplace_back(static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols));
                for (int r = 0; r < rows; ++r)
                    std::copy(tile + static_cast<std::int64_t>(r) * t.b, tile + static_cast<std::int64_t>(r) * t.b + cols,
                              copy.begin() + static_cast<std::int64_t>(r) * cols);
                writer.Put(distance, copy.data(), adios2::Mode::Deferred);
            }
        }
    }
    writer.EndStep();
    writer.Close();
}

void write_distance_rows_bp(const std::string& path, const float* block, std::int64_t first, std::int64_t count,
                            const std::vector<std::int64_t>& sources, MPI_Comm comm,
                            const DistanceRowsAttributes& attributes, const std::string& adios2_config) {
    adios2::ADIOS adios = adios2_config.empty() ? adios2::ADIOS(comm) : adios2::ADIOS(adios2_config, comm);
    adios2::IO io = adios.DeclareIO("distances");
    if (!io.InConfigFile()) io.SetEngine("BP5");

    const auto n = static_cast<std::size_t>(attributes.n);
    const auto rows = sources.size();
    auto distance = io.DefineVariable<float>("distance", {rows, n}, {0, 0}, {rows, n});
    auto source_ids = io.DefineVariable<std::int64_t>("sources", {rows}, {0}, {rows});
    io.DefineAttribute<std::string>("graph_digest", attributes.graph_digest);
    io.DefineAttribute<std::int64_t>("n", attributes.n);
    io.DefineAttribute<std::int64_t>("rows", static_cast<std::int64_t>(rows));
    io.DefineAttribute<std::string>("layout", "rows");
    io.DefineAttribute<std::string>("algorithm", attributes.algorithm);
    io.DefineAttribute<std::string>("solver_version", attributes.solver_version);
    io.DefineAttribute<std::string>("semiring", attributes.semiring);

    adios2::Engine writer;
    try {
        writer = io.Open(path, adios2::Mode::Write);
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": cannot open for writing: " + e.what());
    }
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    writer.BeginStep();
    if (count > 0 && n > 0) {
        distance.SetSelection({{static_cast<std::size_t>(first), 0}, {static_cast<std::size_t>(count), n}});
        writer.Put(distance, block, adios2::Mode::Deferred);  // `block` outlives EndStep
    }
    if (rank == 0 && rows > 0) writer.Put(source_ids, sources.data(), adios2::Mode::Deferred);
    writer.EndStep();
    writer.Close();
}
#else
void write_distance_rows_bp(const std::string& path, const float*, std::int64_t, std::int64_t,
                            const std::vector<std::int64_t>&, MPI_Comm, const DistanceRowsAttributes&,
                            const std::string&) {
    throw std::runtime_error(path + ": writing distances.bp needs ADIOS2 (built with LITPATH_WITH_ADIOS2=OFF)");
}

void write_distances_bp(const std::string& path, const DistributedMatrix&, MPI_Comm, const DistanceAttributes&,
                        const std::string&) {
    throw std::runtime_error(path + ": writing distances.bp needs ADIOS2 (built with LITPATH_WITH_ADIOS2=OFF)");
}
#endif

}  // namespace litpath::apsp
