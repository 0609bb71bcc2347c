// SPDX-License-Identifier: Apache-2.0
// Training data: the synthetic corpus is reproducible and has the entropy floor it claims;
// files are read as documented, a window at a time (never held whole); bad specs and bad files are
// clear errors.
#include "GpuTest.h"
#include "base/Sha256.h"
#include "base/TokenDataset.h"
#include "train/DataSource.h"

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

using namespace tessera::gpu;
using namespace tessera::test;

namespace {

std::string tempPath(const char* name) {
    return "/tmp/tessera-test-" + std::to_string(getpid()) + "-" + name;
}

} // namespace

TESSERA_TEST(syntheticCorpusIsReproducibleAndHasItsEntropyFloor) {
    auto a = DataSource::open("synthetic:order=1,branch=4,tokens=200000", 256, 5);
    auto b = DataSource::open("synthetic:order=1,branch=4,tokens=200000", 256, 5);
    CHECK_MSG(a, a.message());
    CHECK(torch::equal((*a)->nextBatch(4, 32), (*b)->nextBatch(4, 32)));
    // p ∝ 1, 1/2, 1/4, 1/8: H = -Σ p ln p.
    const double p[] = {8 / 15.0, 4 / 15.0, 2 / 15.0, 1 / 15.0};
    double h = 0;
    for (double x : p)
        h -= x * std::log(x);
    CHECK_MSG(std::abs((*a)->entropyFloor() - h) < 1e-12, (*a)->entropyFloor());
    // The empirical conditional entropy of the generated stream is that floor.
    std::map<std::pair<int, int>, int> pairs;
    std::map<int, int> contexts;
    auto batch = (*a)->nextBatch(256, 512);
    auto acc = batch.accessor<std::int64_t, 2>();
    for (int i = 0; i < batch.size(0); ++i)
        for (int t = 1; t < batch.size(1); ++t) {
            ++pairs[{static_cast<int>(acc[i][t - 1]), static_cast<int>(acc[i][t])}];
            ++contexts[static_cast<int>(acc[i][t - 1])];
        }
    double empirical = 0, n = 0;
    for (const auto& [key, count] : pairs) {
        empirical -= count * std::log(static_cast<double>(count) / contexts[key.first]);
        n += count;
    }
    empirical /= n;
    CHECK_MSG(std::abs(empirical - h) < 0.05, "empirical " << empirical << " vs floor " << h);
}

TESSERA_TEST(heldOutWindowsComeFromTheLastTenth) {
    auto data = DataSource::open("synthetic:tokens=100000", 256, 1);
    CHECK_MSG(data, data.message());
    const auto train = (*data)->nextBatch(8, 64, 0);
    const auto held = (*data)->nextBatch(8, 64, 1);
    CHECK(train.sizes() == torch::IntArrayRef({8, 65}));
    CHECK(!torch::equal(train, held));
    CHECK(train.max().item<std::int64_t>() < 256);
}

TESSERA_TEST(readsTextAsBytesAndTokenFilesLittleEndian) {
    const std::string text = tempPath("text.txt");
    std::ofstream(text) << "hello, tessera";
    auto t = DataSource::open("text:" + text, 256, 1);
    CHECK_MSG(t, t.message());
    CHECK((*t)->tokenCount() == 14);

    const std::string tokens = tempPath("tokens.u16");
    {
        std::ofstream out(tokens, std::ios::binary);
        const unsigned char bytes[] = {0x01, 0x02, 0xff, 0x00, 0x10, 0x00}; // 513, 255, 16
        out.write(reinterpret_cast<const char*>(bytes), sizeof bytes);
    }
    auto u = DataSource::open("tokens16:" + tokens, 1000, 1);
    CHECK_MSG(u, u.message());
    CHECK((*u)->tokenCount() == 3);
    auto small = DataSource::open("tokens16:" + tokens, 500, 1);
    CHECK(!small);
    CHECK_MSG(small.message().find("token 513 at position 0") != std::string::npos, small.message());
    auto wide = DataSource::open("tokens32:" + tokens, 1000, 1);
    CHECK(!wide);
    CHECK_MSG(wide.message().find("not a multiple of 4") != std::string::npos, wide.message());
    std::remove(text.c_str());
    std::remove(tokens.c_str());
}

// A token file is checked once and then read a window at a time: 64 Mi tokens (128 MiB of uint16)
// raise the process's peak by a few MiB, where the stream held whole took 4 bytes a token (256 MiB)
// plus the file. Every window is the file's own tokens; a file changed after the check (an id
// beyond the vocabulary written into it) makes the next batch an error naming the file.
TESSERA_TEST(aLargeTokenFileIsReadAWindowAtATimeNotHeld) {
    const std::string path = tempPath("large.u16");
    constexpr std::int64_t kTokens = std::int64_t(64) << 20;
    constexpr int kVocab = 50'000;
    const auto tokenAt = [](std::int64_t i) { return std::uint16_t((i * 7919) % kVocab); };
    {
        std::ofstream out(path, std::ios::binary);
        std::vector<std::uint16_t> block(1 << 20);
        for (std::int64_t i = 0; i < kTokens; i += std::int64_t(block.size())) {
            for (std::size_t k = 0; k < block.size(); ++k)
                block[k] = tokenAt(i + std::int64_t(k));
            out.write(reinterpret_cast<const char*>(block.data()), std::streamsize(block.size() * 2));
        }
    }
    if (!resetPeakResident())
        skip("/proc/self/clear_refs cannot be written here");
    const double base = peakResidentMiB();
    auto source = DataSource::open("tokens16:" + path, kVocab, 7);
    CHECK_MSG(source, source.message());
    CHECK((*source)->tokenCount() == std::size_t(kTokens));
    for (int i = 0; i < 50; ++i) {
        const torch::Tensor batch = (*source)->nextBatch(8, 64, i % 2);
        CHECK(batch.size(0) == 8 && batch.size(1) == 65);
        // Consecutive ids of the file: each row is a run of the file's sequence.
        for (int b = 0; b < 8; ++b) {
            const auto* row = batch[b].data_ptr<std::int64_t>();
            std::int64_t at = -1;
            for (std::int64_t start = 0; start < kVocab && at < 0; ++start)
                if (tokenAt(start) == row[0])
                    at = start;
            CHECK(at >= 0);
            for (int t = 1; t < 65; ++t)
                CHECK_MSG(row[t] == tokenAt(at + t), "row " << b << " token " << t);
        }
    }
    const double grew = peakResidentMiB() - base;
    std::printf("  64 Mi tokens (128 MiB) opened and 50 batches drawn: peak +%.1f MiB\n", grew);
    CHECK_MSG(grew < 16, "grew " << grew << " MiB");

    // Every id rewritten beyond the vocabulary after the check.
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        std::vector<std::uint16_t> high(1 << 20, std::uint16_t(kVocab + 1));
        for (std::int64_t i = 0; i < kTokens; i += std::int64_t(high.size()))
            f.write(reinterpret_cast<const char*>(high.data()), std::streamsize(high.size() * 2));
    }
    bool refused = false;
    try {
        (void)(*source)->nextBatch(8, 64);
    } catch (const std::exception& e) {
        refused = true;
        const std::string why = e.what();
        CHECK_MSG(why.find(path) != std::string::npos &&
                      why.find("changed since it was checked") != std::string::npos,
                  why);
    }
    CHECK(refused);
    std::remove(path.c_str());
}

// The coordinator checks a run's data before it knows the run's step, then sets the order the step
// makes: the windows are those of data opened with that order. The check tells its hook every MiB, and
// an error from the hook (a coordinator stopping) ends it with those words.
TESSERA_TEST(dataCheckedFirstIsReorderedAsIfOpenedInThatOrderAndItsCheckCanBeStopped) {
    const std::string path = tempPath("order.u16");
    {
        std::ofstream out(path, std::ios::binary);
        std::vector<std::uint16_t> block(1 << 20);
        for (int part = 0; part < 3; ++part) { // 6 MiB
            for (std::size_t k = 0; k < block.size(); ++k)
                block[k] = std::uint16_t((k * 31 + std::size_t(part)) % 1000);
            out.write(reinterpret_cast<const char*>(block.data()), std::streamsize(block.size() * 2));
        }
    }
    const std::string spec = "tokens16:" + path;
    std::vector<std::int64_t> told;
    auto checkedFirst = DataSource::open(spec, 1000, 7, 7, [&](std::int64_t bytes) -> tessera::Status {
        told.push_back(bytes);
        return {};
    });
    CHECK_MSG(checkedFirst, checkedFirst.message());
    CHECK_MSG(told.size() == 6 && told.front() == (1 << 20), "told " << told.size() << " times");
    CHECK(DataSource::bytesToCheck(spec) == 6 << 20 && DataSource::bytesToCheck("synthetic") == 0);
    auto inOrder = DataSource::open(spec, 1000, 7, 12345);
    CHECK_MSG(inOrder, inOrder.message());
    (*checkedFirst)->reorder(12345);
    for (int stream : {0, 1, 0})
        CHECK(torch::equal((*checkedFirst)->nextBatch(4, 16, stream), (*inOrder)->nextBatch(4, 16, stream)));
    auto unordered = DataSource::open(spec, 1000, 7, 7);
    CHECK(!torch::equal((*unordered)->nextBatch(4, 16), (*inOrder)->nextBatch(4, 16)));

    int calls = 0;
    auto stopped = DataSource::open(spec, 1000, 7, 7, [&](std::int64_t) -> tessera::Status {
        return ++calls == 2 ? tessera::makeError("the coordinator is stopping") : tessera::Status{};
    });
    CHECK(!stopped && calls == 2);
    CHECK_MSG(stopped.message().find("the coordinator is stopping") != std::string::npos, stopped.message());
    std::remove(path.c_str());
}

TESSERA_TEST(aTokenDatasetTrainsOnItsTrainingSplitAndEvaluatesOnItsHeldOutOne) {
    // A dataset written by hand (tessera-data's own test builds real ones): training tokens 10..199,
    // held-out tokens all 7, so a window shows which split it came from.
    const std::filesystem::path dir = tempPath("dataset");
    std::filesystem::create_directories(dir);
    std::vector<std::int32_t> train, heldOut(300, 7);
    for (int i = 0; i < 5000; ++i)
        train.push_back(10 + (i * 37) % 190);
    TokenDatasetManifest m;
    const auto put = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(dir / name, std::ios::binary) << bytes;
        return TokenDatasetManifest::File{name, bytes.size(), sha256Hex(bytes)};
    };
    m.tokenizer = put("tokenizer.model", "not read by training");
    m.vocabSize = 200;
    m.train = {put("train-00000.tok", encodeTokens(train, 2))};
    m.heldOut = {put("held-out-00000.tok", encodeTokens(heldOut, 2))};
    m.trainTokens = 5000;
    m.heldOutTokens = 300;
    m.heldOutFraction = 0.05;
    std::ofstream(dir / "manifest.json", std::ios::binary) << m.toJson();

    auto d = DataSource::open("dataset:" + dir.string(), 256, 3);
    CHECK_MSG(d, d.message());
    // What the check reads, known beforehand from the manifest (the coordinator's progress).
    CHECK(DataSource::bytesToCheck("dataset:" + dir.string()) == (5000 + 300) * 2);
    const torch::Tensor evalBatch = (*d)->nextBatch(4, 32, 1);
    CHECK(evalBatch.eq(7).all().item<bool>());
    const torch::Tensor trainBatch = (*d)->nextBatch(16, 32, 0);
    CHECK(trainBatch.ge(10).all().item<bool>());
    CHECK((*d)->tokenCount() == 5000);
    // Pinned by the manifest's hash: the same dataset opens, another hash is refused.
    const std::string hash = *sha256FileHex(dir / "manifest.json");
    CHECK(DataSource::open("dataset:" + dir.string() + "#sha256=" + hash, 256, 3));
    auto other = DataSource::open("dataset:" + dir.string() + "#sha256=" + std::string(64, 'a'), 256, 3);
    CHECK_MSG(!other && other.message().find("changed since the run started") != std::string::npos,
              (other ? "accepted" : other.message()));
    // Its ids must fit the model's vocabulary.
    CHECK(!DataSource::open("dataset:" + dir.string(), 100, 3));
    std::filesystem::remove_all(dir);
}

TESSERA_TEST(badSpecsAreClearErrors) {
    for (const char* spec :
         {"wikipedia", "text:", "synthetic:order=x", "synthetic:order=0", "synthetic:colour=3",
          "synthetic:order", "text:/nonexistent/file.txt", "dataset:", "dataset:/nonexistent/dir"}) {
        auto d = DataSource::open(spec, 256, 1);
        CHECK_MSG(!d, spec);
        CHECK_MSG(!d.message().empty(), spec);
    }
}
