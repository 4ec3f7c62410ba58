// Host-core arithmetic: block-cyclic ownership and local indexing, grid
// parsing, broadcast relay topologies, SHA-256. No MPI communication.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <vector>

#include "core/affinity.hpp"
#include "core/broadcast.hpp"
#include "core/grid.hpp"
#include "core/sha256.hpp"
#include "core/source_rows.hpp"
#include "core/tiling.hpp"

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
