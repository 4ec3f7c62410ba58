// Size arithmetic that cannot overflow (host only, no MPI).
//
// The byte counts of an n x n matrix and of its tiles leave int64 long before
// they leave any memory, and a wrapped product sizes a buffer too small for
// the writes that follow. Estimates therefore saturate at kSaturated (they are
// only compared with the memory available: "more than int64 bytes" never fits),
// and sizes that allocate are checked (std::overflow_error).
#pragma once

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace litpath::apsp {

// The most vertices apsp-fw takes, from any input: MPI counts and the
// validation sample are int-sized, and n x n then stays far from int64's limit.
constexpr std::int64_t kMaxVertices = std::numeric_limits<std::int32_t>::max();

// "More bytes than int64 counts", the value saturating arithmetic stops at.
constexpr std::int64_t kSaturated = std::numeric_limits<std::int64_t>::max();

// a * b for a, b >= 0; kSaturated when the product does not fit.
inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
    std::int64_t product = 0;
    return __builtin_mul_overflow(a, b, &product) ? kSaturated : product;
}

// a + b for a, b >= 0; kSaturated when the sum does not fit.
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
    std::int64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? kSaturated : sum;
}

// a * b for a, b >= 0, or std::overflow_error naming `what`.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const std::string& what) {
    std::int64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product))
        throw std::overflow_error(what + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows int64");
    return product;
}

}  // namespace litpath::apsp
