// SPDX-License-Identifier: Apache-2.0
// Model configs: presets have the sizes they claim, stages split every layer exactly once
// with the embedding/head stages lighter, and JSON configs round-trip or fail naming the field.
#include "GpuTest.h"
#include "base/ModelConfig.h"

using namespace tessera::gpu;

TESSERA_TEST(presetsHaveTheirAdvertisedSizes) {
    const auto tiny = *ModelConfig::preset("tiny");
    const auto small = *ModelConfig::preset("small");
    const auto big = *ModelConfig::preset("8b");
    CHECK_MSG(tiny.parameterCount() > 1'000'000 && tiny.parameterCount() < 3'000'000, tiny.parameterCount());
    CHECK_MSG(small.parameterCount() > 110'000'000 && small.parameterCount() < 140'000'000,
              small.parameterCount());
    CHECK_MSG(big.parameterCount() > 7'500'000'000 && big.parameterCount() < 8'700'000'000,
              big.parameterCount());
    CHECK(big.stages == 7 && big.dModel == 4096 && big.nLayers == 32);
    CHECK(big.subspaceDim() == 40);
    CHECK(!ModelConfig::preset("70b"));
    for (const auto& c : {tiny, small, big})
        CHECK_MSG(c.validate(), c.name << ": " << c.validate().message());
}

TESSERA_TEST(stagesCoverEveryLayerOnceAndBalanceParameters) {
    for (const char* name : {"tiny", "small", "8b"}) {
        auto c = *ModelConfig::preset(name);
        for (int stages = 1; stages <= std::min(c.nLayers, 8); ++stages) {
            c.stages = stages;
            int next = 0;
            for (int s = 0; s < stages; ++s) {
                const auto [first, last] = c.stageBlocks(s);
                CHECK_MSG(first == next && last > first, name << " S=" << stages << " stage " << s);
                next = last;
            }
            CHECK(next == c.nLayers);
        }
    }
    // 8b in 7 stages: the embedding and head stages hold fewer blocks, and no stage is more
    // than 1.5x the lightest.
    const auto big = *ModelConfig::preset("8b");
    const auto [f0, l0] = big.stageBlocks(0);
    const auto [f3, l3] = big.stageBlocks(3);
    CHECK_MSG(l0 - f0 < l3 - f3, "stage 0 has " << l0 - f0 << " blocks, stage 3 " << l3 - f3);
    std::int64_t lo = INT64_MAX, hi = 0;
    for (int s = 0; s < big.stages; ++s) {
        lo = std::min(lo, big.stageParameterCount(s));
        hi = std::max(hi, big.stageParameterCount(s));
    }
    CHECK_MSG(hi < lo * 3 / 2, "lightest " << lo << " heaviest " << hi);
}

TESSERA_TEST(jsonRoundTripsAndHashIdentifiesTheModel) {
    auto c = *ModelConfig::preset("small");
    c.codec = CodecKind::Subspace;
    c.seed = 99;
    auto back = ModelConfig::fromJson(c.toJson());
    CHECK_MSG(back, back.message());
    CHECK(back->toJson() == c.toJson());
    CHECK(back->hash() == c.hash());
    CHECK(c.hash().size() == 64);
    auto other = c;
    other.subspaceRatio += 1;
    CHECK(other.hash() != c.hash());

    // The optimizer's moments: written only when 8 bits, so the runs from before keep their hash.
    CHECK(c.toJson().find("moment_bits") == std::string::npos);
    auto eight = c;
    eight.momentBits = 8;
    CHECK(eight.toJson().find("\"moment_bits\":8") != std::string::npos);
    CHECK(eight.hash() != c.hash());
    auto eightBack = ModelConfig::fromJson(eight.toJson());
    CHECK_MSG(eightBack && eightBack->momentBits == 8, eightBack.message());
}

TESSERA_TEST(badConfigsNameTheField) {
    const auto good = ModelConfig::preset("tiny")->toJson();
    auto replace = [&](const std::string& from, const std::string& to) {
        std::string s = good;
        s.replace(s.find(from), from.size(), to);
        return s;
    };
    const std::pair<std::string, std::string> cases[] = {
        {replace("\"d_model\":128", "\"d_model\":\"128\""), "d_model"},
        {replace("\"n_heads\":4", "\"n_heads\":3"), "n_heads"},
        {replace("\"n_kv_heads\":2", "\"n_kv_heads\":3"), "n_kv_heads"},
        {replace("\"codec\":\"none\"", "\"codec\":\"zip\""), "codec"},
        {replace("\"stages\":4", "\"stages\":99"), "stages"},
        {replace("{", "{\"colour\":1,"), "colour"},
        {replace("{", "{\"moment_bits\":16,"), "moment_bits"},
        {"{\"name\":", "JSON"},
        {"[1,2]", "not a JSON object"},
    };
    for (const auto& [text, field] : cases) {
        auto c = ModelConfig::fromJson(text);
        CHECK_MSG(!c, text);
        CHECK_MSG(c.message().find(field) != std::string::npos, field << " not in: " << c.message());
    }
}
