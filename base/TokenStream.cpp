// SPDX-License-Identifier: Apache-2.0
#include "base/TokenStream.h"

#include "base/Sha256.h"

#include <algorithm>

namespace tessera::gpu {

namespace {

constexpr std::size_t kCheckBytes = 1 << 20;

std::uint32_t idAt(const unsigned char* p, int width) {
    std::uint32_t v = 0;
    for (int b = 0; b < width; ++b) // little-endian
        v |= static_cast<std::uint32_t>(p[b]) << (8 * b);
    return v;
}

} // namespace

TokenStream::TokenStream() = default;
TokenStream::~TokenStream() = default;
TokenStream::TokenStream(TokenStream&&) noexcept = default;
TokenStream& TokenStream::operator=(TokenStream&&) noexcept = default;

TokenStream TokenStream::inMemory(std::vector<std::int32_t> tokens) {
    TokenStream s;
    s.m_size = static_cast<std::int64_t>(tokens.size());
    s.m_tokens = std::move(tokens);
    return s;
}

TokenStream TokenStream::files(std::vector<Part> parts, int width, std::int64_t vocab) {
    TokenStream s;
    s.m_width = width;
    s.m_vocab = vocab;
    for (const Part& p : parts) {
        s.m_starts.push_back(s.m_size);
        s.m_size += p.tokens;
    }
    s.m_parts = std::move(parts);
    s.m_open.resize(s.m_parts.size());
    return s;
}

std::int64_t TokenStream::size() const {
    return m_size;
}

Status TokenStream::read(std::int64_t offset, std::int64_t count, std::int32_t* out) const {
    if (offset < 0 || count < 0 || offset + count > m_size)
        return makeError("tokens " + std::to_string(offset) + ".." + std::to_string(offset + count) +
                         " are outside the stream of " + std::to_string(m_size));
    if (m_parts.empty()) {
        std::copy_n(m_tokens.begin() + offset, count, out);
        return {};
    }
    // The part holding `offset`, then on through the next ones.
    std::size_t i =
        std::size_t(std::upper_bound(m_starts.begin(), m_starts.end(), offset) - m_starts.begin() - 1);
    std::vector<unsigned char> bytes;
    while (count > 0) {
        const Part& part = m_parts[i];
        const std::int64_t at = offset - m_starts[i];
        const std::int64_t n = std::min(count, part.tokens - at);
        std::unique_ptr<std::ifstream>& in = m_open[i];
        if (!in || !*in)
            in = std::make_unique<std::ifstream>(part.path, std::ios::binary);
        bytes.resize(std::size_t(n * m_width));
        in->seekg(std::streamoff(at * m_width));
        in->read(reinterpret_cast<char*>(bytes.data()), std::streamsize(bytes.size()));
        if (!*in || in->gcount() != std::streamsize(bytes.size()))
            return makeError("cannot read tokens " + std::to_string(at) + ".." + std::to_string(at + n) +
                             " of " + part.path.string() + " (shorter than when it was checked?)");
        for (std::int64_t k = 0; k < n; ++k) {
            const std::uint32_t v = idAt(bytes.data() + k * m_width, m_width);
            if (v >= static_cast<std::uint64_t>(m_vocab))
                return makeError(part.path.string() + ": token " + std::to_string(v) + " at position " +
                                 std::to_string(at + k) + " is outside the vocabulary of " +
                                 std::to_string(m_vocab) + " (the file changed since it was checked)");
            out[k] = static_cast<std::int32_t>(v);
        }
        out += n;
        offset += n;
        count -= n;
        ++i;
    }
    return {};
}

Result<std::vector<std::int32_t>> TokenStream::readAll() const {
    std::vector<std::int32_t> all(static_cast<std::size_t>(m_size));
    if (Status s = read(0, m_size, all.data()); !s)
        return s.error();
    return all;
}

Result<std::int64_t> checkTokenFile(const std::filesystem::path& path, int width, std::int64_t vocab,
                                    std::string* sha256, const CheckHook& afterChunk) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError("cannot open " + path.string());
    Sha256 hash;
    std::vector<unsigned char> buffer(kCheckBytes); // a multiple of every width
    std::int64_t tokens = 0;
    for (;;) {
        in.read(reinterpret_cast<char*>(buffer.data()), std::streamsize(buffer.size()));
        const auto got = static_cast<std::size_t>(in.gcount());
        if (got == 0)
            break;
        if (sha256)
            hash.update(std::string_view(reinterpret_cast<const char*>(buffer.data()), got));
        if (got % std::size_t(width) != 0)
            return makeError(path.string() + ": its size is not a multiple of " + std::to_string(width) +
                             " bytes (a truncated token file?)");
        for (std::size_t k = 0; k < got; k += std::size_t(width)) {
            const std::uint32_t v = idAt(buffer.data() + k, width);
            if (v >= static_cast<std::uint64_t>(vocab))
                return makeError(path.string() + ": token " + std::to_string(v) + " at position " +
                                 std::to_string(tokens + std::int64_t(k) / width) +
                                 " is outside the vocabulary of " + std::to_string(vocab));
        }
        tokens += std::int64_t(got) / width;
        if (afterChunk)
            if (Status s = afterChunk(std::int64_t(got)); !s)
                return s.error();
        if (got < buffer.size())
            break;
    }
    if (in.bad())
        return makeError("cannot read " + path.string());
    if (sha256)
        *sha256 = Sha256::toHex(hash.final());
    return tokens;
}

} // namespace tessera::gpu
