// SPDX-License-Identifier: Apache-2.0
// Mailbox: a mutex-guarded queue of functors, drained by a queued call that carries nothing.
#include "common/Mailbox.h"

#include <QMetaObject>
#include <QPointer>
#include <QThread>

#include <condition_variable>

namespace tessera {

Mailbox::Mailbox(QObject* parent)
    : QObject(parent) {}

Mailbox::~Mailbox() {
    std::deque<std::function<void()>> dropped;
    const std::lock_guard lock(m_mutex);
    dropped.swap(m_waiting);
}

void Mailbox::post(std::function<void()> fn) {
    // The wake-up is posted under the lock too: posting reads this object (its meta-object), and
    // the destructor takes the lock, so TSan sees every post ordered before the mailbox goes.
    const std::lock_guard lock(m_mutex);
    m_waiting.push_back(std::move(fn));
    if (!m_drainPosted)
        QMetaObject::invokeMethod(this, "drain", Qt::QueuedConnection);
    m_drainPosted = true;
}

void Mailbox::call(const std::function<void()>& fn) {
    Q_ASSERT(thread() != QThread::currentThread());
    std::mutex mutex;
    std::condition_variable ran;
    bool done = false;
    post([&] {
        fn();
        const std::lock_guard lock(mutex);
        done = true;
        ran.notify_all();
    });
    std::unique_lock lock(mutex);
    ran.wait(lock, [&] { return done; });
}

void Mailbox::drain() {
    std::deque<std::function<void()>> batch;
    {
        const std::lock_guard lock(m_mutex);
        batch.swap(m_waiting);
        m_drainPosted = false;
    }
    // What runs may post again (a later drain takes it) or, through its owner, delete this mailbox:
    // the rest of the batch is then dropped unrun, as Qt drops a deleted object's events.
    const QPointer<Mailbox> alive(this);
    for (std::function<void()>& fn : batch) {
        if (!alive)
            return;
        fn();
    }
}

} // namespace tessera
