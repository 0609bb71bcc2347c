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

class SwarmPanel final : public QGroupBox {
    Q_OBJECT

public:
    explicit SwarmPanel(QWidget* parent = nullptr);

    void setStatus(const QJsonObject& status);
    // The coordinator did not answer: say so, under the last figures it gave (if any).
    void setError(const QString& error);
    QString summary() const; // "12 volunteers online · step 3,456 · loss 2.31 · 4,200 tokens/s"
    QLineSeries& lossCurve() { return *m_curve; }

private:
    QLabel* m_summary;
    QString m_lastSummary; // of the last answer, kept under an error
    QChartView* m_chart;
    QLineSeries* m_curve;
    QValueAxis* m_steps;
    QValueAxis* m_loss;
};

} // namespace tessera::ui
