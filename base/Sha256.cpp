// SPDX-License-Identifier: Apache-2.0
#include "base/Sha256.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace tessera::gpu {

namespace {

constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int n) {
    return (x >> n) | (x << (32 - n));
}

void compressOne(std::uint32_t* state, const std::uint8_t* block) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
        w[i] = std::uint32_t(block[4 * i]) << 24 | std::uint32_t(block[4 * i + 1]) << 16 |
               std::uint32_t(block[4 * i + 2]) << 8 | std::uint32_t(block[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
        const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], f = state[5],
                  g = state[6], h = state[7];
    for (int i = 0; i < 64; ++i) {
        const std::uint32_t t1 =
            h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[i] + w[i];
        const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    const std::uint32_t add[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i)
        state[i] += add[i];
}

void compressPortable(std::uint32_t* state, const std::uint8_t* blocks, std::size_t count) {
    for (; count > 0; --count, blocks += 64)
        compressOne(state, blocks);
}

#if defined(__x86_64__)
// Shard hashing (4.6 GB a stage at 8b, hashed when written and again when verified) is bound by this
// function; the SHA extensions run it several times faster than the portable code. Compiled for those
// instructions only here, and used only where CPUID reports them, so the binaries still run anywhere.
__attribute__((target("sha,sse4.1"))) void compressShaNi(std::uint32_t* state, const std::uint8_t* blocks,
                                                         std::size_t count) {
    // The round instructions keep the state as two vectors, ABEF and CDGH (A in the highest lane).
    const __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state));
    const __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(state + 4));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    // Big-endian words to little-endian lanes.
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);

    for (; count > 0; --count, blocks += 64) {
        const __m128i abefSaved = abef;
        const __m128i cdghSaved = cdgh;
        __m128i w[4]; // the message schedule, four words a vector, reused every 16 rounds
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) { // four rounds each
            if (i < 4)
                w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * i)),
                                        byteSwap);
            __m128i wk = _mm_add_epi32(
                w[i % 4], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kRound.data() + 4 * i)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            if (i >= 3 && i < 15) { // finish the words of group i + 1: W[t-7] and sigma1 terms
                const __m128i w7 = _mm_alignr_epi8(w[i % 4], w[(i + 3) % 4], 4);
                w[(i + 1) % 4] = _mm_sha256msg2_epu32(_mm_add_epi32(w[(i + 1) % 4], w7), w[i % 4]);
            }
            wk = _mm_shuffle_epi32(wk, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);
            if (i >= 1 && i < 13) // start the words of group i + 3: W[t-16] and sigma0 terms
                w[(i + 3) % 4] = _mm_sha256msg1_epu32(w[(i + 3) % 4], w[i % 4]);
        }
        abef = _mm_add_epi32(abef, abefSaved);
        cdgh = _mm_add_epi32(cdgh, cdghSaved);
    }

    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state), _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(state + 4), _mm_alignr_epi8(dchg, feba, 8));
}

bool cpuHasShaNi() {
    // CPUID rather than __builtin_cpu_supports("sha"), which clang 14 does not know.
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return false;
    const bool sse41 = (ecx & bit_SSE4_1) != 0 && (ecx & bit_SSSE3) != 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
        return false;
    return sse41 && (ebx & (1u << 29)) != 0; // leaf 7 EBX bit 29: SHA extensions
}
#endif

using CompressFn = void (*)(std::uint32_t*, const std::uint8_t*, std::size_t);

CompressFn fastestCompress() {
    // Decided once, on first use (safe from other translation units' static initialisers).
    static const CompressFn best = [] {
#if defined(__x86_64__)
        if (cpuHasShaNi())
            return &compressShaNi;
#endif
        return &compressPortable;
    }();
    return best;
}

std::atomic<bool> g_forcePortable{false};

} // namespace

namespace detail {
void sha256ForcePortableForTesting(bool portable) {
    g_forcePortable.store(portable, std::memory_order_relaxed);
}
bool sha256FastPathActive() {
    return !g_forcePortable.load(std::memory_order_relaxed) && fastestCompress() != &compressPortable;
}
} // namespace detail

Sha256::Sha256() {
    reset();
}

void Sha256::reset() {
    m_state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    m_buffered = 0;
    m_length = 0;
}

void Sha256::compress(const std::uint8_t* blocks, std::size_t count) {
    const CompressFn fn =
        g_forcePortable.load(std::memory_order_relaxed) ? &compressPortable : fastestCompress();
    fn(m_state.data(), blocks, count);
}

void Sha256::update(std::span<const std::byte> data) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(data.data());
    std::size_t n = data.size();
    m_length += n;
    if (m_buffered > 0) {
        const std::size_t take = std::min(n, m_buffer.size() - m_buffered);
        std::memcpy(m_buffer.data() + m_buffered, p, take);
        m_buffered += take;
        p += take;
        n -= take;
        if (m_buffered < m_buffer.size())
            return;
        compress(m_buffer.data(), 1);
        m_buffered = 0;
    }
    if (n >= 64) {
        const std::size_t blocks = n / 64;
        compress(p, blocks);
        p += 64 * blocks;
        n -= 64 * blocks;
    }
    std::memcpy(m_buffer.data(), p, n);
    m_buffered = n;
}

void Sha256::update(std::string_view data) {
    update(std::as_bytes(std::span(data.data(), data.size())));
}

Sha256::Digest Sha256::final() {
    const std::uint64_t bits = m_length * 8;
    // Padding: 0x80, zeros up to 56 mod 64, then the message length in bits, big-endian.
    std::uint8_t pad[72] = {0x80};
    const std::size_t padLength = (m_buffered < 56 ? 56 : 120) - m_buffered;
    for (int i = 0; i < 8; ++i)
        pad[padLength + i] = static_cast<std::uint8_t>(bits >> (56 - 8 * i));
    update(std::as_bytes(std::span(pad, padLength + 8)));
    Digest digest;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j)
            digest[4 * i + j] = static_cast<std::uint8_t>(m_state[i] >> (24 - 8 * j));
    reset();
    return digest;
}

std::string Sha256::toHex(const Digest& digest) {
    static const char* const hex = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (std::uint8_t b : digest) {
        out += hex[b >> 4];
        out += hex[b & 0xF];
    }
    return out;
}

std::string sha256Hex(std::string_view data) {
    Sha256 hash;
    hash.update(data);
    return Sha256::toHex(hash.final());
}

Result<std::string> sha256FileHex(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError("cannot open " + path.string());
    Sha256 hash;
    std::vector<char> buffer(1 << 20);
    while (in) {
        in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        hash.update(std::string_view(buffer.data(), static_cast<std::size_t>(in.gcount())));
    }
    if (in.bad())
        return makeError("cannot read " + path.string());
    return Sha256::toHex(hash.final());
}

} // namespace tessera::gpu
