// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sha256: SHA-256 (FIPS 180-4), incremental, for shard and chunk hashes (no crypto library in gpu/).

#include "base/Result.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace tessera::gpu {

class Sha256 {
public:
    using Digest = std::array<std::uint8_t, 32>;

    Sha256();
    void update(std::span<const std::byte> data);
    void update(std::string_view data);
    // Finishes the hash; the object starts over afterwards, ready for a new message.
    Digest final();

    static std::string toHex(const Digest& digest); // 64 lowercase hex characters

private:
    void reset();
    void compress(const std::uint8_t* blocks, std::size_t count); // count whole 64-byte blocks

    std::array<std::uint32_t, 8> m_state{};
    std::array<std::uint8_t, 64> m_buffer{};
    std::size_t m_buffered = 0;
    std::uint64_t m_length = 0; // bytes hashed so far
};

std::string sha256Hex(std::string_view data);
// Streams the file through the hash (never holds it in memory).
Result<std::string> sha256FileHex(const std::filesystem::path& path);

namespace detail {
// Tests only: force the portable compression instead of the CPU's SHA extensions (process-wide).
void sha256ForcePortableForTesting(bool portable);
bool sha256FastPathActive(); // true when hashing now uses the SHA extensions
} // namespace detail

} // namespace tessera::gpu
