// SPDX-License-Identifier: Apache-2.0
#include "dashboard/HistoryChart.h"

#include <QAreaSeries>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace tessera::ui {

using namespace Qt::StringLiterals;
using manager::HistoryRange;

HistoryChart::HistoryChart(const QString& title, QWidget* parent)
    : QChartView(parent)
    , m_time(new QDateTimeAxis) {
    auto* chart = new QChart;
    chart->setTitle(title);
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(4);
    m_time->setTickCount(7);
    chart->addAxis(m_time, Qt::AlignBottom);
    setChart(chart);
    setRenderHint(QPainter::Antialiasing);
    setMinimumHeight(200);
}

int HistoryChart::addLine(const QString& name, const QColor& colour, bool area, const QString& format,
                          double scale) {
    Line line;
    line.series = new QLineSeries;
    line.series->setName(name);
    line.series->setPen(QPen(colour, 2));
    line.axis = new QValueAxis;
    line.axis->setLabelFormat(format);
    line.axis->setMin(0);
    line.axis->setLinePenColor(colour);
    line.axis->setTickCount(5);
    line.scale = scale;
    line.format = format;
    const Qt::Alignment side = m_lines.isEmpty() ? Qt::AlignLeft : Qt::AlignRight;
    chart()->addAxis(line.axis, side);
    if (area) {
        auto* filled = new QAreaSeries(line.series);
        filled->setName(name);
        filled->setPen(QPen(colour, 1.5));
        QColor fill = colour;
        fill.setAlpha(110);
        filled->setBrush(fill);
        chart()->addSeries(filled);
        filled->attachAxis(m_time);
        filled->attachAxis(line.axis);
    } else {
        chart()->addSeries(line.series);
        line.series->attachAxis(m_time);
        line.series->attachAxis(line.axis);
    }
    chart()->legend()->setVisible(m_lines.size() >= 1);
    m_lines << line;
    return int(m_lines.size()) - 1;
}

void HistoryChart::setData(int index, const manager::HistorySeries& data, HistoryRange range) {
    Line& line = m_lines[index];
    line.data = data;
    QList<QPointF> points;
    double top = 0;
    for (qsizetype i = 0; i < data.values.size(); ++i) {
        const double v = data.values[i] * line.scale;
        const double from = double(data.startMs + i * data.bucketMs);
        points << QPointF(from, v) << QPointF(from + double(data.bucketMs), v);
        top = std::max(top, v);
    }
    line.series->replace(points);
    // Headroom above the highest bucket; an empty history still shows a sensible scale.
    line.axis->setRange(0, top > 0 ? top * 1.15 : 1);
    line.axis->applyNiceNumbers(); // ticks at round values: 0, 10, 20, 30 rather than 0, 6.5, 13
    // Enough decimals that small values (a CPU's first credits) do not all read "0.00".
    if (line.format.contains(u"%.2f") && top > 0 && top < 0.1)
        line.axis->setLabelFormat(u"%.%1f"_s.arg(std::min(6, 1 - int(std::floor(std::log10(top))))));
    else
        line.axis->setLabelFormat(line.format);
    if (!data.values.isEmpty())
        m_time->setRange(QDateTime::fromMSecsSinceEpoch(data.startMs),
                         QDateTime::fromMSecsSinceEpoch(data.startMs + data.bucketMs * data.values.size()));
    m_time->setFormat(range == HistoryRange::Month ? u"d MMM"_s : u"HH:mm"_s);
}

QList<QPointF> HistoryChart::points(int line) const {
    return m_lines[line].series->points();
}

} // namespace tessera::ui
