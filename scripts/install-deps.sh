#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages Tessera needs to build, test and run. Idempotent: it asks apt
# only for what is missing, so a second run costs a second.
set -euo pipefail

packages=(
    # toolchain
    build-essential cmake ninja-build ccache pkg-config git clang-format
    # Qt 6 (libqt6opengl6-dev: Qt6Charts' CMake package needs Qt6OpenGL)
    qt6-base-dev qt6-httpserver-dev qt6-websockets-dev qt6-charts-dev libqt6opengl6-dev
    # Qt Linguist's lupdate and lrelease: the app's translations (translations/*.ts)
    qt6-tools-dev qt6-l10n-tools
    libqt6sql6-sqlite libqt6sql6-psql
    # LibTorch (CPU) and a fast BLAS under it: with Debian's reference BLAS, LibTorch's
    # matmul is ~27x slower. libopenblas-dev gives the benchmarks cblas.h.
    libtorch-dev libopenblas0-pthread libopenblas-dev
    # crypto and storage
    libssl-dev libsqlite3-dev
    # the data tool's tokenizer (tessera-data: byte-pair encoding trained by SentencePiece)
    libsentencepiece-dev
    # a PostgreSQL server the coordinator tests start for themselves (they skip without it)
    postgresql
    # the real HTTP client the coordinator's HTTP server is tested against
    curl
    # the CLI the TLS tests make an operator's CA and certificates with (and check signatures)
    openssl
    # GUI tests and the tray app on a machine without a display
    xvfb xauth
    # the coordinator's operator page rendered by a real browser (core.test_operator_page: headless
    # Chromium; the test skips without it)
    chromium
    # the desktop app's pause rules: X11 (full-screen windows, idle time via the screen-saver
    # extension; XTest lets a test fake input), and a private D-Bus for the UPower test
    libx11-dev libxss-dev libxtst-dev dbus-daemon
    # the package: icons rendered from the SVG, the desktop entry validated, the .deb checked
    # (tests/package: lintian, and xwininfo to see the installed app's window)
    librsvg2-bin desktop-file-utils lintian x11-utils
    # the fault tests: a process's wall clock stepped back while it runs (libfaketime), and
    # util-linux's unshare for the disk-full tests' tmpfs where they do not run as root
    faketime util-linux
)
# `install-deps.sh --bench` (make bench) adds what only the benchmarks use: gnuplot for the
# plots, tint2 (a tray host for the idle desktop app), the King James Bible as text, and the web server bench_coordinator measures shard downloads against (bench_coordinator
# runs its own nginx on a loopback port; the system service is stopped and disabled again).
bench=0
[ "${1:-}" = "--bench" ] && bench=1
# bible-kjv: real text the small preset's learning run trains on (scripts/text-run.sh).
((bench)) && packages+=(gnuplot-nox nginx-light tint2 bible-kjv)
# `install-deps.sh --sanitize` (make sanitize, tsan, fuzz): clang and its sanitizer and libFuzzer runtimes.
[ "${1:-}" = "--sanitize" ] && packages+=(clang libclang-rt-dev)

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    echo "install-deps: this is not a Debian-like system; install the equivalents of: ${packages[*]}" >&2
    exit 1
fi

missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
        sudo=sudo
    fi
    echo "install-deps: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# LibTorch loads libblas.so.3 through Debian's alternatives: it must be OpenBLAS.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
blas=$(readlink -f "/usr/lib/$arch/libblas.so.3" 2>/dev/null || true)
case "$blas" in
*openblas*) ;;
*)
    echo "install-deps: warning: libblas.so.3 is $blas, not OpenBLAS; LibTorch will be very slow." >&2
    echo "  fix: sudo update-alternatives --set libblas.so.3-$arch /usr/lib/$arch/openblas-pthread/libblas.so.3" >&2
    ;;
esac

if ((bench)) && command -v systemctl >/dev/null && systemctl is-enabled --quiet nginx 2>/dev/null; then
    systemctl disable --now nginx >/dev/null 2>&1 || true
fi
