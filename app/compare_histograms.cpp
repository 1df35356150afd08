#include "compare_histograms.h"

#include "chart_style.h"
#include "compare_model.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLocale>
#include <QLogValueAxis>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>

namespace ckpt::app {

namespace {

QChartView* makeView(QWidget* parent)
{
    auto* chart = new QChart;
    chart->setMargins(QMargins(2, 2, 2, 2));
    chart->legend()->setAlignment(Qt::AlignTop);
    auto* v = new QChartView(chart, parent);
    v->setRenderHint(QPainter::Antialiasing);
    v->setMinimumHeight(180);
    return v;
}

// A histogram as a filled step outline: one flat segment per bin. On a log axis an empty bin
// cannot be drawn at 0, so the floor is half a count.
QAreaSeries* stepSeries(const gpu::Histogram& h, const QString& name, QColor color, bool log)
{
    const double floor = log ? 0.5 : 0;
    auto* upper = new QLineSeries;
    auto* lower = new QLineSeries;
    const size_t n = h.bins.size();
    const double w = n ? (h.hi - h.lo) / double(n) : 0;
    for (size_t i = 0; i < n; ++i) {
        const double x0 = h.lo + w * double(i), x1 = x0 + w, y = std::max(floor, double(h.bins[i]));
        upper->append(x0, y);
        upper->append(x1, y);
    }
    lower->append(h.lo, floor);
    lower->append(h.hi, floor);
    auto* area = new QAreaSeries(upper, lower);
    // An area series does not own its boundary lines: made its children, they go with it.
    upper->setParent(area);
    lower->setParent(area);
    area->setName(name);
    QColor fill = color;
    fill.setAlpha(110);
    area->setBrush(fill);
    area->setPen(QPen(color, 1.2));
    return area;
}

// The smallest 1, 2 or 5 times a power of ten that cuts `span` into at most `steps` steps.
double niceStep(double span, int steps)
{
    const double raw = span / steps, decade = std::pow(10, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0, 10.0})
        if (m * decade >= raw * (1 - 1e-12)) return m * decade;
    return 10 * decade;
}

void fill(QChart* chart, const std::vector<std::pair<QAreaSeries*, const gpu::Histogram*>>& series, bool log,
          const QString& xTitle, const QPalette& pal)
{
    chart->removeAllSeries();
    for (QAbstractAxis* a : chart->axes())
        chart->removeAxis(a), delete a;
    styleChart(chart, pal);
    if (series.empty()) return;
    double lo = INFINITY, hi = -INFINITY;
    uint64_t top = 1;
    for (const auto& [s, h] : series) {
        chart->addSeries(s);
        lo = std::min(lo, h->lo), hi = std::max(hi, h->hi);
        for (auto b : h->bins)
            top = std::max(top, b);
    }
    auto* x = new QValueAxis;
    x->setRange(lo, hi > lo ? hi : lo + 1);
    x->setLabelFormat(QStringLiteral("%.3g"));
    // Ticks at round steps anchored at 0, so 0 reads as 0 (not 6.9e-18) and steps as 0.02; at
    // most four steps across, so that labels such as -0.0006 never run into each other.
    const double step = niceStep(hi > lo ? hi - lo : 1, 4);
    x->setTickType(QValueAxis::TicksDynamic);
    x->setTickAnchor(0);
    x->setTickInterval(step);
    // Qt adds the step up from the first tick, so 0 comes out as 6.9e-18 under %g: as many
    // decimals as the step has reads right, where the step is neither tiny nor huge.
    if (step >= 1e-4 && step < 1e5)
        x->setLabelFormat(QStringLiteral("%.") +
                          QString::number(std::max(0, int(-std::floor(std::log10(step))))) +
                          QLatin1Char('f'));
    x->setTitleText(xTitle);
    QAbstractAxis* y;
    if (log) {
        auto* l = new QLogValueAxis;
        l->setBase(10);
        l->setRange(0.5, std::pow(10, std::ceil(std::log10(double(top)) + 0.01)));
        l->setLabelFormat(QStringLiteral("%g"));
        y = l;
    } else {
        // Counts: whole steps of at least 1 (ticks at 0.5 printed as %d read "0 0 1 1 1").
        auto* v = new QValueAxis;
        const double yStep = std::max(1.0, niceStep(double(top), 4));
        v->setRange(0, std::ceil(double(top) * 1.05 / yStep) * yStep);
        v->setTickType(QValueAxis::TicksDynamic);
        v->setTickAnchor(0);
        v->setTickInterval(yStep);
        v->setLabelFormat(QStringLiteral("%.0f"));
        y = v;
    }
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (const auto& [s, h] : series) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
    styleChart(chart, pal);
}

QString num(double v)
{
    return std::isfinite(v) ? QString::number(v, 'g', 6) : QString::number(v);
}

} // namespace

CompareHistograms::CompareHistograms(QWidget* parent) : QWidget(parent)
{
    auto* l = new QVBoxLayout(this);
    l->setContentsMargins(0, 0, 0, 0);
    auto* head = new QHBoxLayout;
    m_title = new QLabel(this);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_log = new QCheckBox(tr("Log counts"), this);
    m_log->setToolTip(tr("Count axis on a log scale: rare values (outliers) stay visible"));
    head->addWidget(m_title, 1);
    head->addWidget(m_log);
    l->addLayout(head);
    auto* row = new QHBoxLayout;
    m_values = makeView(this);
    m_delta = makeView(this);
    m_stats = new QLabel(this);
    m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_stats->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_stats->setWordWrap(true);
    m_stats->setMinimumWidth(260);
    // The charts take the height; the statistics sit beside them, where they are read with them.
    row->addWidget(m_values, 3);
    row->addWidget(m_delta, 2);
    row->addWidget(m_stats);
    l->addLayout(row, 1);
    connect(m_log, &QCheckBox::toggled, this, &CompareHistograms::rebuild);
    setTensor(nullptr);
}

void CompareHistograms::setLogScale(bool on)
{
    m_log->setChecked(on);
}

bool CompareHistograms::logScale() const
{
    return m_log->isChecked();
}

void CompareHistograms::setTensor(const ops::TensorDiff* t)
{
    if (t)
        m_tensor = *t;
    else
        m_tensor.reset();
    rebuild();
}

QChart* CompareHistograms::chart(int which) const
{
    return (which == 0 ? m_values : m_delta)->chart();
}

int CompareHistograms::seriesCount(int chart) const
{
    return int((chart == 0 ? m_values : m_delta)->chart()->series().size());
}

QString CompareHistograms::statisticsText() const
{
    return m_stats->text();
}

void CompareHistograms::rebuild()
{
    const QPalette& pal = palette();
    const bool log = m_log->isChecked();
    const QColor colorA(0x3b, 0x82, 0xc4), colorB(0xe0, 0x7b, 0x39), colorD(0x8e, 0x5c, 0xc2);
    std::vector<std::pair<QAreaSeries*, const gpu::Histogram*>> values, delta;
    if (m_tensor && m_tensor->histA && m_tensor->histB) {
        values.push_back({stepSeries(*m_tensor->histA, tr("A"), colorA, log), &*m_tensor->histA});
        values.push_back({stepSeries(*m_tensor->histB, tr("B"), colorB, log), &*m_tensor->histB});
    }
    if (m_tensor && m_tensor->histDiff)
        delta.push_back({stepSeries(*m_tensor->histDiff, tr("a - b"), colorD, log), &*m_tensor->histDiff});
    fill(m_values->chart(), values, log, tr("value"), pal);
    fill(m_delta->chart(), delta, log, tr("a - b"), pal);

    if (!m_tensor) {
        m_title->setText(tr("Select a tensor to see its values"));
        m_stats->clear();
        return;
    }
    const ops::TensorDiff& t = *m_tensor;
    m_title->setText(QStringLiteral("<b>%1</b>").arg(QString::fromStdString(t.name).toHtmlEscaped()));
    if (!t.compared) {
        m_stats->setText(tr("Not compared: the tensor is only on one side, or its shape differs."));
        return;
    }
    const QLocale loc;
    auto row = [](const QString& k, const QString& a, const QString& b) {
        return QStringLiteral("<tr><td>%1</td><td align=right>&nbsp;&nbsp;%2</td><td "
                              "align=right>&nbsp;&nbsp;%3</td></tr>")
            .arg(k, a, b);
    };
    const gpu::Stats &a = t.statsA, &b = t.statsB;
    QString html = QStringLiteral("<table cellspacing=0>") +
                   row(QString(), QStringLiteral("<b>A</b>"), QStringLiteral("<b>B</b>")) +
                   row(tr("dtype"), dtypeText(t.dtypeA), dtypeText(t.dtypeB));
    if (t.sideStats) {
        html += row(tr("min"), num(a.min), num(b.min)) + row(tr("max"), num(a.max), num(b.max)) +
                row(tr("mean"), num(a.mean), num(b.mean)) + row(tr("std"), num(a.std()), num(b.std())) +
                row(tr("L2 norm"), num(a.l2()), num(b.l2())) +
                row(tr("zeros"), loc.toString(qulonglong(a.zeros)), loc.toString(qulonglong(b.zeros))) +
                row(tr("NaN / Inf"), QStringLiteral("%1 / %2").arg(a.nans).arg(a.infs),
                    QStringLiteral("%1 / %2").arg(b.nans).arg(b.infs));
    }
    html += QStringLiteral("</table>");
    const gpu::DiffStats& d = t.diff;
    html += tr("<p>max |a-b| %1 &nbsp; rel. L2 %2 &nbsp; cosine %3</p>")
                .arg(num(d.maxAbsDiff), num(d.relL2()), num(d.cosine()));
    // Bits compare only within one dtype; across two, the values were compared widened.
    html += t.bitwiseKnown
                ? tr("<p>bitwise equal %1 of %2</p>")
                      .arg(loc.toString(qulonglong(d.bitwiseEqual)), loc.toString(qulonglong(d.count)))
                : tr("<p>%1 elements compared across dtypes (%2 and %3, widened to float64)</p>")
                      .arg(loc.toString(qulonglong(d.count)), dtypeText(t.dtypeA), dtypeText(t.dtypeB));
    m_stats->setText(html);
}

} // namespace ckpt::app
