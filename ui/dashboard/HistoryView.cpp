// SPDX-License-Identifier: Apache-2.0
#include "dashboard/HistoryView.h"

#include <QDateTime>
#include <QHeaderView>
#include <QLocale>
#include <QTableWidget>

#include <algorithm>
#include <cmath>

namespace tessera::ui {

using manager::HistoryRange;

namespace {

// The printf format of an axis ("%.2f", "%.0f%%") for a value in the user's locale.
QString formatted(const QLocale& locale, double value, const QString& format) {
    const qsizetype dot = format.indexOf(u'.');
    int decimals = dot >= 0 && dot + 1 < format.size() ? std::max(0, format.at(dot + 1).digitValue()) : 0;
    // A CPU's first credits are hundredths or less: two significant digits, not "0.00".
    if (decimals >= 2 && value > 0 && value < 0.1)
        decimals = std::min(6, 1 - int(std::floor(std::log10(value))));
    QString text = locale.toString(value, 'f', decimals);
    if (format.endsWith(u"%%"))
        text += u'%';
    return text;
}

} // namespace

HistoryView::HistoryView(const QString& title, QWidget* parent)
    : QStackedWidget(parent)
    , m_title(title)
    , m_chart(new HistoryChart(title))
    , m_table(new QTableWidget) {
    m_chart->setAccessibleName(title);
    m_chart->setFocusPolicy(Qt::TabFocus); // a screen reader reaches its description
    // A chart draws no focus of its own: a ring in the theme's highlight shows where Tab is.
    m_chart->setStyleSheet(QStringLiteral("QChartView { border: 2px solid transparent; }"
                                          "QChartView:focus { border: 2px solid palette(highlight); }"));
    m_table->setAccessibleName(title);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    addWidget(m_chart);
    addWidget(m_table);
}

int HistoryView::addLine(const QString& name, const QColor& colour, bool area, const QString& format,
                         double scale) {
    m_names << name;
    m_formats << format;
    m_scales << scale;
    return m_chart->addLine(name, colour, area, format, scale);
}

void HistoryView::setData(int line, const manager::HistorySeries& data, HistoryRange range) {
    m_range = range;
    m_chart->setData(line, data, range);
    fillTable();
}

void HistoryView::showTable(bool table) {
    setCurrentIndex(table ? 1 : 0); // the table was added second
}

void HistoryView::fillTable() {
    const QLocale locale;
    QStringList headers{m_range == HistoryRange::Month ? tr("Day") : tr("Time")};
    headers << m_names;
    m_table->setColumnCount(int(headers.size()));
    m_table->setHorizontalHeaderLabels(headers);
    const manager::HistorySeries& first = m_chart->data(0);
    const int rows = int(first.values.size());
    m_table->setRowCount(rows);
    QStringList summary;
    // Newest first: what a reader wants to hear first.
    for (int row = 0; row < rows; ++row) {
        const int bucket = rows - 1 - row;
        const QDateTime start = QDateTime::fromMSecsSinceEpoch(first.startMs + bucket * first.bucketMs);
        const QString when = m_range == HistoryRange::Month
                                 ? locale.toString(start.date(), QLocale::ShortFormat)
                                 : locale.toString(start.time(), QLocale::ShortFormat);
        m_table->setItem(row, 0, new QTableWidgetItem(when));
        for (int line = 0; line < m_names.size(); ++line) {
            const manager::HistorySeries& s = m_chart->data(line);
            const double v = bucket < s.values.size() ? s.values[bucket] * m_scales[line] : 0;
            auto* item = new QTableWidgetItem(formatted(locale, v, m_formats[line]));
            item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(row, line + 1, item);
        }
    }
    for (int line = 0; line < m_names.size(); ++line) {
        const QList<double>& values = m_chart->data(line).values;
        if (values.isEmpty())
            continue;
        const double top = *std::max_element(values.begin(), values.end()) * m_scales[line];
        const double last = values.last() * m_scales[line];
        summary << tr("%1: now %2, highest %3")
                       .arg(m_names[line], formatted(locale, last, m_formats[line]),
                            formatted(locale, top, m_formats[line]));
    }
    m_chart->setAccessibleDescription(summary.join(u"; "));
}

} // namespace tessera::ui
