// Broadcasts along a process row or column (host only).
//
// Every variant is non-blocking: start() posts what it can, progress() relays
// whatever has arrived and returns true once this rank is done, wait() spins
// on progress(). The driver calls progress() between tiles of the outer
// product, which is how look-ahead overlaps a panel broadcast with compute.
//
//  bcast         MPI_Ibcast (the library's tree).
//  ring          0 -> 1 -> ... -> p-1, whole message (COAST's ring).
//  two-ring      "ring-2 modified" (COAST appendix B): the root first sends to
//                relative rank 1, then the other p-2 ranks form two rings
//                headed by 2 and h = 2 + ceil((p-2)/2), both fed by the root.
//  chunked-ring  the ring, pipelined in chunks of --chunk bytes (EuroMPI'23
//                Algorithm 3): a rank forwards chunk c while chunk c+1 is in
//                flight. Starting the row and the column broadcast together
//                and waiting on both is the paper's 2D chunked broadcast.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace litpath::apsp {

enum class BroadcastKind { bcast, ring, two_ring, chunked_ring };

BroadcastKind parse_broadcast(const std::string& name);  // throws on unknown names
std::string broadcast_name(BroadcastKind kind);

// Where a rank sits in a relay broadcast: ranks relative to the root
// (relative = (rank - root + p) mod p); parent -1 for the root.
struct RelayNode {
    int parent = -1;
    std::vector<int> children;
};
RelayNode relay_node(BroadcastKind kind, int relative_rank, int size);

struct BroadcastOptions {
    BroadcastKind kind = BroadcastKind::ring;
    std::size_t chunk_bytes = 2u << 20;  // chunked-ring only; 2 MiB was best on Frontier
};

class Broadcast {
public:
    Broadcast() = default;
    ~Broadcast();
    Broadcast(const Broadcast&) = delete;
    Broadcast& operator=(const Broadcast&) = delete;

    // Broadcast count floats of buf from `root` (rank in comm) to all of comm.
    // buf must stay alive and untouched until done. tag separates concurrent
    // broadcasts on the same communicator.
    void start(float* buf, std::int64_t count, int root, MPI_Comm comm, int tag,
               const BroadcastOptions& options);
    bool progress();  // true when this rank's part is complete
    void wait();
    bool active() const { return active_; }

private:
    bool active_ = false;
    float* buf_ = nullptr;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int tag_ = 0;
    std::int64_t chunk_elems_ = 0;
    std::int64_t count_ = 0;
    std::vector<int> children_;  // absolute ranks
    std::vector<MPI_Request> recv_requests_;
    std::vector<MPI_Request> send_requests_;
    std::vector<MPI_Request> collective_requests_;
    std::size_t next_to_forward_ = 0;

    std::int64_t chunk_begin(std::size_t c) const { return static_cast<std::int64_t>(c) * chunk_elems_; }
    int chunk_size(std::size_t c) const;
    void forward_chunk(std::size_t c);
};

}  // namespace litpath::apsp
