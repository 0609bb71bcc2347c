// SPDX-License-Identifier: Apache-2.0
#pragma once
// ProcessStats: what /proc says about another process, for the benchmarks that measure one.

#include <QtGlobal>

// utime + stime of a process, in seconds; -1 when it cannot be read.
double processCpuSeconds(qint64 pid);
// Its resident memory in MiB; -1 when it cannot be read.
double processRssMiB(qint64 pid);
