// SPDX-License-Identifier: Apache-2.0
#pragma once
// Tokenizer: a byte-pair-encoding tokenizer trained and run by SentencePiece (Debian's
// libsentencepiece). Set up to give text back exactly: no normalisation, no dummy prefix, spaces
// and line breaks kept as pieces, bytes SentencePiece has no piece for spelled as byte tokens. Only
// the data tool (tessera-data) and its tests link it: training reads token shards, not text.

#include "base/Result.h"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace tessera::gpu {

class Tokenizer {
public:
    struct TrainOptions {
        int vocabSize = 32000; // the small preset's vocabulary
        std::uint64_t seed = 1;
        int threads = 2;
        std::int64_t maxSentences = 2'000'000; // lines sampled for training (the rest are not read)
    };
    // Trains on the lines of `inputs` and writes the model to `model` (a .model file).
    static Status train(const std::vector<std::filesystem::path>& inputs, const std::filesystem::path& model,
                        const TrainOptions& options);
    static Result<std::unique_ptr<Tokenizer>> load(const std::filesystem::path& model);
    ~Tokenizer();

    Result<std::vector<std::int32_t>> encode(std::string_view text) const;
    Result<std::string> decode(const std::vector<std::int32_t>& ids) const;
    int vocabSize() const;
    int endOfText() const; // the id that ends a document

private:
    explicit Tokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor);
    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_processor;
};

} // namespace tessera::gpu
