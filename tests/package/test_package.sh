#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The .deb end to end, the way a volunteer and an operator get it: build it with cpack, check it
# with lintian, install it with apt-get on this machine, run both programs' --version, start the
# coordinator with its systemd unit's own command line (as its own account) and a node with the
# user unit's, start the desktop app under Xvfb and look for its window, upgrade to a newer
# build, purge, and check that no installed file is left while the user's data is.
#
#   tests/package/test_package.sh BUILD_DIR
#
# Exit 0: passed; 1: failed; 77: skipped (not root, no apt, a tessera package already installed).
# Everything it installs or creates is removed again, also when it fails (TESSERA_PACKAGE_TEST_KEEP=1
# keeps its work folder for a look).
set -euo pipefail

build=$(cd "${1:?usage: test_package.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
started=$SECONDS
log() { echo "package-test: $*"; }
fail() {
    echo "package-test: FAIL: $*" >&2
    exit 1
}
skip() {
    echo "package-test: SKIP: $*"
    exit 77
}

work=$(mktemp -d "${TMPDIR:-/tmp}/tessera-package-test.XXXXXX")
chmod 0755 "$work" # the coordinator's account reads its state below it
pids=()
installed_here=0
user_existed=1
state_existed=1
export DEBIAN_FRONTEND=noninteractive

cleanup() {
    local rc=$?
    trap - EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    if ((installed_here)); then
        log "cleanup: purging the package"
        apt-get purge -y -qq tessera >/dev/null 2>&1 || dpkg --purge tessera >/dev/null 2>&1 || true
    fi
    ((state_existed)) || rm -rf /var/lib/tessera
    if ! ((user_existed)) && getent passwd tessera >/dev/null; then
        userdel tessera 2>/dev/null || true
        getent group tessera >/dev/null && groupdel tessera 2>/dev/null || true
    fi
    if [[ "${TESSERA_PACKAGE_TEST_KEEP:-0}" == 1 ]]; then
        log "kept $work"
    else
        rm -rf "$work"
    fi
    log "took $((SECONDS - started)) s"
    exit $rc
}
trap cleanup EXIT

# ---- 1. build the .deb -------------------------------------------------------------------
for tool in cpack dpkg-deb dpkg-shlibdeps; do
    command -v $tool >/dev/null || skip "$tool is missing (not a Debian-like system?)"
done
# $1: output folder; further arguments go to cpack (e.g. -D CPACK_PACKAGE_VERSION=...).
build_deb() {
    local out=$1
    shift
    (cd "$build" && cpack -G DEB -B "$out" "$@") >"$out.log" 2>&1 || {
        cat "$out.log"
        fail "cpack could not build the .deb"
    }
    ls "$out"/tessera_*.deb
}
deb=$(build_deb "$work/cpack")
log "built $(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"
dpkg-deb --field "$deb" Package Version Architecture Depends Suggests | sed 's/^/  /'
depends=$(dpkg-deb --field "$deb" Depends)
for dep in libqt6sql6-sqlite qt6-qpa-plugins libopenblas0-pthread libtorch libqt6core6 libqt6network6 libssl3; do
    [[ "$depends" == *"$dep"* ]] || fail "Depends lacks $dep: $depends"
done

dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
expected=(
    /usr/bin/tessera-node /usr/bin/tessera-coordinator
    /usr/share/applications/tessera.desktop /usr/share/tessera/tessera-autostart.desktop
    /usr/share/icons/hicolor/scalable/apps/tessera.svg
    /usr/lib/systemd/system/tessera-coordinator.service /usr/lib/systemd/user/tessera-node.service
    /usr/lib/sysusers.d/tessera.conf /usr/lib/tmpfiles.d/tessera.conf /etc/tessera/coordinator.conf
    /etc/tessera/tessera.ini
    /usr/share/doc/tessera/copyright /usr/share/doc/tessera/changelog.gz
)
for size in 16 22 24 32 48 64 128 256 512; do
    expected+=("/usr/share/icons/hicolor/${size}x${size}/apps/tessera.png")
done
for path in "${expected[@]}"; do
    grep -qx "$path" "$work/contents" || fail "the package lacks $path"
done
# "Start at login" is the user's choice, made in the app: nothing may start for every user.
! grep -q '^/etc/xdg/autostart' "$work/contents" || fail "the package installs a system-wide autostart entry"
has_app=0
grep -qx /usr/bin/tessera "$work/contents" && has_app=1

# ---- 2. lintian --------------------------------------------------------------------------
command -v lintian >/dev/null || fail "lintian is not installed (scripts/install-deps.sh installs it)"
lintian "$deb" >"$work/lintian.log" 2>&1 || true
sed 's/^/  /' "$work/lintian.log"
if grep -q '^E:' "$work/lintian.log"; then
    fail "lintian found errors"
fi
# Each program has its manual page, and the copyright file names the licence (Apache-2.0).
if grep -q 'no-manual-page' "$work/lintian.log"; then
    fail "a program has no manual page"
fi
# (Read whole before grep: grep -q closing the pipe early would kill dpkg-deb under pipefail.)
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/tessera/copyright >"$work/copyright"
grep -q '^License: Apache-2.0$' "$work/copyright" ||
    fail "the package's copyright file does not name the Apache-2.0 licence"
dpkg-deb -c "$deb" >"$work/contents"
for program in tessera tessera-node tessera-coordinator tessera-sim; do
    grep -q "usr/share/man/man1/$program.1.gz" "$work/contents" || fail "no manual page for $program"
done
log "lintian: no errors ($(grep -c '^W:' "$work/lintian.log" || true) warnings)"

# ---- 3. install --------------------------------------------------------------------------
[[ $(id -u) -eq 0 ]] || skip "installing needs root (the package was built and passed lintian)"
command -v apt-get >/dev/null || skip "no apt-get"
status=$(dpkg-query -W -f='${db:Status-Status}' tessera 2>/dev/null || true)
if [[ -n "$status" && "$status" != not-installed ]]; then
    skip "a tessera package is already on this machine ($status); not touching it"
fi
getent passwd tessera >/dev/null || user_existed=0
[[ -e /var/lib/tessera ]] || state_existed=0

log "apt-get install $(basename "$deb")"
installed_here=1
apt-get install -y -qq --no-install-recommends "$deb" >"$work/install.log" 2>&1 || {
    cat "$work/install.log"
    fail "apt-get install failed"
}
dpkg -L tessera | sort >"$work/installed"

/usr/bin/tessera-node --version
/usr/bin/tessera-coordinator --version
[[ "$(/usr/bin/tessera-node --version)" == *"$(dpkg-query -W -f='${Version}' tessera)"* ]] ||
    fail "tessera-node --version does not name the package's version"

# The coordinator's account and state directory, made by postinst through sysusers/tmpfiles.
IFS=: read -r _ _ _ _ _ home shell < <(getent passwd tessera) || fail "postinst made no tessera account"
[[ "$home" == /var/lib/tessera ]] || fail "the tessera account's home is $home"
[[ "$shell" == */nologin ]] || fail "the tessera account can log in ($shell)"
[[ "$(stat -c %U:%a /var/lib/tessera)" == tessera:750 ]] ||
    fail "/var/lib/tessera is $(stat -c %U:%a /var/lib/tessera), want tessera:750"
if command -v desktop-file-validate >/dev/null; then
    desktop-file-validate /usr/share/applications/tessera.desktop || fail "the installed desktop entry is invalid"
fi
if command -v systemd-analyze >/dev/null; then
    for unit in /usr/lib/systemd/system/tessera-coordinator.service /usr/lib/systemd/user/tessera-node.service; do
        systemd-analyze verify "$unit" >"$work/verify.log" 2>&1 || {
            cat "$work/verify.log"
            fail "systemd-analyze verify $unit"
        }
    done
fi

# ---- 4. the coordinator, from its unit ---------------------------------------------------
declare -A env_vars=()
# Reads KEY=VALUE lines as systemd's EnvironmentFile= does (comments, blank lines, quotes).
read_env_file() {
    local line key value
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ "$line" =~ ^[[:space:]]*([#\;].*)?$ ]] && continue
        key=${line%%=*}
        value=${line#*=}
        [[ "$value" =~ ^\"(.*)\"$ || "$value" =~ ^\'(.*)\'$ ]] && value=${BASH_REMATCH[1]}
        env_vars[$key]=$value
    done <"$1"
}
# Environment= and EnvironmentFile= of unit $1 into env_vars (%h is $HOME, as for a user unit).
read_unit_env() {
    local line file
    while IFS= read -r line; do
        case "$line" in
        Environment=*)
            line=${line#Environment=}
            env_vars[${line%%=*}]=${line#*=}
            ;;
        EnvironmentFile=*)
            file=${line#EnvironmentFile=}
            file=${file//%h/$HOME}
            if [[ "$file" == -* ]]; then
                file=${file#-}
                [[ -f "$file" ]] || continue
            fi
            read_env_file "$file"
            ;;
        esac
    done <"$1"
}
# ExecStart= of unit $1 with systemd's expansion, as an array in exec_args: ${X} is one word,
# $X is split at white space.
unit_exec_start() {
    local word name
    exec_args=()
    for word in $(sed -n 's/^ExecStart=//p' "$1"); do
        if [[ "$word" =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$ ]]; then
            exec_args+=("${env_vars[${BASH_REMATCH[1]}]-}")
        elif [[ "$word" =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
            name=${BASH_REMATCH[1]}
            local -a split=()
            read -ra split <<<"${env_vars[$name]-}"
            exec_args+=("${split[@]}")
        else
            exec_args+=("$word")
        fi
    done
    ((${#exec_args[@]})) || fail "$1 has no ExecStart"
}
# Waits up to $2 seconds for `cmd` ($3...) to succeed.
wait_for() {
    local what=$1 seconds=$2
    shift 2
    local deadline=$((SECONDS + seconds))
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

unit=/usr/lib/systemd/system/tessera-coordinator.service
user=$(sed -n 's/^User=//p' "$unit")
[[ "$user" == tessera ]] || fail "the coordinator unit runs as '$user'"
for setting in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes StateDirectory=tessera; do
    grep -qx "$setting" "$unit" || fail "the coordinator unit lacks $setting"
done
read_unit_env "$unit"
env_vars[TESSERA_LISTEN]=127.0.0.1:0 # loopback, a free port
unit_exec_start "$unit"
# The unit's own state directory when this machine had none (so that purge keeping it is
# checked for real); an operator's existing run is never touched: then a temporary one.
state=/var/lib/tessera
if ((state_existed)); then
    state="$work/state"
    install -d -m 0750 -o tessera -g tessera "$state"
    for i in "${!exec_args[@]}"; do
        [[ "${exec_args[$i]}" == --data-dir ]] && exec_args[$((i + 1))]="$state/coordinator"
    done
fi
data_dir=""
for i in "${!exec_args[@]}"; do [[ "${exec_args[$i]}" == --data-dir ]] && data_dir=${exec_args[$((i + 1))]}; done
[[ "$data_dir" == "$state"/* ]] || fail "the unit's --data-dir is '$data_dir', not under $state"
log "coordinator: ${exec_args[*]}"
# As systemd would: its account, no supplementary groups, UMask=0077, in /, a clean environment.
(cd / && umask 0077 && exec setpriv --reuid=tessera --regid=tessera --clear-groups \
    env -i PATH=/usr/bin:/bin HOME=/var/lib/tessera LANG=C.UTF-8 OMP_NUM_THREADS=1 "${exec_args[@]}") \
    >"$work/coordinator.log" 2>&1 &
coordinator=$!
pids+=("$coordinator")
coordinator_url() { grep -q '^ready: ' "$work/coordinator.log" || ! kill -0 "$coordinator" 2>/dev/null; }
wait_for "the coordinator" 300 coordinator_url || true
url=$(sed -n 's/^listening on //p' "$work/coordinator.log" | head -n1)
[[ -n "$url" ]] || {
    cat "$work/coordinator.log"
    fail "the coordinator did not start from its unit's command"
}
log "coordinator listening on $url"
[[ "$(stat -c %U "$data_dir/coordinator.key")" == tessera ]] || fail "the coordinator's key does not belong to tessera"

# ---- 5. a node, from the user unit -------------------------------------------------------
# A fresh user: HOME in the work folder, so ~/.local/share/tessera is the default data dir.
export HOME="$work/home"
unset XDG_DATA_HOME XDG_CONFIG_HOME XDG_RUNTIME_DIR
mkdir -p "$HOME/.config/tessera"
cat >"$HOME/.config/tessera/node.env" <<EOF
TESSERA_COORDINATOR=$url
TESSERA_NODE_OPTS=--coordinator-ca $data_dir/tls.crt --bench-seconds 0.5 --device cpu
EOF
env_vars=()
unit=/usr/lib/systemd/user/tessera-node.service
read_unit_env "$unit"
unit_exec_start "$unit"
log "node: ${exec_args[*]}"
env -i PATH=/usr/bin:/bin HOME="$HOME" LANG=C.UTF-8 OMP_NUM_THREADS=1 "${exec_args[@]}" >"$work/node.log" 2>&1 &
node=$!
pids+=("$node")
node_state() {
    /usr/bin/tessera-node status --json 2>/dev/null | sed -n 's/.*"state": *"\([A-Za-z]*\)".*/\1/p'
}
reached=""
node_working() {
    local s
    s=$(node_state)
    case "$s" in Downloading | Joining | Working) reached=$s ;; esac
    [[ "$s" == Working ]] || ! kill -0 "$node" 2>/dev/null
}
wait_for "the node" 300 node_working || true
if [[ "$reached" != Working ]]; then
    sed 's/^/  node: /' "$work/node.log" | tail -40
    [[ -n "$reached" ]] || fail "the node never reached Downloading"
    log "warning: the node reached $reached, not Working, in 300 s"
fi
log "node: $(/usr/bin/tessera-node status 2>/dev/null | grep -E '^(state|stage):' | paste -sd' ')"
user_data="$HOME/.local/share/tessera/node"
[[ -f "$user_data/node.key" ]] || fail "the node made no key in $user_data"
/usr/bin/tessera-node stop >/dev/null || fail "tessera-node stop"
wait "$node" || fail "the node exited with $? after stop"
kill -TERM "$coordinator"
wait "$coordinator" || fail "the coordinator exited with $? after SIGTERM"
pids=()

# ---- 6. the desktop app under Xvfb -------------------------------------------------------
if ((has_app)); then
    command -v xvfb-run >/dev/null || fail "xvfb-run is not installed"
    command -v xwininfo >/dev/null || fail "xwininfo (x11-utils) is not installed"
    gui_home="$work/gui-home"
    mkdir -p "$gui_home"
    HOME="$gui_home" timeout 180 xvfb-run -a -s "-screen 0 1280x800x24" "$here/app_window.sh" "$work" ||
        fail "the desktop app showed no window under Xvfb"
    log "the app's window appeared: $(cat "$work/window")"
else
    log "SKIPPED the desktop app step: the build has no 'tessera' program yet"
fi

# ---- 7. upgrade: a newer build keeps the data and the operator's configuration -------------
echo "# changed by the package test" >>/etc/tessera/coordinator.conf
new_version="$(dpkg-query -W -f='${Version}' tessera)+upgrade1"
new_deb=$(build_deb "$work/cpack-upgrade" -D CPACK_PACKAGE_VERSION="$new_version")
log "upgrade to $(basename "$new_deb")"
apt-get install -y -qq --no-install-recommends "$new_deb" >"$work/upgrade.log" 2>&1 || {
    cat "$work/upgrade.log"
    fail "the upgrade failed"
}
[[ "$(dpkg-query -W -f='${Version}' tessera)" == "$new_version" ]] || fail "the upgrade did not install $new_version"
grep -q "changed by the package test" /etc/tessera/coordinator.conf || fail "the upgrade overwrote coordinator.conf"
[[ -f "$user_data/node.key" && -f "$user_data/ledger.sqlite" ]] || fail "the upgrade lost the user's data"
[[ -f "$data_dir/coordinator.key" ]] || fail "the upgrade lost the coordinator's run"
dpkg -L tessera | sort >"$work/installed"

# ---- 8. purge: nothing installed is left; the data is -----------------------------------
log "apt-get purge tessera"
apt-get purge -y -qq tessera >"$work/purge.log" 2>&1 || {
    cat "$work/purge.log"
    fail "apt-get purge failed"
}
installed_here=0
left=()
while IFS= read -r path; do
    [[ -e "$path" || -L "$path" ]] || continue
    # A directory that other packages also own (/usr/bin, /usr/share/icons/...) stays.
    [[ -d "$path" && ! -L "$path" ]] && dpkg-query -S "$path" >/dev/null 2>&1 && continue
    left+=("$path")
done <"$work/installed"
((${#left[@]} == 0)) || fail "purge left installed files behind: ${left[*]}"
[[ ! -e /etc/tessera ]] || fail "purge left /etc/tessera"
[[ -f "$user_data/node.key" && -f "$user_data/ledger.sqlite" ]] || fail "purge deleted the user's data and credits"
[[ -f "$data_dir/coordinator.key" ]] || fail "purge deleted the coordinator's run"
log "purged: none of the $(wc -l <"$work/installed") installed paths is left; the user's data ($user_data) and the coordinator's run ($data_dir) are"
log "PASS"
