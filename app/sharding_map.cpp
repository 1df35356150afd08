#include "sharding_map.h"

#include "compare_model.h"

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

// The layer a name belongs to (its first number: "layers.17.mlp" -> 17); other modules get
// negative keys in the order first seen, so each keeps one colour.
std::vector<int> layerKeys(const QStringList& names)
{
    std::map<QString, int> modules;
    std::vector<int> out;
    out.reserve(size_t(names.size()));
    for (const QString& n : names) {
        const LayerName l = splitLayer(n);
        if (l.isLayer) {
            out.push_back(int(l.number));
        } else {
            const QString module = n.left(std::max<qsizetype>(0, n.lastIndexOf(QLatin1Char('.'))));
            out.push_back(-1 - modules.emplace(module, int(modules.size())).first->second);
        }
    }
    return out;
}

constexpr int kTop = 18, kBottom = 18;

} // namespace

namespace {

// N-d chunks (DCP): each rank's block of a parameter, a parameters x ranks grid as ZeRO-3's.
void chunkGrid(const layout::Tag& tag, int ranks, ShardingLayout& l)
{
    l.mode = ShardingLayout::Mode::Grid;
    l.ranks = ranks;
    for (size_t i = 0; i < tag.params.size(); ++i) {
        const auto& p = tag.params[i];
        if (p.slices.empty()) continue;
        l.gridParams.push_back(int(i));
        l.gridFirst.push_back(l.segments.size());
        uint64_t per = 0;
        for (int r = 0; r < ranks; ++r) {
            ShardingLayout::Segment s;
            s.param = int(i);
            s.rank = r;
            QStringList blocks;
            for (const auto& sl : p.slices) {
                if (sl.rank != r) continue;
                s.length += sl.length;
                for (const auto& src : sl.master) {
                    QStringList dims;
                    for (size_t d = 0; d < src.chunkOffsets.size() && d < src.chunkShape.size(); ++d)
                        dims << QStringLiteral("%1:%2")
                                    .arg(src.chunkOffsets[d])
                                    .arg(src.chunkOffsets[d] + src.chunkShape[d]);
                    if (!dims.isEmpty())
                        blocks << QLatin1Char('[') + dims.join(QLatin1String(", ")) + QLatin1Char(']');
                }
            }
            s.where = blocks.join(QLatin1String(" "));
            per = std::max(per, s.length);
            l.segments.push_back(s);
        }
        l.perRank.push_back(per);
    }
}

// Each lane's label: the file's name when that tells the lanes apart, else its path without the
// folders every lane shares (a Universal folder's files are all fp32.pt: zero/<param>/fp32.pt
// becomes <param>/fp32.pt).
QStringList laneLabels(const QStringList& paths)
{
    QStringList base;
    for (const QString& p : paths)
        base << p.section(QLatin1Char('/'), -1);
    if (QSet<QString>(base.begin(), base.end()).size() == base.size()) return base;
    QStringList common = paths.value(0).split(QLatin1Char('/'));
    common.removeLast();
    for (const QString& p : paths) {
        const QStringList parts = p.split(QLatin1Char('/'));
        int n = 0;
        while (n < common.size() && n + 1 < parts.size() && parts[n] == common[n])
            ++n;
        common = common.mid(0, n);
    }
    QStringList out;
    for (const QString& p : paths)
        out << p.section(QLatin1Char('/'), int(common.size()));
    return out;
}

// Unsharded tensors: a lane per file, its tensors one after another in the tag's order, each as
// long as its bytes. Positions are not file offsets (the domain model has none): what a file
// holds and how big, not where.
void fileLanes(const layout::Tag& tag, ShardingLayout& l)
{
    l.mode = ShardingLayout::Mode::Files;
    std::map<std::string, int> lane;
    std::vector<uint64_t> at;
    for (size_t i = 0; i < tag.params.size(); ++i)
        for (const auto& sl : tag.params[i].slices)
            for (const auto& src : sl.master) {
                auto [it, added] = lane.emplace(src.file, int(at.size()));
                if (added) {
                    at.push_back(0);
                    const auto f = std::find_if(tag.files.begin(), tag.files.end(),
                                                [&](const auto& rf) { return rf.path == src.file; });
                    l.laneNames << QString::fromStdString(f != tag.files.end() ? f->name : src.file.str());
                }
                uint64_t n = src.count;
                if (!src.chunkShape.empty()) {
                    n = 1;
                    for (int64_t x : src.chunkShape)
                        n *= uint64_t(x);
                }
                ShardingLayout::Segment s;
                s.param = int(i);
                s.rank = it->second;
                s.begin = at[size_t(it->second)];
                s.length = n * torch::elementSize(src.dtype);
                at[size_t(it->second)] += s.length;
                if (s.length) l.segments.push_back(s);
            }
    l.laneNames = laneLabels(l.laneNames);
    l.ranks = int(at.size());
    l.laneLength = at.empty() ? 0 : *std::max_element(at.begin(), at.end());
    if (!l.ranks || !l.laneLength) l.mode = ShardingLayout::Mode::Empty;
    // Lanes by file name (shard 1 of 4 first), segments by lane, then in the tag's order.
    std::vector<int> order(at.size()), lanePos(at.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = int(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return l.laneNames[a] < l.laneNames[b]; });
    QStringList sorted;
    for (size_t i = 0; i < order.size(); ++i) {
        lanePos[size_t(order[i])] = int(i);
        sorted << l.laneNames[order[i]];
    }
    l.laneNames = sorted;
    for (auto& s : l.segments)
        s.rank = lanePos[size_t(s.rank)];
    std::stable_sort(l.segments.begin(), l.segments.end(),
                     [](const auto& a, const auto& b) { return a.rank < b.rank; });
}

} // namespace

ShardingLayout shardingLayout(const layout::Tag& tag)
{
    ShardingLayout l;
    l.ranks = tag.worldSize;
    for (const auto& p : tag.params)
        l.names << QString::fromStdString(p.name);
    l.layer = layerKeys(l.names);
    // ZeRO partitions put parameters in flat groups; a Universal folder keeps the stage it came
    // from but has none (a file per parameter).
    const bool grouped = std::any_of(tag.params.begin(), tag.params.end(),
                                     [](const auto& p) { return p.group >= 0 && !p.slices.empty(); });
    if (!grouped || tag.worldSize <= 0 || tag.zeroStage < 1 || tag.zeroStage > 3) {
        int maxRank = 0;
        for (const auto& p : tag.params)
            for (const auto& s : p.slices)
                maxRank = std::max(maxRank, s.rank);
        if (maxRank > 0)
            chunkGrid(tag, maxRank + 1, l);
        else
            fileLanes(tag, l);
        return l;
    }
    const size_t W = size_t(tag.worldSize);
    if (tag.zeroStage == 3) {
        l.mode = ShardingLayout::Mode::Grid;
        l.segments.reserve(tag.params.size() * W);
        for (size_t i = 0; i < tag.params.size(); ++i) {
            const auto& p = tag.params[i];
            if (p.slices.empty() || p.group < 0) continue; // buffers and the like: not partitioned
            l.gridParams.push_back(int(i));
            l.gridFirst.push_back(l.segments.size());
            // A row of W cells, each filled from its rank's slice: one pass over the slices (a
            // search per cell made 64 ranks x 10,000 parameters 43 million steps on the GUI thread).
            const size_t row = l.segments.size();
            for (size_t r = 0; r < W; ++r) {
                ShardingLayout::Segment s;
                s.param = int(i);
                s.rank = int(r);
                l.segments.push_back(s);
            }
            for (const auto& sl : p.slices)
                if (sl.rank >= 0 && size_t(sl.rank) < W) {
                    auto& s = l.segments[row + size_t(sl.rank)];
                    s.length = sl.length, s.padding = sl.padding; // the last one wins, as before
                }
            uint64_t per = 0;
            for (size_t r = 0; r < W; ++r)
                per = std::max(per, l.segments[row + r].length + l.segments[row + r].padding);
            l.perRank.push_back(per);
        }
        return l;
    }
    if (tag.zeroStage != 1 && tag.zeroStage != 2) return l;
    l.mode = ShardingLayout::Mode::Lanes;
    // A rank's share of a group is contiguous in the group's flat buffer: its lane position is
    // the distance from the first element it holds. Groups follow one another, each as wide
    // as its widest share, so their boundaries line up across lanes.
    int groups = 0;
    for (const auto& p : tag.params)
        groups = std::max(groups, p.group + 1);
    std::vector<std::vector<uint64_t>> first(size_t(groups), std::vector<uint64_t>(W, UINT64_MAX)),
        end(size_t(groups), std::vector<uint64_t>(W, 0));
    for (const auto& p : tag.params)
        for (const auto& s : p.slices)
            if (p.group >= 0 && size_t(s.rank) < W && s.length) {
                const uint64_t pos = p.groupOffset + s.paramOffset;
                first[size_t(p.group)][size_t(s.rank)] =
                    std::min(first[size_t(p.group)][size_t(s.rank)], pos);
                end[size_t(p.group)][size_t(s.rank)] =
                    std::max(end[size_t(p.group)][size_t(s.rank)], pos + s.length);
            }
    l.groupUsed.assign(size_t(groups), std::vector<uint64_t>(W, 0));
    uint64_t at = 0;
    for (size_t g = 0; g < size_t(groups); ++g) {
        l.groupStarts.push_back(at);
        uint64_t width = 0;
        for (size_t r = 0; r < W; ++r)
            if (first[g][r] != UINT64_MAX) {
                l.groupUsed[g][r] = end[g][r] - first[g][r];
                width = std::max(width, l.groupUsed[g][r]);
            }
        at += width;
    }
    l.laneLength = at;
    for (size_t i = 0; i < tag.params.size(); ++i) {
        const auto& p = tag.params[i];
        if (p.group < 0) continue;
        for (const auto& s : p.slices) {
            if (size_t(s.rank) >= W || !s.length) continue;
            ShardingLayout::Segment seg;
            seg.param = int(i);
            seg.rank = s.rank;
            seg.begin = l.groupStarts[size_t(p.group)] + p.groupOffset + s.paramOffset -
                        first[size_t(p.group)][size_t(s.rank)];
            seg.length = s.length;
            seg.padding = s.padding;
            l.segments.push_back(seg);
        }
    }
    std::sort(l.segments.begin(), l.segments.end(), [](const auto& a, const auto& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.begin < b.begin;
    });
    return l;
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
    for (const QString& n : m_layout->laneNames)
        m_labelWidth = std::max(m_labelWidth, fm.horizontalAdvance(n));
    if (m_layout->mode == ShardingLayout::Mode::Grid) {
        // The widest label is among the longest names: measuring 10,000 names took 70 ms of
        // the GUI thread, the 64 longest take nothing.
        std::vector<int> longest = m_layout->gridParams;
        const size_t n = std::min<size_t>(longest.size(), 64);
        std::partial_sort(longest.begin(), longest.begin() + ptrdiff_t(n), longest.end(), [&](int a, int b) {
            return m_layout->names.value(a).size() > m_layout->names.value(b).size();
        });
        for (size_t i = 0; i < n; ++i)
            m_labelWidth = std::max(m_labelWidth, fm.horizontalAdvance(m_layout->names.value(longest[i])));
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
    QString t = m_layout->names.value(s.param) + QLatin1Char('\n') +
                tr("rank %1: elements %2 to %3 (%4)")
                    .arg(s.rank)
                    .arg(loc.toString(qulonglong(s.begin)))
                    .arg(loc.toString(qulonglong(s.begin + s.length)))
                    .arg(loc.toString(qulonglong(s.length)));
    if (m_layout->mode == ShardingLayout::Mode::Grid)
        t = m_layout->names.value(s.param) + QLatin1Char('\n') +
            tr("rank %1 holds %2 elements, %3 of padding")
                .arg(s.rank)
                .arg(loc.toString(qulonglong(s.length)))
                .arg(loc.toString(qulonglong(s.padding)));
    if (!s.where.isEmpty()) t += QLatin1Char('\n') + tr("block %1").arg(s.where);
    if (m_layout->mode == ShardingLayout::Mode::Files)
        t = m_layout->names.value(s.param) + QLatin1Char('\n') +
            tr("in %1: %2").arg(m_layout->laneNames.value(s.rank), loc.formattedDataSize(qint64(s.length)));
    return t;
}

void ShardingMap::paint(QPainter& p, QSize size) const
{
    const QPalette& pal = palette();
    p.fillRect(QRect(QPoint(0, 0), size), pal.color(QPalette::Base));
    const QRect a = area(size);
    const QFontMetrics fm(font());
    p.setPen(pal.color(QPalette::Text));
    if (m_layout->mode == ShardingLayout::Mode::Empty || m_layout->ranks <= 0) {
        p.setPen(pal.color(QPalette::PlaceholderText));
        p.drawText(QRect(QPoint(0, 0), size), Qt::AlignCenter | Qt::TextWordWrap, tr("No tensors to draw"));
        return;
    }
    const QBrush hatch(pal.color(QPalette::Mid), Qt::BDiagPattern);
    if (m_layout->mode == ShardingLayout::Mode::Lanes || m_layout->mode == ShardingLayout::Mode::Files) {
        const bool files = m_layout->mode == ShardingLayout::Mode::Files;
        const double laneH = double(a.height()) / m_layout->ranks;
        const int gap = laneH >= 6 ? 1 : 0;
        const int labelStep = std::max(1, int(std::ceil(fm.height() / laneH)));
        const double v0 = m_offset * double(m_layout->laneLength),
                     v1 = v0 + double(m_layout->laneLength) / m_zoom;
        p.setClipRect(a.adjusted(0, 0, 1, 1));
        for (int r = 0; r < m_layout->ranks; ++r) {
            const int y0 = a.top() + int(r * laneH), y1 = a.top() + int((r + 1) * laneH) - gap;
            const int h = std::max(1, y1 - y0);
            // Padding first, under the segments: every group's tail this rank does not fill.
            for (size_t g = 0; g < m_layout->groupStarts.size(); ++g) {
                const uint64_t gEnd = g + 1 < m_layout->groupStarts.size() ? m_layout->groupStarts[g + 1]
                                                                           : m_layout->laneLength;
                const uint64_t used = m_layout->groupStarts[g] + m_layout->groupUsed[g][size_t(r)];
                if (used < gEnd) {
                    const double x0 = toX(used, a), x1 = toX(gEnd, a);
                    if (x1 - x0 >= 1) p.fillRect(QRectF(x0, y0, x1 - x0, h), hatch);
                }
            }
            // Segments: at most one rectangle per pixel column, the first segment in it wins.
            const auto b = m_layout->segments.begin() + ptrdiff_t(m_laneFirst[size_t(r)]),
                       e = m_layout->segments.begin() + ptrdiff_t(m_laneFirst[size_t(r) + 1]);
            auto it =
                std::upper_bound(b, e, uint64_t(v0), [](uint64_t v, const auto& s) { return v < s.begin; });
            if (it != b) --it;
            int drawnTo = INT_MIN;
            for (; it != e && double(it->begin) < v1; ++it) {
                const int px0 = std::max(int(std::floor(toX(it->begin, a))), drawnTo);
                const int px1 = int(std::ceil(toX(it->begin + it->length, a)));
                if (px1 <= px0) continue;
                p.fillRect(px0, y0, px1 - px0, h, colorOf(it->param));
                drawnTo = px1;
                // The rest of this pixel column belongs to what was drawn: skip ahead to the
                // first segment that reaches past it.
                if (px1 - px0 == 1) {
                    const double next =
                        m_offset * double(m_layout->laneLength) +
                        (double(px1 - a.left()) / a.width()) / m_zoom * double(m_layout->laneLength);
                    auto skip =
                        std::upper_bound(it, e, uint64_t(std::max(0.0, next)),
                                         [](uint64_t v, const auto& s) { return v < s.begin + s.length; });
                    if (skip != it) it = skip - 1;
                }
            }
        }
        p.setClipping(false);
        for (int r = 0; r < m_layout->ranks; r += labelStep)
            p.drawText(QRect(0, a.top() + int(r * laneH), a.left() - 6, std::max(int(laneH), fm.height())),
                       Qt::AlignRight | Qt::AlignVCenter,
                       files ? fm.elidedText(m_layout->laneNames.value(r), Qt::ElideMiddle, a.left() - 6)
                             : tr("rank %1").arg(r));
        // Group boundaries, dashed across every lane.
        p.setPen(QPen(pal.color(QPalette::Text), 1, Qt::DashLine));
        double labelsEnd = -1e9; // where the last label drawn ends: narrow groups skip theirs
        for (size_t g = 0; g < m_layout->groupStarts.size(); ++g) {
            const double x = toX(m_layout->groupStarts[g], a);
            if (x < a.left() || x > a.right()) continue;
            if (g > 0) p.drawLine(QPointF(x, a.top() - 2), QPointF(x, a.bottom()));
            const QString label = tr("group %1").arg(g);
            // Beside the line, or ending at it when it would run off the right edge; never over
            // the previous label (the line says where the group starts, the tooltip which it is).
            const int w = fm.horizontalAdvance(label);
            const double lx = x + 3 + w > size.width() ? x - 3 - w : x + 3;
            if (lx < labelsEnd + 6) continue;
            p.drawText(QPointF(lx, a.top() - 4), label);
            labelsEnd = lx + w;
        }
        p.setPen(pal.color(QPalette::Text));
        const QLocale loc;
        if (files) { // not sharded: what each file holds, in order, by size
            p.drawText(QRect(a.left(), 0, a.width(), kTop), Qt::AlignLeft | Qt::AlignVCenter,
                       tr("Not sharded: each file's tensors in order, by size"));
            p.drawText(QRect(a.left(), a.bottom() + 2, a.width(), fm.height()), Qt::AlignRight,
                       loc.formattedDataSize(qint64(std::min(v1, double(m_layout->laneLength)))));
            p.drawText(QRect(a.left(), a.bottom() + 2, a.width(), fm.height()), Qt::AlignLeft,
                       loc.formattedDataSize(qint64(v0)));
            return;
        }
        p.drawText(QRect(a.left(), a.bottom() + 2, a.width(), fm.height()), Qt::AlignLeft,
                   loc.toString(qulonglong(v0)));
        p.drawText(
            QRect(a.left(), a.bottom() + 2, a.width(), fm.height()), Qt::AlignRight,
            tr("%1 elements").arg(loc.toString(qulonglong(std::min(v1, double(m_layout->laneLength))))));
        drawPaddingKey(p, QRect(a.left() + fm.horizontalAdvance(loc.toString(qulonglong(v0))) + 16,
                                a.bottom() + 2, a.width(), fm.height()));
        return;
    }
    // Grid: a row per parameter, a column per rank; rows thinner than a pixel share it.
    const size_t rows = m_layout->gridParams.size();
    if (!rows) return;
    const double rowH = double(a.height()) * m_zoom / double(rows);
    const double colW = double(a.width()) / m_layout->ranks;
    const size_t firstRow = size_t(m_offset * double(rows));
    const size_t lastRow = std::min(rows, size_t(std::ceil((m_offset + 1 / m_zoom) * double(rows))) + 1);
    int drawnTo = INT_MIN;
    p.setClipRect(a.adjusted(0, 0, 1, 1));
    for (size_t row = firstRow; row < lastRow; ++row) {
        const double yf = a.top() + (double(row) / double(rows) - m_offset) * m_zoom * a.height();
        const int y0 = std::max(int(std::floor(yf)), drawnTo);
        const int y1 = int(std::floor(yf + rowH));
        if (y1 <= y0) continue;
        drawnTo = y1;
        const int h = y1 - y0 - (rowH >= 6 ? 1 : 0);
        const uint64_t per = std::max<uint64_t>(1, m_layout->perRank[row]);
        const QColor c = colorOf(m_layout->gridParams[row]);
        for (int r = 0; r < m_layout->ranks; ++r) {
            const auto& s = m_layout->segments[m_layout->gridFirst[row] + size_t(r)];
            const double x0 = a.left() + r * colW, w = colW - (colW >= 6 ? 1 : 0);
            const double filled = w * double(s.length) / double(per);
            if (filled > 0) p.fillRect(QRectF(x0, y0, std::max(1.0, filled), std::max(1, h)), c);
            if (w - filled >= 2) p.fillRect(QRectF(x0 + filled, y0, w - filled, std::max(1, h)), hatch);
        }
    }
    p.setClipping(false);
    const int colStep = std::max(1, int(std::ceil(fm.horizontalAdvance(QStringLiteral("00")) * 1.5 / colW)));
    for (int r = 0; r < m_layout->ranks; r += colStep)
        p.drawText(QRectF(a.left() + r * colW, 0, colW * colStep, kTop), Qt::AlignLeft | Qt::AlignVCenter,
                   QString::number(r));
    if (rowH >= fm.height())
        for (size_t row = firstRow; row < lastRow; ++row) {
            const double yf = a.top() + (double(row) / double(rows) - m_offset) * m_zoom * a.height();
            p.drawText(QRectF(0, yf, a.left() - 6, rowH), Qt::AlignRight | Qt::AlignVCenter,
                       fm.elidedText(m_layout->names.value(m_layout->gridParams[row]), Qt::ElideMiddle,
                                     a.left() - 6));
        }
    p.drawText(QRect(a.left(), a.bottom() + 2, a.width(), fm.height()), Qt::AlignRight,
               tr("%n parameter(s) x %1 ranks", nullptr, int(rows)).arg(m_layout->ranks));
    drawPaddingKey(p, QRect(a.left(), a.bottom() + 2, a.width(), fm.height()));
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
    if (s >= 0) emit parameterClicked(m_layout->names.value(m_layout->segments[size_t(s)].param));
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
