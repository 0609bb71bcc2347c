# SPDX-License-Identifier: Apache-2.0
# Instrumented builds, each in a build folder of its own (see the Makefile):
#   TESSERA_SANITIZE=address  ASan + UBSan, UB fatal (make sanitize, build-asan): tests labelled asan
#   TESSERA_SANITIZE=thread   TSan (make tsan, build-tsan): tests labelled tsan
#   TESSERA_FUZZ=ON           ASan + UBSan + libFuzzer's coverage, clang only (make fuzz, build-fuzz):
#                             tests/fuzz's targets become libFuzzer programs
# Everything such a build compiles is instrumented (the flags are set before any target); only the
# selected targets are built (custom targets sanitize-tests and fuzz-targets), so LibTorch's headers
# are compiled only where a selected test needs them. The default build is untouched.
set(TESSERA_SANITIZE "" CACHE STRING "Instrument the build: address (ASan+UBSan) or thread (TSan)")
option(TESSERA_FUZZ "Build tests/fuzz as libFuzzer programs (clang; implies TESSERA_SANITIZE=address)" OFF)
if(TESSERA_FUZZ AND NOT TESSERA_SANITIZE)
    set(TESSERA_SANITIZE address)
endif()

if(TESSERA_SANITIZE STREQUAL "address")
    # -fno-sanitize-recover: undefined behaviour stops the test instead of printing and going on.
    set(_tessera_sanitizer_flags -fsanitize=address -fsanitize=undefined -fno-sanitize-recover=undefined)
elseif(TESSERA_SANITIZE STREQUAL "thread")
    set(_tessera_sanitizer_flags -fsanitize=thread)
elseif(TESSERA_SANITIZE)
    message(FATAL_ERROR "TESSERA_SANITIZE=${TESSERA_SANITIZE}: expected address or thread")
endif()

if(TESSERA_SANITIZE)
    # C and C++ only (nvcc knows none of these flags); -O1 -g after the build type's -O3.
    foreach(flag IN LISTS _tessera_sanitizer_flags ITEMS -fno-omit-frame-pointer -O1 -g)
        add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${flag}>")
    endforeach()
    foreach(flag IN LISTS _tessera_sanitizer_flags)
        add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${flag}>")
    endforeach()
    if(TESSERA_SANITIZE STREQUAL "address")
        # No selected test needs the CUDA module; skip finding nvcc.
        set(TESSERA_CUDA OFF CACHE BOOL "" FORCE)
    endif()
    message(STATUS "Sanitizers: ${TESSERA_SANITIZE} (${_tessera_sanitizer_flags}), fuzz=${TESSERA_FUZZ}")
endif()

# Under TSan, gpu/ itself is left uninstrumented and compiled exactly as the default Release build
# compiles it (configure with CMAKE_BUILD_TYPE=Release): its ~50 LibTorch translation units then come
# from ccache after a `make build`, instead of an hour of TSan compiles. Its code runs on the engine
# thread only, and LibTorch under it is not instrumented anyway; what TSan watches is core/.
function(_tessera_uninstrumented_gpu)
    if(TARGET tessera_gpu)
        set_property(TARGET tessera_gpu PROPERTY COMPILE_OPTIONS "")
    endif()
endfunction()
if(TESSERA_SANITIZE STREQUAL "thread")
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _tessera_uninstrumented_gpu)
endif()
if(TESSERA_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
        message(FATAL_ERROR "TESSERA_FUZZ needs clang (libFuzzer): configure with CXX=clang++ CC=clang")
    endif()
    add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# What the sanitizer builds build and run: sanitize-tests builds the selected test programs, whose
# tests carry the label asan or tsan (ctest -L asan).
set(TESSERA_SANITIZER_DIR "${CMAKE_CURRENT_LIST_DIR}/../tests/sanitize")
include("${TESSERA_SANITIZER_DIR}/selection.cmake")
if(TESSERA_SANITIZE)
    add_custom_target(sanitize-tests)
endif()
if(TESSERA_SANITIZE STREQUAL "thread")
    # tsan.clear_reports empties tsan-reports/ before the first tsan test; tsan.no_reports fails,
    # printing them, when any test or process it started wrote a report.
    set(_tsan_reports "${CMAKE_BINARY_DIR}/tsan-reports")
    add_test(NAME tsan.clear_reports COMMAND "${TESSERA_SANITIZER_DIR}/tsan-reports.sh" clear "${_tsan_reports}")
    add_test(NAME tsan.no_reports COMMAND "${TESSERA_SANITIZER_DIR}/tsan-reports.sh" check "${_tsan_reports}")
    set_tests_properties(tsan.clear_reports PROPERTIES LABELS tsan FIXTURES_SETUP tsan_reports)
    set_tests_properties(tsan.no_reports PROPERTIES LABELS tsan FIXTURES_CLEANUP tsan_reports)
endif()

# tessera_sanitizer_test(TEST TARGET): called by every test registration; in a sanitizer build, a
# selected test gets its label, the runtime options and suppressions, a longer timeout (instrumented
# code runs 2-15x slower) and its program becomes part of sanitize-tests.
function(tessera_sanitizer_test test target)
    if(NOT TESSERA_SANITIZE OR TESSERA_FUZZ)
        return()
    endif()
    if(TESSERA_SANITIZE STREQUAL "address")
        set(selected ${TESSERA_ASAN_TESTS})
        set(label asan)
    else()
        set(selected ${TESSERA_TSAN_TESTS})
        set(label tsan)
    endif()
    # Every corpus replay of tests/fuzz runs under ASan.
    if(NOT test IN_LIST selected AND NOT (label STREQUAL "asan" AND test MATCHES "^fuzz\\."))
        return()
    endif()
    get_filename_component(supp "${TESSERA_SANITIZER_DIR}" ABSOLUTE)
    set_property(TEST ${test} APPEND PROPERTY LABELS ${label})
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT
        "ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1"
        "LSAN_OPTIONS=suppressions=${supp}/lsan.supp:print_suppressions=0"
        "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${supp}/ubsan.supp"
        # Every TSan report, the test's own and its child processes' (a node, a coordinator), is
        # written under tsan-reports/ and fails tsan.no_reports, which runs after the others.
        # ignore_noninstrumented_modules: what Qt, glib and LibTorch do inside themselves (their
        # allocations, frees, eventfd wake-ups, memcpy) is not checked, as it cannot be understood
        # without their locks; everything our code reads and writes still is.
        # die_after_fork=0: QProcess starts a child with clone(CLONE_VM | CLONE_VFORK); GCC 12's
        # TSan runs its forked-child bookkeeping in that child, which shares the parent's memory, so
        # the parent itself is marked "after a multi-threaded fork" and killed (exit 66, no report
        # but that line) at its next new thread (QNetworkAccessManager's, in test_node_supervisor).
        # The child only calls execve; nothing here forks without exec.
        "TSAN_OPTIONS=die_after_fork=0:suppressions=${supp}/tsan.supp:second_deadlock_stack=1:history_size=4:halt_on_error=0:exitcode=66:ignore_noninstrumented_modules=1:log_path=${CMAKE_BINARY_DIR}/tsan-reports/report"
        # LibTorch's and OpenMP's worker threads are not instrumented: one intra-op thread.
        "OMP_NUM_THREADS=1"
        # Instrumented code runs 2-15x slower: QtTest's per-function limit (300 s) too.
        "QTEST_FUNCTION_TIMEOUT=900000")
    if(label STREQUAL "tsan")
        set_property(TEST ${test} APPEND PROPERTY FIXTURES_REQUIRED tsan_reports)
    endif()
    get_test_property(${test} TIMEOUT timeout)
    if(timeout)
        math(EXPR timeout "${timeout} * 3")
        set_property(TEST ${test} PROPERTY TIMEOUT ${timeout})
    endif()
    add_dependencies(sanitize-tests ${target})
endfunction()
