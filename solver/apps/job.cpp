#include "apps/job.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/collective.hpp"
#include "core/size_math.hpp"

namespace litpath::apsp {
namespace {

std::int64_t memory_available_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    std::int64_t value = 0;
    std::string unit;
    while (meminfo >> key >> value >> unit)
        if (key == "MemAvailable:") return value * 1024;
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return static_cast<std::int64_t>(pages) * page;
}

}  // namespace

MemoryBudget memory_budget(const Options& opt) {
    if (opt.memory_limit > 0) return {opt.memory_limit, " (--memory-limit)"};
    return {memory_available_bytes(), " (MemAvailable)"};
}

std::string format_seconds(double s) {
    char buf[32];
    if (s < 120) std::snprintf(buf, sizeof buf, "%.1f s", s);
    else if (s < 7200) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
    else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
    return buf;
}

std::string describe_bytes(std::int64_t bytes) {
    if (bytes == kSaturated) return "more than " + std::to_string(kSaturated) + " bytes (beyond int64)";
    const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
    double scaled = static_cast<double>(bytes);
    int unit = -1;
    while (scaled >= 1024 && unit < 3) scaled /= 1024, ++unit;
    char buf[64];
    if (unit < 0) std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
    else std::snprintf(buf, sizeof buf, "%lld bytes (%.1f %s)", static_cast<long long>(bytes), scaled, units[unit]);
    return buf;
}

MemoryNeed memory_need(std::int64_t mine, MPI_Comm node, MPI_Comm world) {
    MemoryNeed need;
    const double mine_double = static_cast<double>(mine);
    double on_node = 0;
    MPI_Allreduce(&mine_double, &on_node, 1, MPI_DOUBLE, MPI_SUM, node);
    need.on_node = on_node >= static_cast<double>(kSaturated) ? kSaturated : static_cast<std::int64_t>(on_node);
    MPI_Allreduce(&mine, &need.most, 1, MPI_INT64_T, MPI_MAX, world);
    return need;
}

bool write_complete_output(const std::string& output, MPI_Comm world,
                           const std::function<void(const std::string&)>& write) {
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    const std::string partial = output + ".partial";
    // Removing a stale .partial is its own collective step: when rank 0 cannot (a
    // read-only folder, a path through a file), every rank must learn it before
    // any of them starts the collective write, or the others wait in it forever.
    if (!collective_try(world, [&] {
            if (rank == 0) std::filesystem::remove_all(partial);
        }))
        return false;
    const bool written = collective_try(world, [&] { write(partial); });
    if (!written) return false;
    MPI_Barrier(world);
    return collective_try(world, [&] {
        if (rank != 0) return;
        try {
            std::filesystem::remove_all(output);
            std::filesystem::rename(partial, output);
        } catch (const std::exception& e) {
            throw std::runtime_error("moving " + partial + " to " + output + ": " + e.what());
        }
    });
}

}  // namespace litpath::apsp
