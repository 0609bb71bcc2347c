// SPDX-License-Identifier: Apache-2.0
#pragma once
// SwarmPanel: the whole swarm as the coordinator reports it (/v1/status) — nodes online, the
// global step, the loss, tokens per second, and the loss curve.

#include <QGroupBox>
#include <QJsonObject>

class QChartView;
class QLabel;
class QLineSeries;
class QValueAxis;

namespace tessera::ui {

class ErrorNote;

class SwarmPanel final : public QGroupBox {
    Q_OBJECT

public:
    explicit SwarmPanel(QWidget* parent = nullptr);

    void setStatus(const QJsonObject& status);
    // The coordinator did not answer: say so in words, under the last figures it gave (if any),
    // with the error itself behind Details.
    void setError(const QString& error);
    // "12 volunteers online · step 3,456 · loss 2.31 · 4,200 tokens/s", and on a line of its own
    // that the coordinator is not answering while it is not.
    QString summary() const;
    QString errorDetails() const; // "" while the coordinator answers
    QLineSeries& lossCurve() { return *m_curve; }

private:
    QLabel* m_summary;
    ErrorNote* m_error;
    QString m_lastSummary; // of the last answer, kept under an error
    QChartView* m_chart;
    QLineSeries* m_curve;
    QValueAxis* m_steps;
    QValueAxis* m_loss;
};

} // namespace tessera::ui
