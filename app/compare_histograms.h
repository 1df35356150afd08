// The selected tensor of a comparison: the value histograms of A and B overlaid, the histogram
// of a-b, each with an optional log count axis (Qt Charts), and both sides' statistics side by
// side. Dumb widget: it shows the TensorDiff it is given.
#pragma once

#include "ops/analyze.h"

#include <QWidget>

class QCheckBox;
class QLabel;
class QChart;
class QChartView;

namespace ckpt::app {

class CompareHistograms : public QWidget
{
    Q_OBJECT
public:
    explicit CompareHistograms(QWidget* parent = nullptr);
    void setTensor(const ops::TensorDiff* t); // nullptr: nothing selected
    void setLogScale(bool on);
    bool logScale() const;
    QString statisticsText() const; // the statistics table as plain text (tests)
    // The series drawn, as (name, points) per chart: 0 = A and B, 1 = a-b.
    int seriesCount(int chart) const;
    QChart* chart(int which) const; // 0 = A and B, 1 = a-b (tests)

private:
    void rebuild();

    std::optional<ops::TensorDiff> m_tensor;
    QChartView* m_values;
    QChartView* m_delta;
    QCheckBox* m_log;
    QLabel* m_stats;
    QLabel* m_title;
};

} // namespace ckpt::app
