# SPDX-License-Identifier: Apache-2.0
# The README's two commands:
#   make demo   install what is missing, build, and run the main job on this machine
#   make test   install what is missing, build, and run every test
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_ARGS ?=

.PHONY: all deps configure build build-demo test demo bench format format-check clean package sanitize tsan fuzz

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

# Everything the tests run: the programs, the libraries and the tests (benchmarks are not part of it).
build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only what the demo runs: the coordinator, the node and the desktop app.
DEMO_TARGETS = tessera-coordinator tessera-node tessera
build-demo: configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target $(DEMO_TARGETS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# The main job: a local coordinator (tiny model, SQLite) and this machine contributing to it,
# one node per stage (headless until the desktop app lands). Ctrl-C stops it.
demo: build-demo
	scripts/demo.sh $(BUILD_DIR)

# Side-by-side measurements recorded in BENCHMARKS.md (not part of the tests; the learning
# comparison takes ~25 minutes on 2 cores and writes its CSVs and plot to build/bench-learning;
# the swarm comparison ~12.5 minutes; the desktop app's ~8 minutes, under Xvfb; the small preset on
# the King James Bible ~50 minutes; one coordinator's capacity ~10 minutes and 20 GB of 8b shards the
# first time, kept in build/bench-capacity-8b; the first table of dishonest nodes with every attack on the
# 8b path too ~12 minutes).
bench: build
	@scripts/install-deps.sh --bench
	cmake --build $(BUILD_DIR) -j $(JOBS) --target benchmarks
	$(BUILD_DIR)/bin/bench_cpu_gemm
	$(BUILD_DIR)/bin/bench_stage_model
	$(BUILD_DIR)/bin/bench_codec
	$(BUILD_DIR)/bin/bench_coordinator
	$(BUILD_DIR)/bin/bench_activation_leg
	$(BUILD_DIR)/bin/bench_node_engine
	$(BUILD_DIR)/bin/bench_node
	$(BUILD_DIR)/bin/bench_swarm 150 60 "" 1234
	$(BUILD_DIR)/bin/bench_trust
	$(BUILD_DIR)/bin/bench_trust 60 "" 4
	$(BUILD_DIR)/bin/bench_trust 60 "" 5
	TESSERA_TEST_EVERY_TWIN=1 QTEST_FUNCTION_TIMEOUT=3000000 $(BUILD_DIR)/bin/test_dishonest_nodes aLiarIsCaughtBannedAndUnpaid
	$(BUILD_DIR)/bin/bench_abuse 6 60
	xvfb-run -a -s "-screen 0 1280x720x24 -noreset" $(BUILD_DIR)/bin/bench_app
	$(BUILD_DIR)/bin/bench_gradient_exchange
	$(BUILD_DIR)/bin/bench_sparta
	$(BUILD_DIR)/bin/bench_seeded_init
	$(BUILD_DIR)/bin/bench_memory_plan $(BUILD_DIR)/bench-8b-stage 3 256
	$(BUILD_DIR)/bin/bench_coordinator_start tiny,small
	$(BUILD_DIR)/bin/bench_capacity 8b 60 $(BUILD_DIR)/bench-capacity-8b 320
	$(BUILD_DIR)/bin/bench_reclaim 8b 3 2 $(BUILD_DIR)/bench-reclaim-8b
	$(BUILD_DIR)/bin/bench_learning 400 $(BUILD_DIR)/bench-learning
	$(BUILD_DIR)/bin/bench_learning 2000 $(BUILD_DIR)/bench-learning-long long
	scripts/text-run.sh $(BUILD_DIR) $(BUILD_DIR)/text-run 100 2
	BUILD_DIR=$(BUILD_DIR) scripts/small-reexecution-run.sh $(BUILD_DIR)/small-reexecution 30

# Instrumented builds, each in its own folder, of chosen targets only (cmake/TesseraSanitize.cmake,
# tests/sanitize/selection.cmake), -O1 -g. CI runs `make sanitize` after `make test`.
#   make sanitize  ASan + UBSan (clang): the fuzz corpora's replays and the tests of the parsers,
#                  protocol, HTTP server and gpu/base (label asan)
#   make tsan      ThreadSanitizer (gcc): the node's engine and control threads, the app's supervision
#                  of a real node (label tsan; CI runs it after make sanitize; gpu/ from ccache)
#   make fuzz      libFuzzer (clang): every tests/fuzz target for FUZZ_SECONDS each (FUZZ_JOBS at a
#                  time), growing a working corpus in build-fuzz/corpus/<target>, outside the tree;
#                  fuzz_codec_decode, which clang cannot build, is mutated by its gcc ASan build
# Debian's clang 14 cannot compile LibTorch's headers as C++20: what needs them is built with gcc
# (twice slower than clang under ASan, hence clang wherever it can).
# (-O1 -g come from cmake/TesseraSanitize.cmake, after Release's -O3.)
SANITIZE_FLAGS = -G Ninja -DCMAKE_BUILD_TYPE=Release
CLANG = -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
GCC = -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
FUZZ_TARGETS ?= $(notdir $(basename $(wildcard tests/fuzz/corpus/*)))

sanitize:
	@scripts/install-deps.sh --sanitize
	cmake -S . -B build-asan $(SANITIZE_FLAGS) $(CLANG) -DTESSERA_SANITIZE=address
	cmake --build build-asan -j $(JOBS) --target sanitize-tests
	ctest --test-dir build-asan --output-on-failure -j $(JOBS) -L asan $(CTEST_ARGS)

tsan:
	@scripts/install-deps.sh --sanitize
	cmake -S . -B build-tsan $(SANITIZE_FLAGS) $(GCC) -DTESSERA_SANITIZE=thread
	cmake --build build-tsan -j $(JOBS) --target sanitize-tests
	ctest --test-dir build-tsan --output-on-failure -L tsan $(CTEST_ARGS)

fuzz:
	@scripts/install-deps.sh --sanitize
	cmake -S . -B build-fuzz $(SANITIZE_FLAGS) $(CLANG) -DTESSERA_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS) --target fuzz-targets
	cmake -S . -B build-fuzz-gcc $(SANITIZE_FLAGS) $(GCC) -DTESSERA_SANITIZE=address
	cmake --build build-fuzz-gcc -j $(JOBS) --target fuzz_codec_decode
	FUZZ_JOBS=$(FUZZ_JOBS) scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The installable package, from a full build: $(BUILD_DIR)/tessera_<version>_<arch>.deb on Debian
# (NSIS on Windows, a disk image on macOS; those two are configured but untested).
package: build
	cmake --build $(BUILD_DIR) --target package

format: configure
	cmake --build $(BUILD_DIR) --target format

format-check: configure
	cmake --build $(BUILD_DIR) --target format-check

clean:
	rm -rf $(BUILD_DIR) build-asan build-tsan build-fuzz build-fuzz-gcc
