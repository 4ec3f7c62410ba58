// Host-core arithmetic: block-cyclic ownership and local indexing, grid
// parsing, broadcast relay topologies, SHA-256, size arithmetic that cannot
// overflow, checkpoint names and manifests, .mtx edge costs. No MPI communication.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <omp.h>
#include <sched.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <streambuf>
#include <vector>

#include "core/affinity.hpp"
#include "core/broadcast.hpp"
#include "core/driver.hpp"
#include "core/grid.hpp"
#include "core/size_math.hpp"
#include "core/source_rows.hpp"
#include "core/tiling.hpp"
#include "io/checkpoint.hpp"
#include "io/graph_input.hpp"
#include "io/sha256.hpp"

using namespace litpath::apsp;

TEST(Tiling, ExtentsPadTheLastTile) {
    const Tiling t(10, 4);
    EXPECT_EQ(t.nb, 3);
    EXPECT_EQ(t.extent(0), 4);
    EXPECT_EQ(t.extent(2), 2);
    EXPECT_EQ(t.tile_of(9), 2);
    EXPECT_EQ(Tiling(8, 4).nb, 2);
    EXPECT_EQ(Tiling(0, 4).nb, 0);
}

TEST(Ownership, OwnerOfTileIsBlockCyclic) {
    const GridShape g{2, 3};
    EXPECT_EQ(owner_of_tile(0, 0, g), (GridCoord{0, 0}));
    EXPECT_EQ(owner_of_tile(3, 4, g), (GridCoord{1, 1}));
    EXPECT_EQ(owner_of_tile(5, 5, g), (GridCoord{1, 2}));
    EXPECT_EQ(rank_of({1, 2}, g), 5);
    EXPECT_EQ(coord_of_rank(4, g), (GridCoord{1, 1}));
}

TEST(Ownership, EveryTileHasExactlyOneOwnerAndLocalIndexRoundTrips) {
    for (GridShape g : {GridShape{1, 1}, GridShape{1, 2}, GridShape{2, 1}, GridShape{2, 2}, GridShape{2, 3},
                        GridShape{3, 2}, GridShape{4, 4}}) {
        for (std::int64_t n : {1, 5, 16, 17, 100}) {
            const Tiling t(n, 4);
            std::map<std::pair<std::int64_t, std::int64_t>, int> owners;
            std::int64_t total = 0;
            for (int r = 0; r < g.size(); ++r) {
                const LocalTiles local(t, g, coord_of_rank(r, g));
                total += local.tile_count();
                for (std::int64_t lr = 0; lr < local.local_tile_rows; ++lr) {
                    for (std::int64_t lc = 0; lc < local.local_tile_cols; ++lc) {
                        const auto gi = local.global_tile_row(lr), gj = local.global_tile_col(lc);
                        ASSERT_LT(gi, t.nb);
                        ASSERT_LT(gj, t.nb);
                        ASSERT_EQ(owner_of_tile(gi, gj, g), local.me);
                        ASSERT_EQ(local.local_tile_row(gi), lr);
                        ASSERT_EQ(local.local_tile_col(gj), lc);
                        ++owners[{gi, gj}];
                    }
                }
            }
            EXPECT_EQ(total, t.nb * t.nb) << "grid " << grid_to_string(g) << " n " << n;
            for (auto& [tile, count] : owners) EXPECT_EQ(count, 1);
        }
    }
}

TEST(Ownership, CyclicCount) {
    EXPECT_EQ(cyclic_count(5, 2, 0), 3);
    EXPECT_EQ(cyclic_count(5, 2, 1), 2);
    EXPECT_EQ(cyclic_count(1, 3, 2), 0);
    EXPECT_EQ(cyclic_count(0, 3, 0), 0);
}

TEST(Grid, ParseAndAuto) {
    EXPECT_EQ(parse_grid("2x3", 6).rows, 2);
    EXPECT_EQ(parse_grid("2x3", 6).cols, 3);
    EXPECT_EQ(parse_grid("auto", 6).rows, 2);
    EXPECT_EQ(parse_grid("auto", 6).cols, 3);
    EXPECT_EQ(auto_grid(4).rows, 2);
    EXPECT_EQ(auto_grid(7).rows, 1);
    EXPECT_EQ(auto_grid(1).cols, 1);
    EXPECT_EQ(auto_grid(16).rows, 4);
}

TEST(Grid, MismatchSaysWhatIsNeeded) {
    try {
        parse_grid("3x2", 4);
        FAIL();
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("needs 6 MPI ranks but the job has 4"), std::string::npos) << e.what();
    }
    EXPECT_THROW(parse_grid("2by2", 4), std::runtime_error);
    EXPECT_THROW(parse_grid("0x4", 0), std::runtime_error);
}

TEST(Broadcast, RelayTopologiesReachEveryRankOnce) {
    for (auto kind : {BroadcastKind::ring, BroadcastKind::two_ring, BroadcastKind::chunked_ring}) {
        for (int p = 1; p <= 12; ++p) {
            std::vector<int> parent_of(p, -2);
            for (int r = 0; r < p; ++r) {
                const RelayNode node = relay_node(kind, r, p);
                if (r == 0) EXPECT_EQ(node.parent, -1);
                for (int c : node.children) {
                    ASSERT_GT(c, 0);
                    ASSERT_LT(c, p);
                    EXPECT_EQ(parent_of[c], -2) << "rank " << c << " has two parents";
                    parent_of[c] = r;
                    EXPECT_EQ(relay_node(kind, c, p).parent, r);
                }
            }
            for (int r = 1; r < p; ++r) EXPECT_GE(parent_of[r], 0) << broadcast_name(kind) << " p=" << p << " r=" << r;
        }
    }
}

TEST(Broadcast, TwoRingModifiedShape) {
    // p = 8: 0 -> 1; rings 2 -> 3 -> 4 and 5 -> 6 -> 7, heads fed by 0.
    EXPECT_EQ(relay_node(BroadcastKind::two_ring, 0, 8).children, (std::vector<int>{1, 2, 5}));
    EXPECT_TRUE(relay_node(BroadcastKind::two_ring, 1, 8).children.empty());
    EXPECT_EQ(relay_node(BroadcastKind::two_ring, 3, 8).children, (std::vector<int>{4}));
    EXPECT_TRUE(relay_node(BroadcastKind::two_ring, 4, 8).children.empty());
    EXPECT_EQ(relay_node(BroadcastKind::two_ring, 5, 8).parent, 0);
    EXPECT_EQ(relay_node(BroadcastKind::ring, 3, 8).parent, 2);
}

TEST(Broadcast, NamesRoundTrip) {
    for (const char* name : {"bcast", "ring", "two-ring", "chunked-ring"})
        EXPECT_EQ(broadcast_name(parse_broadcast(name)), name);
    EXPECT_THROW(parse_broadcast("tree"), std::runtime_error);
}

TEST(Sha256, KnownVectors) {
    Sha256 empty;
    EXPECT_EQ(empty.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    Sha256 abc;
    abc.update("abc", 3);
    EXPECT_EQ(abc.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    Sha256 two_blocks;
    const std::string s = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    two_blocks.update(s.data(), s.size());
    EXPECT_EQ(two_blocks.hex_digest(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// Thread placement: with one CPU per thread, thread i runs on the mask's i-th CPU only.
TEST(Affinity, PinsOneThreadPerAllowedCpu) {
    const std::vector<int> cpus = litpath::apsp::allowed_cpus();
    ASSERT_FALSE(cpus.empty());
    if (cpus.size() < 2) GTEST_SKIP() << "needs 2 CPUs";
    unsetenv("OMP_PROC_BIND");
    unsetenv("OMP_PLACES");
    const int threads = static_cast<int>(cpus.size());
    EXPECT_EQ(litpath::apsp::place_threads(threads + 1, cpus), "os");  // not one CPU per thread
    ASSERT_EQ(litpath::apsp::place_threads(threads, cpus), "pinned");
    std::vector<std::vector<int>> seen(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
        cpu_set_t mask;
        CPU_ZERO(&mask);
        sched_getaffinity(0, sizeof(mask), &mask);
        std::vector<int> mine;
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
            if (CPU_ISSET(cpu, &mask)) mine.push_back(cpu);
        seen[static_cast<std::size_t>(omp_get_thread_num())] = mine;
    }
    for (int t = 0; t < threads; ++t) EXPECT_EQ(seen[t], std::vector<int>{cpus[t]}) << "thread " << t;
    // Restore the whole mask on every thread for the tests after this one.
#pragma omp parallel num_threads(threads)
    {
        cpu_set_t all;
        CPU_ZERO(&all);
        for (int cpu : cpus) CPU_SET(cpu, &all);
        sched_setaffinity(0, sizeof(all), &all);
    }
}

TEST(Affinity, UserPlacementIsLeftAlone) {
    setenv("OMP_PROC_BIND", "spread", 1);
    EXPECT_EQ(litpath::apsp::place_threads(2, {0, 1}), "user");
    unsetenv("OMP_PROC_BIND");
    EXPECT_EQ(litpath::apsp::place_threads(1, {0}), "os");
}

TEST(SourceRows, BlocksCoverTheRowsInRankOrder) {
    for (const std::int64_t rows : {0, 1, 3, 10, 64, 101}) {
        for (const int ranks : {1, 2, 3, 4, 7}) {
            std::int64_t next = 0;
            for (int r = 0; r < ranks; ++r) {
                const RowBlock block = row_block_of_rank(rows, ranks, r);
                EXPECT_EQ(block.first, next) << rows << " rows, rank " << r << " of " << ranks;
                EXPECT_LE(block.count, rows / ranks + 1);
                EXPECT_GE(block.count, rows / ranks);
                next += block.count;
            }
            EXPECT_EQ(next, rows);
        }
    }
}

TEST(SourceRows, MemoryCountsTheLargerOfReadingAndSolving) {
    const RowsMemory m = rows_memory_per_rank(1000, 5000, 3, 2, 1 << 20);
    EXPECT_EQ(m.graph, 1001 * 8 + 5000 * 12);
    EXPECT_EQ(m.rows, 3 * 1000 * 4);
    EXPECT_GT(m.workspace, 0);
    EXPECT_EQ(m.total(), m.graph + std::max<std::int64_t>(m.reading, m.rows + m.workspace));
    EXPECT_EQ(rows_memory_per_rank(1000, 5000, 0, 2, 0).workspace, 0);  // a rank without rows
}

// ------------------------------------------------------------ size arithmetic --
TEST(SizeMath, SaturatesInsteadOfWrapping) {
    EXPECT_EQ(saturating_mul(3, 4), 12);
    EXPECT_EQ(saturating_mul(std::int64_t{1} << 32, std::int64_t{1} << 32), kSaturated);
    EXPECT_EQ(saturating_mul(kSaturated, 0), 0);
    EXPECT_EQ(saturating_add(kSaturated - 1, 1), kSaturated);
    EXPECT_EQ(saturating_add(kSaturated, 5), kSaturated);
    EXPECT_EQ(checked_mul(1 << 20, 1 << 20, "x"), std::int64_t{1} << 40);
    EXPECT_THROW(checked_mul(std::int64_t{1} << 40, std::int64_t{1} << 40, "local matrix elements"), std::overflow_error);
}

TEST(SizeMath, TileCountHasNoOverflowForAnyN) {
    EXPECT_EQ(Tiling(10, 4).nb, 3);
    EXPECT_EQ(Tiling(12, 4).nb, 3);
    EXPECT_EQ(Tiling(0, 4).nb, 0);
    const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
    EXPECT_EQ(Tiling(huge, 16384).nb, huge / 16384 + 1);  // n + b - 1 would have wrapped
}

TEST(SizeMath, MemoryEstimateOfAHugeMatrixSaturates) {
    // The review's case: n = 2^32 with --tile 1 used to wrap to a 0-float store.
    for (const std::int64_t n : {std::int64_t{1} << 32, kMaxVertices}) {
        const LocalTiles layout(Tiling(n, 1), GridShape{1, 1}, GridCoord{0, 0});
        EXPECT_EQ(bytes_needed_per_rank(layout, true), kSaturated) << n;
        EXPECT_ANY_THROW(DistributedMatrix{layout}) << n;  // overflow_error, or the vector refuses the size
    }
    // A sane size is exact.
    const LocalTiles small(Tiling(100, 16), GridShape{1, 1}, GridCoord{0, 0});
    EXPECT_EQ(bytes_needed_per_rank(small, false), (49 + 2 * 7 + 1 + 2 * 7) * 16 * 16 * 4);
}

TEST(SizeMath, RowsMemoryEstimateSaturates) {
    const RowsMemory m = rows_memory_per_rank(kMaxVertices, kSaturated, kMaxVertices, 4, kSaturated);
    EXPECT_EQ(m.graph, kSaturated);
    EXPECT_EQ(m.rows, kSaturated);
    EXPECT_EQ(m.total(), kSaturated);
}

// ------------------------------------------------------------------ checkpoints --
TEST(Checkpoint, IterationDirectoryNamesAreExact) {
    std::int64_t it = -1;
    EXPECT_TRUE(parse_iteration_dir_name("iter-000012", it));
    EXPECT_EQ(it, 12);
    EXPECT_TRUE(parse_iteration_dir_name("iter-1234567", it));
    EXPECT_EQ(it, 1234567);
    EXPECT_EQ(checkpoint_iteration_dir("d", 1234567), "d/iter-1234567");
    it = -1;
    for (const char* name : {"iter-12", "iter-0000012", "iter-", "iter-00001x", "iter--00001", "iter-+00001",
                             "iter-99999999999999999999999", "iter-000012 ", "xiter-000012", "LOCK"})
        EXPECT_FALSE(parse_iteration_dir_name(name, it)) << name;
    EXPECT_EQ(it, -1);
}

TEST(Checkpoint, ListingTellsIncompleteFromUnreadable) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(testing::TempDir()) / "litpath_ckpt_list";
    fs::remove_all(dir);
    EXPECT_TRUE(list_checkpoints(dir.string()).empty());  // no directory: no checkpoints, no error
    for (const char* name : {"iter-000007", "iter-000014", "iter-000021", "iter-12", "iter-99999999999999999999999"})
        fs::create_directories(dir / name);
    std::ofstream(dir / "iter-000007" / "MANIFEST") << "x";
    std::ofstream(dir / "iter-000014" / "MANIFEST") << "x";
    std::ofstream(dir / "iter-12" / "MANIFEST") << "x";
    // iter-000021 has no MANIFEST (a killed write): not a checkpoint, and no error.
    EXPECT_EQ(list_checkpoints(dir.string()), (std::vector<std::int64_t>{7, 14}));
    // A MANIFEST that cannot be checked (here a symlink loop: ELOOP) is an error, not "absent".
    fs::create_symlink("MANIFEST", dir / "iter-000021" / "MANIFEST");
    EXPECT_THROW(list_checkpoints(dir.string()), std::runtime_error);
    fs::remove_all(dir);
}

namespace {

const char* kGoodManifest =
    "litpath-apsp-checkpoint 1\n"
    "iteration 14\n"
    "n 600\n"
    "tile 4\n"
    "grid 2x2\n"
    "ranks 4\n"
    "graph_digest digest-a\n"
    "piece 0 90000 00000000000000ff\n"
    "piece 1 90000 0123456789abcdef\n"
    "piece 2 90000 ffffffffffffffff\n"
    "piece 3 90000 0\n"
    "end\n";

ManifestRead parse_text(const std::string& text, CheckpointManifest& m, std::string& why) {
    std::istringstream in(text);
    return parse_checkpoint_manifest(in, "M", m, why);
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    if (at != std::string::npos) text.replace(at, from.size(), to);
    return text;
}

// A stream whose reads fail like an I/O error (EIO on NFS, say).
struct FailingBuffer : std::streambuf {
    int_type underflow() override { throw std::ios_base::failure("EIO"); }
};

}  // namespace

TEST(Checkpoint, ManifestParses) {
    CheckpointManifest m;
    std::string why;
    ASSERT_EQ(parse_text(kGoodManifest, m, why), ManifestRead::ok) << why;
    EXPECT_EQ(m.iteration, 14);
    EXPECT_EQ(m.n, 600);
    EXPECT_EQ(m.tile, 4);
    EXPECT_EQ(grid_to_string(m.grid), "2x2");
    EXPECT_EQ(m.graph_digest, "digest-a");
    ASSERT_EQ(m.piece_checksum.size(), 4u);
    EXPECT_EQ(m.piece_checksum[1], 0x0123456789abcdefULL);
    EXPECT_EQ(m.piece_checksum[2], ~std::uint64_t{0});
    // A key from a newer apsp-fw is ignored.
    CheckpointManifest newer;
    EXPECT_EQ(parse_text(replaced(kGoodManifest, "end\n", "compression none\nend\n"), newer, why), ManifestRead::ok);
}

TEST(Checkpoint, MalformedManifestsAreReportedNotThrown) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"00000000000000ff", "zz"},                  // not hex (std::stoull threw here)
        {"00000000000000ff", "100000000000000000"},  // 17+ hex digits
        {"00000000000000ff", "-1"},
        {"piece 1 90000", "piece 1 -90000"},
        {"piece 1 90000 0123456789abcdef", "piece 1 90000 0123456789abcdef extra"},
        {"piece 1", "piece 7"},                          // out of order
        {"n 600", "n 99999999999999999999999"},          // beyond int64
        {"n 600", "n six"},
        {"tile 4", "tile 0"},
        {"grid 2x2", "grid 2by2"},
        {"grid 2x2", "grid 0x4"},
        {"ranks 4", "ranks 3"},                          // pieces and grid say 4
        {"iteration 14\n", ""},                          // a field missing
        {"graph_digest digest-a\n", ""},
        {"end\n", ""},                                   // truncated
        {"litpath-apsp-checkpoint 1", "something else"},
    };
    for (const auto& [from, to] : cases) {
        CheckpointManifest m;
        std::string why;
        const std::string text = replaced(kGoodManifest, from, to);
        EXPECT_EQ(parse_text(text, m, why), ManifestRead::malformed) << text;
        EXPECT_EQ(why.rfind("M: ", 0), 0u) << why;
    }
    CheckpointManifest m;
    std::string why;
    EXPECT_EQ(parse_text("", m, why), ManifestRead::malformed);
}

TEST(Checkpoint, ManifestReadErrorIsNotMalformed) {
    FailingBuffer buffer;
    std::istream in(&buffer);
    CheckpointManifest m;
    std::string why;
    EXPECT_EQ(parse_checkpoint_manifest(in, "M", m, why), ManifestRead::unreadable);
    EXPECT_EQ(why, "M: read error");
}

// ----------------------------------------------------------------- .mtx costs --
TEST(MatrixMarket, CostsBeyondFloatRoundInsteadOfThrowing) {
    const std::string path = testing::TempDir() + "litpath_range.mtx";
    {
        std::ofstream out(path);
        out << "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1e999\n2 3 1e-999\n3 1 +2.5\n";
    }
    const GraphInfo info = read_graph_info(path, MPI_COMM_SELF);
    EXPECT_EQ(info.n, 3);
    std::vector<Edge> edges;
    const LocalTiles layout(Tiling(3, 2), GridShape{1, 1}, GridCoord{0, 0});
    read_graph_edges(info, layout, true, [](std::int64_t, std::int64_t) { return true; },
                     [&](const Edge& e) { edges.push_back(e); });
    ASSERT_EQ(edges.size(), 3u);
    EXPECT_TRUE(std::isinf(edges[0].cost) && edges[0].cost > 0);
    EXPECT_GE(edges[1].cost, 0.0f);
    EXPECT_LT(edges[1].cost, 1e-30f);
    EXPECT_EQ(edges[2].cost, 2.5f);
    std::remove(path.c_str());
}

TEST(MatrixMarket, VertexCountBeyondTheLimitNamesTheSizeLine) {
    const std::string path = testing::TempDir() + "litpath_huge.mtx";
    {
        std::ofstream out(path);
        out << "%%MatrixMarket matrix coordinate real general\n% comment\n4294967296 4294967296 1\n3 5 1\n";
    }
    try {
        read_graph_info(path, MPI_COMM_SELF);
        ADD_FAILURE() << "n = 2^32 was accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path + ":3: n = 4294967296 vertices is more than apsp-fw can address"),
                  std::string::npos)
            << e.what();
    }
    std::remove(path.c_str());
}
