#include "core/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

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

bool read_all(int fd, void* data, std::size_t bytes) {
    char* p = static_cast<char*>(data);
    while (bytes > 0) {
        const ssize_t done = ::read(fd, p, std::min<std::size_t>(bytes, std::size_t{1} << 30));
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) return false;
        p += done;
        bytes -= static_cast<std::size_t>(done);
    }
    return true;
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

// Iterations of all iter-NNNNNN directories under dir (with or without a manifest).
std::vector<std::int64_t> iteration_dirs(const std::string& dir) {
    std::vector<std::int64_t> out;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return out;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind("iter-", 0) != 0 || name.size() <= 5 || !entry.is_directory(ec)) continue;
        const std::string digits = name.substr(5);
        if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
        out.push_back(std::stoll(digits));
    }
    std::sort(out.begin(), out.end());
    return out;
}

struct Manifest {
    std::int64_t iteration = -1, n = 0;
    int tile = 0, ranks = 0;
    GridShape grid;
    std::string graph_digest;
    std::vector<std::uint64_t> piece_bytes, piece_checksum;
};

// Parses a MANIFEST; returns false (with why) when it is malformed.
bool read_manifest(const std::string& path, Manifest& m, std::string& why) {
    std::ifstream in(path);
    if (!in) {
        why = path + ": cannot read";
        return false;
    }
    std::string line;
    if (!std::getline(in, line) || line != kManifestHeader) {
        why = path + ": not a checkpoint manifest";
        return false;
    }
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        std::string key;
        fields >> key;
        if (key == "iteration") fields >> m.iteration;
        else if (key == "n") fields >> m.n;
        else if (key == "tile") fields >> m.tile;
        else if (key == "ranks") fields >> m.ranks;
        else if (key == "grid") {
            std::string g;
            fields >> g;
            const auto x = g.find('x');
            if (x == std::string::npos) {
                why = path + ": bad grid '" + g + "'";
                return false;
            }
            m.grid.rows = std::atoi(g.substr(0, x).c_str());
            m.grid.cols = std::atoi(g.substr(x + 1).c_str());
        } else if (key == "graph_digest") {
            std::getline(fields >> std::ws, m.graph_digest);
        } else if (key == "piece") {
            int r = -1;
            std::uint64_t bytes = 0;
            std::string sum;
            fields >> r >> bytes >> sum;
            if (r != static_cast<int>(m.piece_bytes.size())) {
                why = path + ": pieces out of order";
                return false;
            }
            m.piece_bytes.push_back(bytes);
            m.piece_checksum.push_back(std::stoull(sum, nullptr, 16));
        } else if (key == "end") {
            if (m.ranks <= 0 || static_cast<int>(m.piece_bytes.size()) != m.ranks) {
                why = path + ": lists " + std::to_string(m.piece_bytes.size()) + " pieces for " +
                      std::to_string(m.ranks) + " ranks";
                return false;
            }
            return true;
        }
        if (fields.fail()) {
            why = path + ": malformed line '" + line + "'";
            return false;
        }
    }
    why = path + ": truncated (no end line)";
    return false;
}

// Rank 0's string, on every rank.
std::string broadcast_string(std::string text, MPI_Comm comm) {
    int size = static_cast<int>(text.size());
    MPI_Bcast(&size, 1, MPI_INT, 0, comm);
    text.resize(static_cast<std::size_t>(size));
    if (size > 0) MPI_Bcast(text.data(), size, MPI_CHAR, 0, comm);
    return text;
}

bool all_ranks(bool mine, MPI_Comm comm) {
    int ok = mine ? 1 : 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all == 1;
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

std::vector<std::int64_t> list_checkpoints(const std::string& dir) {
    std::vector<std::int64_t> out;
    for (std::int64_t it : iteration_dirs(dir)) {
        std::error_code ec;
        if (fs::is_regular_file(fs::path(checkpoint_iteration_dir(dir, it)) / kManifest, ec)) out.push_back(it);
    }
    return out;
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
void Checkpointer::prune(std::int64_t newest) {
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
}

std::int64_t Checkpointer::resume(DistributedMatrix& matrix) {
    std::vector<std::int64_t> candidates;
    if (rank_ == 0) candidates = list_checkpoints(dir_);
    int count = static_cast<int>(candidates.size());
    MPI_Bcast(&count, 1, MPI_INT, 0, comm_);
    candidates.resize(static_cast<std::size_t>(count));
    if (count > 0) MPI_Bcast(candidates.data(), count, MPI_INT64_T, 0, comm_);

    std::int64_t resumed = -1;
    bool newest = true;
    for (auto it = candidates.rbegin(); it != candidates.rend() && resumed < 0; ++it) {
        const std::string iteration_dir = checkpoint_iteration_dir(dir_, *it);
        Manifest m;
        std::string why, refusal;
        bool manifest_ok = true;
        if (rank_ == 0) {
            manifest_ok = read_manifest((fs::path(iteration_dir) / kManifest).string(), m, why);
            if (manifest_ok && newest) {
                // Only the newest checkpoint decides whether these are the same inputs.
                std::ostringstream diff;
                if (m.graph_digest != identity_.graph_digest)
                    diff << " graph digest " << m.graph_digest << " (this input: " << identity_.graph_digest << ")";
                if (m.n != identity_.n) diff << " n " << m.n << " (this input: " << identity_.n << ")";
                if (m.tile != identity_.tile) diff << " tile " << m.tile << " (this run: " << identity_.tile << ")";
                if (grid_to_string(m.grid) != grid_to_string(identity_.grid))
                    diff << " grid " << grid_to_string(m.grid) << " (this run: " << grid_to_string(identity_.grid) << ")";
                if (!diff.str().empty())
                    refusal = "cannot resume: checkpoint " + iteration_dir + " was written for other inputs:" + diff.str() +
                              "; rerun with the same input, --tile and --grid, or remove " + dir_;
            }
            if (manifest_ok && m.ranks != ranks_) manifest_ok = false, why = iteration_dir + ": written by " +
                                                                        std::to_string(m.ranks) + " ranks";
        }
        newest = false;
        refusal = broadcast_string(refusal, comm_);
        if (!refusal.empty()) throw std::runtime_error(refusal);
        if (!all_ranks(manifest_ok, comm_)) {
            if (rank_ == 0)
                std::cerr << "apsp-fw: warning: skipping checkpoint " << iteration_dir << ": " << why << std::endl;
            continue;
        }
        // Each rank's expected piece size and checksum.
        std::uint64_t expect[2] = {0, 0};
        std::vector<std::uint64_t> table;
        if (rank_ == 0)
            for (int r = 0; r < ranks_; ++r) table.push_back(m.piece_bytes[r]), table.push_back(m.piece_checksum[r]);
        MPI_Scatter(table.data(), 2, MPI_UINT64_T, expect, 2, MPI_UINT64_T, 0, comm_);

        std::string problem;
        const std::string path = piece_path(iteration_dir, rank_);
        const std::uint64_t payload_bytes = matrix.size() * sizeof(float);
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        PieceHeader header{};
        if (fd < 0) {
            problem = path + ": cannot open: " + errno_text();
        } else {
            if (!read_all(fd, &header, sizeof header)) problem = path + ": short header";
            else if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0) problem = path + ": not a checkpoint piece";
            else if (header.rank != rank_ || header.iteration != *it || header.payload_bytes != payload_bytes ||
                     header.payload_bytes != expect[0])
                problem = path + ": header does not match the manifest";
            else if (!read_all(fd, matrix.data(), payload_bytes)) problem = path + ": truncated";
            else if (checksum64(matrix.data(), payload_bytes) != expect[1] || header.checksum != expect[1])
                problem = path + ": checksum mismatch";
            else {
                char extra;
                if (::read(fd, &extra, 1) != 0) problem = path + ": trailing bytes";
            }
            ::close(fd);
        }
        if (!problem.empty())
            std::cerr << "apsp-fw: warning: skipping checkpoint " << iteration_dir << ": " << problem << std::endl;
        if (all_ranks(problem.empty(), comm_)) resumed = *it;
    }

    // Anything newer than what we resume from is invalid; drop it so that it
    // can never be picked over the checkpoints this run will write.
    if (rank_ == 0) {
        for (std::int64_t it : iteration_dirs(dir_)) {
            if (it <= std::max<std::int64_t>(resumed, 0)) continue;
            std::error_code ec;
            fs::remove_all(checkpoint_iteration_dir(dir_, it), ec);
        }
    }
    MPI_Barrier(comm_);
    last_checkpoint_iteration_ = std::max<std::int64_t>(resumed, 0);
    return resumed;
}

}  // namespace litpath::apsp
