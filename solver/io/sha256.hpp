// SHA-256 (FIPS 180-4), for the graph digest of Matrix Market inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace litpath::apsp {

class Sha256 {
public:
    Sha256();
    void update(const void* data, std::size_t size);
    std::string hex_digest();  // finalises; call once

private:
    void compress(const std::uint8_t* block);
    std::uint32_t state_[8];
    std::uint8_t buffer_[64];
    std::size_t buffered_ = 0;
    std::uint64_t total_bytes_ = 0;
};

// Hex SHA-256 of a whole file; throws std::runtime_error when unreadable.
std::string sha256_of_file(const std::string& path);

}  // namespace litpath::apsp
