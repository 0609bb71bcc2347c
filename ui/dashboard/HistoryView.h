// SPDX-License-Identifier: Apache-2.0
#pragma once
// HistoryView: a HistoryChart, or the same data as a table (one row per bucket: its time and each
// line's value), for screen readers and for reading exact figures. The chart's accessible
// description sums it up in words.

#include "dashboard/HistoryChart.h"

#include <QStackedWidget>

class QTableWidget;

namespace tessera::ui {

class HistoryView final : public QStackedWidget {
    Q_OBJECT

public:
    explicit HistoryView(const QString& title, QWidget* parent = nullptr);

    HistoryChart& chart() const { return *m_chart; }
    QTableWidget& table() const { return *m_table; }
    // As HistoryChart::addLine; the line becomes a column of the table.
    int addLine(const QString& name, const QColor& colour, bool area, const QString& format,
                double scale = 1);
    void setData(int line, const manager::HistorySeries& data, manager::HistoryRange range);
    void showTable(bool table);
    bool tableShown() const { return currentIndex() == 1; }

private:
    void fillTable();

    QString m_title;
    HistoryChart* m_chart;
    QTableWidget* m_table;
    QStringList m_names;
    QStringList m_formats;
    QList<double> m_scales;
    manager::HistoryRange m_range = manager::HistoryRange::Hour;
};

} // namespace tessera::ui
