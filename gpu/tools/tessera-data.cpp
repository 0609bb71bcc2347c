// SPDX-License-Identifier: Apache-2.0
// tessera-data: real text → a token dataset a run trains on (--dataset dataset:DIR).
//   tessera-data build --out DIR [--vocab N] [--held-out F] [--seed S] [--tokenizer MODEL] FILE...
//   tessera-data check DIR [--vocab N]     every file against the manifest; prints its SHA-256
//   tessera-data show DIR [--tokens N]     the first N held-out tokens, decoded
#include "base/TokenDataset.h"
#include "data/DatasetBuilder.h"

#include <cstdlib>
#include <iostream>
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

} // namespace

int main(int argc, char** argv) {
    if (argc < 2)
        return usage(std::cerr, 2);
    const std::string command = argv[1];
    if (command == "--help" || command == "-h")
        return usage(std::cout, 0);
    DatasetBuildOptions build;
    build.progress = [](const std::string& line) { std::cerr << "tessera-data: " << line << "\n"; };
    std::string dir;
    double vocab = 32000, tokens = 64;
    for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--", 0) != 0) {
            if (command == "build")
                build.inputs.emplace_back(arg);
            else if (dir.empty())
                dir = arg;
            else
                return usage(std::cerr, 2);
            continue;
        }
        if (i + 1 >= argc) {
            std::cerr << "tessera-data: " << arg << " needs a value\n";
            return 2;
        }
        const char* v = argv[++i];
        double n = 0;
        if (arg == "--out")
            build.out = v;
        else if (arg == "--tokenizer")
            build.tokenizer = std::filesystem::path(v);
        else if (!number(v, n)) {
            std::cerr << "tessera-data: " << arg << " wants a number, got '" << v << "'\n";
            return 2;
        } else if (arg == "--vocab")
            vocab = n;
        else if (arg == "--held-out")
            build.heldOutFraction = n;
        else if (arg == "--seed")
            build.training.seed = static_cast<std::uint64_t>(n);
        else if (arg == "--block")
            build.blockBytes = static_cast<std::size_t>(n);
        else if (arg == "--threads")
            build.training.threads = static_cast<int>(n);
        else if (arg == "--tokens")
            tokens = n;
        else {
            std::cerr << "tessera-data: unknown option " << arg << "\n";
            return usage(std::cerr, 2);
        }
    }
    build.training.vocabSize = static_cast<int>(vocab);

    if (command == "build") {
        if (build.out.empty() || build.inputs.empty())
            return usage(std::cerr, 2);
        Result<TokenDatasetManifest> m = buildTokenDataset(build);
        if (!m) {
            std::cerr << "tessera-data: " << m.message() << "\n";
            return 1;
        }
        dir = build.out.string();
        std::cout << "dataset " << dir << ": " << m->trainTokens << " training tokens, " << m->heldOutTokens
                  << " held out, vocabulary " << m->vocabSize << "\n";
    } else if (command != "check" && command != "show") {
        return usage(std::cerr, 2);
    }
    if (dir.empty())
        return usage(std::cerr, 2);
    Result<TokenDataset> d = loadTokenDataset(dir, static_cast<std::int64_t>(vocab));
    if (!d) {
        std::cerr << "tessera-data: " << d.message() << "\n";
        return 1;
    }
    if (command == "show") {
        Result<std::unique_ptr<Tokenizer>> t =
            Tokenizer::load(tokenDatasetManifestPath(dir).parent_path() / d->manifest.tokenizer.name);
        if (!t) {
            std::cerr << "tessera-data: " << t.message() << "\n";
            return 1;
        }
        std::vector<std::int32_t> ids(static_cast<std::size_t>(
            std::min<std::int64_t>(d->heldOut.size(), static_cast<std::int64_t>(std::max(0.0, tokens)))));
        if (Status read = d->heldOut.read(0, std::int64_t(ids.size()), ids.data()); !read) {
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
    std::cout << "verified: tokenizer " << d->manifest.tokenizer.sha256.substr(0, 12) << "…, "
              << d->manifest.train.size() + d->manifest.heldOut.size() << " shard(s), " << d->train.size()
              << " + " << d->heldOut.size() << " tokens; manifest sha256 " << d->manifestSha256 << "\n";
    return 0;
}
