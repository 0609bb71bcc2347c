#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run inside a display (xvfb-run) by test_package.sh: starts the installed app the way its menu
# entry does and passes when a viewable window whose name holds "Tessera" (the first-run wizard,
# the dashboard) appears within 60 s.
#
#   app_window.sh OUT_DIR     (writes OUT_DIR/app.log and OUT_DIR/window)
out=$1
# Without USER the app's single-instance lock is named after this (fresh) HOME rather than the
# user: a Tessera already running for this user elsewhere on the machine would answer instead.
unset USER USERNAME
QT_QPA_PLATFORM=xcb /usr/bin/tessera >"$out/app.log" 2>&1 &
app=$!

# xwininfo -tree lists unmapped windows too: only a viewable one counts.
viewable_window() {
    local id
    for id in $(xwininfo -root -tree 2>/dev/null | sed -n 's/^ *\(0x[0-9a-f]*\) "[^"]*Tessera[^"]*".*/\1/p'); do
        if xwininfo -id "$id" 2>/dev/null | grep -q 'Map State: IsViewable'; then
            xwininfo -id "$id" | sed -n 's/^xwininfo: Window id: //p' >"$out/window"
            return 0
        fi
    done
    return 1
}

for _ in $(seq 1 120); do
    if viewable_window; then
        kill -TERM $app
        wait $app 2>/dev/null
        exit 0
    fi
    kill -0 $app 2>/dev/null || {
        echo "the app exited:"
        cat "$out/app.log"
        exit 1
    }
    sleep 0.5
done
echo "no Tessera window in 60 s; the windows:"
xwininfo -root -tree
cat "$out/app.log"
kill -TERM $app
exit 1
