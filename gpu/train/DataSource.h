// SPDX-License-Identifier: Apache-2.0
#pragma once
// DataSource: the training tokens, as seeded random windows of one long token stream — a
// synthetic corpus with a known entropy floor (the default, in memory), a UTF-8 text file read as
// bytes, a binary file of uint16/uint32 token ids, or a token dataset (the files checked once and
// then read a window at a time: the stream is never held whole) (base/TokenDataset: real text through
// a trained tokenizer, with its own held-out split, checked file by file against its manifest).
// Internal to gpu/ (returns torch tensors).

#include "base/Result.h"
#include "base/TokenStream.h"

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tessera::gpu {

class DataSource {
public:
    // SPEC: "synthetic[:order=N,branch=M,symbols=V,tokens=K]", "text:PATH", "tokens16:PATH",
    // "tokens32:PATH", "dataset:PATH[#sha256=HEX]" (PATH: the dataset's directory or manifest; HEX:
    // the manifest's SHA-256 the run pinned, refused when it differs). Token ids must be < vocabSize. `seed`
    // makes the synthetic corpus (and, unless `orderSeed` is given, the order windows are drawn in): a run's
    // corpus must not change when its order is reseeded (a restarted coordinator once trained on another
    // Markov chain). afterChunk: told each MiB of a file or dataset checked (checkTokenFile's hook).
    static Result<std::unique_ptr<DataSource>> open(const std::string& spec, int vocabSize,
                                                    std::uint64_t seed,
                                                    std::optional<std::uint64_t> orderSeed = std::nullopt,
                                                    const CheckHook& afterChunk = {});
    // The bytes open's check of `spec` reads and tells its hook (a file's size, a dataset's shards);
    // 0 for a synthetic corpus or when it cannot be known without the check (open says why).
    static std::int64_t bytesToCheck(const std::string& spec);
    // Draws the windows from here on in the order `orderSeed` makes (as open's would have).
    void reorder(std::uint64_t orderSeed);

    // A batch of `batch` windows of seqLen+1 tokens: [B, T+1] int64 (inputs = [:, :-1],
    // targets = [:, 1:]). `stream` selects an independent sequence (0 = training, 1 = held out).
    torch::Tensor nextBatch(int batch, int seqLen, int stream = 0);

    std::size_t tokenCount() const { return static_cast<std::size_t>(m_tokens.size()); }
    // Cross-entropy floor in nats per token for the synthetic corpus; negative when unknown.
    double entropyFloor() const { return m_entropyFloor; }
    const std::string& description() const { return m_description; }

private:
    DataSource(TokenStream tokens, TokenStream heldOut, double entropyFloor, std::string description,
               std::uint64_t seed);

    TokenStream m_tokens;  // a file's or a dataset's are read a window at a time, never held
    TokenStream m_heldOut; // a dataset's own split; empty: the last tenth of m_tokens
    std::vector<std::int32_t> m_window;
    double m_entropyFloor;
    std::string m_description;
    std::mt19937_64 m_rng[2];
};

} // namespace tessera::gpu
