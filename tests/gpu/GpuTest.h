// SPDX-License-Identifier: Apache-2.0
#pragma once
// A minimal test harness for gpu/ tests, which must build without Qt (so not QtTest) on a
// GPU machine that has only a compiler and a LibTorch. Each test executable prints one line
// per test and closes with "N passed, N failed".

#include <filesystem>
#include <functional>
#include <sstream>
#include <string>

// LibTorch defines a CHECK of its own (c10's, or glog's where LibTorch was built with it, as Debian's
// is): a ternary that aborts the process, which a failing test must not do. In a test linked with
// LibTorch its header comes first, so a torch header included later finds it already read, and the
// harness's CHECK below is in force. (Torch-free tests never read it: Debian's c10 is on the default
// include path.)
#ifdef TESSERA_TEST_WITH_TORCH
#include <c10/util/Logging.h>
#undef CHECK
#endif

namespace tessera::test {

struct Failure {
    std::string where;
};

void registerTest(const char* name, std::function<void()> body);
[[noreturn]] void fail(const char* file, int line, const std::string& what);
// A test that cannot run on this machine (e.g. needs a GPU) says why and counts as skipped.
[[noreturn]] void skip(const std::string& why);

// A fresh directory under the system's temporary one (unique per process and per instance), removed
// with everything in it when the object goes.
struct TempDir {
    std::filesystem::path path;
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

// This process's peak resident memory (VmHWM, MiB; −1 where /proc cannot tell), and setting that peak
// to what is resident now (/proc/self/clear_refs "5"; false where it cannot be written).
double peakResidentMiB();
bool resetPeakResident();

struct Registrar {
    Registrar(const char* name, std::function<void()> body) { registerTest(name, std::move(body)); }
};

} // namespace tessera::test

#define TESSERA_TEST(name)                                                                                   \
    static void name();                                                                                      \
    static const ::tessera::test::Registrar name##_registrar(#name, name);                                   \
    static void name()

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            ::tessera::test::fail(__FILE__, __LINE__, #cond);                                                \
    } while (0)

// CHECK with context streamed into the message: CHECK_MSG(x > 0, "x=" << x).
#define CHECK_MSG(cond, msg)                                                                                 \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            std::ostringstream tessera_test_os;                                                              \
            tessera_test_os << #cond << " (" << msg << ")";                                                  \
            ::tessera::test::fail(__FILE__, __LINE__, tessera_test_os.str());                                \
        }                                                                                                    \
    } while (0)
