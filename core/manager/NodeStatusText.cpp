// SPDX-License-Identifier: Apache-2.0
#include "manager/NodeStatusText.h"

#include <QJsonArray>
#include <QLocale>

#include <algorithm>
#include <cmath>

namespace tessera::manager {

using namespace Qt::StringLiterals;

QString NodeStatusText::tflops(double value) {
    if (value >= 10)
        return QString::number(std::lround(value));
    if (value >= 1)
        return QString::number(value, 'f', 1);
    // Two significant digits: "0.15", "0.042".
    return QString::number(value, 'g', 2);
}

QString NodeStatusText::credits(double value) {
    const QLocale locale;
    if (value <= 0)
        return locale.toString(0);
    if (value < 0.01) // two significant digits; receipts are exact to a millionth
        return locale.toString(value, 'f', std::min(6, 1 - int(std::floor(std::log10(value)))));
    return locale.toString(value, 'f', value < 100 ? 2 : 0);
}

QString NodeStatusText::duration(double seconds) {
    const qint64 s = std::max<qint64>(1, std::llround(std::ceil(seconds)));
    if (s < 60)
        return s == 1 ? tr("1 second") : tr("%1 seconds").arg(s);
    const qint64 minutes = (s + 59) / 60;
    if (minutes < 90)
        return minutes == 1 ? tr("1 minute") : tr("%1 minutes").arg(minutes);
    const qint64 hours = (minutes + 30) / 60;
    return tr("%1 hours").arg(hours);
}

QString NodeStatusText::megabytes(double bytes) {
    const double mb = bytes / 1e6;
    return tr("%1 MB").arg(mb >= 100 ? QString::number(std::lround(mb)) : QString::number(mb, 'f', 1));
}

QString NodeStatusText::benchmark(const QJsonObject& status) {
    const QJsonObject b = status.value(u"benchmark").toObject();
    const double tf = b.value(u"tflops").toDouble(-1);
    if (tf < 0)
        return {};
    // The node says which device it measured ("cpu", "cuda:0") and the device's own name; an
    // older status had only the name, under "device", and the kind in its device setting.
    QString kind = b.value(u"device").toString();
    QString name = b.value(u"name").toString();
    const auto isKind = [](const QString& d) { return d.startsWith(u"cpu") || d.startsWith(u"cuda"); };
    if (name.isEmpty() && !isKind(kind)) {
        name = kind;
        kind = status.value(u"device").toString();
    }
    const QString dtype = b.value(u"dtype").toString(u"fp32"_s);
    const bool cpu = kind.startsWith(u"cpu", Qt::CaseInsensitive);
    QString device;
    if (name.isEmpty())
        device = cpu ? tr("Your CPU") : tr("Your graphics card");
    else
        device = cpu ? tr("Your CPU (%1)").arg(name) : tr("Your %1").arg(name);
    return tr("%1: about %2 TFLOP/s in %3").arg(device, tflops(tf), dtype);
}

bool NodeStatusText::onCpu(const QJsonObject& status) {
    const QString measured = status.value(u"benchmark").toObject().value(u"device").toString();
    const QString device = measured.startsWith(u"cpu") || measured.startsWith(u"cuda")
                               ? measured
                               : status.value(u"device").toString();
    return device.startsWith(u"cpu", Qt::CaseInsensitive);
}

QString NodeStatusText::cpuFallback(const QJsonObject& status, const QString& deviceSetting) {
    if (!deviceSetting.isEmpty() || status.value(u"benchmark").toObject().value(u"tflops").toDouble(-1) < 0 ||
        !onCpu(status))
        return {};
    return tr("No NVIDIA GPU found — contributing with the CPU");
}

double NodeStatusText::benchmarkProgress(const QJsonObject& status) {
    const QJsonObject b = status.value(u"benchmark").toObject();
    const double budget = b.value(u"budget_s").toDouble();
    if (b.contains(u"tflops"))
        return 1;
    if (budget <= 0)
        return -1;
    return std::clamp(b.value(u"elapsed_s").toDouble() / budget, 0.0, 1.0);
}

int NodeStatusText::stageCount(const QJsonObject& status, const QJsonObject& swarm) {
    if (const int n = status.value(u"stages").toInt(); n > 0)
        return n;
    if (const QJsonValue v = swarm.value(u"stages"); v.isArray())
        return int(v.toArray().size());
    return 0;
}

int NodeStatusText::emptyStage(const QJsonObject& swarm, int mine) {
    for (const QJsonValue& v : swarm.value(u"stages").toArray()) {
        const QJsonObject stage = v.toObject();
        const int number = stage.value(u"stage").toInt(-1);
        if (number >= 0 && number != mine && stage.value(u"nodes_online").toInt(1) == 0)
            return number;
    }
    return -1;
}

QString NodeStatusText::stage(const QJsonObject& status, const QJsonObject& swarm) {
    const int stage = status.value(u"stage").toInt(-1);
    if (stage < 0)
        return {};
    const int count = stageCount(status, swarm);
    if (count <= 0)
        return tr("You hold stage %1 of the model").arg(stage + 1);
    return tr("You hold stage %1 of %2 of the model").arg(stage + 1).arg(count);
}

int NodeStatusText::preparingPercent(const QJsonObject& swarm) {
    if (swarm.value(u"state").toString() != u"preparing")
        return -1;
    return int(swarm.value(u"preparing").toObject().value(u"percent").toDouble());
}

QString NodeStatusText::waitlist(const QJsonObject& status, const QJsonObject& swarm) {
    const double retry = status.value(u"retry_in_s").toDouble(-1);
    if (const int percent = preparingPercent(swarm); percent >= 0) {
        if (retry < 0)
            return tr("The coordinator is still preparing the model (%1% ready). Tessera will try again by "
                      "itself — you can close this window.")
                .arg(percent);
        return tr("The coordinator is still preparing the model (%1% ready). Tessera will try again in %2 — "
                  "you "
                  "can close this window.")
            .arg(QString::number(percent), duration(retry));
    }
    if (retry < 0)
        return tr(
            "The swarm is full right now. Tessera will try again by itself — you can close this window.");
    return tr("The swarm is full right now. Tessera will try again in %1 — you can close this window.")
        .arg(duration(retry));
}

QString NodeStatusText::download(const QJsonObject& status) {
    const QJsonObject d = status.value(u"download").toObject();
    const double total = d.value(u"total").toDouble();
    const double bytes = d.value(u"bytes").toDouble();
    if (total <= 0)
        return tr("Asking for the model's part…");
    QString text = tr("%1 of %2").arg(megabytes(bytes), megabytes(total));
    if (const double rate = d.value(u"bytes_per_second").toDouble(); rate > 0)
        text += u" · "_s + tr("%1/s").arg(megabytes(rate));
    if (const double eta = d.value(u"eta_s").toDouble(-1); eta > 0 && bytes < total)
        text += u" · "_s + tr("about %1 left").arg(duration(eta));
    return text;
}

double NodeStatusText::downloadProgress(const QJsonObject& status) {
    const QJsonObject d = status.value(u"download").toObject();
    const double total = d.value(u"total").toDouble();
    if (total <= 0)
        return -1;
    return std::clamp(d.value(u"bytes").toDouble() / total, 0.0, 1.0);
}

QString NodeStatusText::refusalAdvice(protocol::RefusalKind why) {
    switch (why) {
    case protocol::RefusalKind::CoordinatorKeyChanged:
        return tr("The coordinator at this address is not the one Tessera joined before: its identity "
                  "key changed. Check the address in Settings. If its operator announced a new key, "
                  "remove coordinator.json from Tessera's data folder and try again.");
    case protocol::RefusalKind::NoStageFits:
        return tr("This computer does not have enough memory for any part of the model. There is "
                  "nothing to fix on your side; a smaller model may fit later.");
    case protocol::RefusalKind::ClientTooOld:
        return tr(
            "This version of Tessera is too old for the swarm. Install the latest version and try again.");
    case protocol::RefusalKind::Banned:
        return tr("The coordinator found results from this computer that were not the model's work "
                  "(a failed check of its results) and no longer accepts it for a while. If you did not "
                  "modify Tessera, check that your graphics card is stable (no overclock) and contact "
                  "the coordinator's operator.");
    case protocol::RefusalKind::Other:
        break;
    }
    return tr("Check the coordinator's address in Settings, then try again.");
}

} // namespace tessera::manager
