// Checkpoint and restart of the distributed Floyd-Warshall (docs/design.md §7).
//
// Layout under the checkpoint directory:
//   iter-000012/rank-00003.ckpt   one piece per rank: header + the rank's tile store
//   iter-000012/MANIFEST          written by rank 0 after every piece is in place
// A piece is written to "<name>.tmp", fsynced, then renamed, so a killed rank
// never leaves a piece that looks whole. The manifest (also tmp + rename) lists
// each piece's size and checksum; it is written only after a gather from all
// ranks, so a checkpoint counts as valid only when its MANIFEST exists and every
// piece matches it. Iteration K means "K outer iterations are complete": the
// matrix is exactly the state an uninterrupted run has after iteration K-1,
// before any work of iteration K (the driver checkpoints only there).
//
// Resume picks the newest valid checkpoint. Whichever checkpoint it looks at is
// checked against this run's inputs (graph digest, n, tile, grid: in its
// MANIFEST and in every piece's header); one written for other inputs is
// refused with a clear error. A checkpoint is deleted only when its content
// failed a check (size, header, checksum); one that could not be read (open or
// read errors: EACCES, EMFILE, ESTALE, a piece missing on some rank) stops the
// run with nothing deleted. Every outcome is decided collectively, so all ranks
// leave resume() together, never one rank alone with an exception.
//
// One run at a time per directory: rank 0 holds an flock on <dir>/LOCK for the
// whole run (the file names its pid and host). A second run on the same
// directory (say a rerun while the ranks of a job whose mpirun was killed are
// still computing) is refused instead of interleaving its pieces and pruning
// with theirs. The lock goes with the process, so a crash never leaves it stale.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "core/driver.hpp"

namespace litpath::apsp {

// What a checkpoint must match to be resumed.
struct CheckpointIdentity {
    std::string graph_digest;
    std::int64_t n = 0;
    int tile = 0;
    GridShape grid;
};

// --checkpoint-every: every `iterations` outer iterations, or every `seconds`
// of solve time (text "N" or "Ns").
struct CheckpointInterval {
    std::int64_t iterations = 0;
    double seconds = 0;
    bool enabled() const { return iterations > 0 || seconds > 0; }
    std::string to_string() const;
};
CheckpointInterval parse_checkpoint_interval(const std::string& text);  // throws std::invalid_argument

// 64-bit checksum of a byte range (four-lane multiply-rotate; ~GB/s, not cryptographic).
std::uint64_t checksum64(const void* data, std::size_t bytes);

// The name of the checkpoint directory of iteration k under dir.
std::string checkpoint_iteration_dir(const std::string& dir, std::int64_t iteration);

class Checkpointer {
public:
    Checkpointer(std::string dir, CheckpointIdentity identity, CheckpointInterval interval, MPI_Comm comm,
                 int keep = 2);
    ~Checkpointer();
    Checkpointer(const Checkpointer&) = delete;
    Checkpointer& operator=(const Checkpointer&) = delete;

    // Collective; call before resume() or write(). Creates the directory and
    // takes its lock on rank 0. Throws std::runtime_error (same text on every
    // rank) when another live run holds it. Where the file system has no flock
    // (some parallel file systems without the flock mount option) it warns and
    // goes on unlocked.
    void claim();

    // Collective. True when a checkpoint should be taken once `iterations_done`
    // iterations are complete (never after the last one). Every rank gets the
    // same answer (seconds mode decides on rank 0 and broadcasts).
    bool due(std::int64_t iterations_done, std::int64_t total);

    // Collective. Writes every rank's piece, then rank 0 the manifest, then
    // prunes all but the newest `keep` checkpoints. Throws on I/O errors
    // (the same exception text on every rank is not guaranteed).
    void write(std::int64_t iterations_done, const DistributedMatrix& matrix);

    // Collective. Loads the newest valid checkpoint into matrix and returns its
    // iteration, or -1 when there is none. Newest first, each checkpoint is
    //  - resumed when its manifest and every piece verify;
    //  - skipped and deleted (warning on rank 0) when a piece fails its size,
    //    header or checksum check;
    //  - skipped and kept (warning) when its MANIFEST does not parse;
    //  - refused: throws std::runtime_error (same text on every rank, nothing
    //    deleted) when it was written for other inputs (graph digest, n, tile,
    //    grid, in the manifest or a piece header), or when the directory, a
    //    manifest or a piece could not be read (I/O error on any rank).
    // Incomplete iteration directories (no MANIFEST) newer than the one resumed
    // are removed: they are leftovers of a checkpoint write that was killed.
    std::int64_t resume(DistributedMatrix& matrix);

    int written() const { return written_; }
    double seconds() const { return seconds_; }
    const std::string& dir() const { return dir_; }
    const CheckpointInterval& interval() const { return interval_; }

private:
    std::string piece_path(const std::string& iteration_dir, int rank) const;
    void prune(std::int64_t newest);

    std::string dir_;
    CheckpointIdentity identity_;
    CheckpointInterval interval_;
    MPI_Comm comm_;
    int rank_ = 0, ranks_ = 1;
    int keep_ = 2;
    int lock_fd_ = -1;  // rank 0: the open, flocked <dir>/LOCK
    int written_ = 0;
    double seconds_ = 0;
    double last_checkpoint_time_ = -1;
    std::int64_t last_checkpoint_iteration_ = -1;
};

// Iterations (ascending) of the checkpoint directories under dir that hold a
// MANIFEST. Throws std::runtime_error when dir or one of its iteration
// directories cannot be listed or checked (an I/O error is not "no checkpoint").
std::vector<std::int64_t> list_checkpoints(const std::string& dir);

// The iteration of a checkpoint directory name ("iter-000012" -> 12): exactly
// the names checkpoint_iteration_dir() makes; false for anything else (other
// spellings, or digits beyond int64) so that such a directory is never used
// or deleted.
bool parse_iteration_dir_name(const std::string& name, std::int64_t& iteration);

// A parsed MANIFEST.
struct CheckpointManifest {
    std::int64_t iteration = -1, n = -1;
    int tile = 0, ranks = 0;
    GridShape grid{0, 0};
    std::string graph_digest;
    std::vector<std::uint64_t> piece_bytes, piece_checksum;
};

enum class ManifestRead { ok, unreadable, malformed };

// Parses a MANIFEST from `in` (named `path` in messages) without throwing:
// unreadable when the stream reports an I/O error, malformed (with why) when
// a line does not parse, a field is missing or out of range, or the pieces do
// not match the ranks and grid.
ManifestRead parse_checkpoint_manifest(std::istream& in, const std::string& path, CheckpointManifest& m,
                                       std::string& why);

}  // namespace litpath::apsp
