// What a Hugging Face Trainer run says about its training (trainer_state.json's log_history) as a
// chart: loss, evaluation loss and gradient norm against step on the left axis, the learning
// rate on the right, and the run's checkpoints marked on the step axis (the one shown, and the
// best, picked out). A dumb widget: it draws the plain values it is given.
#pragma once

#include "layout/training_log.h"

#include <QColor>
#include <QWidget>
#include <string>
#include <vector>

class QChart;
class QChartView;
class QValueAxis;
class QLabel;

namespace ckpt::app {

// A checkpoint of the run, where it sits on the step axis.
struct RunCheckpoint
{
    std::string name; // "checkpoint-500"
    int64_t step = -1;
};

class TrainingChart : public QWidget
{
    Q_OBJECT
public:
    explicit TrainingChart(QWidget* parent = nullptr);
    // `state`: the newest trainer_state.json the run holds (its log_history is the whole run's
    // so far); `current`: the checkpoint the window shows.
    void setRun(const layout::TrainingLog& state, const std::vector<RunCheckpoint>& checkpoints,
                const std::string& current);
    QChart* chart() const;
    // Points of the curve named so ("loss", "eval loss", "grad norm", "learning rate"; -1: not
    // drawn), and how many checkpoint lines of a kind ("shown", "best", "checkpoint") (tests).
    int points(const QString& series) const;
    int lines(const QString& kind) const;

protected:
    void changeEvent(QEvent* e) override; // a palette change (light/dark) restyles the chart

private:
    struct Axes
    {
        QValueAxis* x;
        QValueAxis* y;
    };
    void render();
    // The logged losses and gradient norm against step, on axes spanning them and the checkpoints.
    Axes addCurves(QChart* c, bool dark) const;
    // The learning rate, on an axis of its own at the right (none when it was not logged).
    void addLearningRate(QChart* c, QValueAxis* x) const;
    // A vertical line at each checkpoint's step.
    void addCheckpointLines(QChart* c, const Axes& a, const QColor& shownColor,
                            const QColor& bestColor) const;

    layout::TrainingLog m_state;
    std::vector<RunCheckpoint> m_checkpoints;
    std::string m_current;
    QChartView* m_view;
    QLabel* m_summary;
};

} // namespace ckpt::app
