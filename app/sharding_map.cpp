#include "sharding_map.h"

#include <QElapsedTimer>
#include <QHelpEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QSet>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <map>

namespace ckpt::app {

namespace {

constexpr int kTop = 18, kBottom = 18;

} // namespace

QString ShardingMap::nameOf(int param) const
{
    return param >= 0 && size_t(param) < m_layout->names.size()
               ? QString::fromStdString(m_layout->names[size_t(param)])
               : QString();
}

QString ShardingMap::laneName(int lane) const
{
    return lane >= 0 && size_t(lane) < m_layout->laneNames.size()
               ? QString::fromStdString(m_layout->laneNames[size_t(lane)])
               : QString();
}

ShardingMap::ShardingMap(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(true);
    setCursor(Qt::OpenHandCursor);
}

void ShardingMap::setSharding(ShardingLayout layout)
{
    setSharding(std::make_shared<const ShardingLayout>(std::move(layout)));
}

void ShardingMap::setSharding(std::shared_ptr<const ShardingLayout> layout)
{
    m_layout = layout ? std::move(layout) : std::make_shared<const ShardingLayout>();
    m_laneFirst.assign(size_t(std::max(0, m_layout->ranks)) + 1, m_layout->segments.size());
    if (m_layout->mode == ShardingLayout::Mode::Lanes || m_layout->mode == ShardingLayout::Mode::Files)
        for (size_t i = m_layout->segments.size(); i-- > 0;)
            m_laneFirst[size_t(m_layout->segments[i].rank)] = i;
    for (size_t r = m_laneFirst.size() - 1; r-- > 0;) // ranks with nothing start where the next does
        m_laneFirst[r] = std::min(m_laneFirst[r], m_laneFirst[r + 1]);
    const QFontMetrics fm(font());
    m_labelWidth = fm.horizontalAdvance(tr("rank %1").arg(std::max(0, m_layout->ranks - 1)));
    for (const std::string& n : m_layout->laneNames)
        m_labelWidth = std::max(m_labelWidth, fm.horizontalAdvance(QString::fromStdString(n)));
    if (m_layout->mode == ShardingLayout::Mode::Grid) {
        // The widest label is among the longest names: measuring 10,000 names took 70 ms of
        // the GUI thread, the 64 longest take nothing.
        std::vector<int> longest = m_layout->gridParams;
        const size_t n = std::min<size_t>(longest.size(), 64);
        std::partial_sort(longest.begin(), longest.begin() + ptrdiff_t(n), longest.end(), [&](int a, int b) {
            return m_layout->names[size_t(a)].size() > m_layout->names[size_t(b)].size();
        });
        for (size_t i = 0; i < n; ++i)
            m_labelWidth = std::max(m_labelWidth, fm.horizontalAdvance(nameOf(longest[i])));
    }
    m_zoom = 1;
    m_offset = 0;
    update();
}

void ShardingMap::setZoom(double zoom, double center)
{
    const double extent = m_layout->mode == ShardingLayout::Mode::Grid ? double(m_layout->gridParams.size())
                                                                       : double(m_layout->laneLength);
    m_zoom = std::clamp(zoom, 1.0, std::max(1.0, extent / 4)); // at most 4 elements or rows in view
    m_offset = std::clamp(center - 0.5 / m_zoom, 0.0, 1 - 1 / m_zoom);
    update();
}

QRect ShardingMap::area(QSize size) const
{
    const int left = leftMargin(size);
    return QRect(left, kTop, std::max(1, size.width() - left - 6),
                 std::max(1, size.height() - kTop - kBottom));
}

int ShardingMap::leftMargin(QSize size) const
{
    // Room for the widest label (rank names, or parameter names in the grid), at most a third.
    return std::min(m_labelWidth + 10, std::max(40, size.width() / 3));
}

double ShardingMap::toX(uint64_t pos, const QRect& a) const
{
    const double f = m_layout->laneLength ? double(pos) / double(m_layout->laneLength) : 0;
    return a.left() + (f - m_offset) * m_zoom * a.width();
}

double ShardingMap::fromX(double x, const QRect& a) const
{
    const double length = double(m_layout->laneLength);
    return m_offset * length + ((x - a.left()) / a.width()) / m_zoom * length;
}

QColor ShardingMap::colorOf(int param) const
{
    const int key = size_t(param) < m_layout->layer.size() ? m_layout->layer[size_t(param)] : 0;
    // Layers walk the hue circle by the golden angle, so neighbours differ; other modules too,
    // paler; every other parameter is a shade darker so that neighbours stay apart.
    const bool odd = param % 2;
    if (key < 0) return QColor::fromHsv(int(std::fmod(-key * 137.508 + 20, 360.0)), 90, odd ? 170 : 215);
    const int hue = int(std::fmod(key * 137.508, 360.0));
    return QColor::fromHsv(hue, 150, odd ? 185 : 225);
}

int ShardingMap::segmentAt(QPoint pt) const
{
    const QRect a = area(size());
    if (!a.contains(pt) || m_layout->ranks <= 0) return -1;
    if (m_layout->mode == ShardingLayout::Mode::Lanes || m_layout->mode == ShardingLayout::Mode::Files) {
        const double laneH = double(a.height()) / m_layout->ranks;
        const int rank = int((pt.y() - a.top()) / laneH);
        if (rank < 0 || rank >= m_layout->ranks) return -1;
        const double f = m_offset + double(pt.x() - a.left()) / a.width() / m_zoom;
        const auto pos = uint64_t(std::max(0.0, f * double(m_layout->laneLength)));
        const auto b = m_layout->segments.begin() + ptrdiff_t(m_laneFirst[size_t(rank)]),
                   e = m_layout->segments.begin() + ptrdiff_t(m_laneFirst[size_t(rank) + 1]);
        auto it = std::upper_bound(b, e, pos, [](uint64_t v, const auto& s) { return v < s.begin; });
        if (it == b) return -1;
        --it;
        return pos < it->begin + it->length ? int(it - m_layout->segments.begin()) : -1;
    }
    if (m_layout->mode == ShardingLayout::Mode::Grid) {
        const double rows = double(m_layout->gridParams.size());
        const double f = m_offset + double(pt.y() - a.top()) / a.height() / m_zoom;
        const auto row = size_t(f * rows);
        const int rank = int(double(pt.x() - a.left()) / a.width() * m_layout->ranks);
        if (row >= m_layout->gridParams.size() || rank < 0 || rank >= m_layout->ranks) return -1;
        return int(m_layout->gridFirst[row] + size_t(rank));
    }
    return -1;
}

QPoint ShardingMap::pointOf(int segment) const
{
    const QRect a = area(size());
    const auto& s = m_layout->segments[size_t(segment)];
    if (m_layout->mode == ShardingLayout::Mode::Lanes || m_layout->mode == ShardingLayout::Mode::Files) {
        const double laneH = double(a.height()) / m_layout->ranks;
        const double x0 = std::max(toX(s.begin, a), double(a.left())),
                     x1 = std::min(toX(s.begin + s.length, a), double(a.right()));
        return QPoint(int((x0 + x1) / 2), int(a.top() + (s.rank + 0.5) * laneH));
    }
    const auto row = size_t(std::find(m_layout->gridParams.begin(), m_layout->gridParams.end(), s.param) -
                            m_layout->gridParams.begin());
    const double rows = double(m_layout->gridParams.size());
    const double y = a.top() + ((double(row) + 0.5) / rows - m_offset) * m_zoom * a.height();
    return QPoint(int(a.left() + (s.rank + 0.5) * a.width() / m_layout->ranks), int(y));
}

QString ShardingMap::describe(int segment) const
{
    const auto& s = m_layout->segments[size_t(segment)];
    const QLocale loc;
    QString t = nameOf(s.param) + QLatin1Char('\n') +
                tr("rank %1: elements %2 to %3 (%4)")
                    .arg(s.rank)
                    .arg(loc.toString(qulonglong(s.begin)))
                    .arg(loc.toString(qulonglong(s.begin + s.length)))
                    .arg(loc.toString(qulonglong(s.length)));
    if (m_layout->mode == ShardingLayout::Mode::Grid)
        t = nameOf(s.param) + QLatin1Char('\n') +
            tr("rank %1 holds %2 elements, %3 of padding")
                .arg(s.rank)
                .arg(loc.toString(qulonglong(s.length)))
                .arg(loc.toString(qulonglong(s.padding)));
    if (!s.where.empty()) t += QLatin1Char('\n') + tr("block %1").arg(QString::fromStdString(s.where));
    if (m_layout->mode == ShardingLayout::Mode::Files)
        t = nameOf(s.param) + QLatin1Char('\n') +
            tr("in %1: %2").arg(laneName(s.rank), loc.formattedDataSize(qint64(s.length)));
    return t;
}

void ShardingMap::paint(QPainter& p, QSize size) const
{
    const QPalette& pal = palette();
    p.fillRect(QRect(QPoint(0, 0), size), pal.color(QPalette::Base));
    p.setPen(pal.color(QPalette::Text));
    const QRect a = area(size);
    switch (m_layout->ranks > 0 ? m_layout->mode : ShardingLayout::Mode::Empty) {
    case ShardingLayout::Mode::Lanes:
        return paintLanes(p, a, size.width());
    case ShardingLayout::Mode::Files:
        return paintFiles(p, a);
    case ShardingLayout::Mode::Grid:
        return paintGrid(p, a);
    case ShardingLayout::Mode::Empty:
        break;
    }
    p.setPen(pal.color(QPalette::PlaceholderText));
    p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap, tr("No tensors to draw"));
}

// ZeRO-1/2: a lane per rank along its flat partition, group boundaries dashed across them, the
// elements in view on the axis below.
void ShardingMap::paintLanes(QPainter& p, const QRect& a, int width) const
{
    paintLaneRows(p, a);
    paintLaneLabels(p, a, [this](int r) { return tr("rank %1").arg(r); });
    paintGroupBoundaries(p, a, width);
    const QFontMetrics fm(font());
    const QLocale loc;
    const auto [v0, v1] = visibleLanes();
    const QRect axis(a.left(), a.bottom() + 2, a.width(), fm.height());
    p.drawText(axis, Qt::AlignLeft, loc.toString(qulonglong(v0)));
    p.drawText(axis, Qt::AlignRight,
               tr("%1 elements").arg(loc.toString(qulonglong(std::min(v1, double(m_layout->laneLength))))));
    drawPaddingKey(p, axis.adjusted(fm.horizontalAdvance(loc.toString(qulonglong(v0))) + 16, 0, 0, 0));
}

// Not sharded: a lane per file, its tensors in order, by size; the bytes in view on the axis.
void ShardingMap::paintFiles(QPainter& p, const QRect& a) const
{
    paintLaneRows(p, a);
    const QFontMetrics fm(font());
    paintLaneLabels(p, a, [&](int r) { return fm.elidedText(laneName(r), Qt::ElideMiddle, a.left() - 6); });
    const QLocale loc;
    const auto [v0, v1] = visibleLanes();
    const QRect axis(a.left(), a.bottom() + 2, a.width(), fm.height());
    p.drawText(QRect(a.left(), 0, a.width(), kTop), Qt::AlignLeft | Qt::AlignVCenter,
               tr("Not sharded: each file's tensors in order, by size"));
    p.drawText(axis, Qt::AlignRight,
               loc.formattedDataSize(qint64(std::min(v1, double(m_layout->laneLength)))));
    p.drawText(axis, Qt::AlignLeft, loc.formattedDataSize(qint64(v0)));
}

std::pair<double, double> ShardingMap::visibleLanes() const
{
    const double v0 = m_offset * double(m_layout->laneLength);
    return {v0, v0 + double(m_layout->laneLength) / m_zoom};
}

double ShardingMap::laneHeight(const QRect& a) const
{
    return double(a.height()) / m_layout->ranks;
}

// Every lane's contents, clipped to the area: the padding of each group, then the segments.
void ShardingMap::paintLaneRows(QPainter& p, const QRect& a) const
{
    const double laneH = laneHeight(a);
    const int gap = laneH >= 6 ? 1 : 0;
    p.setClipRect(a.adjusted(0, 0, 1, 1));
    for (int r = 0; r < m_layout->ranks; ++r) {
        const int y0 = a.top() + int(r * laneH), y1 = a.top() + int((r + 1) * laneH) - gap;
        const QRect lane(a.left(), y0, a.width(), std::max(1, y1 - y0));
        paintGroupPadding(p, a, r, lane);
        paintSegments(p, a, r, lane);
    }
    p.setClipping(false);
}

// Under the segments, hatched: every group's tail that this rank does not fill.
void ShardingMap::paintGroupPadding(QPainter& p, const QRect& a, int rank, const QRect& lane) const
{
    const QBrush hatch(palette().color(QPalette::Mid), Qt::BDiagPattern);
    const auto& starts = m_layout->groupStarts;
    for (size_t g = 0; g < starts.size(); ++g) {
        const uint64_t end = g + 1 < starts.size() ? starts[g + 1] : m_layout->laneLength;
        const uint64_t used = starts[g] + m_layout->groupUsed[g][size_t(rank)];
        if (used >= end) continue;
        const double x0 = toX(used, a), x1 = toX(end, a);
        if (x1 - x0 >= 1) p.fillRect(QRectF(x0, lane.top(), x1 - x0, lane.height()), hatch);
    }
}

// A lane's segments in view, at most one rectangle per pixel column: the first segment in a
// column wins, and the ones that end inside it are skipped.
void ShardingMap::paintSegments(QPainter& p, const QRect& a, int rank, const QRect& lane) const
{
    const auto [v0, v1] = visibleLanes();
    const auto b = m_layout->segments.begin() + ptrdiff_t(m_laneFirst[size_t(rank)]),
               e = m_layout->segments.begin() + ptrdiff_t(m_laneFirst[size_t(rank) + 1]);
    auto it = std::upper_bound(b, e, uint64_t(v0), [](uint64_t v, const auto& s) { return v < s.begin; });
    if (it != b) --it;
    int drawnTo = INT_MIN;
    for (; it != e && double(it->begin) < v1; ++it) {
        const int px0 = std::max(int(std::floor(toX(it->begin, a))), drawnTo);
        const int px1 = int(std::ceil(toX(it->begin + it->length, a)));
        if (px1 <= px0) continue;
        p.fillRect(px0, lane.top(), px1 - px0, lane.height(), colorOf(it->param));
        drawnTo = px1;
        if (px1 - px0 > 1) continue;
        // The rest of this pixel column belongs to what was drawn: on to the first segment
        // that reaches past it.
        const auto past = uint64_t(std::max(0.0, fromX(px1, a)));
        auto skip =
            std::upper_bound(it, e, past, [](uint64_t v, const auto& s) { return v < s.begin + s.length; });
        if (skip != it) it = skip - 1;
    }
}

// Each lane's name at its left, every labelStep-th when lanes are thinner than a line of text.
void ShardingMap::paintLaneLabels(QPainter& p, const QRect& a, const std::function<QString(int)>& label) const
{
    const QFontMetrics fm(font());
    const double laneH = laneHeight(a);
    const int labelStep = std::max(1, int(std::ceil(fm.height() / laneH)));
    for (int r = 0; r < m_layout->ranks; r += labelStep)
        p.drawText(QRect(0, a.top() + int(r * laneH), a.left() - 6, std::max(int(laneH), fm.height())),
                   Qt::AlignRight | Qt::AlignVCenter, label(r));
}

// Group boundaries, dashed across every lane, each labelled where its label has room.
void ShardingMap::paintGroupBoundaries(QPainter& p, const QRect& a, int width) const
{
    const QFontMetrics fm(font());
    p.setPen(QPen(palette().color(QPalette::Text), 1, Qt::DashLine));
    double labelsEnd = -1e9; // where the last label drawn ends: narrow groups skip theirs
    for (size_t g = 0; g < m_layout->groupStarts.size(); ++g) {
        const double x = toX(m_layout->groupStarts[g], a);
        if (x < a.left() || x > a.right()) continue;
        if (g > 0) p.drawLine(QPointF(x, a.top() - 2), QPointF(x, a.bottom()));
        const QString label = tr("group %1").arg(g);
        // Beside the line, or ending at it when it would run off the right edge; never over
        // the previous label (the line says where the group starts, the tooltip which it is).
        const int w = fm.horizontalAdvance(label);
        const double lx = x + 3 + w > width ? x - 3 - w : x + 3;
        if (lx < labelsEnd + 6) continue;
        p.drawText(QPointF(lx, a.top() - 4), label);
        labelsEnd = lx + w;
    }
    p.setPen(palette().color(QPalette::Text));
}

// ZeRO-3 and N-d chunks: a row per parameter, a column per rank, each cell filled by the rank's
// share and its padding hatched; rows thinner than a pixel share it.
void ShardingMap::paintGrid(QPainter& p, const QRect& a) const
{
    const size_t rows = m_layout->gridParams.size();
    if (!rows) return;
    const QBrush hatch(palette().color(QPalette::Mid), Qt::BDiagPattern);
    const double rowH = double(a.height()) * m_zoom / double(rows);
    const double colW = double(a.width()) / m_layout->ranks;
    const auto [firstRow, lastRow] = visibleRows();
    int drawnTo = INT_MIN;
    p.setClipRect(a.adjusted(0, 0, 1, 1));
    for (size_t row = firstRow; row < lastRow; ++row) {
        const double yf = rowY(row, a);
        const int y0 = std::max(int(std::floor(yf)), drawnTo);
        const int y1 = int(std::floor(yf + rowH));
        if (y1 <= y0) continue;
        drawnTo = y1;
        const int h = std::max(1, y1 - y0 - (rowH >= 6 ? 1 : 0));
        const uint64_t per = std::max<uint64_t>(1, m_layout->perRank[row]);
        const QColor c = colorOf(m_layout->gridParams[row]);
        for (int r = 0; r < m_layout->ranks; ++r) {
            const auto& s = m_layout->segments[m_layout->gridFirst[row] + size_t(r)];
            const double x0 = a.left() + r * colW, w = colW - (colW >= 6 ? 1 : 0);
            const double filled = w * double(s.length) / double(per);
            if (filled > 0) p.fillRect(QRectF(x0, y0, std::max(1.0, filled), h), c);
            if (w - filled >= 2) p.fillRect(QRectF(x0 + filled, y0, w - filled, h), hatch);
        }
    }
    p.setClipping(false);
    paintGridLabels(p, a);
}

// The ranks above the columns, the parameters beside the rows when a row has room for a line,
// the size of the grid and the padding key below it.
void ShardingMap::paintGridLabels(QPainter& p, const QRect& a) const
{
    const QFontMetrics fm(font());
    const size_t rows = m_layout->gridParams.size();
    const double rowH = double(a.height()) * m_zoom / double(rows);
    const double colW = double(a.width()) / m_layout->ranks;
    const int colStep = std::max(1, int(std::ceil(fm.horizontalAdvance(QStringLiteral("00")) * 1.5 / colW)));
    for (int r = 0; r < m_layout->ranks; r += colStep)
        p.drawText(QRectF(a.left() + r * colW, 0, colW * colStep, kTop), Qt::AlignLeft | Qt::AlignVCenter,
                   QString::number(r));
    const auto [firstRow, lastRow] = visibleRows();
    if (rowH >= fm.height())
        for (size_t row = firstRow; row < lastRow; ++row)
            p.drawText(QRectF(0, rowY(row, a), a.left() - 6, rowH), Qt::AlignRight | Qt::AlignVCenter,
                       fm.elidedText(nameOf(m_layout->gridParams[row]), Qt::ElideMiddle, a.left() - 6));
    const QRect axis(a.left(), a.bottom() + 2, a.width(), fm.height());
    p.drawText(axis, Qt::AlignRight,
               tr("%n parameter(s) x %1 ranks", nullptr, int(rows)).arg(m_layout->ranks));
    drawPaddingKey(p, axis);
}

std::pair<size_t, size_t> ShardingMap::visibleRows() const
{
    const size_t rows = m_layout->gridParams.size();
    const size_t first = size_t(m_offset * double(rows));
    return {first, std::min(rows, size_t(std::ceil((m_offset + 1 / m_zoom) * double(rows))) + 1)};
}

double ShardingMap::rowY(size_t row, const QRect& a) const
{
    const double rows = double(m_layout->gridParams.size());
    return a.top() + (double(row) / rows - m_offset) * m_zoom * a.height();
}

void ShardingMap::drawPaddingKey(QPainter& p, const QRect& line) const
{
    // What the hatching means, at the start of the axis line.
    const QFontMetrics fm(font());
    const QString text = tr("padding / unused");
    const int w = 14 + fm.horizontalAdvance(text);
    const QRect box(line.left(), line.top() + (line.height() - 10) / 2, 10, 10);
    p.fillRect(box, QBrush(palette().color(QPalette::Mid), Qt::BDiagPattern));
    p.drawRect(box.adjusted(0, 0, -1, -1));
    p.drawText(QRect(box.right() + 5, line.top(), w, line.height()), Qt::AlignLeft | Qt::AlignVCenter, text);
}

void ShardingMap::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    paint(p, size());
}

qint64 ShardingMap::timePaint(QSize size)
{
    QImage img(size, QImage::Format_ARGB32_Premultiplied);
    const QSize old = this->size();
    resize(size); // geometry follows the widget's size
    QElapsedTimer t;
    t.start();
    {
        QPainter p(&img);
        paint(p, size);
    }
    const qint64 us = t.nsecsElapsed() / 1000;
    resize(old);
    return us;
}

void ShardingMap::wheelEvent(QWheelEvent* e)
{
    const QRect a = area(size());
    const bool grid = m_layout->mode == ShardingLayout::Mode::Grid;
    const double at = grid ? double(e->position().y() - a.top()) / a.height()
                           : double(e->position().x() - a.left()) / a.width();
    const double point = m_offset + std::clamp(at, 0.0, 1.0) / m_zoom; // stays under the cursor
    const double zoom = m_zoom * std::pow(1.25, e->angleDelta().y() / 120.0);
    setZoom(zoom, 0.5);
    m_offset = std::clamp(point - std::clamp(at, 0.0, 1.0) / m_zoom, 0.0, 1 - 1 / m_zoom);
    update();
    e->accept();
}

void ShardingMap::mousePressEvent(QMouseEvent* e)
{
    m_dragFrom = e->position().toPoint();
    m_dragOffset = m_offset;
    m_dragging = false;
}

void ShardingMap::mouseMoveEvent(QMouseEvent* e)
{
    if (!(e->buttons() & Qt::LeftButton)) return;
    const QPoint d = e->position().toPoint() - m_dragFrom;
    if (!m_dragging && d.manhattanLength() < 4) return;
    m_dragging = true;
    setCursor(Qt::ClosedHandCursor);
    const QRect a = area(size());
    const bool grid = m_layout->mode == ShardingLayout::Mode::Grid;
    const double moved = grid ? double(d.y()) / a.height() : double(d.x()) / a.width();
    m_offset = std::clamp(m_dragOffset - moved / m_zoom, 0.0, 1 - 1 / m_zoom);
    update();
}

void ShardingMap::mouseReleaseEvent(QMouseEvent* e)
{
    setCursor(Qt::OpenHandCursor);
    if (m_dragging) return;
    const int s = segmentAt(e->position().toPoint());
    if (s >= 0) emit parameterClicked(nameOf(m_layout->segments[size_t(s)].param));
}

bool ShardingMap::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        auto* he = static_cast<QHelpEvent*>(e);
        const int s = segmentAt(he->pos());
        if (s >= 0)
            QToolTip::showText(he->globalPos(), describe(s), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

} // namespace ckpt::app
