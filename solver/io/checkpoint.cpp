#include "io/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "core/collective.hpp"
#include "core/grid.hpp"

namespace litpath::apsp {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'L', 'P', 'C', 'K', 'P', 'T', '0', '1'};
constexpr const char* kManifest = "MANIFEST";
constexpr const char* kManifestHeader = "litpath-apsp-checkpoint 1";
constexpr const char* kLock = "LOCK";

// Fixed-size header in front of each piece's payload (the rank's tile store).
struct PieceHeader {
    char magic[8];
    std::int32_t rank;
    std::int32_t ranks;
    std::int64_t iteration;
    std::int64_t n;
    std::int32_t tile;
    std::int32_t grid_rows;
    std::int32_t grid_cols;
    std::int32_t reserved;
    std::uint64_t payload_bytes;
    std::uint64_t checksum;  // checksum64 of the payload
    char graph_digest[128];  // NUL-padded
};

std::string errno_text() { return std::strerror(errno); }

// Writes all of data to fd; false with errno set on failure.
bool write_all(int fd, const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t done = ::write(fd, p, std::min<std::size_t>(bytes, std::size_t{1} << 30));
        if (done < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        p += done;
        bytes -= static_cast<std::size_t>(done);
    }
    return true;
}

enum class ReadResult { ok, end_of_file, error };

// Reads exactly `bytes`; end_of_file when the file is shorter (content damage),
// error (errno set) when the read itself failed (I/O trouble, not damage).
ReadResult read_exactly(int fd, void* data, std::size_t bytes) {
    char* p = static_cast<char*>(data);
    while (bytes > 0) {
        const ssize_t done = ::read(fd, p, std::min<std::size_t>(bytes, std::size_t{1} << 30));
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) return ReadResult::error;
        if (done == 0) return ReadResult::end_of_file;
        p += done;
        bytes -= static_cast<std::size_t>(done);
    }
    return ReadResult::ok;
}

// Write-then-rename: `path` either does not change or holds all of the bytes.
void write_file_atomically(const std::string& path, const void* head, std::size_t head_bytes, const void* body,
                           std::size_t body_bytes) {
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error(tmp + ": cannot create: " + errno_text());
    bool ok = write_all(fd, head, head_bytes) && (body_bytes == 0 || write_all(fd, body, body_bytes));
    ok = ok && ::fsync(fd) == 0;
    const std::string why = ok ? "" : errno_text();
    ::close(fd);
    if (!ok) {
        ::unlink(tmp.c_str());
        throw std::runtime_error(tmp + ": write failed: " + why);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error(path + ": rename from .tmp failed: " + errno_text());
}

void sync_directory(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

void make_directories(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec && !fs::is_directory(dir)) throw std::runtime_error(dir + ": cannot create directory: " + ec.message());
}

// Iterations of all iter-NNNNNN directories under dir (with or without a
// manifest). Throws std::runtime_error when dir cannot be listed.
// The type of `path`: not_found when it does not exist (no error), else throws
// std::runtime_error when it cannot be checked (an I/O error is not "absent").
fs::file_type type_of(const fs::path& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);  // (libstdc++ sets ec for not_found too)
    if (status.type() == fs::file_type::not_found) return fs::file_type::not_found;
    if (ec) throw std::runtime_error(path.string() + ": cannot check: " + ec.message());
    return status.type();
}

std::vector<std::int64_t> iteration_dirs(const std::string& dir) {
    std::vector<std::int64_t> out;
    std::error_code ec;
    if (type_of(dir) != fs::file_type::directory) return out;  // a missing dir: no checkpoints
    fs::directory_iterator entry(dir, ec);
    for (; !ec && entry != fs::directory_iterator(); entry.increment(ec)) {
        std::int64_t iteration = 0;
        if (!parse_iteration_dir_name(entry->path().filename().string(), iteration)) continue;
        if (type_of(entry->path()) == fs::file_type::directory) out.push_back(iteration);
    }
    if (ec) throw std::runtime_error(dir + ": cannot list: " + ec.message());
    std::sort(out.begin(), out.end());
    return out;
}

// Whole-token integer parses for the manifest (no sign for unsigned, no blanks, no rest).
template <typename T>
bool parse_number(const std::string& text, T& value, int base = 10) {
    if (text.empty()) return false;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value, base);
    return r.ec == std::errc() && r.ptr == text.data() + text.size();
}

// The manifest at `path` (see parse_checkpoint_manifest); unreadable when it cannot be opened.
ManifestRead read_manifest(const std::string& path, CheckpointManifest& m, std::string& why) {
    std::ifstream in(path);
    if (!in) {
        why = path + ": cannot open: " + errno_text();
        return ManifestRead::unreadable;
    }
    return parse_checkpoint_manifest(in, path, m, why);
}

}  // namespace

std::string CheckpointInterval::to_string() const {
    if (iterations > 0) return std::to_string(iterations);
    if (seconds > 0) {
        std::ostringstream out;
        out << seconds << "s";
        return out.str();
    }
    return "off";
}

CheckpointInterval parse_checkpoint_interval(const std::string& text) {
    CheckpointInterval interval;
    if (text.empty()) throw std::invalid_argument("empty interval");
    std::size_t used = 0;
    if (text.back() == 's') {
        double s = 0;
        try {
            s = std::stod(text.substr(0, text.size() - 1), &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != text.size() - 1 || !(s > 0)) throw std::invalid_argument("'" + text + "' is not a positive number of seconds");
        interval.seconds = s;
        return interval;
    }
    long long k = 0;
    try {
        k = std::stoll(text, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != text.size() || k < 1)
        throw std::invalid_argument("'" + text + "' is neither a positive iteration count nor seconds like '60s'");
    interval.iterations = k;
    return interval;
}

std::uint64_t checksum64(const void* data, std::size_t bytes) {
    constexpr std::uint64_t p1 = 0x9E3779B185EBCA87ULL, p2 = 0xC2B2AE3D27D4EB4FULL;
    auto round = [](std::uint64_t acc, std::uint64_t word) {
        acc += word * p2;
        acc = (acc << 31) | (acc >> 33);
        return acc * p1;
    };
    const auto* p = static_cast<const unsigned char*>(data);
    std::uint64_t lane[4] = {p1 + p2, p2, 0, 0 - p1};
    std::size_t i = 0;
    for (; i + 32 <= bytes; i += 32) {
        std::uint64_t w[4];
        std::memcpy(w, p + i, 32);
        for (int l = 0; l < 4; ++l) lane[l] = round(lane[l], w[l]);
    }
    std::uint64_t h = bytes;
    for (int l = 0; l < 4; ++l) h = round(h ^ lane[l], static_cast<std::uint64_t>(l + 1));
    for (; i < bytes; ++i) h = round(h, p[i]);
    h ^= h >> 33;
    h *= p2;
    h ^= h >> 29;
    return h;
}

std::string checkpoint_iteration_dir(const std::string& dir, std::int64_t iteration) {
    char name[32];
    std::snprintf(name, sizeof name, "iter-%06lld", static_cast<long long>(iteration));
    return (fs::path(dir) / name).string();
}

bool parse_iteration_dir_name(const std::string& name, std::int64_t& iteration) {
    if (name.size() <= 5 || name.compare(0, 5, "iter-") != 0) return false;
    std::int64_t value = 0;
    if (!parse_number(name.substr(5), value) || value < 0) return false;
    // Only the spelling apsp-fw writes, so that the name and the number are one to one.
    if (fs::path(checkpoint_iteration_dir("", value)).filename().string() != name) return false;
    iteration = value;
    return true;
}

std::vector<std::int64_t> list_checkpoints(const std::string& dir) {
    std::vector<std::int64_t> out;
    for (std::int64_t it : iteration_dirs(dir)) {
        if (type_of(fs::path(checkpoint_iteration_dir(dir, it)) / kManifest) == fs::file_type::regular)
            out.push_back(it);
    }
    return out;
}

ManifestRead parse_checkpoint_manifest(std::istream& in, const std::string& path, CheckpointManifest& m,
                                       std::string& why) {
    auto malformed = [&](const std::string& what) {
        why = path + ": " + what;
        return ManifestRead::malformed;
    };
    std::string line;
    if (!std::getline(in, line)) {
        if (in.bad()) return why = path + ": read error", ManifestRead::unreadable;
        return malformed("empty, not a checkpoint manifest");
    }
    if (line != kManifestHeader) return malformed("not a checkpoint manifest");
    bool have_digest = false;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string key, value, extra;
        fields >> key;
        if (key == "graph_digest") {
            std::getline(fields >> std::ws, m.graph_digest);
            have_digest = true;
            continue;
        }
        if (key == "piece") {
            std::string rank_text, bytes_text, sum_text;
            int r = -1;
            std::uint64_t bytes = 0, sum = 0;
            fields >> rank_text >> bytes_text >> sum_text;
            if (!parse_number(rank_text, r) || !parse_number(bytes_text, bytes) || sum_text.size() > 16 ||
                !parse_number(sum_text, sum, 16) || (fields >> extra))
                return malformed("malformed line '" + line + "' (expected: piece RANK BYTES HEX-CHECKSUM)");
            if (r != static_cast<int>(m.piece_bytes.size())) return malformed("pieces out of order");
            m.piece_bytes.push_back(bytes);
            m.piece_checksum.push_back(sum);
            continue;
        }
        if (key == "end") {
            if (m.iteration < 0 || m.n < 0 || m.tile < 1 || m.grid.rows < 1 || m.grid.cols < 1 || !have_digest)
                return malformed("incomplete (needs iteration, n, tile, grid, ranks and graph_digest)");
            if (m.ranks <= 0 || static_cast<int>(m.piece_bytes.size()) != m.ranks ||
                static_cast<std::int64_t>(m.grid.rows) * m.grid.cols != m.ranks)
                return malformed("lists " + std::to_string(m.piece_bytes.size()) + " pieces for " +
                                 std::to_string(m.ranks) + " ranks on grid " + grid_to_string(m.grid));
            return ManifestRead::ok;
        }
        fields >> value;
        bool ok = !(fields >> extra);
        if (key == "iteration") ok = ok && parse_number(value, m.iteration);
        else if (key == "n") ok = ok && parse_number(value, m.n);
        else if (key == "tile") ok = ok && parse_number(value, m.tile);
        else if (key == "ranks") ok = ok && parse_number(value, m.ranks);
        else if (key == "grid") {
            const auto x = value.find('x');
            ok = ok && x != std::string::npos && parse_number(value.substr(0, x), m.grid.rows) &&
                 parse_number(value.substr(x + 1), m.grid.cols);
        }  // other keys: from a newer apsp-fw, ignored
        if (!ok) return malformed("malformed line '" + line + "'");
    }
    if (in.bad()) return why = path + ": read error", ManifestRead::unreadable;
    return malformed("truncated (no end line)");
}

Checkpointer::Checkpointer(std::string dir, CheckpointIdentity identity, CheckpointInterval interval, MPI_Comm comm,
                           int keep)
    : dir_(std::move(dir)), identity_(std::move(identity)), interval_(interval), comm_(comm), keep_(std::max(1, keep)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &ranks_);
    last_checkpoint_iteration_ = 0;
}

Checkpointer::~Checkpointer() {
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void Checkpointer::claim() {
    std::string error;
    if (rank_ == 0) {
        const std::string lock_path = (fs::path(dir_) / kLock).string();
        try {
            make_directories(dir_);
            const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0) throw std::runtime_error(lock_path + ": cannot open: " + errno_text());
            if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
                lock_fd_ = fd;
                char host[256] = {};
                ::gethostname(host, sizeof host - 1);
                const std::string holder =
                    "apsp-fw pid " + std::to_string(::getpid()) + " on host " + std::string(host) + "\n";
                if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, holder.data(), holder.size(), 0) < 0)
                    std::cerr << "apsp-fw: warning: " << lock_path << ": cannot record the lock holder: " << errno_text()
                              << std::endl;
            } else if (errno == EWOULDBLOCK) {
                char holder[512] = {};
                const ssize_t got = ::pread(fd, holder, sizeof holder - 1, 0);
                ::close(fd);
                std::string who = got > 0 ? std::string(holder, static_cast<std::size_t>(got)) : "another apsp-fw";
                while (!who.empty() && who.back() == '\n') who.pop_back();
                error = dir_ + " is in use by another run (" + who +
                        "); wait for it to finish or stop it, then rerun with --resume";
            } else {
                std::cerr << "apsp-fw: warning: " << lock_path << ": no file locking here (" << errno_text()
                          << "); make sure no other run uses " << dir_ << std::endl;
                ::close(fd);
            }
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    error = broadcast_string(error, comm_);
    if (!error.empty()) throw std::runtime_error("checkpoint: " + error);
}

std::string Checkpointer::piece_path(const std::string& iteration_dir, int rank) const {
    char name[32];
    std::snprintf(name, sizeof name, "rank-%05d.ckpt", rank);
    return (fs::path(iteration_dir) / name).string();
}

bool Checkpointer::due(std::int64_t iterations_done, std::int64_t total) {
    if (!interval_.enabled() || iterations_done >= total) return false;
    if (interval_.iterations > 0) return iterations_done - last_checkpoint_iteration_ >= interval_.iterations;
    // Seconds: rank 0's clock decides, so that every rank agrees.
    const double now = MPI_Wtime();
    if (last_checkpoint_time_ < 0) last_checkpoint_time_ = now;
    int take = rank_ == 0 && now - last_checkpoint_time_ >= interval_.seconds ? 1 : 0;
    MPI_Bcast(&take, 1, MPI_INT, 0, comm_);
    return take == 1;
}

void Checkpointer::write(std::int64_t iterations_done, const DistributedMatrix& matrix) {
    const double t0 = MPI_Wtime();
    const std::string iteration_dir = checkpoint_iteration_dir(dir_, iterations_done);
    const std::uint64_t payload_bytes = matrix.size() * sizeof(float);
    std::uint64_t checksum = 0;
    std::string error;
    try {
        make_directories(iteration_dir);
        checksum = checksum64(matrix.data(), payload_bytes);
        PieceHeader header{};
        std::memcpy(header.magic, kMagic, sizeof kMagic);
        header.rank = rank_;
        header.ranks = ranks_;
        header.iteration = iterations_done;
        header.n = identity_.n;
        header.tile = identity_.tile;
        header.grid_rows = identity_.grid.rows;
        header.grid_cols = identity_.grid.cols;
        header.payload_bytes = payload_bytes;
        header.checksum = checksum;
        std::strncpy(header.graph_digest, identity_.graph_digest.c_str(), sizeof header.graph_digest - 1);
        write_file_atomically(piece_path(iteration_dir, rank_), &header, sizeof header, matrix.data(), payload_bytes);
    } catch (const std::exception& e) {
        error = e.what();
    }
    // Every piece is in place (or someone failed) before rank 0 writes the manifest.
    std::uint64_t mine[3] = {payload_bytes, checksum, error.empty() ? 1u : 0u};
    std::vector<std::uint64_t> all(rank_ == 0 ? 3 * static_cast<std::size_t>(ranks_) : 0);
    MPI_Gather(mine, 3, MPI_UINT64_T, all.data(), 3, MPI_UINT64_T, 0, comm_);
    if (!error.empty()) std::cerr << "apsp-fw: checkpoint: rank " << rank_ << ": " << error << std::endl;
    std::string manifest_error;
    if (rank_ == 0) {
        bool pieces_ok = true;
        for (int r = 0; r < ranks_; ++r) pieces_ok = pieces_ok && all[3 * static_cast<std::size_t>(r) + 2] == 1;
        if (!pieces_ok) {
            manifest_error = "writing checkpoint " + iteration_dir + " failed on at least one rank (see above)";
        } else {
            std::ostringstream m;
            m << kManifestHeader << "\n";
            m << "iteration " << iterations_done << "\n";
            m << "n " << identity_.n << "\n";
            m << "tile " << identity_.tile << "\n";
            m << "grid " << grid_to_string(identity_.grid) << "\n";
            m << "ranks " << ranks_ << "\n";
            m << "graph_digest " << identity_.graph_digest << "\n";
            for (int r = 0; r < ranks_; ++r) {
                char sum[24];
                std::snprintf(sum, sizeof sum, "%016llx",
                              static_cast<unsigned long long>(all[3 * static_cast<std::size_t>(r) + 1]));
                m << "piece " << r << " " << all[3 * static_cast<std::size_t>(r)] << " " << sum << "\n";
            }
            m << "end\n";
            const std::string text = m.str();
            try {
                write_file_atomically((fs::path(iteration_dir) / kManifest).string(), text.data(), text.size(), nullptr, 0);
                sync_directory(iteration_dir);
                prune(iterations_done);
            } catch (const std::exception& e) {
                manifest_error = e.what();
            }
        }
    }
    manifest_error = broadcast_string(manifest_error, comm_);
    if (!manifest_error.empty()) throw std::runtime_error("checkpoint: " + manifest_error);
    ++written_;
    last_checkpoint_iteration_ = iterations_done;
    last_checkpoint_time_ = MPI_Wtime();
    seconds_ += MPI_Wtime() - t0;
}

// Rank 0 only: keep the newest keep_ complete checkpoints up to `newest`; drop
// older ones and any incomplete directory left below `newest`.
// Housekeeping only: a directory that cannot be listed now is pruned at the next
// checkpoint, so an error here warns instead of failing the run.
void Checkpointer::prune(std::int64_t newest) {
    try {
        std::vector<std::int64_t> complete;
        for (std::int64_t it : list_checkpoints(dir_))
            if (it <= newest) complete.push_back(it);
        const std::size_t first_kept = complete.size() > static_cast<std::size_t>(keep_) ? complete.size() - keep_ : 0;
        std::vector<std::int64_t> kept(complete.begin() + static_cast<std::ptrdiff_t>(first_kept), complete.end());
        for (std::int64_t it : iteration_dirs(dir_)) {
            if (it >= newest || std::find(kept.begin(), kept.end(), it) != kept.end()) continue;
            std::error_code ec;
            fs::remove_all(checkpoint_iteration_dir(dir_, it), ec);
        }
    } catch (const std::exception& e) {
        std::cerr << "apsp-fw: warning: checkpoint: old checkpoints not pruned this time: " << e.what() << std::endl;
    }
}

namespace {

// What resume() found in one checkpoint, worst last: the collective verdict
// is the worst over the ranks.
enum class Verdict { ok = 0, damaged = 1, malformed_manifest = 2, foreign = 3, unreadable = 4 };

struct Finding {
    Verdict verdict = Verdict::ok;
    std::string message;
};

// The worst finding over the ranks, on every rank: its verdict, and the
// message of the lowest rank that has it.
Finding worst_over_ranks(const Finding& mine, MPI_Comm comm) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    int verdict = static_cast<int>(mine.verdict), worst = 0;
    MPI_Allreduce(&verdict, &worst, 1, MPI_INT, MPI_MAX, comm);
    if (worst == 0) return {};
    int candidate = verdict == worst ? rank : ranks, reporter = ranks;
    MPI_Allreduce(&candidate, &reporter, 1, MPI_INT, MPI_MIN, comm);
    return {static_cast<Verdict>(worst),
            broadcast_string(rank == reporter ? mine.message : std::string(), comm, reporter)};
}

// Differences between what a checkpoint says it was written for and this run.
std::string identity_differences(const std::string& digest, std::int64_t n, int tile, GridShape grid,
                                 const CheckpointIdentity& mine) {
    std::ostringstream diff;
    if (digest != mine.graph_digest) diff << " graph digest " << digest << " (this input: " << mine.graph_digest << ")";
    if (n != mine.n) diff << " n " << n << " (this input: " << mine.n << ")";
    if (tile != mine.tile) diff << " tile " << tile << " (this run: " << mine.tile << ")";
    if (grid_to_string(grid) != grid_to_string(mine.grid))
        diff << " grid " << grid_to_string(grid) << " (this run: " << grid_to_string(mine.grid) << ")";
    return diff.str();
}

// One rank's piece of checkpoint `iteration`: opened and read (else
// unreadable), then its size, header and checksum (else damaged), and the
// inputs its header names (else foreign). Loads the payload into matrix.
Finding check_piece(const std::string& path, std::int64_t iteration, std::uint64_t manifest_bytes,
                    std::uint64_t manifest_checksum, std::uint64_t payload_bytes, DistributedMatrix& matrix,
                    const CheckpointIdentity& identity, int rank, int ranks) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int code = errno;
        std::string why = path + ": cannot open: " + std::strerror(code);
        if (code == ENOENT) why += " (the manifest lists it: is the checkpoint directory shared by every rank?)";
        return {Verdict::unreadable, why};
    }
    struct FdCloser {
        int fd;
        ~FdCloser() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return {Verdict::unreadable, path + ": cannot stat: " + errno_text()};
    const auto size = static_cast<std::uint64_t>(st.st_size);

    PieceHeader header{};
    ReadResult read = read_exactly(fd, &header, sizeof header);
    if (read == ReadResult::error) return {Verdict::unreadable, path + ": read error: " + errno_text()};
    if (read == ReadResult::end_of_file)
        return {Verdict::damaged, path + ": truncated (" + std::to_string(size) + " bytes, shorter than a header)"};
    if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0)
        return {Verdict::damaged, path + ": not a checkpoint piece"};
    // The inputs the piece was written for, before its size (which depends on them):
    // a piece of another graph, n, tile or grid is never loaded, nor deleted as damaged.
    const std::string digest(header.graph_digest, strnlen(header.graph_digest, sizeof header.graph_digest));
    const std::string mine = identity.graph_digest.substr(0, sizeof header.graph_digest - 1);
    std::string diff =
        identity_differences(digest, header.n, header.tile, GridShape{header.grid_rows, header.grid_cols},
                             CheckpointIdentity{mine, identity.n, identity.tile, identity.grid});
    if (header.ranks != ranks)
        diff += " ranks " + std::to_string(header.ranks) + " (this run: " + std::to_string(ranks) + ")";
    if (!diff.empty()) return {Verdict::foreign, path + ": piece header written for other inputs:" + diff};
    if (header.rank != rank || header.iteration != iteration || header.payload_bytes != manifest_bytes ||
        header.payload_bytes != payload_bytes || header.checksum != manifest_checksum)
        return {Verdict::damaged, path + ": header does not match the manifest"};
    const std::uint64_t expected_size = sizeof(PieceHeader) + manifest_bytes;
    if (size < expected_size)
        return {Verdict::damaged, path + ": truncated (" + std::to_string(size) + " bytes, the manifest says " +
                                      std::to_string(expected_size) + ")"};
    if (size > expected_size)
        return {Verdict::damaged, path + ": trailing bytes (" + std::to_string(size) + " bytes, the manifest says " +
                                      std::to_string(expected_size) + ")"};
    read = read_exactly(fd, matrix.data(), payload_bytes);
    if (read == ReadResult::error) return {Verdict::unreadable, path + ": read error: " + errno_text()};
    if (read == ReadResult::end_of_file) return {Verdict::damaged, path + ": truncated"};
    if (checksum64(matrix.data(), payload_bytes) != manifest_checksum)
        return {Verdict::damaged, path + ": checksum mismatch"};
    return {};
}

}  // namespace

std::int64_t Checkpointer::resume(DistributedMatrix& matrix) {
    const std::string kept_note = "; no checkpoint was deleted";
    // ---- rank 0 lists the complete checkpoints; a listing error stops every rank ----
    std::vector<std::int64_t> candidates;
    std::string error;
    if (rank_ == 0) {
        try {
            candidates = list_checkpoints(dir_);
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    error = broadcast_string(error, comm_);
    if (!error.empty()) throw std::runtime_error("cannot resume: " + error + kept_note);
    std::int64_t count = static_cast<std::int64_t>(candidates.size());
    MPI_Bcast(&count, 1, MPI_INT64_T, 0, comm_);
    candidates.resize(static_cast<std::size_t>(count));
    if (count > 0) MPI_Bcast(candidates.data(), static_cast<int>(count), MPI_INT64_T, 0, comm_);

    const std::uint64_t payload_bytes = matrix.size() * sizeof(float);
    std::vector<std::pair<std::int64_t, std::string>> damaged;  // deleted once a way forward is certain
    std::int64_t resumed = -1;
    for (auto it = candidates.rbegin(); it != candidates.rend() && resumed < 0; ++it) {
        const std::string iteration_dir = checkpoint_iteration_dir(dir_, *it);

        // ---- the manifest (rank 0): readable, well formed, written for these inputs ----
        Finding manifest_finding;
        CheckpointManifest m;
        if (rank_ == 0) {
            try {
                std::string why;
                const ManifestRead read = read_manifest((fs::path(iteration_dir) / kManifest).string(), m, why);
                if (read == ManifestRead::unreadable) {
                    manifest_finding = {Verdict::unreadable, why};
                } else if (read == ManifestRead::malformed) {
                    manifest_finding = {Verdict::malformed_manifest, why};
                } else if (m.iteration != *it) {
                    manifest_finding = {Verdict::malformed_manifest,
                                        iteration_dir + ": its MANIFEST says iteration " + std::to_string(m.iteration)};
                } else if (const std::string diff =
                               identity_differences(m.graph_digest, m.n, m.tile, m.grid, identity_);
                           !diff.empty()) {
                    manifest_finding = {Verdict::foreign,
                                        "checkpoint " + iteration_dir + " was written for other inputs:" + diff};
                }
            } catch (const std::exception& e) {
                manifest_finding = {Verdict::unreadable, iteration_dir + ": " + e.what()};
            }
        }
        Finding finding = worst_over_ranks(manifest_finding, comm_);

        // ---- every rank's piece: readable, then size, header and checksum ----
        if (finding.verdict == Verdict::ok) {
            std::uint64_t expect[2] = {0, 0};
            std::vector<std::uint64_t> table;
            if (rank_ == 0)
                for (int r = 0; r < ranks_; ++r)
                    table.push_back(m.piece_bytes[static_cast<std::size_t>(r)]),
                        table.push_back(m.piece_checksum[static_cast<std::size_t>(r)]);
            MPI_Scatter(table.data(), 2, MPI_UINT64_T, expect, 2, MPI_UINT64_T, 0, comm_);
            Finding mine;
            try {
                mine = check_piece(piece_path(iteration_dir, rank_), *it, expect[0], expect[1], payload_bytes, matrix,
                                   identity_, rank_, ranks_);
            } catch (const std::exception& e) {
                mine = {Verdict::unreadable, piece_path(iteration_dir, rank_) + ": " + e.what()};
            }
            if (mine.verdict != Verdict::ok) mine.message = "rank " + std::to_string(rank_) + ": " + mine.message;
            finding = worst_over_ranks(mine, comm_);
        }

        switch (finding.verdict) {
            case Verdict::ok:
                resumed = *it;
                break;
            case Verdict::damaged:
                if (rank_ == 0)
                    std::cerr << "apsp-fw: warning: skipping checkpoint " << iteration_dir << ": " << finding.message
                              << " (damaged: it will be deleted)" << std::endl;
                damaged.emplace_back(*it, finding.message);
                break;
            case Verdict::malformed_manifest:
                if (rank_ == 0)
                    std::cerr << "apsp-fw: warning: skipping checkpoint " << iteration_dir << ": " << finding.message
                              << " (kept: only checkpoints whose pieces fail their size, header or checksum checks "
                                 "are deleted)"
                              << std::endl;
                break;
            case Verdict::foreign:
                throw std::runtime_error("cannot resume: " + finding.message + "; rerun with the same input, --tile and "
                                         "--grid, or remove " + dir_ + kept_note);
            case Verdict::unreadable:
                throw std::runtime_error("cannot resume: checkpoint " + iteration_dir + " could not be read (" +
                                         finding.message + ")" + kept_note +
                                         " (an I/O error is not damage: check that " + dir_ +
                                         " is readable on every rank's node, then rerun with --resume, or remove it "
                                         "to start over)");
        }
    }

    // ---- a way forward is certain: drop the damaged checkpoints and killed writes above it ----
    error.clear();
    if (rank_ == 0) {
        try {
            for (const auto& [iteration, why] : damaged) {
                std::cerr << "apsp-fw: deleting damaged checkpoint " << checkpoint_iteration_dir(dir_, iteration) << std::endl;
                fs::remove_all(checkpoint_iteration_dir(dir_, iteration));
            }
            const std::vector<std::int64_t> complete = list_checkpoints(dir_);
            for (std::int64_t it : iteration_dirs(dir_)) {
                if (it <= resumed || std::binary_search(complete.begin(), complete.end(), it)) continue;
                fs::remove_all(checkpoint_iteration_dir(dir_, it));  // no MANIFEST: a write that was killed
            }
        } catch (const std::exception& e) {
            error = e.what();
        }
    }
    error = broadcast_string(error, comm_);
    if (!error.empty()) throw std::runtime_error("checkpoint: cleaning up " + dir_ + ": " + error);
    last_checkpoint_iteration_ = std::max<std::int64_t>(resumed, 0);
    return resumed;
}

}  // namespace litpath::apsp
