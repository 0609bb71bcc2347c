// SPDX-License-Identifier: Apache-2.0
#pragma once
// TokenStream: a long stream of token ids read a window at a time — held in memory (a synthetic
// corpus) or read from files of little-endian ids (a text's bytes, a token file, a token dataset's
// shards), which are never loaded whole: the coordinator of a run on billions of tokens holds a
// window of them, not 4 bytes a token. Files are checked once, streamed (every id below the
// vocabulary; checkTokenFile); a read checks its ids again, so a file changed since is an error in
// words, not a wrong token. Not for concurrent use. Torch-free.

#include "base/Result.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessera::gpu {

class TokenStream {
public:
    struct Part {
        std::filesystem::path path;
        std::int64_t tokens = 0;
    };

    TokenStream();
    ~TokenStream();
    TokenStream(TokenStream&&) noexcept;
    TokenStream& operator=(TokenStream&&) noexcept;

    static TokenStream inMemory(std::vector<std::int32_t> tokens);
    // Files of `width` bytes a token (1, 2 or 4), in stream order, already checked; ids < vocab.
    static TokenStream files(std::vector<Part> parts, int width, std::int64_t vocab);

    std::int64_t size() const;
    bool empty() const { return size() == 0; }
    // `count` ids from `offset` (both within the stream) into out.
    Status read(std::int64_t offset, std::int64_t count, std::int32_t* out) const;
    // The whole stream (tools and tests on small ones).
    Result<std::vector<std::int32_t>> readAll() const;

private:
    struct FileState;
    std::vector<std::int32_t> m_tokens; // in memory
    std::vector<Part> m_parts;          // or these files
    std::vector<std::int64_t> m_starts; // each part's first token in the stream
    int m_width = 0;
    std::int64_t m_vocab = 0;
    std::int64_t m_size = 0;
    mutable std::vector<std::unique_ptr<std::ifstream>> m_open; // per part, opened on first read
};

// Streams through a file of `width`-byte little-endian ids 1 MiB at a time: its size a multiple of
// the width, every id below `vocab` (the error names the file and the position); `sha256` (when not
// null) gets the file's SHA-256 in hex from the same pass. Returns the number of tokens.
// afterChunk (when set) is told each chunk's bytes once checked; an error from it stops the check
// with its words (how a coordinator that is stopping ends a check of many GB at once).
using CheckHook = std::function<Status(std::int64_t bytes)>;
Result<std::int64_t> checkTokenFile(const std::filesystem::path& path, int width, std::int64_t vocab,
                                    std::string* sha256 = nullptr, const CheckHook& afterChunk = {});

} // namespace tessera::gpu
