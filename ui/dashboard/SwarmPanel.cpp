// SPDX-License-Identifier: Apache-2.0
#include "dashboard/SwarmPanel.h"

#include "widgets/ErrorNote.h"

#include <QChartView>
#include <QJsonArray>
#include <QLabel>
#include <QLineSeries>
#include <QLocale>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tessera::ui {

using namespace Qt::StringLiterals;

SwarmPanel::SwarmPanel(QWidget* parent)
    : QGroupBox(tr("The swarm"), parent)
    , m_curve(new QLineSeries)
    , m_steps(new QValueAxis)
    , m_loss(new QValueAxis) {
    m_summary = new QLabel(tr("Waiting for the coordinator's answer…"));
    m_summary->setObjectName(u"swarmSummary"_s);
    m_summary->setWordWrap(true);
    m_error = new ErrorNote;
    m_error->setObjectName(u"swarmError"_s);

    auto* chart = new QChart;
    chart->setTitle(tr("Training loss (lower is better)"));
    chart->legend()->hide();
    chart->setMargins(QMargins(4, 4, 4, 4));
    m_curve->setPen(QPen(QColor(0x3b, 0x7d, 0xd8), 2));
    chart->addSeries(m_curve);
    m_steps->setLabelFormat(u"%d"_s);
    m_steps->setTitleText(tr("step"));
    m_loss->setLabelFormat(u"%.2f"_s);
    chart->addAxis(m_steps, Qt::AlignBottom);
    chart->addAxis(m_loss, Qt::AlignLeft);
    m_curve->attachAxis(m_steps);
    m_curve->attachAxis(m_loss);
    m_chart = new QChartView(chart);
    m_chart->setRenderHint(QPainter::Antialiasing);
    m_chart->setMinimumHeight(200);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_summary);
    layout->addWidget(m_error);
    layout->addWidget(m_chart, 1);
}

QString SwarmPanel::summary() const {
    const QString error = m_error->message();
    return error.isEmpty() ? m_summary->text() : m_summary->text() + u'\n' + error;
}

QString SwarmPanel::errorDetails() const {
    return m_error->isHidden() ? QString() : m_error->details();
}

void SwarmPanel::setError(const QString& error) {
    m_summary->setVisible(!m_lastSummary.isEmpty());
    m_error->showError(m_lastSummary.isEmpty()
                           ? tr("The coordinator is not answering; Tessera keeps asking.")
                           : tr("The coordinator is not answering; the figures above are the last it gave."),
                       error);
}

void SwarmPanel::setStatus(const QJsonObject& status) {
    if (status.isEmpty())
        return; // keep the last answer while the coordinator is away
    const QLocale locale;
    QStringList parts;
    const int online = status.value(u"nodes").toObject().value(u"online").toInt();
    parts << (online == 1 ? tr("1 volunteer online")
                          : tr("%1 volunteers online").arg(locale.toString(online)));
    parts << tr("step %1").arg(locale.toString(status.value(u"step").toInteger()));
    if (const QJsonValue loss = status.value(u"loss"); loss.isDouble())
        parts << tr("loss %1").arg(locale.toString(loss.toDouble(), 'f', 3));
    if (const double tps = status.value(u"tokens_per_second").toDouble(); tps > 0)
        parts << tr("%1 tokens/s").arg(locale.toString(std::lround(tps)));
    m_lastSummary = parts.join(u" · "_s);
    m_summary->setText(m_lastSummary);
    m_summary->show();
    m_error->clear();

    // loss_curve: [[step, loss, tokens], …], the last 500 steps.
    QList<QPointF> points;
    double low = std::numeric_limits<double>::max();
    double high = 0;
    for (const QJsonValue& v : status.value(u"loss_curve").toArray()) {
        const QJsonArray p = v.toArray();
        if (p.size() < 2 || !std::isfinite(p[1].toDouble()))
            continue;
        points << QPointF(p[0].toDouble(), p[1].toDouble());
        low = std::min(low, p[1].toDouble());
        high = std::max(high, p[1].toDouble());
    }
    m_curve->replace(points);
    if (points.isEmpty()) {
        m_steps->setRange(0, 1);
        m_loss->setRange(0, 1);
        return;
    }
    const double first = points.first().x();
    const double last = std::max(points.last().x(), first + 1);
    m_steps->setRange(first, last);
    // Ticks at round steps (100, 200, 300) while the axis keeps the curve's own extent.
    const double rough = (last - first) / 5;
    const double magnitude = std::pow(10.0, std::floor(std::log10(std::max(rough, 1.0))));
    const double nice = rough <= magnitude       ? magnitude
                        : rough <= 2 * magnitude ? 2 * magnitude
                        : rough <= 5 * magnitude ? 5 * magnitude
                                                 : 10 * magnitude;
    m_steps->setTickType(QValueAxis::TicksDynamic);
    m_steps->setTickAnchor(0);
    m_steps->setTickInterval(std::max(1.0, nice));
    const double pad = std::max(0.05, (high - low) * 0.1);
    m_loss->setRange(std::max(0.0, low - pad), high + pad);
    // Round loss ticks (2.5, 3.0, 3.5) read at a glance; the steps keep the curve's own extent.
    m_loss->applyNiceNumbers();
}

} // namespace tessera::ui
