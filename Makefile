# The README's two commands:
#   make demo   install what is missing, build, and run the main job on this machine
#   make test   install what is missing, build, and run every test
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_ARGS ?=

.PHONY: all deps configure build test demo bench format format-check clean package

all: build

deps:
	@scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# The main job: a local coordinator (tiny model, SQLite) and this machine contributing to it,
# one node per stage (headless until the desktop app lands). Ctrl-C stops it.
demo: build
	scripts/demo.sh $(BUILD_DIR)

# Side-by-side measurements recorded in BENCHMARKS.md (not part of the tests; the learning
# comparison takes ~25 minutes on 2 cores and writes its CSVs and plot to build/bench-learning;
# the swarm comparison ~12.5 minutes; the desktop app's ~8 minutes, under Xvfb).
bench: build
	@scripts/install-deps.sh --bench
	$(BUILD_DIR)/bin/bench_cpu_gemm
	$(BUILD_DIR)/bin/bench_stage_model
	$(BUILD_DIR)/bin/bench_codec
	$(BUILD_DIR)/bin/bench_coordinator
	$(BUILD_DIR)/bin/bench_activation_leg
	$(BUILD_DIR)/bin/bench_node_engine
	$(BUILD_DIR)/bin/bench_node
	$(BUILD_DIR)/bin/bench_swarm 150 60 "" 1234
	$(BUILD_DIR)/bin/bench_trust
	$(BUILD_DIR)/bin/bench_abuse 6 60
	xvfb-run -a -s "-screen 0 1280x720x24 -noreset" $(BUILD_DIR)/bin/bench_app
	$(BUILD_DIR)/bin/bench_gradient_exchange
	$(BUILD_DIR)/bin/bench_learning 400 $(BUILD_DIR)/bench-learning
	$(BUILD_DIR)/bin/bench_learning 2000 $(BUILD_DIR)/bench-learning-long long

# The installable package, from a full build: $(BUILD_DIR)/tessera_<version>_<arch>.deb on Debian
# (NSIS on Windows, a disk image on macOS; those two are configured but untested).
package: build
	cmake --build $(BUILD_DIR) --target package

format: configure
	cmake --build $(BUILD_DIR) --target format

format-check: configure
	cmake --build $(BUILD_DIR) --target format-check

clean:
	rm -rf $(BUILD_DIR)
