// SPDX-License-Identifier: Apache-2.0
// Sha256 matches the FIPS 180-4 / NIST test vectors, however the input is split.
#include "GpuTest.h"
#include "base/Sha256.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tessera::gpu;

TESSERA_TEST(nistVectors) {
    CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    CHECK(
        sha256Hex(
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
            "mnopqrstnopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TESSERA_TEST(oneMillionAs) {
    const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
    CHECK(sha256Hex(std::string(1'000'000, 'a')) == expected);
    // The same message fed in uneven pieces, crossing block boundaries every which way.
    Sha256 h;
    const std::string piece(997, 'a');
    std::size_t fed = 0;
    while (fed + piece.size() <= 1'000'000) {
        h.update(piece);
        fed += piece.size();
    }
    h.update(std::string(1'000'000 - fed, 'a'));
    CHECK(Sha256::toHex(h.final()) == expected);
}

TESSERA_TEST(everyLengthAroundThePaddingBoundaryMatchesOneShot) {
    // 55, 56 and 64 bytes are where the length field moves to a new block.
    for (std::size_t n = 0; n < 200; ++n) {
        const std::string msg(n, 'x');
        Sha256 h;
        for (char c : msg)
            h.update(std::string_view(&c, 1));
        CHECK_MSG(Sha256::toHex(h.final()) == sha256Hex(msg), "length " << n);
    }
    CHECK(sha256Hex(std::string(55, 'a')) ==
          "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
    CHECK(sha256Hex(std::string(64, 'a')) ==
          "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

namespace {

// Forces the portable compression for its lifetime (restored even when a CHECK throws).
struct PortableOnly {
    PortableOnly() { detail::sha256ForcePortableForTesting(true); }
    ~PortableOnly() { detail::sha256ForcePortableForTesting(false); }
};

std::string randomBytes(std::mt19937& rng, std::size_t n) {
    std::string s(n, '\0');
    for (char& c : s)
        c = static_cast<char>(rng());
    return s;
}

// Hashes msg fed in pieces whose sizes cycle through awkward lengths.
std::string hashInPieces(const std::string& msg) {
    static constexpr std::size_t kPieces[] = {1, 63, 65, 7, 129, 4097, 64, 100'003, 13};
    Sha256 h;
    std::size_t at = 0;
    for (std::size_t i = 0; at < msg.size(); ++i) {
        const std::size_t n = std::min(kPieces[i % std::size(kPieces)], msg.size() - at);
        h.update(std::string_view(msg).substr(at, n));
        at += n;
    }
    return Sha256::toHex(h.final());
}

} // namespace

TESSERA_TEST(knownVectorsHoldOnEveryPath) {
    const bool fast = detail::sha256FastPathActive();
    for (int portable = 0; portable < 2; ++portable) {
        std::optional<PortableOnly> force;
        if (portable)
            force.emplace();
        CHECK(detail::sha256FastPathActive() == (fast && !portable));
        CHECK_MSG(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                  "portable " << portable);
        CHECK_MSG(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                  "portable " << portable);
        const std::string million(1'000'000, 'a');
        const std::string expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
        CHECK_MSG(sha256Hex(million) == expected, "portable " << portable);
        CHECK_MSG(hashInPieces(million) == expected, "portable " << portable);
    }
    CHECK(detail::sha256FastPathActive() == fast);
}

TESSERA_TEST(fastPathMatchesPortableOnRandomData) {
    // Where the CPU has no SHA extensions both sides are the portable code and this checks nothing new.
    std::mt19937 rng(20240607);
    std::vector<std::string> messages;
    for (std::size_t n = 0; n <= 2000; ++n)
        messages.push_back(randomBytes(rng, n));
    for (std::size_t n : {std::size_t{3'000'000}, std::size_t{4'194'304 + 37}})
        messages.push_back(randomBytes(rng, n));

    std::vector<std::string> portable;
    {
        PortableOnly force;
        for (const auto& m : messages)
            portable.push_back(sha256Hex(m));
    }
    for (std::size_t i = 0; i < messages.size(); ++i) {
        CHECK_MSG(sha256Hex(messages[i]) == portable[i], "length " << messages[i].size());
        CHECK_MSG(hashInPieces(messages[i]) == portable[i], "length " << messages[i].size() << " in pieces");
    }
}

TESSERA_TEST(finalStartsOver) {
    Sha256 h;
    h.update("abc");
    (void)h.final();
    CHECK(Sha256::toHex(h.final()) == sha256Hex(""));
}

TESSERA_TEST(hashesFiles) {
    const auto path =
        std::filesystem::temp_directory_path() / ("tessera-sha256-" + std::to_string(::getpid()));
    {
        std::ofstream out(path, std::ios::binary);
        out << std::string(3'000'000, 'a');
    }
    const auto r = sha256FileHex(path);
    CHECK_MSG(r.ok(), r.message());
    CHECK(*r == sha256Hex(std::string(3'000'000, 'a')));
    std::filesystem::remove(path);
    CHECK(!sha256FileHex(path).ok());
}
