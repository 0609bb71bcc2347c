// SPDX-License-Identifier: Apache-2.0
#pragma once
// Mailbox: work handed to the thread a QObject lives on, in a way ThreadSanitizer can see.
//
// post() may be called from any thread; what it is given runs on the mailbox's thread, in the
// order posted, from that thread's event loop. The functor and everything it captured pass
// through a std::mutex; Qt's event queue carries only a call of drain() by name, with no
// arguments. A queued lambda or a queued signal's arguments would be written by our code on one
// thread and read on the other with Qt's own, uninstrumented, locking in between, which TSan
// reports as a race (make tsan): every hand-off between the node's threads, and the
// coordinator's audit thread, goes through a Mailbox instead.
//
// A mailbox's thread is where it lives: a child moves with its parent (moveToThread). Destroying
// it drops what is still waiting, unrun (on the destroying thread).

#include <QObject>

#include <deque>
#include <functional>
#include <mutex>

namespace tessera {

class Mailbox final : public QObject {
    Q_OBJECT

public:
    explicit Mailbox(QObject* parent = nullptr);
    ~Mailbox() override;

    // Any thread: runs fn on this mailbox's thread, after everything posted before it.
    void post(std::function<void()> fn);
    // From another thread than the mailbox's: posts fn and waits until it has run. The mailbox's
    // thread must be running its event loop, and the mailbox must outlive the call.
    void call(const std::function<void()>& fn);

private:
    Q_INVOKABLE void drain();

    std::mutex m_mutex;
    std::deque<std::function<void()>> m_waiting; // under m_mutex
    bool m_drainPosted = false;                  // under m_mutex: a drain() is on its way
};

} // namespace tessera
