// SPDX-License-Identifier: Apache-2.0
// Real text as tokens: the tokenizer gives text back byte for byte (spaces, tabs, line breaks,
// accents, Cyrillic, an emoji); a built dataset holds every byte of its text across its two splits
// and is the same, hash for hash, wherever it is built;
// and what was tried against a dataset a run pinned — a shard with one byte changed, a truncated
// shard, a replaced manifest, a tokenizer larger than the model's vocabulary, a file name that
// points outside the directory, a second build over the first — is refused with the file named.
#include "GpuTest.h"
#include "base/TokenDataset.h"
#include "data/DatasetBuilder.h"
#include "data/Tokenizer.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace tessera;
using namespace tessera::gpu;
namespace fs = std::filesystem;

namespace {

const fs::path kSource = TESSERA_SOURCE_DIR;

fs::path tempDir(const char* name) {
    const fs::path dir =
        fs::temp_directory_path() / ("tessera-test-" + std::to_string(getpid()) + "-" + name);
    fs::remove_all(dir);
    return dir;
}

std::string readAll(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Real prose to learn from: the project's own documents (always there, no download).
DatasetBuildOptions options(const char* name) {
    DatasetBuildOptions o;
    o.inputs = {kSource / "README.md", kSource / "docs" / "ARCHITECTURE.md"};
    o.out = tempDir(name);
    o.training.vocabSize = 2000;
    o.heldOutFraction = 0.05;
    o.blockBytes = 1024;
    return o;
}

} // namespace

TESSERA_TEST(theTokenizerGivesTextBackByteForByte) {
    const fs::path dir = tempDir("tokenizer");
    fs::create_directories(dir);
    Tokenizer::TrainOptions train;
    train.vocabSize = 1000;
    CHECK_MSG(Tokenizer::train({kSource / "README.md"}, dir / "t.model", train), "training");
    auto t = Tokenizer::load(dir / "t.model");
    CHECK_MSG(t, t.message());
    CHECK((*t)->vocabSize() == 1000);
    const std::string text = "  two leading spaces,\tа tab, Привет, café, 😀\n\nand a blank line  \n";
    auto ids = (*t)->encode(text);
    CHECK_MSG(ids, ids.message());
    CHECK(ids->size() < text.size()); // it compresses
    auto back = (*t)->decode(*ids);
    CHECK_MSG(back && *back == text, "decoded: [" << (back ? *back : back.message()) << "]");
    CHECK(!(*t)->decode({5, 1000})); // outside the vocabulary: an error, not a crash
    fs::remove_all(dir);
}

TESSERA_TEST(aBuiltDatasetHoldsEveryByteOfItsTextAcrossItsSplits) {
    const DatasetBuildOptions o = options("build");
    auto m = buildTokenDataset(o);
    CHECK_MSG(m, m.message());
    auto d = loadTokenDataset(o.out, 2000);
    CHECK_MSG(d, d.message());
    CHECK(d->manifestSha256.size() == 64);
    CHECK(static_cast<std::int64_t>(d->train.size()) == m->trainTokens);
    CHECK(d->heldOut.size() > 100);
    // About 5% of the blocks held out (a seeded draw: between 1% and 15% of the tokens).
    const double share = double(d->heldOut.size()) / double(d->train.size() + d->heldOut.size());
    CHECK_MSG(share > 0.01 && share < 0.15, share);
    auto t = Tokenizer::load(o.out / "tokenizer.model");
    CHECK_MSG(t, t.message());
    auto trainIds = d->train.readAll();
    auto heldOutIds = d->heldOut.readAll();
    CHECK(trainIds && heldOutIds);
    std::vector<std::int32_t> train;
    for (std::int32_t id : *trainIds)
        if (id != (*t)->endOfText())
            train.push_back(id);
    auto a = (*t)->decode(train);
    auto b = (*t)->decode(*heldOutIds);
    CHECK(a && b);
    std::size_t sourceBytes = 0;
    for (const auto& input : o.inputs)
        sourceBytes += fs::file_size(input);
    CHECK_MSG(a->size() + b->size() == sourceBytes, a->size() << " + " << b->size() << " vs " << sourceBytes);
    CHECK(readAll(o.inputs[0]).find(b->substr(0, 200)) != std::string::npos ||
          readAll(o.inputs[1]).find(b->substr(0, 200)) != std::string::npos);
    // Built again elsewhere from the same text and seed: the same bytes, so the same hash (the
    // tokenizer's model holds no path).
    DatasetBuildOptions elsewhere = o;
    elsewhere.out = tempDir("build-again") / "nested";
    CHECK(buildTokenDataset(elsewhere));
    CHECK_MSG(*tokenDatasetHash(elsewhere.out) == d->manifestSha256,
              "the dataset's hash depends on where it was built");
    fs::remove_all(elsewhere.out.parent_path());
    // A second build never writes over a dataset (a run may have pinned it).
    auto again = buildTokenDataset(o);
    CHECK(!again && again.message().find("exists") != std::string::npos);
    fs::remove_all(o.out);
}

TESSERA_TEST(aChangedDatasetIsRefusedWithTheFileNamed) {
    const DatasetBuildOptions o = options("tamper");
    CHECK(buildTokenDataset(o));
    auto pinned = tokenDatasetHash(o.out);
    CHECK_MSG(pinned, pinned.message());
    CHECK(loadTokenDataset(o.out, 2000, *pinned));
    const fs::path shard = o.out / "train-00000.tok";
    const std::string original = readAll(shard);

    // One byte changed: same size, another SHA-256.
    std::string changed = original;
    changed[changed.size() / 2] ^= 0x01;
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << changed;
    auto r = loadTokenDataset(o.out, 2000, *pinned);
    CHECK_MSG(!r && r.message().find("train-00000.tok") != std::string::npos &&
                  r.message().find("SHA-256") != std::string::npos,
              (r ? "accepted" : r.message()));
    // Truncated (a copy cut short).
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << original.substr(0, original.size() - 2);
    r = loadTokenDataset(o.out, 2000, *pinned);
    CHECK_MSG(!r && r.message().find("bytes") != std::string::npos, (r ? "accepted" : r.message()));
    std::ofstream(shard, std::ios::binary | std::ios::trunc) << original;
    CHECK(loadTokenDataset(o.out, 2000, *pinned));

    // The tokenizer's vocabulary does not fit a smaller model.
    r = loadTokenDataset(o.out, 1000, *pinned);
    CHECK_MSG(!r && r.message().find("does not fit") != std::string::npos, (r ? "accepted" : r.message()));

    // A manifest rewritten (here: another seed) is another dataset: the run's pin refuses it.
    const std::string manifest = readAll(o.out / "manifest.json");
    std::string other = manifest;
    other.replace(other.find("\"seed\":1"), 8, "\"seed\":2");
    std::ofstream(o.out / "manifest.json", std::ios::binary | std::ios::trunc) << other;
    r = loadTokenDataset(o.out, 2000, *pinned);
    CHECK_MSG(!r && r.message().find("changed since the run started") != std::string::npos,
              (r ? "accepted" : r.message()));
    CHECK(loadTokenDataset(o.out, 2000)); // unpinned, it is a valid dataset of its own

    // A shard name that points outside the directory is not a dataset at all.
    std::string escape = manifest;
    escape.replace(escape.find("train-00000.tok"), 15, "../etc/passwd00");
    std::ofstream(o.out / "manifest.json", std::ios::binary | std::ios::trunc) << escape;
    r = loadTokenDataset(o.out, 2000);
    CHECK_MSG(!r && r.message().find("plain file name") != std::string::npos, (r ? "accepted" : r.message()));
    // Nor is one with a field nobody knows.
    std::string unknown = manifest;
    unknown.insert(1, "\"extra\":1,");
    std::ofstream(o.out / "manifest.json", std::ios::binary | std::ios::trunc) << unknown;
    CHECK(!loadTokenDataset(o.out, 2000));
    fs::remove_all(o.out);
}
