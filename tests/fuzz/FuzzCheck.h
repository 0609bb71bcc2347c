// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the fuzz targets share: FUZZ_CHECK (an invariant of a parser's result; a failure aborts,
// which libFuzzer reports as a crash and the replay test as a failure, release builds included),
// verdict (with FUZZ_VERBOSE=1 in the environment, what the parser said of each input: how a seed is
// checked to reach as deep as meant) and a reader that splits one input into the parts a target needs.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(condition)                                                                                \
    do {                                                                                                     \
        if (!(condition)) {                                                                                  \
            std::fprintf(stderr, "%s:%d: FUZZ_CHECK failed: %s\n", __FILE__, __LINE__, #condition);          \
            std::abort();                                                                                    \
        }                                                                                                    \
    } while (0)

namespace tessera::fuzz {

// FUZZ_VERBOSE=1: "<what>: ok" or "<what>: <error>" on stderr.
template <class R>
void verdict(const char* what, const R& result) {
    static const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;
    if (verbose)
        std::fprintf(stderr, "  %s: %s\n", what, result ? "ok" : result.message().c_str());
}

// Reads an input front to back: single bytes and little-endian integers for a target's choices (0
// once the input is used up), then the rest as the bytes under test.
class Input {
public:
    Input(const std::uint8_t* data, std::size_t size)
        : m_data(data)
        , m_size(size) {}

    std::uint8_t byte() { return m_pos < m_size ? m_data[m_pos++] : 0; }
    std::uint32_t u32() {
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i)
            v |= std::uint32_t(byte()) << (8 * i);
        return v;
    }
    // The next part: up to the separator "\n--\n" (consumed), or the rest.
    std::string_view part() {
        const std::string_view rest = this->rest();
        const std::size_t at = rest.find("\n--\n");
        if (at == std::string_view::npos) {
            m_pos = m_size;
            return rest;
        }
        m_pos += at + 4;
        return rest.substr(0, at);
    }
    std::string_view rest() const { return {reinterpret_cast<const char*>(m_data) + m_pos, m_size - m_pos}; }

private:
    const std::uint8_t* m_data;
    std::size_t m_size;
    std::size_t m_pos = 0;
};

} // namespace tessera::fuzz
