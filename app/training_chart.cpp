#include "training_chart.h"

#include "chart_style.h"

#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLocale>
#include <QLogValueAxis>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace ckpt::app {

namespace {

// A curve of one log_history value against step; entries without it (an evaluation has no
// training loss) or with NaN/inf (a diverged step, which Python's json writes bare) are left out.
QLineSeries* curve(const std::vector<layout::TrainingLogEntry>& log,
                   std::optional<double> layout::TrainingLogEntry::*v, const QString& name, QColor color,
                   Qt::PenStyle style = Qt::SolidLine)
{
    auto* s = new QLineSeries;
    s->setName(name);
    s->setPen(QPen(color, 1.6, style));
    for (const auto& e : log)
        if (e.step >= 0 && (e.*v) && std::isfinite(*(e.*v))) s->append(double(e.step), *(e.*v));
    return s;
}

void span(const QLineSeries* s, double& lo, double& hi)
{
    for (const QPointF& p : s->points())
        lo = std::min(lo, p.y()), hi = std::max(hi, p.y());
}

} // namespace

TrainingChart::TrainingChart(QWidget* parent) : QWidget(parent)
{
    auto* l = new QVBoxLayout(this);
    l->setContentsMargins(0, 0, 0, 0);
    m_summary = new QLabel(this);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setWordWrap(true);
    auto* chart = new QChart;
    chart->setMargins(QMargins(2, 2, 2, 2));
    chart->legend()->setAlignment(Qt::AlignTop);
    m_view = new QChartView(chart, this);
    m_view->setRenderHint(QPainter::Antialiasing);
    m_view->setMinimumHeight(200);
    l->addWidget(m_summary);
    l->addWidget(m_view, 1);
}

QChart* TrainingChart::chart() const
{
    return m_view->chart();
}

int TrainingChart::points(const QString& series) const
{
    for (QAbstractSeries* s : chart()->series())
        if (s->name() == series)
            if (auto* xy = qobject_cast<QXYSeries*>(s)) return int(xy->count());
    return -1;
}

int TrainingChart::lines(const QString& kind) const
{
    int n = 0;
    for (QAbstractSeries* s : chart()->series())
        n += s->name() == kind;
    return n;
}

void TrainingChart::setRun(const layout::TrainingLog& state, const std::vector<RunCheckpoint>& checkpoints,
                           const std::string& current)
{
    m_state = state;
    m_checkpoints = checkpoints;
    m_current = current;
    render();
}

void TrainingChart::changeEvent(QEvent* e)
{
    QWidget::changeEvent(e);
    if (e->type() == QEvent::PaletteChange) styleChart(chart(), palette());
}

namespace {

// "Step 40, epoch 2.5 of 100 steps; best: checkpoint-30 (0.412)".
QString runSummary(const layout::TrainingLog& s)
{
    const QLocale loc;
    QString summary = TrainingChart::tr("Step %1").arg(loc.toString(qlonglong(s.globalStep)));
    if (s.epoch) summary += TrainingChart::tr(", epoch %1").arg(loc.toString(*s.epoch, 'g', 4));
    if (s.maxSteps) summary += TrainingChart::tr(" of %1 steps").arg(loc.toString(qlonglong(*s.maxSteps)));
    if (!s.bestCheckpointName().empty())
        summary +=
            TrainingChart::tr("; best: %1").arg(QString::fromStdString(s.bestCheckpointName())) +
            (s.bestMetric ? QStringLiteral(" (%1)").arg(loc.toString(*s.bestMetric, 'g', 5)) : QString());
    return summary;
}

// Adds `v` on the axes, or drops it when nothing was logged (no empty legend entry).
void addOrDrop(QChart* c, QLineSeries* v, QAbstractAxis* x, QAbstractAxis* y)
{
    if (v->count() == 0) {
        delete v;
        return;
    }
    c->addSeries(v);
    v->attachAxis(x);
    v->attachAxis(y);
}

} // namespace

TrainingChart::Axes TrainingChart::addCurves(QChart* c, bool dark) const
{
    const auto& log = m_state.logHistory;
    using E = layout::TrainingLogEntry;
    QLineSeries* loss =
        curve(log, &E::loss, tr("loss"), dark ? QColor(0x6c, 0xb6, 0xff) : QColor(0x1f, 0x5f, 0xbf));
    QLineSeries* evalLoss = curve(log, &E::evalLoss, tr("eval loss"),
                                  dark ? QColor(0xff, 0xa6, 0x57) : QColor(0xc0, 0x5a, 0x00), Qt::DashLine);
    QLineSeries* grad =
        curve(log, &E::gradNorm, tr("grad norm"), dark ? QColor(0x8f, 0xd1, 0x8f) : QColor(0x2e, 0x8b, 0x3e));

    // Steps from 0 to the last logged or saved; values from 0 (or below) to the largest, padded.
    double xHi = 1;
    for (const auto& e : log)
        if (e.step >= 0) xHi = std::max(xHi, double(e.step));
    for (const auto& cp : m_checkpoints)
        xHi = std::max(xHi, double(cp.step));
    double yLo = INFINITY, yHi = -INFINITY;
    for (QLineSeries* v : {loss, evalLoss, grad})
        span(v, yLo, yHi);
    if (!(yHi >= yLo)) yLo = 0, yHi = 1;
    const double pad = (yHi - yLo) * 0.05 + 1e-9;
    yLo = std::min(0.0, yLo - pad), yHi += pad;

    Axes a{new QValueAxis, new QValueAxis};
    a.x->setRange(0, xHi);
    a.x->setLabelFormat(QStringLiteral("%d"));
    a.x->setTitleText(tr("step"));
    a.y->setRange(yLo, yHi);
    a.y->setLabelFormat(QStringLiteral("%.3g"));
    a.y->setTitleText(tr("loss, grad norm"));
    c->addAxis(a.x, Qt::AlignBottom);
    c->addAxis(a.y, Qt::AlignLeft);
    for (QLineSeries* v : {loss, evalLoss, grad})
        addOrDrop(c, v, a.x, a.y);
    return a;
}

void TrainingChart::addLearningRate(QChart* c, QValueAxis* x) const
{
    using E = layout::TrainingLogEntry;
    QLineSeries* lr = curve(m_state.logHistory, &E::learningRate, tr("learning rate"),
                            palette().color(QPalette::Text), Qt::DotLine);
    if (lr->count() == 0) { // nothing logged: no axis, no empty legend entry
        delete lr;
        return;
    }
    double lo = INFINITY, hi = -INFINITY;
    span(lr, lo, hi);
    auto* r = new QValueAxis; // its own scale, on the right: a rate is orders below a loss
    r->setRange(0, hi > 0 ? hi * 1.05 : 1);
    r->setLabelFormat(QStringLiteral("%.1e"));
    r->setTitleText(tr("learning rate"));
    c->addAxis(r, Qt::AlignRight);
    addOrDrop(c, lr, x, r);
}

void TrainingChart::addCheckpointLines(QChart* c, const Axes& a, const QColor& shownColor,
                                       const QColor& bestColor) const
{
    // Across the plot: the one shown in the highlight colour, the best in gold, the others
    // dashed. Out of the legend (the summary line says what they are): seven legend entries did
    // not fit beside each other.
    const std::string best = m_state.bestCheckpointName();
    const QColor mid = palette().color(QPalette::Mid);
    for (const auto& cp : m_checkpoints) {
        if (cp.step < 0) continue;
        auto* m = new QLineSeries;
        const bool shown = cp.name == m_current, isBest = cp.name == best;
        m->setName(shown    ? QStringLiteral("shown")
                   : isBest ? QStringLiteral("best")
                            : QStringLiteral("checkpoint"));
        m->setPen(QPen(shown    ? shownColor
                       : isBest ? bestColor
                                : mid,
                       shown ? 2.4 : 1.4, shown || isBest ? Qt::SolidLine : Qt::DashLine));
        m->append(double(cp.step), a.y->min());
        m->append(double(cp.step), a.y->max());
        c->addSeries(m);
        m->attachAxis(a.x);
        m->attachAxis(a.y);
        for (QLegendMarker* lm : c->legend()->markers(m))
            lm->setVisible(false);
    }
}

void TrainingChart::render()
{
    QChart* c = chart();
    c->removeAllSeries();
    for (QAbstractAxis* a : c->axes())
        c->removeAxis(a), delete a;
    const QPalette pal = palette();
    const bool dark = pal.color(QPalette::Base).lightness() < 128;
    const Axes axes = addCurves(c, dark);
    addLearningRate(c, axes.x);
    const QColor hl = pal.color(QPalette::Highlight);
    const QColor gold = dark ? QColor(0xff, 0xd7, 0x00) : QColor(0xb8, 0x86, 0x0b);
    addCheckpointLines(c, axes, hl, gold);
    m_summary->setText(
        runSummary(m_state) + QStringLiteral("<br><small>") +
        tr("Vertical lines: the run's checkpoints; <span style='color:%1'>&#9646;</span> the one "
           "shown, <span style='color:%2'>&#9646;</span> the best.")
            .arg(hl.name(), gold.name()) +
        QStringLiteral("</small>"));
    styleChart(c, pal);
}

} // namespace ckpt::app
