#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
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
    # "ready": a new run's initial weights are written; nodes started earlier would wait to be admitted.
    grep -q '^ready: ' "$log" && url=$(sed -n 's/^listening on //p' "$log" | head -n1)
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
    # The demo's coordinator as a package would offer it (AppSettings' packaged defaults), and
    # the app's own settings file: node-0's data dir and program. A first demo walks the real
    # first run: the wizard, pre-filled with this coordinator, checks it, shows its certificate's
    # fingerprint (compare it with "TLS SHA-256" above) and asks to trust it. What the user
    # chose there (the pinned certificate, contributing) is kept for the next demo.
    mkdir -p "$root/app"
    abs() { realpath -m "$1"; }
    ini="$root/app/tessera.ini"
    defaults="$root/app/defaults.ini"
    printf '[contribute]\ncoordinator=%s\n' "$url" >"$defaults"
    kept() { [[ -f "$ini" ]] && sed -n "s/^$1=//p" "$ini" | head -n1; }
    ca=$(kept coordinator_ca || true)
    done_before=$(kept first_run_done || true)
    contributing=$(kept contributing || true)
    {
        printf '[contribute]\n'
        [[ -n "$ca" ]] && printf 'coordinator_ca=%s\n' "$ca"
        printf 'data_dir=%s\ngpu_limit_percent=70\nnode_program=%s\n\n' "$(abs "$root/node-0")" "$(abs "$bin/tessera-node")"
        printf '[app]\nfirst_run_done=%s\ncontributing=%s\n' "${done_before:-false}" "${contributing:-false}"
    } >"$ini"
    show=(--show dashboard)
    if [[ "${done_before:-false}" != true ]]; then
        show=()
        echo "the desktop app opens its first-run window: click Contribute, compare the fingerprint"
        echo "it shows with the coordinator's (TLS SHA-256 above) and trust it"
    fi
    TESSERA_APP_DEFAULTS=$(abs "$defaults") "$bin/tessera" --settings "$ini" "${show[@]}" 2>"$root/app.log" &
    pids+=($!)
    first=1
    echo "the desktop app runs node-0 (the tray icon has its menu)"
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
