// SPDX-License-Identifier: Apache-2.0
#include "node/BenchmarkCache.h"

#include "common/Version.h"
#include "device/Benchmark.h"
#include "device/DeviceDiscovery.h"
#include "node/NodeFiles.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QJsonDocument>

namespace tessera::node {

namespace {

const QString kBenchFile = QStringLiteral("bench.json");

} // namespace

Result<HardwareProbe> probeHardware(const QString& device) {
    const gpu::DeviceReport devices = gpu::discoverDevices();
    HardwareProbe p;
    QString driver;
    if (device == u"cpu") {
        p.hardware =
            QJsonObject{{QStringLiteral("device"), device},
                        {QStringLiteral("name"), QString::fromStdString(devices.cpu.model).left(200)},
                        {QStringLiteral("memory_bytes"), qint64(devices.cpu.memoryTotalBytes)}};
    } else {
        bool ok = false;
        const int index = device.startsWith(u"cuda:") ? device.mid(5).toInt(&ok) : -1;
        const gpu::CudaDeviceInfo* found = nullptr;
        for (const gpu::CudaDeviceInfo& d : devices.cudaDevices)
            if (ok && d.index == index)
                found = &d;
        if (!found)
            return makeError("--device " + device.toStdString() + ": no such CUDA device (" +
                             devices.cudaStatus + ")");
        p.hardware = QJsonObject{{QStringLiteral("device"), device},
                                 {QStringLiteral("name"), QString::fromStdString(found->name).left(200)},
                                 {QStringLiteral("memory_bytes"), qint64(found->totalMemoryBytes)}};
        driver = QString::fromStdString(devices.driverVersion + "/" + found->uuid);
    }
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(QJsonDocument(p.hardware).toJson(QJsonDocument::Compact));
    h.addData(driver.toUtf8());
    h.addData(QString::number(devices.cpu.logicalCores).toUtf8());
    h.addData(tesseraVersion().toUtf8());
    p.fingerprint = QString::fromLatin1(h.result().toHex());
    return p;
}

Result<HardwareClaims> benchmarkOrCached(const NodeFiles& files, const QString& device, double seconds) {
    Result<HardwareProbe> probe = probeHardware(device);
    if (!probe)
        return probe.error();
    Result<QJsonObject> cached = files.read(kBenchFile);
    if (cached && cached->value(u"fingerprint").toString() == probe->fingerprint &&
        cached->value(u"bench").isObject())
        return HardwareClaims{probe->hardware, cached->value(u"bench").toObject(), true};

    gpu::BenchOptions options;
    options.devices = {device.toStdString()};
    options.seconds = seconds;
    Result<gpu::BenchReport> report = gpu::runBenchmark(options, gpu::discoverDevices());
    if (!report)
        return report.error();
    const std::optional<gpu::BenchResult> best = report->bestGemm(device.toStdString());
    if (!best || !best->gflops)
        return makeError("the benchmark measured no GEMM throughput on " + device.toStdString());
    QJsonObject bench{{QStringLiteral("gflops"), *best->gflops},
                      {QStringLiteral("dtype"), QString::fromStdString(best->dtype)}};
    for (const gpu::BenchResult& r : report->results)
        if (r.device == device.toStdString() && r.op == "memcpy" && r.gbps)
            bench.insert(QStringLiteral("memory_gbps"), *r.gbps);
    const Status saved = files.write(
        kBenchFile,
        QJsonObject{{QStringLiteral("fingerprint"), probe->fingerprint},
                    {QStringLiteral("hardware"), probe->hardware},
                    {QStringLiteral("bench"), bench},
                    {QStringLiteral("measured_at"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}});
    if (!saved)
        qWarning("node: %s (the benchmark runs again next time)", saved.message().c_str());
    return HardwareClaims{probe->hardware, bench, false};
}

} // namespace tessera::node
