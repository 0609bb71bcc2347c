#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The TSan build's report files (TSAN_OPTIONS log_path, cmake/TesseraSanitize.cmake): every
# process a tsan test runs, its children included, writes its reports as DIR/report.PID.
#   tsan-reports.sh clear DIR   empties DIR (before the first tsan test)
#   tsan-reports.sh check DIR   prints every report and fails when there is any (after the last)
set -eu
dir=$2
case $1 in
clear)
    rm -rf "$dir"
    mkdir -p "$dir"
    ;;
check)
    set -- "$dir"/report.*
    [ -e "$1" ] || { echo "no ThreadSanitizer report in $dir"; exit 0; }
    cat "$@"
    echo "ThreadSanitizer reports from $# processes (files in $dir)"
    exit 1
    ;;
*)
    echo "usage: $0 clear|check DIR" >&2
    exit 2
    ;;
esac
