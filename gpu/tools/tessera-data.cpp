// SPDX-License-Identifier: Apache-2.0
// tessera-data: real text → a token dataset a run trains on (--dataset dataset:DIR).
//   tessera-data build --out DIR [--vocab N] [--held-out F] [--seed S] [--tokenizer MODEL] FILE...
//   tessera-data check DIR [--vocab N]     every file against the manifest; prints its SHA-256
//   tessera-data show DIR [--tokens N]     the first N held-out tokens, decoded
#include "base/TokenDataset.h"
#include "data/DatasetBuilder.h"

#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>

using namespace tessera;
using namespace tessera::gpu;

namespace {

int usage(std::ostream& out, int code) {
    out << "usage: tessera-data build --out DIR [--vocab N] [--held-out F] [--seed S] [--block BYTES]\n"
           "                          [--tokenizer FILE.model] [--threads T] TEXT_FILE...\n"
           "       tessera-data check DIR [--vocab N]\n"
           "       tessera-data show DIR [--tokens N]\n"
           "  build: trains a byte-pair-encoding tokenizer (SentencePiece; default 32000 tokens, the small\n"
           "  preset's vocabulary) on the text files, holds out a fraction of their 4 KiB blocks of lines\n"
           "  (default 0.02), tokenizes, and writes token shards and manifest.json into DIR.\n"
           "  check: verifies the manifest, the tokenizer and every shard (size, SHA-256, ids < N) and\n"
           "  prints the manifest's SHA-256, which a run pins.\n"
           "  A coordinator or tessera-sim trains on it with --dataset dataset:DIR (tessera-sim: --data).\n";
    return code;
}

bool number(const char* text, double& out) {
    char* end = nullptr;
    out = std::strtod(text, &end);
    return end && *end == '\0' && end != text;
}

// What the command line asks for.
struct DataArguments {
    std::string command; // build, check or show
    DatasetBuildOptions build;
    std::string dir; // check's and show's DIR; build's --out once built
    double vocab = 32000, tokens = 64;
};

// Applies one option and its value v; the exit code when either is refused.
std::optional<int> applyValue(DataArguments& a, const std::string& arg, const char* v) {
    double n = 0;
    if (arg == "--out")
        a.build.out = v;
    else if (arg == "--tokenizer")
        a.build.tokenizer = std::filesystem::path(v);
    else if (!number(v, n)) {
        std::cerr << "tessera-data: " << arg << " wants a number, got '" << v << "'\n";
        return 2;
    } else if (arg == "--vocab")
        a.vocab = n;
    else if (arg == "--held-out")
        a.build.heldOutFraction = n;
    else if (arg == "--seed")
        a.build.training.seed = static_cast<std::uint64_t>(n);
    else if (arg == "--block")
        a.build.blockBytes = static_cast<std::size_t>(n);
    else if (arg == "--threads")
        a.build.training.threads = static_cast<int>(n);
    else if (arg == "--tokens")
        a.tokens = n;
    else {
        std::cerr << "tessera-data: unknown option " << arg << "\n";
        return usage(std::cerr, 2);
    }
    return std::nullopt;
}

// Reads the command line into `a`; the exit code when main is done (--help, or a usage error).
std::optional<int> parseArguments(int argc, char** argv, DataArguments& a) {
    if (argc < 2)
        return usage(std::cerr, 2);
    a.command = argv[1];
    if (a.command == "--help" || a.command == "-h")
        return usage(std::cout, 0);
    a.build.progress = [](const std::string& line) { std::cerr << "tessera-data: " << line << "\n"; };
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) {
            if (a.command == "build")
                a.build.inputs.emplace_back(arg);
            else if (a.dir.empty())
                a.dir = arg;
            else
                return usage(std::cerr, 2);
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << "tessera-data: " << arg << " needs a value\n";
            return 2;
        }
        if (std::optional<int> refused = applyValue(a, arg, argv[++i]))
            return refused;
    }
    a.build.training.vocabSize = static_cast<int>(a.vocab);
    return std::nullopt;
}

// build: writes the dataset into --out and says what it holds; the exit code when it cannot.
std::optional<int> buildDataset(DataArguments& a) {
    if (a.build.out.empty() || a.build.inputs.empty())
        return usage(std::cerr, 2);
    Result<TokenDatasetManifest> m = buildTokenDataset(a.build);
    if (!m) {
        std::cerr << "tessera-data: " << m.message() << "\n";
        return 1;
    }
    a.dir = a.build.out.string();
    std::cout << "dataset " << a.dir << ": " << m->trainTokens << " training tokens, " << m->heldOutTokens
              << " held out, vocabulary " << m->vocabSize << "\n";
    return std::nullopt;
}

// show: prints the first `tokens` held-out tokens of the dataset in dir, decoded.
int showHeldOut(const TokenDataset& d, const std::string& dir, double tokens) {
    Result<std::unique_ptr<Tokenizer>> t =
        Tokenizer::load(tokenDatasetManifestPath(dir).parent_path() / d.manifest.tokenizer.name);
    if (!t) {
        std::cerr << "tessera-data: " << t.message() << "\n";
        return 1;
    }
    std::vector<std::int32_t> ids(static_cast<std::size_t>(
        std::min<std::int64_t>(d.heldOut.size(), static_cast<std::int64_t>(std::max(0.0, tokens)))));
    if (Status read = d.heldOut.read(0, std::int64_t(ids.size()), ids.data()); !read) {
        std::cerr << "tessera-data: " << read.message() << "\n";
        return 1;
    }
    Result<std::string> text = (*t)->decode(ids);
    if (!text) {
        std::cerr << "tessera-data: " << text.message() << "\n";
        return 1;
    }
    std::cout << *text << "\n";
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    DataArguments arguments;
    if (std::optional<int> done = parseArguments(argc, argv, arguments))
        return *done;
    if (arguments.command == "build") {
        if (std::optional<int> failed = buildDataset(arguments))
            return *failed;
    } else if (arguments.command != "check" && arguments.command != "show") {
        return usage(std::cerr, 2);
    }
    if (arguments.dir.empty())
        return usage(std::cerr, 2);
    Result<TokenDataset> d = loadTokenDataset(arguments.dir, static_cast<std::int64_t>(arguments.vocab));
    if (!d) {
        std::cerr << "tessera-data: " << d.message() << "\n";
        return 1;
    }
    if (arguments.command == "show")
        return showHeldOut(*d, arguments.dir, arguments.tokens);
    std::cout << "verified: tokenizer " << d->manifest.tokenizer.sha256.substr(0, 12) << "…, "
              << d->manifest.train.size() + d->manifest.heldOut.size() << " shard(s), " << d->train.size()
              << " + " << d->heldOut.size() << " tokens; manifest sha256 " << d->manifestSha256 << "\n";
    return 0;
}
