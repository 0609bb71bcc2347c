#!/usr/bin/env bash
# The main job on this machine: a local coordinator (tiny model, SQLite in demo/coordinator)
# and this machine contributing to it with one node per pipeline stage, so every stage is
# held. Where there is a display, the first node is the desktop app's: the tray app (its
# dashboard open) supervises it and pauses it when a game or a full-screen window appears; the
# other stages' nodes run headless. Prints the swarm's status every few seconds; Ctrl-C stops
# everything cleanly.
#
#   scripts/demo.sh [BUILD_DIR] [STAGES]        TESSERA_DEMO_HEADLESS=1: no app even with a display
set -euo pipefail
build=${1:-build}
stages=${2:-2}
bin="$build/bin"
root=${TESSERA_DEMO_DIR:-demo}
mkdir -p "$root"
log="$root/coordinator.log"

pids=()
cleanup() {
    trap - INT TERM EXIT
    echo
    echo "stopping the nodes and the coordinator..."
    for ((s = 0; s < stages; s++)); do "$bin/tessera-node" stop --data-dir "$root/node-$s" >/dev/null 2>&1 || true; done
    sleep 1
    # The app (when it runs) stops its own node when it quits.
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

# A new run: the tiny model in $stages stages with the subspace codec between them; an existing
# demo run is resumed as it is.
run_args=(--model tiny --stages "$stages" --codec subspace)
[[ -f "$root/coordinator/run.json" ]] && run_args=()
"$bin/tessera-coordinator" --data-dir "$root/coordinator" --listen 127.0.0.1:0 "${run_args[@]}" \
    --credit-interval-ms 10000 >"$log" 2>&1 &
pids+=($!)
url=""
for _ in $(seq 1 600); do
    url=$(sed -n 's/^listening on //p' "$log" | head -n1)
    [[ -n "$url" ]] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.2
done
[[ -n "$url" ]] || { echo "the coordinator did not start; see $log"; exit 1; }
grep -E "^(tessera-coordinator|TLS SHA-256|coordinator key)" "$log" || true
echo "coordinator: $url (status page: $url/ — its certificate is $root/coordinator/tls.crt)"

# One compute thread per node: the nodes share this machine's cores.
export OMP_NUM_THREADS=1
first=0
if [[ -z "${TESSERA_DEMO_HEADLESS:-}" && ( -n "${DISPLAY:-}" || -n "${WAYLAND_DISPLAY:-}" ) && -x "$bin/tessera" ]]; then
    # The app's own settings file for the demo: this coordinator, node-0's data dir, contributing.
    ini="$root/app/tessera.ini"
    mkdir -p "$root/app"
    abs() { realpath -m "$1"; }
    cat >"$ini" <<INI
[contribute]
coordinator=$url
coordinator_ca=$(abs "$root/coordinator/tls.crt")
data_dir=$(abs "$root/node-0")
gpu_limit_percent=70
node_program=$(abs "$bin/tessera-node")

[app]
first_run_done=true
contributing=true
INI
    "$bin/tessera" --settings "$ini" --show dashboard 2>"$root/app.log" &
    pids+=($!)
    first=1
    echo "the desktop app runs node-0 (its dashboard is open; the tray icon has its menu)"
fi
for ((s = first; s < stages; s++)); do
    "$bin/tessera-node" run --coordinator "$url" --data-dir "$root/node-$s" \
        --coordinator-ca "$root/coordinator/tls.crt" --gpu-limit 70 2>"$root/node-$s.log" &
    pids+=($!)
done
echo "started $stages nodes (logs: $root/node-*.log); Ctrl-C to stop"
while true; do
    sleep 5
    echo "--- $(date +%T)"
    for ((s = 0; s < stages; s++)); do
        "$bin/tessera-node" status --data-dir "$root/node-$s" 2>/dev/null | grep -E "^(state|stage|download|compute|tasks|credits):" |
            paste -sd' ' | sed "s/^/node-$s  /; s/  */ /g" || echo "node-$s  (starting)"
    done
    status=$(curl -s --cacert "$root/coordinator/tls.crt" "$url/v1/status" || true)
    # Keys come sorted, so the last "step" is the top-level one (stages[] hold theirs before it).
    field() { sed -n "s/.*\"$1\":\([-0-9.e+]*\).*/\1/p" <<<"$status"; }
    printf 'swarm  step %s  loss %s  %s tokens/s  microbatches %s completed, %s abandoned, %s in flight\n' \
        "$(field step)" "$(field loss | cut -c1-6)" "$(field tokens_per_second | cut -d. -f1)" \
        "$(field completed)" "$(field abandoned)" "$(field in_flight)"
done
