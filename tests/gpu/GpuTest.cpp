// SPDX-License-Identifier: Apache-2.0
#include "GpuTest.h"

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

namespace tessera::test {

namespace {

struct Skipped {
    std::string why;
};

std::vector<std::pair<const char*, std::function<void()>>>& registry() {
    static std::vector<std::pair<const char*, std::function<void()>>> tests;
    return tests;
}

} // namespace

void registerTest(const char* name, std::function<void()> body) {
    registry().emplace_back(name, std::move(body));
}

void fail(const char* file, int line, const std::string& what) {
    throw Failure{std::string(file) + ":" + std::to_string(line) + ": " + what};
}

void skip(const std::string& why) {
    throw Skipped{why};
}

} // namespace tessera::test

int main() {
    using namespace tessera::test;
    int passed = 0, failed = 0, skipped = 0;
    for (auto& [name, body] : registry()) {
        try {
            body();
            ++passed;
            std::cout << "PASS   " << name << "\n";
        } catch (const Failure& f) {
            ++failed;
            std::cout << "FAIL   " << name << ": " << f.where << "\n";
        } catch (const Skipped& s) {
            ++skipped;
            std::cout << "SKIP   " << name << ": " << s.why << "\n";
        } catch (const std::exception& e) {
            ++failed;
            std::cout << "FAIL   " << name << ": exception: " << e.what() << "\n";
        }
        std::cout.flush();
    }
    std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
    return failed ? 1 : 0;
}

namespace tessera::test {

TempDir::TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("tessera-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
}

TempDir::~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
}

double peakResidentMiB() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmHWM:", 0) == 0)
            return std::stod(line.substr(6)) / 1024;
    return -1;
}

bool resetPeakResident() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    return bool(clear);
}

} // namespace tessera::test
