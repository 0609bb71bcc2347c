// SPDX-License-Identifier: Apache-2.0
// TrainingData: microbatches as token frames stage 0 and the last stage accept — targets are the
// inputs shifted by one, the same seed gives the same bytes, a new order seed (a coordinator's
// restart) draws other windows of the same corpus — and bad requests are Errors.
#include "GpuTest.h"
#include "train/TrainingData.h"

#include <set>
#include <string>

using namespace tessera::gpu;

namespace {

constexpr int kVocab = 256;
constexpr char kSpec[] = "synthetic:tokens=100000";

std::unique_ptr<TrainingData> open(std::uint64_t seed, std::uint64_t order = 0) {
    auto data = TrainingData::open(kSpec, kVocab, seed, order ? order : seed);
    CHECK_MSG(data.ok(), data.message());
    return std::move(data).value();
}

bool mentions(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

TESSERA_TEST(framesHoldTheShapeAndTargetsAreInputsShiftedByOne) {
    auto data = open(3);
    constexpr int kBatch = 4, kSeq = 32;
    auto mb = data->next(kBatch, kSeq);
    CHECK_MSG(mb.ok(), mb.message());
    CHECK(mb->tokens == kBatch * kSeq);
    auto inputs = decodeTokens(mb->inputs, kVocab, kSeq, kBatch * kSeq);
    auto targets = decodeTokens(mb->targets, kVocab, kSeq, kBatch * kSeq);
    CHECK_MSG(inputs.ok(), inputs.message());
    CHECK_MSG(targets.ok(), targets.message());
    CHECK(inputs->batch == kBatch && inputs->seq == kSeq && targets->batch == kBatch && targets->seq == kSeq);
    for (int i = 0; i < kBatch; ++i)
        for (int t = 0; t + 1 < kSeq; ++t)
            CHECK_MSG(targets->ids[i * kSeq + t] == inputs->ids[i * kSeq + t + 1], "row " << i << " t " << t);
    // Windows differ from row to row (seeded random offsets), and so do successive microbatches.
    CHECK(mb->inputs != data->next(kBatch, kSeq)->inputs);
    CHECK(data->entropyFloor() > 0 && mentions(data->description(), "synthetic"));
}

TESSERA_TEST(theSameSeedGivesTheSameBytes) {
    auto a = open(11), b = open(11), c = open(12);
    for (int i = 0; i < 3; ++i) {
        const auto x = a->next(2, 16).value(), y = b->next(2, 16).value(), z = c->next(2, 16).value();
        CHECK(x.inputs == y.inputs && x.targets == y.targets);
        CHECK(x.inputs != z.inputs);
    }
    // The held-out stream is another sequence.
    CHECK(open(11)->next(2, 16, 1)->inputs != open(11)->next(2, 16, 0)->inputs);
}

namespace {

// The order-2 transitions (a, b → c) that 200 windows of 64 tokens show.
std::set<std::int64_t> transitions(TrainingData& data) {
    std::set<std::int64_t> seen;
    for (int i = 0; i < 25; ++i) {
        auto mb = data.next(8, 64);
        CHECK_MSG(mb.ok(), mb.message());
        auto ids = decodeTokens(mb->inputs, kVocab, 64, 8 * 64);
        CHECK_MSG(ids.ok(), ids.message());
        for (int row = 0; row < 8; ++row)
            for (int t = 0; t + 2 < 64; ++t) {
                const auto* x = ids->ids.data() + row * 64 + t;
                seen.insert((std::int64_t(x[0]) * kVocab + x[1]) * kVocab + x[2]);
            }
    }
    return seen;
}

double shared(const std::set<std::int64_t>& a, const std::set<std::int64_t>& b) {
    std::size_t both = 0;
    for (const std::int64_t t : b)
        both += a.count(t);
    return double(both) / double(b.size());
}

} // namespace

TESSERA_TEST(aNewOrderSeedDrawsOtherWindowsOfTheSameCorpus) {
    auto first = open(11, 1), restarted = open(11, 2), other = open(12, 2);
    CHECK(first->next(2, 16)->inputs != restarted->next(2, 16)->inputs); // not a replay of the start
    const auto known = transitions(*first);
    const double same = shared(known, transitions(*restarted)),
                 different = shared(known, transitions(*other));
    // 200 windows see most, not all, of a corpus' transitions (0.85 here); another corpus shares few (0.08).
    CHECK_MSG(same > 0.7, "after a reseed " << same << " of the transitions are the corpus' (another: "
                                            << different << ")");
    CHECK_MSG(different < 0.3, "another corpus shares " << different << " of its transitions");
}

TESSERA_TEST(badSpecsAndShapesAreErrors) {
    auto unknown = TrainingData::open("wikipedia", kVocab, 1, 1);
    CHECK(!unknown.ok());
    CHECK_MSG(mentions(unknown.message(), "wikipedia"), unknown.message());
    auto missing = TrainingData::open("text:/nonexistent/tessera.txt", kVocab, 1, 1);
    CHECK_MSG(!missing.ok() && mentions(missing.message(), "/nonexistent/tessera.txt"), missing.message());

    auto data = open(1);
    for (const auto& [batch, seq] :
         {std::pair{0, 8}, std::pair{4, 0}, std::pair{-1, 8}, std::pair{1 << 16, 1 << 16}}) {
        auto mb = data->next(batch, seq);
        CHECK_MSG(!mb.ok(), batch << "x" << seq << " accepted");
        CHECK_MSG(mentions(mb.message(), std::to_string(batch) + "x" + std::to_string(seq)), mb.message());
    }
    auto stream = data->next(2, 8, 2);
    CHECK_MSG(!stream.ok() && mentions(stream.message(), "stream 2"), stream.message());
    CHECK(data->next(2, 8).ok()); // still usable
}
