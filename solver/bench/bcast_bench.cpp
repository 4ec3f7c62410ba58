// bcast-bench: time of apsp-fw's own broadcasts (core/broadcast.*) vs message
// size, for the performance model (pipeline/plan, HyPerMod). MPI program; rank 0
// prints one JSON object per line.
//
//   mpirun -n P bcast-bench [--variants bcast,ring,two-ring,chunked-ring]
//          [--bytes 4K,64K,1M,16M] [--groups G] [--chunk 2M] [--seconds S]
//
// The P ranks are split into G groups of P/G consecutive ranks (G = 1: one
// broadcast over all ranks; G = 2 with P = 4: two concurrent broadcasts of size
// 2, like the rows of a 2x2 grid). Each group broadcasts from its rank 0 with the
// solver's Broadcast class (start + progress until done). A timed repetition is
// barrier, broadcast, and the slowest rank's time (MPI_MAX); the median and the
// minimum of the repetitions are printed.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/broadcast.hpp"

namespace {

using litpath::apsp::Broadcast;
using litpath::apsp::BroadcastOptions;

std::int64_t parse_bytes(std::string s) {
    double scale = 1;
    if (!s.empty()) {
        const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
        if (suffix == 'K') scale = 1024.0;
        else if (suffix == 'M') scale = 1024.0 * 1024;
        else if (suffix == 'G') scale = 1024.0 * 1024 * 1024;
        if (scale != 1) s.pop_back();
    }
    return static_cast<std::int64_t>(std::atof(s.c_str()) * scale);
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ','))
        if (!item.empty()) out.push_back(item);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<std::string> variants = {"bcast", "ring", "two-ring", "chunked-ring"};
    std::vector<std::int64_t> sizes = {4096, 65536, 1 << 20, 16 << 20};
    int groups = 1;
    std::int64_t chunk = 2 << 20;
    double seconds = 2.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--variants") variants = split(value);
        else if (flag == "--bytes") {
            sizes.clear();
            for (const auto& s : split(value)) sizes.push_back(parse_bytes(s));
        } else if (flag == "--groups") groups = std::max(1, std::atoi(value.c_str()));
        else if (flag == "--chunk") chunk = parse_bytes(value);
        else if (flag == "--seconds") seconds = std::atof(value.c_str());
        else {
            if (rank == 0)
                std::fprintf(stderr, "usage: bcast-bench [--variants ...] [--bytes 4K,1M,...] [--groups G] "
                                     "[--chunk 2M] [--seconds S]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (size % groups != 0) {
        if (rank == 0) std::fprintf(stderr, "bcast-bench: --groups %d does not divide %d ranks\n", groups, size);
        MPI_Finalize();
        return 2;
    }
    const int group_size = size / groups;
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, rank / group_size, rank, &comm);
    const double per_cell = seconds / std::max<std::size_t>(1, variants.size() * sizes.size());

    for (const auto& variant : variants) {
        BroadcastOptions options;
        try {
            options.kind = litpath::apsp::parse_broadcast(variant);
        } catch (const std::exception& e) {
            if (rank == 0) std::fprintf(stderr, "bcast-bench: %s\n", e.what());
            MPI_Finalize();
            return 2;
        }
        options.chunk_bytes = static_cast<std::size_t>(chunk);
        for (std::int64_t bytes : sizes) {
            const std::int64_t count = std::max<std::int64_t>(1, bytes / static_cast<std::int64_t>(sizeof(float)));
            std::vector<float> buf(static_cast<std::size_t>(count), static_cast<float>(rank));
            std::vector<double> times;
            double spent = 0;
            int tag = 100;
            // Warm-up, then repetitions until the cell's time share is spent (rank 0 decides).
            for (int rep = 0;; ++rep) {
                MPI_Barrier(MPI_COMM_WORLD);
                const double t0 = MPI_Wtime();
                Broadcast bc;
                bc.start(buf.data(), count, 0, comm, tag, options);
                while (!bc.progress()) std::this_thread::yield();
                double dt = MPI_Wtime() - t0, slowest = 0;
                MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                tag = 100 + (rep & 1);
                if (rep == 0) continue;
                times.push_back(slowest);
                spent += slowest;
                int more = (times.size() < 5 || (spent < per_cell && times.size() < 2000)) ? 1 : 0;
                MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
                if (!more) break;
            }
            std::sort(times.begin(), times.end());
            if (rank == 0) {
                std::printf("{\"variant\": \"%s\", \"ranks\": %d, \"groups\": %d, \"comm_size\": %d, "
                            "\"bytes\": %lld, \"chunk_bytes\": %lld, \"median_seconds\": %.9g, "
                            "\"min_seconds\": %.9g, \"reps\": %zu}\n",
                            variant.c_str(), size, groups, group_size, static_cast<long long>(count * 4),
                            static_cast<long long>(chunk), times[times.size() / 2], times.front(), times.size());
                std::fflush(stdout);
            }
        }
    }
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
