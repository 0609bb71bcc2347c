#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Screenshots of the desktop app for docs/screenshots/, on a 1280 × 720 screen: the first-run
# wizard asking to trust a self-signed coordinator (in English and in Russian), then while the
# model's part downloads, the tray menu, the dashboard of a contributing node, paused for a game,
# and after the coordinator went away, and the settings; then at 150 % scaling (QT_SCALE_FACTOR)
# the wizard, the settings and the dashboard of a node waiting for volunteers on another stage.
#
# Runs everything for real on a virtual X display: Xvfb, tint2 as the panel and tray host, a
# window manager if one is installed, a local coordinator (tiny model, one stage) and the app on
# a settings file of its own, whose node trains and earns credits in a few minutes.
#
#   scripts/screenshots.sh [BUILD_DIR]     (default: build-ui; needs tessera, tessera-node and
#                                           tessera-coordinator built there)
# Needs: Xvfb, tint2, xdotool, ImageMagick (import, convert), x11-utils (xdpyinfo, xwininfo).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build-ui}" && pwd)
out=$root/docs/screenshots
bin=$build/bin
for tool in Xvfb tint2 xdotool import convert xdpyinfo xwininfo; do
    command -v "$tool" > /dev/null || { echo "screenshots: $tool is missing" >&2; exit 1; }
done
for program in tessera tessera-node tessera-coordinator; do
    [[ -x $bin/$program ]] || { echo "screenshots: build $program first ($bin)" >&2; exit 1; }
done

work=$(mktemp -d)
pids=() # everything started here, in order
apps=() # the app's processes among them
cleanup() {
    # The apps first: SIGTERM is their Quit, which stops their node before they exit.
    for pid in "${apps[@]}"; do kill "$pid" 2> /dev/null || true; done
    for pid in "${apps[@]}"; do
        for ((i = 0; i < 60; i++)); do
            kill -0 "$pid" 2> /dev/null || break
            sleep 0.25
        done
    done
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2> /dev/null || true; done
    wait 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Waits until a command succeeds, at most $1 seconds.
wait_for() {
    local seconds=$1
    shift
    for ((i = 0; i < seconds * 4; i++)); do
        if "$@" > /dev/null 2>&1; then return 0; fi
        sleep 0.25
    done
    echo "screenshots: timed out waiting for: $*" >&2
    return 1
}

node_state() {
    "$bin/tessera-node" status --json --data-dir "$work/node" 2> /dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin).get("state", ""))'
}
node_is() { [[ $(node_state) == "$1" ]]; }

# Captures one window (by its id) into docs/screenshots/NAME.png.
capture_id() {
    local id=$1 name=$2
    import -window "$id" "$work/$name.png"
    convert "$work/$name.png" -strip "PNG8:$out/$name.png"
    echo "screenshots: $out/$name.png"
}
# Captures one window (by its title).
capture() {
    local title=$1 name=$2 id
    id=$(xdotool search --onlyvisible --name "^$title\$" | head -1)
    [[ -n $id ]] || { echo "screenshots: no window '$title'" >&2; return 1; }
    capture_id "$id" "$name"
}
# The window of one app (by its pid) with this title.
window_of() { xdotool search --all --onlyvisible --pid "$1" --name "^$2\$" 2> /dev/null | head -1; }

# --- the desktop -------------------------------------------------------------------------------
Xvfb -displayfd 3 -screen 0 1280x720x24 -nolisten tcp 3> "$work/display" 2> "$work/xvfb.log" &
pids+=($!)
wait_for 20 test -s "$work/display"
export DISPLAY=:$(cat "$work/display")
wait_for 20 xdpyinfo
read -r width height < <(xdpyinfo | sed -n 's/.*dimensions: *\([0-9]*\)x\([0-9]*\).*/\1 \2/p')
# A desktop's colour rather than black behind the windows and the menu.
convert -size "${width}x${height}" gradient:'#5b7a99-#34495e' "$work/desktop.png"
display -window root "$work/desktop.png" || true # sets the background, then exits 1
for wm in openbox fluxbox icewm xfwm4 twm; do
    if command -v "$wm" > /dev/null; then
        "$wm" > /dev/null 2>&1 &
        pids+=($!)
        break
    fi
done
# The panel: a taskbar that takes the room, then the tray and a clock at the right end. The
# background comes first: tint2 reads the file in order.
cat > "$work/tint2rc" << 'TINT2'
rounded = 0
border_width = 0
background_color = #2b2f36 100
border_color = #2b2f36 100

panel_items = TSC
panel_position = bottom center horizontal
panel_size = 100% 32
panel_padding = 8 0 8
panel_background_id = 1
taskbar_background_id = 0
systray_padding = 6 4 6
systray_icon_size = 24
systray_background_id = 0
time1_format = %H:%M
time1_font = sans 10
clock_font_color = #e6e6e6 100
clock_padding = 4 0
clock_background_id = 0
TINT2
tint2 -c "$work/tint2rc" < /dev/null > "$work/tint2.log" 2>&1 &
pids+=($!)
# tint2 takes a while on its first start (fonts); the app's tray icon needs its systray up.
wait_for 90 xdotool search --onlyvisible --class Tint2

# --- a swarm of one: a coordinator and the app's node ------------------------------------------
"$bin/tessera-coordinator" --data-dir "$work/run" --listen 127.0.0.1:0 --model tiny --stages 1 \
    --microbatches-per-step 2 --credit-interval-ms 5000 --credit-escrow-ms 10000 > "$work/coordinator.out" 2>&1 &
coordinator=$!
pids+=($coordinator)
wait_for 120 grep -q "^ready: " "$work/coordinator.out"
url=$(sed -n 's/.*listening on \(\S*\).*/\1/p' "$work/coordinator.out" | head -1)

# The node as the app starts it, plus a short benchmark, a slow download (so the wizard is seen
# at it) and a quick credits poll; the settings' NodeProgram points here.
printf '#!/bin/sh\nexec "%s" "$@" --bench-seconds 1 --max-download-rate 96 --credits-poll-ms 2000\n' \
    "$bin/tessera-node" > "$work/node.sh"
chmod +x "$work/node.sh"
# A "game" in the pause rules: a program named supergame pauses the node while it runs.
cp "$(command -v sleep)" "$work/supergame"
printf '[contribute]\ncoordinator=%s\ncoordinator_ca=%s\ndata_dir=%s\nnode_program=%s\n[pause]\nexclusive_apps=supergame\n' \
    "$url" "$work/run/tls.crt" "$work/node" "$work/node.sh" > "$work/tessera.ini"

# Clicks at x, y inside a window (without a window manager, keys do not reach Qt's windows).
click_in() {
    local X Y WIDTH HEIGHT SCREEN WINDOW
    eval "$(xdotool getwindowgeometry --shell "$1")"
    xdotool mousemove $((X + $2)) $((Y + $3)) click 1
}
window_named() { xdotool search --onlyvisible --name "^$1\$" | head -1; }
has_window() { [[ -n $(window_named "$1") ]]; }

# --- the wizard: a self-signed coordinator met for the first time -------------------------------
cd "$work"
start_wizard() {
    "$bin/tessera" --settings "$work/tessera.ini" > "$work/app.log" 2>&1 &
    pids+=($!)
    apps+=($!)
    wait_for 30 has_window "Welcome to Tessera"
    wizard=$(window_named "Welcome to Tessera")
    xdotool windowmove "$wizard" 360 120
    sleep 0.5
}
contribute() {
    eval "$(xdotool getwindowgeometry --shell "$wizard" | grep -E '^(WIDTH|HEIGHT)=')"
    click_in "$wizard" $((WIDTH - 113)) $((HEIGHT - 57)) # Contribute, at the bottom right
}
# Without the certificate file: the wizard shows the fingerprint and asks.
grep -v '^coordinator_ca=' "$work/tessera.ini" > "$work/first.ini"
cp "$work/tessera.ini" "$work/trusted.ini"
cp "$work/first.ini" "$work/tessera.ini"
start_wizard
contribute
sleep 3
capture "Welcome to Tessera" wizard-trust
kill "${apps[-1]}"
wait "${apps[-1]}" 2> /dev/null || true
# The same in Russian (the system's language decides; the window's title is translated too).
LANGUAGE=ru LANG=ru_RU.UTF-8 "$bin/tessera" --settings "$work/tessera.ini" > "$work/app-ru.log" 2>&1 &
pids+=($!)
apps+=($!)
wait_for 30 xdotool search --onlyvisible --pid "${apps[-1]}"
wizard=$(xdotool search --onlyvisible --pid "${apps[-1]}" | head -1)
xdotool windowmove "$wizard" 360 120
sleep 0.5
contribute
sleep 3
import -window "$wizard" "$work/wizard-trust-ru.png"
convert "$work/wizard-trust-ru.png" -strip "PNG8:$out/wizard-trust-ru.png"
echo "screenshots: $out/wizard-trust-ru.png"
kill "${apps[-1]}"
wait "${apps[-1]}" 2> /dev/null || true
# --- the wizard, during the download (the certificate trusted) -----------------------------------
cp "$work/trusted.ini" "$work/tessera.ini"
start_wizard
contribute
wait_for 120 node_is Downloading
sleep 8 # some of the download done, its speed known
capture "Welcome to Tessera" wizard
wait_for 300 node_is Working
sleep 2
click_in "$wizard" $((WIDTH - 73)) $((HEIGHT - 57)) # Close

# --- the tray menu -------------------------------------------------------------------------------
sleep 20 # a few steps trained, the first receipts in
icon=""
for id in $(xdotool search --onlyvisible --class tessera); do
    xwininfo -id "$id" | grep -q 'Width: 24$' && icon=$id
done
[[ -n $icon ]] || { echo "screenshots: no tray icon" >&2; exit 1; }
eval "$(xdotool getwindowgeometry --shell "$icon")"
xdotool mousemove $((X + 12)) $((Y + 12)) click 3
sleep 1
menu=""
for id in $(xdotool search --onlyvisible --class tessera); do
    info=$(xwininfo -id "$id")
    w=$(sed -n 's/.*Width: *\([0-9]*\)/\1/p' <<< "$info")
    h=$(sed -n 's/.*Height: *\([0-9]*\)/\1/p' <<< "$info")
    if ((w > 100 && w < 500 && h > 60 && h < 500)); then menu=$id; fi
done
[[ -n $menu ]] || { echo "screenshots: the tray menu did not open" >&2; exit 1; }
eval "$(xdotool getwindowgeometry --shell "$menu")"
left=$((X - 24))
top=$((Y - 24))
import -window root -crop "$((width - left))x$((height - top))+$left+$top" "$work/tray.png"
convert "$work/tray.png" +repage -strip "PNG8:$out/tray-menu.png"
echo "screenshots: $out/tray-menu.png"
xdotool key Escape

# --- the dashboard: a second start of the app shows the first one's -------------------------------
sleep 20
"$bin/tessera" --settings "$work/tessera.ini"
wait_for 20 has_window "Tessera"
sleep 3
capture "Tessera" dashboard

# --- the settings, from a second app on settings of its own (it starts no node) -----------------
printf '[app]\nfirst_run_done=true\n[contribute]\ncoordinator=%s\n' "$url" > "$work/settings.ini"
"$bin/tessera" --settings "$work/settings.ini" --show settings > "$work/settings-app.log" 2>&1 &
pids+=($!)
apps+=($!)
wait_for 20 has_window "Tessera Settings"
sleep 1
click_in "$(window_named "Tessera Settings")" 140 24 # the "When to pause" tab
sleep 1
capture "Tessera Settings" settings
kill "${apps[-1]}" # it would stand in front of the next pictures
wait "${apps[-1]}" 2> /dev/null || true

# --- paused for a game, then the coordinator gone ------------------------------------------------
"$work/supergame" 600 &
game=$!
pids+=($game)
sleep 6
capture "Tessera" dashboard-paused
kill "$game"
wait_for 120 node_is Working
sleep 8
kill "$coordinator"
sleep 10
capture "Tessera" dashboard-lost-contact

# --- at 150 %: a second coordinator of two stages, where this computer holds one alone ----------
for pid in "${apps[@]}"; do kill "$pid" 2> /dev/null || true; done # their windows would be behind
for pid in "${apps[@]}"; do wait "$pid" 2> /dev/null || true; done
"$bin/tessera-coordinator" --data-dir "$work/run2" --listen 127.0.0.1:0 --model tiny --stages 2 \
    > "$work/coordinator2.out" 2>&1 &
pids+=($!)
wait_for 120 grep -q "^ready: " "$work/coordinator2.out"
url2=$(sed -n 's/.*listening on \(\S*\).*/\1/p' "$work/coordinator2.out" | head -1)
export QT_SCALE_FACTOR=1.5
# The wizard on a fresh settings file: the second coordinator's certificate is unknown.
printf '[contribute]\ncoordinator=%s\ndata_dir=%s\nnode_program=%s\n' "$url2" "$work/node4" "$work/node.sh" \
    > "$work/first150.ini"
"$bin/tessera" --settings "$work/first150.ini" > "$work/app-first150.log" 2>&1 &
pids+=($!)
apps+=($!)
wait_for 30 window_of "${apps[-1]}" "Welcome to Tessera"
wizard=$(window_of "${apps[-1]}" "Welcome to Tessera")
xdotool windowmove "$wizard" 40 20
sleep 1
eval "$(xdotool getwindowgeometry --shell "$wizard" | grep -E '^(WIDTH|HEIGHT)=')"
click_in "$wizard" $((WIDTH - 170)) $((HEIGHT - 86)) # Contribute, at 150 %
sleep 3
capture_id "$wizard" wizard-trust-150
kill "${apps[-1]}"
wait "${apps[-1]}" 2> /dev/null || true
# The settings (a settings file of its own: another app).
cp "$work/settings.ini" "$work/settings150.ini"
"$bin/tessera" --settings "$work/settings150.ini" --show settings > "$work/settings150.log" 2>&1 &
pids+=($!)
apps+=($!)
wait_for 20 window_of "${apps[-1]}" "Tessera Settings"
sleep 2
capture_id "$(window_of "${apps[-1]}" "Tessera Settings")" settings-150
kill "${apps[-1]}" || true
wait "${apps[-1]}" 2> /dev/null || true
# A node that joined stage 1 of 2 while nobody holds stage 2.
printf '[app]\nfirst_run_done=true\ncontributing=true\n[contribute]\ncoordinator=%s\ncoordinator_ca=%s\ndata_dir=%s\nnode_program=%s\n' \
    "$url2" "$work/run2/tls.crt" "$work/node3" "$work/node.sh" > "$work/waiting.ini"
"$bin/tessera" --settings "$work/waiting.ini" --show dashboard > "$work/waiting.log" 2>&1 &
pids+=($!)
apps+=($!)
node3_is() {
    [[ $("$bin/tessera-node" status --json --data-dir "$work/node3" 2> /dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin).get("state", ""))') == "$1" ]]
}
wait_for 300 node3_is Working
sleep 35 # no task comes: the app says why
capture_id "$(window_of "${apps[-1]}" "Tessera")" dashboard-waiting-150
