#include "compare_heatmap.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <cmath>

namespace ckpt::app {

namespace {
constexpr int kLegend = 62; // the legend below the grid: the ramp, then the two special cells
constexpr int kMaxCell = 28;
} // namespace

CompareHeatmap::CompareHeatmap(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
}

void CompareHeatmap::setGrid(HeatmapGrid grid)
{
    m_grid = std::move(grid);
    m_index.assign(size_t(m_grid.rows.size() * m_grid.columns.size()), -1);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < m_grid.cells.size(); ++i) {
        const auto& c = m_grid.cells[i];
        m_index[size_t(c.row * m_grid.columns.size() + c.column)] = int(i);
        if (std::isfinite(c.value) && c.value > 0) {
            lo = std::min(lo, std::log10(c.value));
            hi = std::max(hi, std::log10(c.value));
        }
    }
    // Whole decades, at least one wide, so the legend's ticks fall on round numbers.
    if (lo > hi) lo = -6, hi = 0;
    m_lo = std::floor(lo);
    m_hi = std::max(std::ceil(hi), m_lo + 1);
    update();
}

void CompareHeatmap::setSelected(const QString& name)
{
    m_selected = name;
    update();
}

QColor CompareHeatmap::colorAt(double t)
{
    // Viridis at five stops: perceptually even, readable on light and dark, and colour-blind safe.
    static const QColor stops[] = {
        {0x44, 0x01, 0x54}, {0x3b, 0x52, 0x8b}, {0x21, 0x91, 0x8c}, {0x5e, 0xc9, 0x62}, {0xfd, 0xe7, 0x25}};
    t = std::clamp(t, 0.0, 1.0) * 4;
    const int i = std::min(int(t), 3);
    const double f = t - i;
    const QColor &a = stops[i], &b = stops[i + 1];
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f),
                            float(a.greenF() + (b.greenF() - a.greenF()) * f),
                            float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

QColor CompareHeatmap::cellColor(const HeatmapGrid::Cell& c) const
{
    if (c.value == 0) return palette().color(QPalette::Midlight);
    if (std::isinf(c.value)) return colorAt(1); // A all zeros, B not: as changed as it gets
    if (!std::isfinite(c.value)) return {};
    return colorAt((std::log10(c.value) - m_lo) / (m_hi - m_lo));
}

QStringList CompareHeatmap::labelLines(const QString& column)
{
    const qsizetype slash = column.lastIndexOf(QLatin1Char('/'));
    if (slash <= 0) return {column};
    return {column.left(slash + 1), column.mid(slash + 1)};
}

CompareHeatmap::Geometry CompareHeatmap::geometry() const
{
    Geometry g;
    const QFontMetrics fm(font());
    int labelW = 0;
    for (const auto& r : m_grid.rows)
        labelW = std::max(labelW, fm.horizontalAdvance(r));
    g.left = std::min(labelW + 8, width() / 3);
    int columnW = 0;
    for (const auto& c : m_grid.columns)
        for (const QString& line : labelLines(c))
            columnW = std::max(columnW, fm.horizontalAdvance(line));
    g.top = std::min(columnW + 8, height() / 3);
    const int rows = std::max<int>(1, int(m_grid.rows.size())),
              cols = std::max<int>(1, int(m_grid.columns.size()));
    g.cw = std::min<double>(kMaxCell * 2, double(width() - g.left - 4) / cols);
    g.ch = std::min<double>(kMaxCell, double(height() - g.top - kLegend - 4) / rows);
    g.cells = QRect(g.left, g.top, int(g.cw * cols), int(g.ch * rows));
    return g;
}

QRect CompareHeatmap::cellRect(int row, int column) const
{
    const Geometry g = geometry();
    const int x0 = g.left + int(std::floor(column * g.cw)),
              x1 = g.left + int(std::floor((column + 1) * g.cw));
    const int y0 = g.top + int(std::floor(row * g.ch)), y1 = g.top + int(std::floor((row + 1) * g.ch));
    return QRect(x0, y0, std::max(1, x1 - x0), std::max(1, y1 - y0));
}

const HeatmapGrid::Cell* CompareHeatmap::cellAt(QPoint p) const
{
    const Geometry g = geometry();
    if (!g.cells.contains(p) || g.cw <= 0 || g.ch <= 0) return nullptr;
    const int col = int((p.x() - g.left) / g.cw), row = int((p.y() - g.top) / g.ch);
    if (row >= m_grid.rows.size() || col >= m_grid.columns.size()) return nullptr;
    const int i = m_index[size_t(row * m_grid.columns.size() + col)];
    return i < 0 ? nullptr : &m_grid.cells[size_t(i)];
}

// The rows' and columns' labels: every k-th when the cells are smaller than a line of text.
void CompareHeatmap::drawLabels(QPainter& p, const Geometry& g) const
{
    const QFontMetrics fm(font());
    const int lineH = fm.height();
    p.setPen(palette().color(QPalette::Text));
    const int rowStep = std::max(1, int(std::ceil(lineH / std::max(1.0, g.ch))));
    for (int r = 0; r < m_grid.rows.size(); r += rowStep) {
        const QRect cell = cellRect(r, 0);
        p.drawText(QRect(0, cell.center().y() - lineH / 2, g.left - 6, lineH),
                   Qt::AlignRight | Qt::AlignVCenter,
                   fm.elidedText(m_grid.rows[r], Qt::ElideLeft, g.left - 6));
    }
    // A moment's column ("weight/exp_avg_sq") on two lines, the parameter's kind above its
    // moment: each line short enough to be read whole, where one would be cut.
    const int colStep = std::max(1, int(std::ceil(2 * lineH / std::max(1.0, g.cw))));
    for (int c = 0; c < m_grid.columns.size(); c += colStep) {
        const QRect cell = cellRect(0, c);
        const QStringList lines = labelLines(m_grid.columns[c]);
        for (int i = 0; i < lines.size(); ++i) {
            p.save();
            const int shift = (2 * i - int(lines.size()) + 1) * lineH / 2; // centred as a block
            p.translate(cell.center().x() + shift + lineH / 2 - fm.descent(), g.top - 4);
            p.rotate(-90);
            p.drawText(0, 0, fm.elidedText(lines[i], Qt::ElideLeft, g.top - 6));
            p.restore();
        }
    }
}

void CompareHeatmap::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.fillRect(rect(), palette().color(QPalette::Base));
    const QPalette& pal = palette();
    if (m_grid.cells.empty()) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(rect(), Qt::AlignCenter, tr("No tensors compared yet"));
        return;
    }
    const Geometry g = geometry();
    drawLabels(p, g);
    const QFontMetrics fm(font());
    const int lineH = fm.height();
    // Cells.
    const QColor grid = pal.color(QPalette::Window);
    for (const auto& c : m_grid.cells) {
        const QRect r = cellRect(c.row, c.column);
        const QColor color = cellColor(c);
        if (color.isValid()) {
            p.fillRect(r, color);
        } else {
            p.fillRect(r, pal.color(QPalette::Base));
            p.fillRect(r, QBrush(pal.color(QPalette::Mid), Qt::BDiagPattern));
        }
        if (r.width() > 3 && r.height() > 3) {
            p.setPen(grid);
            p.drawRect(r.adjusted(0, 0, -1, -1));
        }
        if (c.dtypeChanged) dtypeMark(p, r);
    }
    if (m_grid.layerRows > 0 && m_grid.layerRows < m_grid.rows.size()) { // layers | other modules
        const int y = cellRect(m_grid.layerRows, 0).top();
        p.setPen(QPen(pal.color(QPalette::Text), 1, Qt::DashLine));
        p.drawLine(g.left, y, g.cells.right(), y);
    }
    if (const auto* s = m_grid.find(m_selected)) {
        p.setPen(QPen(pal.color(QPalette::Highlight), 2));
        p.setBrush(Qt::NoBrush);
        p.drawRect(cellRect(s->row, s->column).adjusted(0, 0, -1, -1));
    }
    // Legend: the colour ramp over whole decades, then the two special cells.
    const int ly = height() - kLegend + 8, lw = std::min(260, width() / 2);
    const QRect ramp(g.left, ly, lw, 10);
    QLinearGradient grad(ramp.topLeft(), ramp.topRight());
    for (int i = 0; i <= 8; ++i)
        grad.setColorAt(i / 8.0, colorAt(i / 8.0));
    p.fillRect(ramp, grad);
    p.setPen(pal.color(QPalette::Text));
    const int decades = int(m_hi - m_lo);
    const int tickStep = std::max(1, decades / 4);
    for (int d = 0; d <= decades; d += tickStep) {
        const int x = ramp.left() + int(double(d) / decades * ramp.width());
        p.drawLine(x, ramp.bottom() + 1, x, ramp.bottom() + 3);
        const QString t = QStringLiteral("1e%1").arg(int(m_lo) + d);
        p.drawText(QRect(x - 30, ramp.bottom() + 3, 60, lineH), Qt::AlignHCenter | Qt::AlignTop, t);
    }
    int x = ramp.right() + 16;
    p.drawText(QRect(x, ly - lineH / 2 + 5, width() - x, lineH), Qt::AlignLeft | Qt::AlignVCenter,
               tr("rel. L2 change"));
    // The two special cells on their own line, below the ramp's tick labels.
    const int ky = ramp.bottom() + 4 + lineH;
    x = g.left;
    const QRect same(x, ky, 12, 10);
    p.fillRect(same, pal.color(QPalette::Midlight));
    p.drawRect(same.adjusted(0, 0, -1, -1));
    p.drawText(same.right() + 5, ky + fm.ascent() - 1, tr("identical"));
    x = same.right() + 5 + fm.horizontalAdvance(tr("identical")) + 16;
    const QRect na(x, ky, 12, 10);
    p.fillRect(na, QBrush(pal.color(QPalette::Mid), Qt::BDiagPattern));
    p.drawRect(na.adjusted(0, 0, -1, -1));
    p.drawText(na.right() + 5, ky + fm.ascent() - 1, tr("not comparable"));
    x = na.right() + 5 + fm.horizontalAdvance(tr("not comparable")) + 16;
    const QRect dt(x, ky, 12, 10);
    p.fillRect(dt, pal.color(QPalette::Base));
    p.drawRect(dt.adjusted(0, 0, -1, -1));
    dtypeMark(p, dt);
    p.setPen(pal.color(QPalette::Text));
    p.drawText(dt.right() + 5, ky + fm.ascent() - 1, tr("dtype changed"));
}

void CompareHeatmap::dtypeMark(QPainter& p, const QRect& r) const
{
    // A corner triangle in the text colour: visible on every ramp colour, light or dark.
    const int s = std::max(3, std::min(r.width(), r.height()) / 2);
    const QPoint tr = r.topRight() + QPoint(1, 0);
    p.setPen(Qt::NoPen);
    p.setBrush(palette().color(QPalette::Text));
    p.drawPolygon(QPolygon({tr, tr - QPoint(s, 0), tr + QPoint(0, s)}));
    p.setBrush(Qt::NoBrush);
}

void CompareHeatmap::mousePressEvent(QMouseEvent* e)
{
    if (const auto* c = cellAt(e->position().toPoint())) {
        setSelected(c->name);
        emit tensorClicked(c->name);
    }
}

bool CompareHeatmap::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        if (const auto* c = cellAt(he->pos())) {
            QString value = c->value == 0 ? tr("identical")
                            : std::isfinite(c->value)
                                ? tr("rel. L2 %1").arg(QString::number(c->value, 'g', 3))
                                : CompareModel::statusText(c->status);
            if (c->dtypeChanged) value += QLatin1Char('\n') + CompareModel::statusText(c->status);
            QToolTip::showText(he->globalPos(), c->name + QLatin1Char('\n') + value, this);
        } else {
            QToolTip::hideText();
        }
        return true;
    }
    return QWidget::event(e);
}

} // namespace ckpt::app
