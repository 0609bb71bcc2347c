// SPDX-License-Identifier: Apache-2.0
// The replay runner: without libFuzzer, a fuzz target is a program that feeds every file it is
// given (a file, or every regular file of a folder, sorted) to LLVMFuzzerTestOneInput, once each.
// ctest runs it over the target's corpus (tests/fuzz/corpus/<target>), so every seed and every input
// that once crashed a parser is checked by `make test` with the project's normal compiler. A
// target that crashes, aborts or trips a FUZZ_CHECK fails the test; an empty corpus fails too (a
// moved folder would otherwise pass by testing nothing).
//
// -mutate=SECONDS [-seed=N]: then, for that long, inputs made by mutating the corpus at random (bit
// flips, bytes set to edge values, little-endian integers overwritten, insertions, deletions,
// splices). No coverage feedback: this is for a target libFuzzer cannot build (fuzz_codec_decode
// under gcc). The input being tried when the program dies is left in ./mutate-crash.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Present in sanitizer builds: called as a sanitizer ends the process.
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes readFile(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return Bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A copy in a buffer of exactly the input's size (not a vector's capacity), so that a sanitizer
// sees any read past its end.
void run(const Bytes& input) {
    std::unique_ptr<std::uint8_t[]> exact(new std::uint8_t[std::max<std::size_t>(input.size(), 1)]);
    std::copy(input.begin(), input.end(), exact.get());
    LLVMFuzzerTestOneInput(exact.get(), input.size());
}

// --- mutation --------------------------------------------------------------------------------------

const Bytes* g_current = nullptr;

void dumpCurrent() {
    if (!g_current)
        return;
    const int fd = ::open("mutate-crash", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    const ssize_t written = ::write(fd, g_current->data(), g_current->size());
    (void)written;
    ::close(fd);
    static const char note[] = "mutate: the input that ended the run is in ./mutate-crash\n";
    (void)!::write(2, note, sizeof note - 1);
}

void onSignal(int sig) {
    dumpCurrent();
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

void mutate(Bytes& b, std::mt19937_64& rng, const std::vector<Bytes>& corpus) {
    const auto pick = [&](std::size_t n) { return std::size_t(rng() % std::max<std::size_t>(n, 1)); };
    static constexpr std::uint8_t kEdges[] = {0, 1, 0x7f, 0x80, 0xff, 0xfe, 0x20, '0', '9', '"', '{', '\\'};
    static constexpr std::uint32_t kInts[] = {
        0,  1,   2,   3,     4,     7,          8,          15,         16,        28,
        64, 255, 256, 65535, 65536, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
    const int steps = 1 + int(rng() % 4);
    for (int s = 0; s < steps; ++s) {
        switch (rng() % 8) {
        case 0: // flip a bit
            if (!b.empty())
                b[pick(b.size())] ^= std::uint8_t(1u << (rng() % 8));
            break;
        case 1: // a byte to an edge value
            if (!b.empty())
                b[pick(b.size())] = kEdges[pick(std::size(kEdges))];
            break;
        case 2: // a random byte
            if (!b.empty())
                b[pick(b.size())] = std::uint8_t(rng());
            break;
        case 3: // a little-endian u32 to an edge value (sizes, counts, lengths)
            if (b.size() >= 4) {
                const std::uint32_t v = kInts[pick(std::size(kInts))];
                const std::size_t at = pick(b.size() - 3);
                for (int i = 0; i < 4; ++i)
                    b[at + i] = std::uint8_t(v >> (8 * i));
            }
            break;
        case 4: // insert bytes
            b.insert(b.begin() + std::ptrdiff_t(pick(b.size() + 1)), 1 + pick(8), std::uint8_t(rng()));
            break;
        case 5: // erase bytes
            if (!b.empty()) {
                const std::size_t at = pick(b.size());
                b.erase(b.begin() + std::ptrdiff_t(at),
                        b.begin() + std::ptrdiff_t(std::min(b.size(), at + 1 + pick(16))));
            }
            break;
        case 6: // truncate
            b.resize(pick(b.size() + 1));
            break;
        default: { // splice: the tail of another input
            const Bytes& other = corpus[pick(corpus.size())];
            const std::size_t at = pick(b.size() + 1), from = pick(other.size() + 1);
            b.resize(at);
            b.insert(b.end(), other.begin() + std::ptrdiff_t(from), other.end());
            break;
        }
        }
    }
    if (b.size() > 1 << 16)
        b.resize(1 << 16);
}

} // namespace

int main(int argc, char** argv) {
    std::vector<fs::path> files;
    double mutateSeconds = 0;
    std::uint64_t seed = std::random_device{}();
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("-mutate=", 0) == 0) {
            mutateSeconds = std::stod(arg.substr(8));
            continue;
        }
        if (arg.rfind("-seed=", 0) == 0) {
            seed = std::stoull(arg.substr(6));
            continue;
        }
        if (fs::is_directory(arg)) {
            for (const auto& entry : fs::directory_iterator(arg))
                if (entry.is_regular_file())
                    files.push_back(entry.path());
        } else if (fs::is_regular_file(arg)) {
            files.push_back(arg);
        } else {
            std::fprintf(stderr, "%s: no such file or folder\n", argv[i]);
            return 2;
        }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
        std::fprintf(stderr, "usage: %s [-mutate=SECONDS [-seed=N]] FILE_OR_FOLDER...: no input\n", argv[0]);
        return 2;
    }
    std::vector<Bytes> corpus;
    for (const fs::path& file : files) {
        corpus.push_back(readFile(file));
        std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.filename().c_str(), corpus.back().size());
        run(corpus.back());
    }
    std::fprintf(stderr, "%zu inputs replayed\n", files.size());
    if (mutateSeconds <= 0)
        return 0;

    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(dumpCurrent);
    for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
        std::signal(sig, onSignal);
    std::mt19937_64 rng(seed);
    std::fprintf(stderr, "mutating for %g s, seed %llu\n", mutateSeconds,
                 static_cast<unsigned long long>(seed));
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(mutateSeconds);
    std::uint64_t runs = 0;
    Bytes input;
    g_current = &input;
    while (std::chrono::steady_clock::now() < end) {
        for (int i = 0; i < 64; ++i, ++runs) {
            input = corpus[rng() % corpus.size()];
            mutate(input, rng, corpus);
            run(input);
        }
    }
    g_current = nullptr;
    std::fprintf(stderr, "mutate: %llu inputs run, no crash\n", static_cast<unsigned long long>(runs));
    return 0;
}
