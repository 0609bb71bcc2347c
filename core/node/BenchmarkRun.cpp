// SPDX-License-Identifier: Apache-2.0
// BenchmarkRun: benchmarkOrCached on its own thread, its answer back on the node's.
#include "node/BenchmarkRun.h"

#include <QThread>

namespace tessera::node {

BenchmarkRun::BenchmarkRun(NodeFiles files, QString device, double seconds, QObject* parent)
    : QObject(parent)
    , m_files(std::move(files))
    , m_device(std::move(device))
    , m_seconds(seconds)
    , m_link(std::make_shared<Link>()) {
    m_link->replies = &m_replies;
}

BenchmarkRun::~BenchmarkRun() {
    // The thread may still be measuring: its answer, when it comes, goes nowhere.
    const std::lock_guard lock(m_link->mutex);
    m_link->replies = nullptr;
}

void BenchmarkRun::start() {
    m_clock.start();
    QThread* thread = QThread::create([this, link = m_link, files = m_files, device = m_device,
                                       seconds = m_seconds] {
        Result<HardwareClaims> claims = benchmarkOrCached(files, device, seconds);
        const std::lock_guard lock(link->mutex);
        if (!link->replies)
            return;
        link->replies->post([this, claims = std::move(claims)] {
            if (m_stopped)
                return;
            if (!claims)
                return Q_EMIT failed(QString::fromStdString(claims.message()));
            m_claims = *claims;
            m_done = true;
            qInfo("node: %s %s: %.1f GFLOP/s %s%s", qPrintable(m_claims.hardware.value(u"device").toString()),
                  qPrintable(m_claims.hardware.value(u"name").toString()),
                  m_claims.bench.value(u"gflops").toDouble(),
                  qPrintable(m_claims.bench.value(u"dtype").toString()),
                  m_claims.fromCache ? " (cached benchmark)" : "");
            Q_EMIT finished(m_claims);
        });
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
}

QJsonObject BenchmarkRun::status() const {
    QJsonObject s{{QStringLiteral("budget_s"), m_seconds},
                  {QStringLiteral("elapsed_s"), m_clock.isValid() ? double(m_clock.elapsed()) / 1000 : 0.0}};
    if (m_done) {
        s.insert(QStringLiteral("device"), m_claims.hardware.value(u"device"));
        s.insert(QStringLiteral("name"), m_claims.hardware.value(u"name"));
        s.insert(QStringLiteral("tflops"), m_claims.bench.value(u"gflops").toDouble() / 1000);
        s.insert(QStringLiteral("dtype"), m_claims.bench.value(u"dtype"));
        s.insert(QStringLiteral("elapsed_s"), m_seconds);
    }
    return s;
}

} // namespace tessera::node
