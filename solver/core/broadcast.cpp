#include "core/broadcast.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace litpath::apsp {
namespace {
// MPI counts are int; messages larger than this go as several chunks.
constexpr std::int64_t kMaxMessageElems = std::int64_t{1} << 28;
}  // namespace

BroadcastKind parse_broadcast(const std::string& name) {
    if (name == "bcast") return BroadcastKind::bcast;
    if (name == "ring") return BroadcastKind::ring;
    if (name == "two-ring") return BroadcastKind::two_ring;
    if (name == "chunked-ring") return BroadcastKind::chunked_ring;
    throw std::runtime_error("--broadcast '" + name + "' is not one of bcast, ring, two-ring, chunked-ring");
}

std::string broadcast_name(BroadcastKind kind) {
    switch (kind) {
        case BroadcastKind::bcast: return "bcast";
        case BroadcastKind::ring: return "ring";
        case BroadcastKind::two_ring: return "two-ring";
        case BroadcastKind::chunked_ring: return "chunked-ring";
    }
    return "?";
}

RelayNode relay_node(BroadcastKind kind, int r, int p) {
    RelayNode node;
    if (p <= 1) return node;
    if (kind != BroadcastKind::two_ring || p <= 3) {
        node.parent = r == 0 ? -1 : r - 1;
        if (r + 1 < p) node.children.push_back(r + 1);
        return node;
    }
    // Ring-2 modified: 0 -> 1; rings 2..h-1 and h..p-1, both heads fed by 0.
    const int h = 2 + (p - 2 + 1) / 2;
    if (r == 0) {
        node.children = {1, 2};
        if (h < p) node.children.push_back(h);
        return node;
    }
    if (r == 1) {
        node.parent = 0;
        return node;
    }
    const bool first_ring = r < h;
    const int head = first_ring ? 2 : h;
    const int end = first_ring ? h : p;  // one past the ring's last rank
    node.parent = r == head ? 0 : r - 1;
    if (r + 1 < end) node.children.push_back(r + 1);
    return node;
}

Broadcast::~Broadcast() {
    // A broadcast abandoned mid-flight would leave MPI writing into freed
    // memory; the driver always waits, so this only guards misuse.
    if (active_) wait();
}

int Broadcast::chunk_size(std::size_t c) const {
    return static_cast<int>(std::min<std::int64_t>(chunk_elems_, count_ - chunk_begin(c)));
}

void Broadcast::forward_chunk(std::size_t c) {
    for (int child : children_) {
        MPI_Request req;
        MPI_Isend(buf_ + chunk_begin(c), chunk_size(c), MPI_FLOAT, child, tag_, comm_, &req);
        send_requests_.push_back(req);
    }
}

void Broadcast::start(float* buf, std::int64_t count, int root, MPI_Comm comm, int tag,
                      const BroadcastOptions& options) {
    if (active_) throw std::logic_error("Broadcast::start while a broadcast is in flight");
    buf_ = buf;
    count_ = count;
    comm_ = comm;
    tag_ = tag;
    recv_requests_.clear();
    send_requests_.clear();
    collective_requests_.clear();
    children_.clear();
    next_to_forward_ = 0;
    int size = 1, rank = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    active_ = true;
    if (size <= 1 || count <= 0) {
        active_ = false;
        return;
    }
    if (options.kind == BroadcastKind::chunked_ring) {
        const auto elems = static_cast<std::int64_t>(options.chunk_bytes / sizeof(float));
        chunk_elems_ = std::clamp<std::int64_t>(elems, 1, kMaxMessageElems);
    } else {
        chunk_elems_ = kMaxMessageElems;
    }
    const auto chunks = static_cast<std::size_t>((count + chunk_elems_ - 1) / chunk_elems_);

    if (options.kind == BroadcastKind::bcast) {
        collective_requests_.resize(chunks);
        for (std::size_t c = 0; c < chunks; ++c)
            MPI_Ibcast(buf_ + chunk_begin(c), chunk_size(c), MPI_FLOAT, root, comm, &collective_requests_[c]);
        return;
    }

    const int relative = (rank - root + size) % size;
    const RelayNode node = relay_node(options.kind, relative, size);
    for (int child : node.children) children_.push_back((child + root) % size);
    if (node.parent < 0) {
        for (std::size_t c = 0; c < chunks; ++c) forward_chunk(c);
        next_to_forward_ = chunks;
        return;
    }
    const int parent = (node.parent + root) % size;
    recv_requests_.resize(chunks);
    // Receives from one source with one tag match in posting order, so chunk
    // c lands in slot c.
    for (std::size_t c = 0; c < chunks; ++c)
        MPI_Irecv(buf_ + chunk_begin(c), chunk_size(c), MPI_FLOAT, parent, tag_, comm, &recv_requests_[c]);
}

bool Broadcast::progress() {
    if (!active_) return true;
    if (!collective_requests_.empty()) {
        int done = 0;
        MPI_Testall(static_cast<int>(collective_requests_.size()), collective_requests_.data(), &done,
                    MPI_STATUSES_IGNORE);
        if (done) active_ = false;
        return !active_;
    }
    while (next_to_forward_ < recv_requests_.size()) {
        int arrived = 0;
        MPI_Test(&recv_requests_[next_to_forward_], &arrived, MPI_STATUS_IGNORE);
        if (!arrived) break;
        forward_chunk(next_to_forward_);
        ++next_to_forward_;
    }
    if (next_to_forward_ < recv_requests_.size()) return false;
    int sent = 1;
    if (!send_requests_.empty())
        MPI_Testall(static_cast<int>(send_requests_.size()), send_requests_.data(), &sent, MPI_STATUSES_IGNORE);
    if (sent) active_ = false;
    return !active_;
}

void Broadcast::wait() {
    // Yield while polling: with oversubscribed ranks a spinning waiter would
    // steal the core from the rank it is waiting for.
    while (!progress()) std::this_thread::yield();
}

}  // namespace litpath::apsp
