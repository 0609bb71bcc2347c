// SPDX-License-Identifier: Apache-2.0
// Sha256Digest (OpenSSL) gives gpu::Sha256's digests, however the input is split.
#include "base/Sha256.h"
#include "node/shard/Sha256Digest.h"

#include <QRandomGenerator>
#include <QTest>

using tessera::node::Sha256Digest;

class TestSha256Digest final : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void knownAnswer();
    void matchesGpuSha256InAnyPieces();
};

void TestSha256Digest::knownAnswer() {
    Sha256Digest d;
    d.update("abc");
    QCOMPARE(d.finalHex(), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    // finalHex starts over: the empty message next.
    QCOMPARE(d.finalHex(), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
}

void TestSha256Digest::matchesGpuSha256InAnyPieces() {
    QRandomGenerator rng(42);
    for (int length : {0, 1, 55, 56, 63, 64, 65, 1000, 1 << 20}) {
        QByteArray data(length, Qt::Uninitialized);
        for (char& c : data)
            c = char(rng.bounded(256));
        Sha256Digest d;
        for (qsizetype at = 0; at < data.size();) {
            const qsizetype n = qMin<qsizetype>(data.size() - at, rng.bounded(1, 70'000));
            d.update(QByteArrayView(data).sliced(at, n));
            at += n;
        }
        QCOMPARE(d.finalHex(),
                 tessera::gpu::sha256Hex(std::string_view(data.constData(), std::size_t(data.size()))));
    }
}

QTEST_GUILESS_MAIN(TestSha256Digest)
#include "test_sha256_digest.moc"
