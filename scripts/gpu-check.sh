#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The device check, for a session lent a GPU machine: build gpu/ alone (-DTESSERA_GPU_ONLY=ON,
# no Qt) against that machine's PyTorch LibTorch, run the gpu/ tests (every CUDA kernel
# against its CPU twin) and the benchmark. Writes everything under ${OUT:-/tmp/tessera-gpu}.
set -uo pipefail
out=${OUT:-/tmp/tessera-gpu}
mkdir -p "$out"
exec > >(tee "$out/gpu-check.log") 2>&1

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv || true
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || { echo "no PyTorch"; exit 1; }
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
echo "nvcc: ${nvcc:-none}"

build=$out/build
cmake -S . -B "$build" -G "$(command -v ninja >/dev/null && echo Ninja || echo 'Unix Makefiles')" \
    -DCMAKE_BUILD_TYPE=Release -DTESSERA_GPU_ONLY=ON -DCMAKE_PREFIX_PATH="$prefix" \
    ${nvcc:+-DCMAKE_CUDA_COMPILER=$nvcc} -DCMAKE_CUDA_ARCHITECTURES=90-real || exit 1
cmake --build "$build" -j "$(nproc)" || exit 1
ctest --test-dir "$build" --output-on-failure -j 4
"$build/bin/test_cuda_backend"
"$build/bin/tessera-gpu-bench" --check --device cuda:0 --seconds 20 --json > "$out/bench.json"
"$build/bin/tessera-gpu-bench" --device cuda:0 --seconds 20 | tee "$out/bench.txt"
# An 8b stage as a 24 GB GPU would hold it (issue 19): bf16 over fp32 masters, AdamW's moments in 8
# bits, recomputed a block at a time — its time, tokens/s and the device memory's peak beside the plan.
for stage in 3 6; do
    "$build/bin/bench_memory_plan" "$out/stage" "$stage" 4096 cuda:0 | tee -a "$out/memory-plan.txt"
done
rm -rf "$out/stage"
