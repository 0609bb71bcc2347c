// SPDX-License-Identifier: Apache-2.0
// Mailbox: work posted from other threads runs on the mailbox's thread, in the order posted, with
// what it captured intact; call() waits for it; a mailbox destroyed first drops what waits, and
// work that deletes the mailbox ends the batch. Run under ThreadSanitizer too (make tsan): the
// hand-offs here are exactly what TSan must see as ordered.
#include "common/Mailbox.h"

#include <QCoreApplication>
#include <QTest>
#include <QThread>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using namespace tessera;

class TestMailbox final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void workFromManyThreadsRunsOnTheMailboxThreadInOrder() {
        Mailbox box;
        std::vector<std::vector<int>> seen(4); // by sender: what ran, in order (only this thread writes)
        std::vector<std::thread> senders;
        for (int t = 0; t < 4; ++t)
            senders.emplace_back([&, t] {
                for (int i = 0; i < 500; ++i) {
                    std::vector<int> data(64, t * 1000 + i); // read on the other side
                    box.post([&, t, i, data = std::move(data)] {
                        QCOMPARE(QThread::currentThread(), box.thread());
                        QCOMPARE(data.size(), std::size_t(64));
                        QCOMPARE(data.back(), t * 1000 + i);
                        seen[t].push_back(i);
                    });
                }
            });
        for (std::thread& s : senders)
            s.join();
        QTRY_COMPARE(seen[0].size() + seen[1].size() + seen[2].size() + seen[3].size(), std::size_t(2000));
        for (const std::vector<int>& s : seen)
            for (int i = 0; i < 500; ++i)
                QCOMPARE(s[std::size_t(i)], i);
    }

    void callRunsOnTheOtherThreadAndWaits() {
        QThread thread;
        Mailbox box;
        box.moveToThread(&thread);
        thread.start();
        QString result; // written there, read here after call() returns
        QThread* ranOn = nullptr;
        box.call([&] {
            ranOn = QThread::currentThread();
            result = QStringLiteral("computed on the mailbox's thread");
        });
        QCOMPARE(ranOn, &thread);
        QCOMPARE(result, QStringLiteral("computed on the mailbox's thread"));
        thread.quit();
        thread.wait();
    }

    void aDestroyedMailboxDropsWhatWaits() {
        auto counted = std::make_shared<int>(0);
        bool ran = false;
        {
            Mailbox box;
            box.post([&ran, counted] { ran = true; });
            QCOMPARE(counted.use_count(), 2L);
        }                                  // destroyed before the event loop ran
        QCOMPARE(counted.use_count(), 1L); // the functor and its captures are gone
        QCoreApplication::processEvents();
        QVERIFY(!ran);
    }

    void workThatDeletesTheMailboxEndsTheBatch() {
        auto* box = new Mailbox;
        int ran = 0;
        box->post([&] {
            ++ran;
            delete box;
        });
        box->post([&] { ++ran; }); // would use the deleted owner's state
        QTRY_COMPARE(ran, 1);
        QTest::qWait(50);
        QCOMPARE(ran, 1);
    }
};

QTEST_GUILESS_MAIN(TestMailbox)
#include "test_mailbox.moc"
