// apsp-fw's command line (apps/options.*) and JSON summary (apps/summary.*):
// what the options parse to and the messages they are refused with, and the
// summary's exact text, which pipeline/solve.py and the tests read. No MPI.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "apps/options.hpp"
#include "apps/summary.hpp"

using namespace litpath::apsp;

namespace {

Options parse(std::vector<std::string> args) {
    args.insert(args.begin(), "apsp-fw");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return parse_options(static_cast<int>(argv.size()), argv.data());
}

std::string refusal(const std::vector<std::string>& args) {
    try {
        parse(args);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(accepted)";
}

}  // namespace

TEST(Options, DefaultsAndBothSpellingsOfAValue) {
    const Options o = parse({"--input", "g.mtx", "--tile=64", "--chunk", "1M", "--checkpoint-dir", "ck",
                             "--checkpoint-every", "60s"});
    EXPECT_EQ(o.input, "g.mtx");
    EXPECT_EQ(o.tile, 64);
    EXPECT_EQ(o.chunk_bytes, std::size_t{1} << 20);
    EXPECT_EQ(o.grid, "auto");
    EXPECT_EQ(o.broadcast, "ring");
    EXPECT_TRUE(o.lookahead);
    EXPECT_EQ(o.threads, 0);
    EXPECT_EQ(o.checkpoint_every.to_string(), "60s");
    EXPECT_TRUE(o.given.count("--tile"));
    EXPECT_FALSE(o.given.count("--grid"));
    EXPECT_TRUE(parse({"--help"}).help);  // no --input needed
}

TEST(Options, RefusalsNameTheOption) {
    EXPECT_EQ(refusal({}), "--input FILE is required (see --help)");
    EXPECT_EQ(refusal({"--input"}), "--input needs a value");
    EXPECT_EQ(refusal({"--input", "g", "--bogus"}), "unknown option '--bogus' (see --help)");
    EXPECT_EQ(refusal({"--input", "g", "--tile", "0"}), "--tile must be at least 1");
    EXPECT_EQ(refusal({"--input", "g", "--tile", "99999999999999999999"}),
              "--tile 99999999999999999999 is too large (at most 16384)");
    EXPECT_EQ(refusal({"--input", "g", "--threads", "x"}), "--threads 'x' is not an integer");
    EXPECT_EQ(refusal({"--input", "g", "--lookahead", "maybe"}), "--lookahead 'maybe' must be on or off");
    EXPECT_EQ(refusal({"--input", "g", "--resume"}), "--resume needs --checkpoint-dir DIR");
    EXPECT_EQ(refusal({"--input", "g", "--sources", "s.txt", "--tile", "8"}),
              "--tile does not apply with --sources: there are no tiles; drop it");
    EXPECT_EQ(refusal({"--input", "g", "--sources", "s.txt", "--backend", "cuda"}),
              "--backend cuda does not apply with --sources: Dijkstra runs on the CPU (cpu or reference)");
}

TEST(Options, ByteCounts) {
    EXPECT_EQ(parse_bytes("--chunk", "64"), 64);
    EXPECT_EQ(parse_bytes("--chunk", "2K"), 2048);
    EXPECT_EQ(parse_bytes("--chunk", "1.5MiB"), 1572864);
    EXPECT_EQ(parse_bytes("--chunk", "1G"), std::int64_t{1} << 30);
    EXPECT_THROW(parse_bytes("--chunk", "5Q"), UsageError);
    EXPECT_THROW(parse_bytes("--chunk", "-1"), UsageError);
    EXPECT_THROW(parse_bytes("--chunk", "1e30G"), UsageError);  // beyond 2^62: refused before the conversion
}

TEST(Summary, DenseSolveText) {
    SolveSummary s;
    s.solver_version = "0.1.0";
    s.input = "dir/\"quoted\"\\graph.mtx";
    s.graph_digest = "abc";
    s.n = 97;
    s.input_entries = 336;
    s.ranks = 2;
    s.grid = "1x2";
    s.tile = 13;
    s.broadcast = "ring";
    s.chunk_bytes = 2097152;
    s.backend = "cpu";
    s.isa = "avx2";
    s.threads = 1;
    s.thread_placement = "os";
    s.matrix_residency = "host";
    s.seconds = {0.5, 0.125, 0.25, 1, 2, 0, 0.75, 0, 4};
    s.total_seconds = 5;
    s.semiring_ops = 1825346;
    s.checkpoint = CheckpointSummary{"ck", "8", 3, -1};
    ValidationResult v;
    v.rows = 50;
    v.max_abs_error = std::numeric_limits<double>::infinity();  // no JSON spelling: null
    v.max_rel_error = 1e-7;
    v.tolerance = 1e-4;
    s.validate = v;
    s.distances_checksum = 0x00c0ffee12345678ULL;  // printed as 16 hex digits, leading zeros kept
    EXPECT_EQ(s.to_json(),
              "{\n"
              "  \"solver\": \"apsp-fw\",\n"
              "  \"solver_version\": \"0.1.0\",\n"
              "  \"method\": \"floyd-warshall\",\n"
              "  \"input\": \"dir/\\\"quoted\\\"\\\\graph.mtx\",\n"
              "  \"output\": null,\n"
              "  \"graph_digest\": \"abc\",\n"
              "  \"n\": 97,\n"
              "  \"input_entries\": 336,\n"
              "  \"ranks\": 2,\n"
              "  \"grid\": \"1x2\",\n"
              "  \"tile\": 13,\n"
              "  \"broadcast\": \"ring\",\n"
              "  \"chunk_bytes\": 2097152,\n"
              "  \"lookahead\": true,\n"
              "  \"backend\": \"cpu\",\n"
              "  \"isa\": \"avx2\",\n"
              "  \"threads\": 1,\n"
              "  \"thread_placement\": \"os\",\n"
              "  \"matrix_residency\": \"host\",\n"
              "  \"gpu_aware_mpi\": false,\n"
              "  \"seconds\": {\"read\": 0.5, \"diagonal\": 0.125, \"panel\": 0.25, \"broadcast\": 1, \"outer\": 2, "
              "\"write\": 0, \"validate\": 0.75, \"checkpoint\": 0, \"solve\": 4},\n"
              "  \"checkpoint\": {\"dir\": \"ck\", \"every\": \"8\", \"written\": 3, \"resumed_from\": null},\n"
              "  \"total_seconds\": 5,\n"
              "  \"semiring_ops\": 1825346,\n"
              "  \"semiring_rate\": 456336.5,\n"
              "  \"semiring_gflops\": 0.0004563365,\n"
              "  \"distances_checksum\": \"00c0ffee12345678\",\n"
              "  \"validate\": {\"rows\": 50, \"max_abs_error\": null, \"max_rel_error\": 1e-07, "
              "\"reachability_mismatches\": 0, \"tolerance\": 0.0001, \"ok\": true},\n"
              "  \"ok\": true\n"
              "}\n");
}

TEST(Summary, DenseSolveNullsAndFailure) {
    SolveSummary s;
    s.output = "d.bp";
    const std::string plain = s.to_json();
    EXPECT_NE(plain.find("  \"output\": \"d.bp\",\n"), std::string::npos);
    EXPECT_NE(plain.find("  \"checkpoint\": null,\n"), std::string::npos);
    EXPECT_NE(plain.find("  \"semiring_rate\": 0,\n"), std::string::npos);  // no solve time: no rate
    EXPECT_NE(plain.find("  \"distances_checksum\": null,\n  \"validate\": null,\n  \"ok\": true\n}\n"),
              std::string::npos);
    ValidationResult failed;
    failed.ok = false;
    s.validate = failed;
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.to_json().find("\"ok\": false},\n  \"ok\": false\n}\n"), std::string::npos);
    s.checkpoint = CheckpointSummary{"ck", "60s", 0, 12};
    EXPECT_NE(s.to_json().find("\"written\": 0, \"resumed_from\": 12}"), std::string::npos);
}

TEST(Summary, RowsText) {
    RowsSummary s;
    s.solver_version = "0.1.0";
    s.input = "g.mtx";
    s.output = "rows.bp";
    s.sources_file = "ids.txt";
    s.graph_digest = "abc";
    s.n = 97;
    s.input_entries = 336;
    s.edges = 336;
    s.rows = 5;
    s.ranks = 2;
    s.threads = 2;
    s.thread_placement = "pinned";
    s.read_seconds = 0.25;
    s.solve_seconds = 0.5;
    s.write_seconds = 0;
    s.total_seconds = 1;
    EXPECT_EQ(s.to_json(),
              "{\n"
              "  \"solver\": \"apsp-fw\",\n"
              "  \"solver_version\": \"0.1.0\",\n"
              "  \"method\": \"rows\",\n"
              "  \"algorithm\": \"dijkstra-rows\",\n"
              "  \"input\": \"g.mtx\",\n"
              "  \"output\": \"rows.bp\",\n"
              "  \"sources_file\": \"ids.txt\",\n"
              "  \"graph_digest\": \"abc\",\n"
              "  \"n\": 97,\n"
              "  \"input_entries\": 336,\n"
              "  \"edges\": 336,\n"
              "  \"rows\": 5,\n"
              "  \"ranks\": 2,\n"
              "  \"threads\": 2,\n"
              "  \"thread_placement\": \"pinned\",\n"
              "  \"seconds\": {\"read\": 0.25, \"solve\": 0.5, \"write\": 0},\n"
              "  \"total_seconds\": 1,\n"
              "  \"rows_per_second\": 10,\n"
              "  \"edges_per_second\": 3360,\n"
              "  \"validate\": null,\n"
              "  \"ok\": true\n"
              "}\n");
}
