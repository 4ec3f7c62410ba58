#include "apps/options.hpp"

#include <exception>
#include <map>
#include <string>

namespace litpath::apsp {

const char* const kUsage = R"(usage: mpirun -n P apsp-fw --input FILE [--output distances.bp] [options]

Exact all-pairs shortest paths (min-plus semiring) with the COAST distributed
blocked Floyd-Warshall on a Pr x Pc process grid, tiles dealt 2D block-cyclically.
With --sources, only the distance rows of the listed vertices, by Dijkstra on the
sparse graph (no n x n matrix: for graphs of millions of vertices).

input and output
  --input FILE          graph.bp (ADIOS2 CSR: n, row_ptr, col_idx, cost; each rank
                        reads only its rows) or a Matrix Market .mtx file (coordinate,
                        real/integer/pattern, general/symmetric). Entries are directed
                        edges row -> col; duplicates keep the minimum cost, the diagonal
                        is 0, missing pairs are +inf. Negative costs are refused.
  --output PATH         distances.bp (ADIOS2 BP5): float32 `distance` n x n, unreachable
                        = +inf, with provenance attributes. Omit to skip writing.
                        Written as PATH.partial and renamed to PATH only when complete.
  --adios2-config FILE  ADIOS2 XML overriding the engine of IO "distances"

distance rows of a source set (instead of the dense matrix)
  --sources FILE        text file of vertex ids, one per line (0-based; '#' comments and
                        blank lines allowed; ids outside 0..n-1 and duplicates are refused
                        with FILE:LINE). Output distances.bp "rows" layout: float32
                        `distance` m x n, row i = distances from sources[i], with the
                        sources sorted ascending in int64 `sources` [m]. Rank 0 reads the
                        whole graph and broadcasts it (every rank needs all of it); the
                        sources are split over the ranks in contiguous blocks and over a
                        rank's --threads one at a time. Options of the dense solve
                        (--grid other than auto, --tile, --broadcast, --chunk, --lookahead,
                        --gpu-aware-mpi, --checkpoint-*, --resume, --validate*, --seed, and
                        --backend other than cpu/reference) are refused.

decomposition and communication
  --grid RxC|auto       process grid; R*C must equal the number of ranks (default auto:
                        the most square grid)
  --tile B              tile edge b (default 256); n need not be a multiple of b
  --broadcast KIND      bcast (MPI_Ibcast) | ring | two-ring (ring-2 modified) |
                        chunked-ring (pipelined ring, see --chunk); default ring
  --chunk BYTES         chunk size of chunked-ring (default 2M; suffixes K, M, G)
  --lookahead on|off    overlap iteration k's outer product with iteration k+1's
                        diagonal/panel work and panel broadcast (default on)

compute
  --backend NAME        cpu (SIMD, default) | reference (scalar) | cuda | hip |
                        gpu-host (the CUDA/HIP source run on the CPU: a test target, slow)
  --gpu-aware-mpi on|off|auto
                        cuda/hip/gpu-host: broadcast tiles straight from device memory (on) or
                        staged through host buffers (off); auto (default) = on only when
                        the MPI library reports GPU support at run time
                        (MPIX_Query_cuda_support / MPIX_Query_rocm_support)
  --threads T           OpenMP threads per rank (default: OMP_NUM_THREADS, else the
                        cores of this node divided among its ranks)
  --memory-limit BYTES  memory available per node (default: MemAvailable)

checkpoint and restart
  --checkpoint-dir DIR  write checkpoints under DIR (iter-NNNNNN/, one piece per rank and
                        a MANIFEST; the newest 2 complete ones are kept); DIR must be
                        visible to every rank
  --checkpoint-every N  checkpoint every N outer iterations, or every N seconds of solve
                        time with an s suffix (e.g. 60s); needs --checkpoint-dir
  --resume              continue from the newest valid checkpoint in --checkpoint-dir
                        (falls back past damaged ones; starts from iteration 0 when there
                        is none); refuses checkpoints of another graph, n, --tile or --grid

checking and reporting
  --validate K          recompute K random rows with Dijkstra on the sparse input and
                        report the max error; exit 3 beyond tolerance
  --validate-tol X      relative tolerance |d - ref| / max(1, ref) (default 1e-4)
  --seed S              seed of the validation sample (default 12345)
  --checksum            add distances_checksum to the summary: a 64-bit hash of every
                        distance and its position; two solves agree on it when their
                        distances are bit for bit equal, as they are for any backend, grid
                        and rank count at one --tile (another tile sums paths in another
                        order, which can move a distance's last bit)
  --progress            progress line with ETA on stderr (rank 0)
  --summary-json PATH   also write the JSON summary (always printed on stdout) to PATH
  --version, --help
)";

std::int64_t parse_bytes(const std::string& flag, const std::string& text) {
    std::size_t used = 0;
    double value = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        throw UsageError(flag + " '" + text + "' is not a number of bytes");
    }
    std::string suffix = text.substr(used);
    double scale = 1;
    if (suffix == "K" || suffix == "k" || suffix == "KiB") scale = 1024.0;
    else if (suffix == "M" || suffix == "m" || suffix == "MiB") scale = 1024.0 * 1024;
    else if (suffix == "G" || suffix == "g" || suffix == "GiB") scale = 1024.0 * 1024 * 1024;
    else if (!suffix.empty() && suffix != "B") throw UsageError(flag + " '" + text + "': unknown suffix '" + suffix + "'");
    if (!(value > 0)) throw UsageError(flag + " must be positive");
    // Checked before the conversion: a double beyond int64 does not convert.
    constexpr double kMaxBytes = static_cast<double>(std::int64_t{1} << 62);
    if (!(value * scale <= kMaxBytes)) throw UsageError(flag + " '" + text + "' is too large (at most 2^62 bytes)");
    return static_cast<std::int64_t>(value * scale);
}

std::int64_t parse_int(const std::string& flag, const std::string& text, std::int64_t min_value,
                       std::int64_t max_value) {
    std::size_t used = 0;
    long long value = 0;
    bool out_of_range = false;
    try {
        value = std::stoll(text, &used);
    } catch (const std::out_of_range&) {
        out_of_range = true;
    } catch (const std::exception&) {
        used = 0;
    }
    if (!out_of_range && (used != text.size() || text.empty()))
        throw UsageError(flag + " '" + text + "' is not an integer");
    if (out_of_range || value > max_value)
        throw UsageError(flag + " " + text + " is too large (at most " + std::to_string(max_value) + ")");
    if (value < min_value) throw UsageError(flag + " must be at least " + std::to_string(min_value));
    return value;
}

namespace {

// --sources computes rows by Dijkstra: options that steer the dense solve
// would be silently meaningless there, so they are refused by name.
void refuse_dense_only_options(const Options& o) {
    const std::map<std::string, std::string> why = {
        {"--tile", "there are no tiles"},
        {"--broadcast", "ranks exchange nothing while solving"},
        {"--chunk", "ranks exchange nothing while solving"},
        {"--lookahead", "there are no Floyd-Warshall iterations to overlap"},
        {"--gpu-aware-mpi", "Dijkstra runs on the CPU"},
        {"--checkpoint-dir", "there is no checkpointing of rows (rerun the missing sources instead)"},
        {"--checkpoint-every", "there is no checkpointing of rows (rerun the missing sources instead)"},
        {"--resume", "there is no checkpointing of rows (rerun the missing sources instead)"},
        {"--validate", "the rows are computed by Dijkstra already (it checks the dense solve)"},
        {"--validate-tol", "it belongs to --validate, which checks the dense solve"},
        {"--seed", "it belongs to --validate, which checks the dense solve"},
        {"--checksum", "it sums the dense matrix, which rows mode does not form"},
    };
    for (const auto& [flag, reason] : why)
        if (o.given.count(flag)) throw UsageError(flag + " does not apply with --sources: " + reason + "; drop it");
    if (o.grid != "auto")
        throw UsageError("--grid " + o.grid + " does not apply with --sources: the sources are split over the ranks "
                         "in contiguous blocks; drop it (or pass auto)");
    if (o.backend != "cpu" && o.backend != "reference")
        throw UsageError("--backend " + o.backend + " does not apply with --sources: Dijkstra runs on the CPU "
                         "(cpu or reference)");
}

}  // namespace

Options parse_options(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        std::string value;
        const auto eq = arg.find('=');
        bool has_inline = false;
        if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
            has_inline = true;
        }
        auto next = [&]() -> std::string {
            if (has_inline) return value;
            if (i + 1 >= argc) throw UsageError(arg + " needs a value");
            return argv[++i];
        };
        o.given.insert(arg);
        if (arg == "--help" || arg == "-h") o.help = true;
        else if (arg == "--version") o.version = true;
        else if (arg == "--input") o.input = next();
        else if (arg == "--output") o.output = next();
        else if (arg == "--grid") o.grid = next();
        else if (arg == "--tile") o.tile = static_cast<int>(parse_int(arg, next(), 1, kMaxTile));
        else if (arg == "--broadcast") o.broadcast = next();
        else if (arg == "--chunk") o.chunk_bytes = static_cast<std::size_t>(parse_bytes(arg, next()));
        else if (arg == "--lookahead") {
            const std::string v = next();
            if (v != "on" && v != "off") throw UsageError("--lookahead '" + v + "' must be on or off");
            o.lookahead = v == "on";
        } else if (arg == "--gpu-aware-mpi") {
            const std::string v = next();
            if (v != "on" && v != "off" && v != "auto")
                throw UsageError("--gpu-aware-mpi '" + v + "' must be on, off or auto");
            o.gpu_aware_mpi = v;
        } else if (arg == "--threads") o.threads = static_cast<int>(parse_int(arg, next(), 1, kMaxThreads));
        else if (arg == "--backend") o.backend = next();
        else if (arg == "--validate") o.validate = parse_int(arg, next(), 0);
        else if (arg == "--validate-tol") {
            const std::string v = next();
            try {
                o.validate_tol = std::stod(v);
            } catch (const std::exception&) {
                throw UsageError("--validate-tol '" + v + "' is not a number");
            }
        } else if (arg == "--seed") o.seed = static_cast<std::uint64_t>(parse_int(arg, next(), 0));
        else if (arg == "--progress") o.progress = true;
        else if (arg == "--checksum") o.checksum = true;
        else if (arg == "--summary-json") o.summary_json = next();
        else if (arg == "--memory-limit") o.memory_limit = parse_bytes(arg, next());
        else if (arg == "--adios2-config") o.adios2_config = next();
        else if (arg == "--checkpoint-dir") o.checkpoint_dir = next();
        else if (arg == "--checkpoint-every") {
            const std::string v = next();
            try {
                o.checkpoint_every = parse_checkpoint_interval(v);
            } catch (const std::invalid_argument& e) {
                throw UsageError("--checkpoint-every " + std::string(e.what()));
            }
        } else if (arg == "--resume") o.resume = true;
        else if (arg == "--sources") o.sources = next();
        else throw UsageError("unknown option '" + arg + "' (see --help)");
    }
    if (!o.help && !o.version && o.input.empty()) throw UsageError("--input FILE is required (see --help)");
    if (!o.sources.empty()) refuse_dense_only_options(o);
    if ((o.checkpoint_every.enabled() || o.resume) && o.checkpoint_dir.empty())
        throw UsageError(std::string(o.resume ? "--resume" : "--checkpoint-every") + " needs --checkpoint-dir DIR");
    return o;
}

}  // namespace litpath::apsp
