#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs tests/fuzz's libFuzzer programs (make fuzz builds them): each target for SECONDS, FUZZ_JOBS
# targets at a time (default 1), starting from its seed corpus and growing a working corpus outside
# the tree. Prints one line per target (executions, coverage, corpus size, crashes) for BENCHMARKS.md.
#
#   scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]        (no target: every one)
#
# BUILD_DIR/corpus/<target>   the working corpus (kept between runs: a second run starts where the
#                             first stopped). To keep a new input in the tree, copy it to
#                             tests/fuzz/corpus/<target>/ under a name that says what it is.
# BUILD_DIR/crashes/<target>  crash-*, timeout-*, leak-*, oom-* inputs (libFuzzer's artifacts), or
#                             mutate-crash for a target mutated without libFuzzer (see FuzzMain.cpp)
# BUILD_DIR/fuzz-logs/<target>.log
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}
seconds=${2:?usage: scripts/fuzz.sh BUILD_DIR SECONDS [TARGET...]}
shift 2
targets=("$@")
if ((${#targets[@]} == 0)); then
    for d in tests/fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi
supp=$(pwd)/tests/sanitize

run_one() {
    local target=$1 build=$2 seconds=$3 supp=$4
    local program=$build/bin/fuzz_$target
    local work=$build/corpus/$target crashes=$build/crashes/$target log=$build/fuzz-logs/$target.log
    mkdir -p "$work" "$crashes" "$(dirname "$log")"
    # A dictionary of the format's tokens: the target's own, or JSON's for the targets that read JSON.
    local dict=()
    case $target in
    admission | control_messages | credits_page | model_config | session_messages | shard_manifest)
        dict=(-dict=tests/fuzz/json.dict) ;;
    esac
    [ -f "tests/fuzz/$target.dict" ] && dict=(-dict="tests/fuzz/$target.dict")
    export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
    export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
    local runs cov ft files found
    if [ ! -x "$program" ] && [ -x "$build-gcc/bin/fuzz_$target" ]; then
        # No libFuzzer build (fuzz_codec_decode: clang cannot compile LibTorch's headers): the gcc
        # ASan + UBSan replay runner (BUILD_DIR-gcc) mutates the corpus at random, without coverage.
        local corpus gcc
        corpus=$(pwd)/tests/fuzz/corpus/$target
        gcc=$(pwd)/$build-gcc/bin/fuzz_$target
        (cd "$crashes" && exec "$gcc" -mutate="$seconds" "$corpus") >"$log" 2>&1 || true
        runs=$(grep -o 'mutate: [0-9]* inputs' "$log" | grep -o '[0-9]*')
        printf '| %-16s | %10s | %6s | %6s | %6s | %s |\n' "$target" "${runs:-crashed}" - - - \
            "$(find "$crashes" -type f | wc -l) (random mutation, gcc ASan)"
        return
    fi
    # -timeout: an input that takes 10 s is a hang; -rss_limit_mb: a parser that allocates 2 GiB
    # for a small input is a bug too. Leaks are reported (LeakSanitizer), third-party ones suppressed.
    "$program" "$work" "tests/fuzz/corpus/$target" "${dict[@]}" -max_total_time="$seconds" \
        -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$crashes/" >"$log" 2>&1 || true
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
    files=$(find "$work" -type f | wc -l)
    found=$(find "$crashes" -type f | wc -l)
    printf '| %-16s | %10s | %6s | %6s | %6s | %s |\n' "$target" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$files" "$found"
}
export -f run_one

echo "fuzzing ${#targets[@]} targets for ${seconds}s each, ${FUZZ_JOBS:-1} at a time (logs: $build/fuzz-logs)"
printf '| %-16s | %10s | %6s | %6s | %6s | %s |\n' target executions cov ft corpus "crashes"
printf '|%s|\n' "------------------|------------|--------|--------|--------|--------"
printf '%s\n' "${targets[@]}" | xargs -P "${FUZZ_JOBS:-1}" -I{} bash -c 'run_one "$@"' _ {} "$build" "$seconds" "$supp"

if [ -n "$(find "$build/crashes" -type f 2>/dev/null)" ]; then
    echo "fuzz: inputs that crashed, hung or leaked:" >&2
    find "$build/crashes" -type f >&2
    exit 1
fi
