#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device check, for a session lent a GPU machine (issue 19 item 5), in one run of a few minutes:
# build gpu/ alone (-DTESSERA_GPU_ONLY=ON, no Qt) against that machine's PyTorch LibTorch, then
#   1. test_cuda_backend        our CUDA module: cuBLAS GEMM per dtype and the copy kernels vs the CPU
#   2. test_stage_engine_cuda   StageEngine on cuda:0 vs the CPU engine (tiny): fp32 parity, bf16 learns,
#                               shards cross devices, the codec on the device speaks the CPU's frames
#   3. tessera-gpu-bench        the node's benchmark on the device (cuBLAS bf16 GEMM rate)
#   4. a PyTorch bf16 matmul    the device's achievable peak, the MFU's yardstick
#   5. bench_codec ... cuda:0   the boundary codec on the device against the stage's bf16 compute
#      bench_seeded_init        the seeded weights on 1 thread and on every core (what engine creation waits for)
#   6. bench_memory_plan        one 8b stage (3, then 6) forward + backward in bf16 and an AdamW step
#                               with 8-bit moments: time, tokens/s, MFU, device memory beside the plan
#   7. the rest of gpu/'s tests, if time is left (the whole suite against this LibTorch)
# Logs go to ${OUT:-/tmp/tessera-gpu} (gpu-check.log, bench.json); the build to ${BUILD:-/tmp/tessera-gpu-build}.
# Each step has its own time limit; a failed step is reported and the next one runs. Exit status:
# the number of failed steps.
set -uo pipefail
out=${OUT:-/tmp/tessera-gpu}
build=${BUILD:-/tmp/tessera-gpu-build}
budget=${GPU_CHECK_SECONDS:-500} # optional steps start only while this much of the run is not spent
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1
start=$SECONDS
failed=0
step() { # step NAME SECONDS COMMAND...: run with a limit, report, count failures
    local name=$1 limit=$2
    shift 2
    echo "=== $name (t=$((SECONDS - start)) s, limit ${limit} s)"
    timeout "$limit" "$@"
    local rc=$?
    [ $rc -eq 0 ] || { echo "=== $name FAILED (exit $rc)"; failed=$((failed + 1)); }
    return $rc
}
left() { echo $((budget - (SECONDS - start))); }
test_program() { # test_program NAME SECONDS: a gpu/ test; where it crashes, its backtrace (cuda-gdb runs host code too)
    step "$1" "$2" "$bin/$1" && return 0
    local rc=$?
    if [ $rc -ge 128 ] && [ $rc -ne 137 ] && command -v cuda-gdb >/dev/null; then
        timeout 90 cuda-gdb -q -batch -ex run -ex "bt 25" "$bin/$1" 2>&1 | grep -v '^\[New Thread\|^\[Thread' | tail -45
    fi
    return $rc
}

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
# TORCH_PREFIX: another LibTorch (an official download unpacked beside the project, or Debian's to try
# the script on a CPU machine); else the one of python3's PyTorch.
prefix=${TORCH_PREFIX:-$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)} ||
    { echo "no PyTorch: set TORCH_PREFIX to a LibTorch"; exit 1; }
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cxx11abi", torch.compiled_with_cxx11_abi())' ||
    true
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
echo "nvcc: ${nvcc:-none}; $(c++ --version | head -1); $(nproc) cores"

if command -v ninja >/dev/null; then generator=Ninja keep=(-k 0); else generator='Unix Makefiles' keep=(-k); fi
step configure 120 cmake -S . -B "$build" -G "$generator" \
    -DCMAKE_BUILD_TYPE=Release -DTESSERA_GPU_ONLY=ON -DCMAKE_PREFIX_PATH="$prefix" \
    ${nvcc:+-DCMAKE_CUDA_COMPILER=$nvcc} -DCMAKE_CUDA_ARCHITECTURES=90-real || exit 1
# What the checks need first; the rest of the suite after them, if time is left.
first=(tessera_cuda test_cuda_backend test_stage_engine_cuda test_safetensors tessera-gpu-bench bench_codec
    bench_seeded_init bench_memory_plan)
step build 300 cmake --build "$build" -j "$(nproc)" --target "${first[@]}" -- "${keep[@]}"
bin=$build/bin

# A LibTorch that exports a static libstdc++'s std::filesystem (pytorch#133437) makes the build link
# libstdc++ statically (cmake/TesseraBuildOptions.cmake): what this one exports, and whether a test program
# holds its own std::filesystem::remove_all (T) or takes it from a library (U).
torch_lib=$(dirname "$(find "$prefix/../.." -name 'libtorch_cpu.so' 2>/dev/null | head -1)")
echo "std::filesystem symbols libtorch_cpu exports: $(nm -D --defined-only "$torch_lib/libtorch_cpu.so" 2>/dev/null |
    grep -c 'St10filesystem')"
nm -C "$bin/test_safetensors" 2>/dev/null | grep ' std::filesystem::remove_all(std::filesystem::__cxx11::path const&, std::error_code&)' |
    head -1
test_program test_cuda_backend 60
test_program test_safetensors 60
test_program test_stage_engine_cuda 150
step gpu-bench 60 "$bin/tessera-gpu-bench" --check --device cuda:0 --seconds 5 --json >"$out/bench.json"
cat "$out/bench.json" 2>/dev/null | head -c 4000
echo
step torch-peak 60 python3 - <<'EOF'
import time, torch
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(10):
    a @ b
torch.cuda.synchronize()
print(f"torch bf16 {n}^3 matmul: {10 * 2 * n**3 / (time.perf_counter() - t) / 1e12:.0f} TFLOP/s "
      f"({torch.cuda.get_device_name()})")
EOF
step bench_codec 120 "$bin/bench_codec" 4096 1 128256 cuda:0
step bench_seeded_init 60 "$bin/bench_seeded_init"
# 989 TFLOP/s: the H100/H200 SXM's dense bf16 peak as NVIDIA states it; the torch figure above is
# what a large matmul reaches.
peak=${PEAK_TFLOPS:-989}
step "bench_memory_plan stage 3" 240 "$bin/bench_memory_plan" - 3 4096 cuda:0 "$peak"
[ "$(left)" -gt 100 ] && step "bench_memory_plan stage 6" 180 "$bin/bench_memory_plan" - 6 4096 cuda:0 "$peak"

if [ "$(left)" -gt 60 ]; then
    step "build the rest" "$(left)" cmake --build "$build" -j "$(nproc)" -- "${keep[@]}"
    # Two intra-op threads a test: eight tests at once on 16 cores without OpenMP spinning over each other.
    [ "$(left)" -gt 20 ] && OMP_NUM_THREADS=2 step "gpu tests" "$(left)" ctest --test-dir "$build" -L gpu -j 8 \
        --timeout 120 --output-on-failure
fi
echo "=== done in $((SECONDS - start)) s, $failed step(s) failed"
exit $failed
