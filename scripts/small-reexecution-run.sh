#!/bin/bash
# The re-execution path on the small preset (issue 41): a real coordinator, two stages, two nodes a stage,
# --recompute-limit 0 (nothing recomputed whole on the coordinator), one compute thread a node.
set -u
B=${BUILD_DIR:-build}/bin; D=${1:-/tmp/small-run}; STEPS=${2:-30}; PORT=${PORT:-18443}
rm -rf "$D"; mkdir -p "$D"
OMP_NUM_THREADS=1 "$B/tessera-coordinator" --data-dir "$D/c" --listen 127.0.0.1:$PORT --model small --stages 2 \
  --batch 1 --seq 64 --microbatches-per-step 4 --recompute-limit 0 --max-nodes-per-stage 2 \
  --credit-interval-ms 1000 --max-steps "$STEPS" >"$D/coordinator.log" 2>&1 &
CP=$!
for i in $(seq 1 120); do [ -s "$D/c/tls.crt" ] && curl -s --cacert "$D/c/tls.crt" https://127.0.0.1:$PORT/v1/info >/dev/null && break; sleep 1; done
for n in 1 2 3 4; do
  OMP_NUM_THREADS=1 "$B/tessera-node" run --coordinator https://127.0.0.1:$PORT --data-dir "$D/n$n" \
    --coordinator-ca "$D/c/tls.crt" --bench-seconds 0.5 --gpu-limit 100 >"$D/node-$n.log" 2>&1 &
  sleep 3
done
start=$(date +%s)
while :; do
  s=$(curl -s --cacert "$D/c/tls.crt" https://127.0.0.1:$PORT/v1/status)
  step=$(echo "$s" | python3 -c 'import sys,json; print(json.load(sys.stdin).get("step",0))' 2>/dev/null || echo 0)
  [ "$step" -ge "$STEPS" ] && break
  [ $(( $(date +%s) - start )) -gt 1500 ] && { echo "timed out at step $step"; break; }
  sleep 10
done
echo "$s" | python3 -c '
import sys, json
s = json.load(sys.stdin)
t = s.get("trust", {})
print("step", s.get("step"), "loss", s.get("loss"))
print("reexecution", json.dumps(t.get("reexecution")))
print("shares", json.dumps(t.get("shares")))
print("weights", json.dumps(t.get("weights")))
print("audits", t.get("audits"), "recompute_limit", t.get("recompute_limit"))
print("nodes per stage", [ (st.get("nodes"), st.get("ghosts")) for st in s.get("stages", []) ] if isinstance(s.get("stages"), list) else "")
'
echo "elapsed $(( $(date +%s) - start )) s after the nodes started"
grep -h "struck\|convicted\|banned" "$D/coordinator.log" | head -5
kill $CP; sleep 2; pkill -f "tessera-node run --coordinator https://127.0.0.1:$PORT"; wait 2>/dev/null
