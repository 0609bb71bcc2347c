#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The small preset learning real text: the King James Bible (Debian's bible-kjv) through a
# 32,000-token BPE tokenizer (tessera-data), trained in the simulator; prints the held-out loss and
# perplexity as it goes. usage: scripts/text-run.sh BUILD_DIR OUT_DIR [STEPS] [STAGES]
# (make bench runs it; ~30 s a step of 2,048 tokens on one core of the 2-core machine.)
set -euo pipefail
build=${1:?usage: text-run.sh BUILD_DIR OUT_DIR [STEPS] [STAGES]}
out=${2:?usage: text-run.sh BUILD_DIR OUT_DIR [STEPS] [STAGES]}
steps=${3:-100}
stages=${4:-2}
command -v bible >/dev/null || { echo "text-run: the bible program is missing (apt install bible-kjv)" >&2; exit 1; }
mkdir -p "$out"
[ -s "$out/kjv.txt" ] || bible -l0 gen1:1-rev22:21 >"$out/kjv.txt"
[ -f "$out/kjv/manifest.json" ] || "$build/bin/tessera-data" build --out "$out/kjv" "$out/kjv.txt"
"$build/bin/tessera-data" check "$out/kjv"
# 4 microbatches x 4 sequences x 128 tokens a step; AdamW 1e-3 (3e-3, tiny's, is too high at 124 M).
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$build/bin/tessera-sim" --preset small --stages "$stages" --replicas 1 \
    --data "dataset:$out/kjv" --steps "$steps" --microbatches 4 --batch 4 --seq 128 --lr 1e-3 \
    --warmup-steps 10 --eval-every 10 --csv "$out/small-kjv.csv" | tee "$out/small-kjv.txt"
awk -F, 'NR > 1 && $4 != "" { printf "step %5s  tokens %8s  held-out loss %.4f  perplexity %8.1f\n", $1, $2, $4, exp($4) }' \
    "$out/small-kjv.csv"
