// SPDX-License-Identifier: Apache-2.0
#pragma once
// ThreadPriority: background work that yields the CPU to serving. A coordinator preparing a run
// writes gigabytes of seeded weights on every core while it answers nodes and operators; those
// threads must not starve its event loop, nor another process on the machine. QThread::LowPriority
// does nothing for Linux's default policy (Qt maps it to a SCHED_OTHER priority, which is always 0),
// so this lowers the thread's nice value instead; threads it starts afterwards inherit it.

namespace tessera {

// Gives the calling thread a background share of the CPU (nice 10 on Linux: about a tenth of a core
// beside one busy thread at the default priority, all of an idle one). Elsewhere: nothing. It cannot
// be undone by an unprivileged process, so call it only on a thread made for background work.
void makeThisThreadBackground();

} // namespace tessera
