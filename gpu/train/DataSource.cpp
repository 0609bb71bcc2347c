// SPDX-License-Identifier: Apache-2.0
#include "train/DataSource.h"

#include "base/SplitMix.h"
#include "base/TokenDataset.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace tessera::gpu {

namespace {

// "KIND:REST" (a dataset's REST: "PATH#sha256=HEX", the hash the run pinned, or PATH alone).
struct Spec {
    std::string kind, rest;
    std::string datasetPath() const { return rest.substr(0, rest.rfind(kPin)); }
    std::optional<std::string> datasetPin() const {
        const auto at = rest.rfind(kPin);
        return at == std::string::npos ? std::nullopt : std::optional(rest.substr(at + kPin.size()));
    }
    static constexpr std::string_view kPin = "#sha256=";
};

Spec splitSpec(const std::string& spec) {
    const auto colon = spec.find(':');
    return {spec.substr(0, colon), colon == std::string::npos ? std::string() : spec.substr(colon + 1)};
}

Result<std::map<std::string, std::int64_t>> parseOptions(const std::string& text) {
    std::map<std::string, std::int64_t> options;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        const auto eq = item.find('=');
        if (eq == std::string::npos)
            return makeError("data option '" + item + "' is not KEY=VALUE");
        try {
            std::size_t used = 0;
            const std::string value = item.substr(eq + 1);
            options[item.substr(0, eq)] = std::stoll(value, &used);
            if (used != value.size())
                throw std::invalid_argument(value);
        } catch (const std::exception&) {
            return makeError("data option '" + item + "' needs an integer value");
        }
    }
    return options;
}

// An order-N Markov chain: every context of the N previous tokens has `branch` distinct
// successors, chosen by hashing the context, with the fixed probabilities p_j ∝ 2^-j. Every context has
// the same conditional entropy, so the best possible cross-entropy is exactly that, whatever
// the stationary distribution.
Status synthetic(const std::map<std::string, std::int64_t>& options, int vocab, std::uint64_t seed,
                 std::vector<std::int32_t>& tokens, double& floor, std::string& description) {
    auto get = [&](const char* key, std::int64_t fallback) {
        const auto it = options.find(key);
        return it == options.end() ? fallback : it->second;
    };
    for (const auto& [key, value] : options)
        if (key != "order" && key != "branch" && key != "tokens" && key != "symbols")
            return makeError("unknown synthetic data option '" + key + "' (order, branch, symbols, tokens)");
    const int order = static_cast<int>(get("order", 2));
    const int branch = static_cast<int>(get("branch", 4));
    const std::int64_t count = get("tokens", 2'000'000);
    // The corpus uses the first `symbols` token ids: fewer symbols, fewer contexts to learn.
    const int symbols = static_cast<int>(get("symbols", std::min(vocab, 32)));
    if (order < 1 || order > 8)
        return makeError("synthetic order must be between 1 and 8");
    if (symbols < 2 || symbols > vocab)
        return makeError("synthetic symbols must be between 2 and the vocabulary size");
    if (branch < 1 || branch > symbols)
        return makeError("synthetic branch must be between 1 and the number of symbols");
    if (count < 1024 || count > 1'000'000'000)
        return makeError("synthetic tokens must be between 1024 and 10^9");

    std::vector<double> cumulative(branch);
    double total = 0;
    for (int j = 0; j < branch; ++j)
        total += std::ldexp(1.0, -j);
    floor = 0;
    double running = 0;
    for (int j = 0; j < branch; ++j) {
        const double p = std::ldexp(1.0, -j) / total;
        floor -= p * std::log(p);
        running += p;
        cumulative[j] = running;
    }
    tokens.resize(static_cast<std::size_t>(count));
    std::mt19937_64 rng(splitMix64(seed ^ 0x5d47ull));
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    for (int i = 0; i < order; ++i)
        tokens[i] = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(symbols));
    for (std::size_t i = static_cast<std::size_t>(order); i < tokens.size(); ++i) {
        std::uint64_t context = seed;
        for (int j = 1; j <= order; ++j)
            context = splitMix64(context ^ static_cast<std::uint64_t>(tokens[i - j]));
        const double u = uniform(rng);
        int choice = 0;
        while (choice + 1 < branch && u > cumulative[choice])
            ++choice;
        // Successors are consecutive ids after a hashed base: always distinct, so the
        // conditional entropy is exactly the formula's.
        tokens[i] =
            static_cast<std::int32_t>((splitMix64(context) + static_cast<std::uint64_t>(choice)) % symbols);
    }
    description = "synthetic order-" + std::to_string(order) + " Markov corpus over " +
                  std::to_string(symbols) + " symbols, " + std::to_string(branch) +
                  " successors per context, " + std::to_string(count) + " tokens";
    return {};
}

} // namespace

DataSource::DataSource(TokenStream tokens, TokenStream heldOut, double entropyFloor, std::string description,
                       std::uint64_t seed)
    : m_tokens(std::move(tokens))
    , m_heldOut(std::move(heldOut))
    , m_entropyFloor(entropyFloor)
    , m_description(std::move(description)) {
    reorder(seed);
}

std::int64_t DataSource::bytesToCheck(const std::string& spec) {
    const Spec s = splitSpec(spec);
    if (s.kind == "text" || s.kind == "tokens16" || s.kind == "tokens32") {
        std::error_code error;
        const auto size = std::filesystem::file_size(s.rest, error);
        return error ? 0 : std::int64_t(size);
    }
    if (s.kind != "dataset")
        return 0;
    Result<std::uint64_t> bytes = tokenDatasetShardBytes(s.datasetPath());
    return bytes ? std::int64_t(*bytes) : 0;
}

void DataSource::reorder(std::uint64_t orderSeed) {
    m_rng[0] = std::mt19937_64(splitMix64(orderSeed ^ 0xba7c4ull));
    m_rng[1] = std::mt19937_64(splitMix64(orderSeed ^ 0xe7a1ull));
}

Result<std::unique_ptr<DataSource>> DataSource::open(const std::string& spec, int vocabSize,
                                                     std::uint64_t seed,
                                                     std::optional<std::uint64_t> orderSeed,
                                                     const CheckHook& afterChunk) {
    const Spec parsed = splitSpec(spec);
    const std::string &kind = parsed.kind, &rest = parsed.rest;
    TokenStream tokens, heldOut;
    double floor = -1;
    std::string description;

    if (kind == "synthetic") {
        auto options = parseOptions(rest);
        if (!options)
            return options.error();
        std::vector<std::int32_t> made;
        if (Status s = synthetic(*options, vocabSize, seed, made, floor, description); !s)
            return s.error();
        tokens = TokenStream::inMemory(std::move(made));
    } else if (kind == "text" || kind == "tokens16" || kind == "tokens32") {
        if (rest.empty())
            return makeError("data spec '" + spec + "' needs a file path after ':'");
        const int width = kind == "text" ? 1 : kind == "tokens16" ? 2 : 4;
        Result<std::int64_t> count = checkTokenFile(rest, width, vocabSize, nullptr, afterChunk);
        if (!count)
            return makeError("data file " + count.message());
        tokens = TokenStream::files({{rest, *count}}, width, vocabSize);
        description = (kind == "text" ? "bytes of " : "token ids of ") + rest;
    } else if (kind == "dataset") {
        const std::string path = parsed.datasetPath();
        if (path.empty())
            return makeError("data spec '" + spec + "' needs the dataset's directory after ':'");
        Result<TokenDataset> dataset = loadTokenDataset(path, vocabSize, parsed.datasetPin(), afterChunk);
        if (!dataset)
            return dataset.error();
        tokens = std::move(dataset->train);
        heldOut = std::move(dataset->heldOut);
        description = "token dataset " + path + " (manifest " + dataset->manifestSha256.substr(0, 12) +
                      "…, " + std::to_string(tokens.size()) + " training and " +
                      std::to_string(heldOut.size()) + " held-out tokens, vocabulary " +
                      std::to_string(dataset->manifest.vocabSize) + ")";
    } else {
        return makeError("unknown data spec '" + spec +
                         "' (synthetic[:order=N,branch=M,symbols=V,tokens=K], text:PATH, "
                         "tokens16:PATH, tokens32:PATH, dataset:PATH)");
    }
    if (tokens.size() < 2)
        return makeError("data source '" + spec + "' holds fewer than 2 tokens");
    return std::unique_ptr<DataSource>(new DataSource(std::move(tokens), std::move(heldOut), floor,
                                                      std::move(description), orderSeed.value_or(seed)));
}

torch::Tensor DataSource::nextBatch(int batch, int seqLen, int stream) {
    // A dataset's held-out split, or else the last tenth of the stream, is held out; stream 1 draws
    // from it only.
    const std::int64_t window = static_cast<std::int64_t>(seqLen) + 1;
    const bool heldOut = stream == 1;
    const bool ownSplit = !m_heldOut.empty();
    const TokenStream& from = heldOut && ownSplit ? m_heldOut : m_tokens;
    std::int64_t begin = 0, end = from.size();
    if (!ownSplit)
        (heldOut ? begin : end) = m_tokens.size() - m_tokens.size() / 10;
    auto out = torch::empty({batch, window}, torch::kInt64);
    auto* p = out.data_ptr<std::int64_t>();
    auto& rng = m_rng[heldOut ? 1 : 0];
    const std::int64_t span = end - begin;
    // A span shorter than the window repeats itself.
    m_window.resize(static_cast<std::size_t>(std::min(window, span)));
    for (int b = 0; b < batch; ++b) {
        const std::int64_t start =
            span > window
                ? begin + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(span - window))
                : begin;
        if (Status read = from.read(start, std::int64_t(m_window.size()), m_window.data()); !read)
            throw std::runtime_error(read.message());
        for (std::int64_t t = 0; t < window; ++t)
            p[b * window + t] = m_window[static_cast<std::size_t>(t % std::int64_t(m_window.size()))];
    }
    return out;
}

} // namespace tessera::gpu
