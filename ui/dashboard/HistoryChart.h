// SPDX-License-Identifier: Apache-2.0
#pragma once
// HistoryChart: one or two bucketed histories (credits per bucket; tasks per minute and compute
// share) over the last hour, day or month on a time axis, each line with its own value axis.

#include "manager/History.h"

#include <QChartView>
#include <QList>

class QDateTimeAxis;
class QLineSeries;
class QValueAxis;

namespace tessera::ui {

class HistoryChart final : public QChartView {
    Q_OBJECT

public:
    explicit HistoryChart(const QString& title, QWidget* parent = nullptr);

    // A line (filled below when `area`); the first's axis is on the left, the next on the right.
    // format: the axis labels' printf format ("%.2f", "%d%%"). Returns the line's index.
    int addLine(const QString& name, const QColor& colour, bool area, const QString& format,
                double scale = 1);
    void setData(int line, const manager::HistorySeries& data, manager::HistoryRange range);
    const manager::HistorySeries& data(int line) const { return m_lines[line].data; }
    // The points drawn (a step per bucket: its start and its end at the bucket's value).
    QList<QPointF> points(int line) const;

private:
    struct Line {
        QLineSeries* series = nullptr;
        QValueAxis* axis = nullptr;
        manager::HistorySeries data;
        double scale = 1;
        QString format;
    };
    QDateTimeAxis* m_time;
    QList<Line> m_lines;
};

} // namespace tessera::ui
