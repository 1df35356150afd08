#include "bloat_bars.h"

#include "tree_model.h"

#include <QHelpEvent>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>

namespace ckpt::app {

namespace {

constexpr int kMargin = 4;

QString exact(quint64 n)
{
    return QLocale().toString(qulonglong(n));
}

void swatch(QPainter& p, const QRect& r, const QColor& c)
{
    p.fillRect(r, c);
    p.setPen(c.darker(140));
    p.drawRect(r.adjusted(0, 0, -1, -1));
}

// Wasted bytes are hatched as well as red, so the bar still reads for the colour-blind and in
// a greyscale print.
void fillSegment(QPainter& p, const QRectF& r, const QColor& c, bool hatched)
{
    p.fillRect(r, c);
    if (hatched) p.fillRect(r, QBrush(c.darker(135), Qt::BDiagPattern));
}

} // namespace

QString percentText(quint64 part, quint64 whole)
{
    if (!whole || !part) return QLocale().toString(0);
    if (part >= whole) return QLocale().toString(100);
    const double p = 100.0 * double(part) / double(whole);
    // Never "0" for some bytes nor "100" for not all of them: a few wasted bytes are still waste.
    if (p < 0.1) return QStringLiteral("< ") + QLocale().toString(0.1, 'f', 1);
    if (p > 99.9) return QStringLiteral("> ") + QLocale().toString(99.9, 'f', 1);
    return QLocale().toString(p, 'f', p < 1 || p > 99 ? 1 : 0);
}

// ---- FileBars ----

FileBars::FileBars(QWidget* parent) : QWidget(parent)
{
    setMouseTracking(false);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Minimum);
}

void FileBars::setRows(std::vector<Row> rows)
{
    m_rows = std::move(rows);
    m_current = m_rows.empty() ? -1 : std::clamp(m_current, 0, int(m_rows.size()) - 1);
    updateGeometry();
    update();
}

void FileBars::setCurrent(int row)
{
    m_current = row;
    update();
}

int FileBars::rowHeight() const
{
    return fontMetrics().height() * 2 + 10;
}

int FileBars::legendHeight() const
{
    return fontMetrics().height() + 8;
}

QSize FileBars::sizeHint() const
{
    return {480, legendHeight() + int(std::max<size_t>(m_rows.size(), 1)) * rowHeight() + kMargin};
}

QSize FileBars::minimumSizeHint() const
{
    return {240, sizeHint().height()};
}

QRect FileBars::barRect(int row) const
{
    const int top = legendHeight() + row * rowHeight();
    const int fh = fontMetrics().height();
    return {kMargin, top + fh + 4, width() - 2 * kMargin, std::max(fh - 2, 8)};
}

int FileBars::rowAt(QPoint p) const
{
    const int r = (p.y() - legendHeight()) / rowHeight();
    return p.y() >= legendHeight() && r >= 0 && r < int(m_rows.size()) ? r : -1;
}

QString FileBars::label(int row) const
{
    const Row& r = m_rows[size_t(row)];
    if (r.other) return tr("%1, not a torch.save file").arg(humanBytes(r.total()));
    if (!r.wasted) return tr("%1, nothing wasted").arg(humanBytes(r.total()));
    return tr("%1, %2 wasted (%3%)")
        .arg(humanBytes(r.total()), humanBytes(r.wasted), percentText(r.wasted, r.total()));
}

QString FileBars::toolTip(int row) const
{
    const Row& r = m_rows[size_t(row)];
    QString t = QStringLiteral("<b>%1</b><table>").arg(r.name.toHtmlEscaped());
    auto line = [&](const QString& what, quint64 n, const QColor& c) {
        t += QStringLiteral("<tr><td><span style=\"color:%1\">&#9632;</span> %2</td>"
                            "<td align=right>%3</td><td align=right>%4</td><td align=right>%5%</td></tr>")
                 .arg(c.name(), what, exact(n), humanBytes(n), percentText(n, r.total()));
    };
    if (r.other) {
        line(tr("not a torch.save file"), r.other, overheadColor().lighter(130));
    } else {
        line(tr("used by a view"), r.used, usedColor());
        line(tr("wasted (no view reaches it)"), r.wasted, wastedColor());
        line(tr("overhead (pickle, zip records)"), r.overhead, overheadColor());
    }
    t += QStringLiteral("<tr><td><b>%1</b></td><td align=right>%2</td><td align=right>%3</td></tr></table>")
             .arg(tr("file"), exact(r.total()), humanBytes(r.total()));
    return t;
}

void FileBars::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    const QFontMetrics fm = fontMetrics();
    const QColor text = palette().color(QPalette::WindowText);
    // Legend: only the kinds some row has.
    bool anyOther = false, anyTorch = false;
    for (const Row& r : m_rows)
        (r.other ? anyOther : anyTorch) = true;
    int x = kMargin;
    const int sw = fm.height() - 4;
    auto legendItem = [&](const QString& name, const QColor& c, bool hatched) {
        const QRect box(x, 4 + 2, sw, sw);
        swatch(p, box, c);
        if (hatched) p.fillRect(box.adjusted(1, 1, -1, -1), QBrush(c.darker(135), Qt::BDiagPattern));
        p.setPen(text);
        p.drawText(QRect(x + sw + 4, 4, fm.horizontalAdvance(name) + 2, fm.height()),
                   Qt::AlignVCenter | Qt::TextDontClip, name);
        x += sw + 4 + fm.horizontalAdvance(name) + 16;
    };
    if (anyTorch) {
        legendItem(tr("used"), usedColor(), false);
        legendItem(tr("wasted"), wastedColor(), true);
        legendItem(tr("overhead"), overheadColor(), false);
    }
    if (anyOther) legendItem(tr("other file"), overheadColor().lighter(130), false);

    quint64 largest = 1;
    for (const Row& r : m_rows)
        largest = std::max(largest, r.total());
    for (int i = 0; i < int(m_rows.size()); ++i) {
        const Row& r = m_rows[size_t(i)];
        const int top = legendHeight() + i * rowHeight();
        const QRect rowRect(0, top, width(), rowHeight());
        if (i == m_current) {
            QColor h = palette().color(QPalette::Highlight);
            h.setAlpha(45);
            p.fillRect(rowRect.adjusted(1, 1, -1, -2), h);
        }
        // Name left, numbers right; the name gives way first.
        const QString numbers = label(i);
        const int numbersWidth = fm.horizontalAdvance(numbers);
        const QRect textRect(kMargin, top + 2, width() - 2 * kMargin, fm.height());
        p.setPen(text);
        p.drawText(textRect, Qt::AlignRight | Qt::AlignVCenter | Qt::TextDontClip, numbers);
        QFont bold = font();
        if (i == m_current) bold.setBold(true);
        p.setFont(bold);
        const int nameWidth = std::max(0, textRect.width() - numbersWidth - 16);
        p.drawText(QRect(textRect.left(), textRect.top(), nameWidth, fm.height()),
                   Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
                   QFontMetrics(bold).elidedText(r.name, Qt::ElideMiddle, nameWidth));
        p.setFont(font());
        // The bar, to scale against the largest file.
        const QRect bar = barRect(i);
        const double scale = double(bar.width()) / double(largest);
        double bx = bar.left();
        auto seg = [&](quint64 n, const QColor& c, bool hatched) {
            if (!n) return;
            const double w = std::max(1.0, double(n) * scale);
            fillSegment(p, QRectF(bx, bar.top(), w, bar.height()), c, hatched);
            bx += w;
        };
        seg(r.used, usedColor(), false);
        seg(r.wasted, wastedColor(), true);
        seg(r.overhead, overheadColor(), false);
        seg(r.other, overheadColor().lighter(130), false);
        p.setPen(palette().color(QPalette::Mid));
        p.drawRect(QRectF(bar.left(), bar.top(), bx - bar.left(), bar.height()).adjusted(0, 0, -0.5, -0.5));
    }
}

void FileBars::mousePressEvent(QMouseEvent* e)
{
    const int r = rowAt(e->position().toPoint());
    if (r < 0) return QWidget::mousePressEvent(e);
    setCurrent(r);
    emit rowClicked(r);
}

bool FileBars::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        auto* h = static_cast<QHelpEvent*>(e);
        const int r = rowAt(h->pos());
        if (r >= 0)
            QToolTip::showText(h->globalPos(), toolTip(r), this,
                               QRect(0, legendHeight() + r * rowHeight(), width(), rowHeight()));
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

// ---- RoleBar ----

RoleBar::RoleBar(QWidget* parent) : QWidget(parent)
{
    QSizePolicy sp(QSizePolicy::Expanding, QSizePolicy::Preferred);
    sp.setHeightForWidth(true);
    setSizePolicy(sp);
}

QColor RoleBar::color(int part)
{
    // Distinct in hue and lightness, readable on light and dark windows.
    static const QColor colors[] = {{0x4e, 0x79, 0xa7}, {0xf2, 0x8e, 0x2b}, {0x59, 0xa1, 0x4f},
                                    {0x76, 0xb7, 0xb2}, {0xed, 0xc9, 0x48}, {0xa0, 0x96, 0x92}};
    return colors[size_t(part) % std::size(colors)];
}

void RoleBar::setParts(std::vector<Part> parts)
{
    m_parts = std::move(parts);
    updateGeometry();
    update();
}

quint64 RoleBar::total() const
{
    quint64 t = 0;
    for (const Part& p : m_parts)
        t += p.bytes;
    return t;
}

QString RoleBar::label(int part) const
{
    const Part& p = m_parts[size_t(part)];
    return tr("%1: %2 (%3%)").arg(p.name, humanBytes(p.bytes), percentText(p.bytes, total()));
}

int RoleBar::barHeight() const
{
    return fontMetrics().height() + 8;
}

std::vector<std::pair<int, QRect>> RoleBar::legend(int width) const
{
    const QFontMetrics fm = fontMetrics();
    const int sw = fm.height() - 4;
    int cell = 0;
    for (int i = 0; i < int(m_parts.size()); ++i)
        if (m_parts[size_t(i)].bytes) cell = std::max(cell, sw + 6 + fm.horizontalAdvance(label(i)) + 18);
    std::vector<std::pair<int, QRect>> out;
    if (!cell) return out;
    const int columns = std::max(1, (width - 2 * kMargin) / cell);
    int n = 0;
    for (int i = 0; i < int(m_parts.size()); ++i) {
        if (!m_parts[size_t(i)].bytes) continue;
        const int col = n % columns, line = n / columns;
        out.push_back(
            {i, QRect(kMargin + col * cell, barHeight() + 6 + line * (fm.height() + 4), cell, fm.height())});
        ++n;
    }
    return out;
}

int RoleBar::heightForWidth(int width) const
{
    const auto cells = legend(width);
    return barHeight() + 6 + (cells.empty() ? 0 : cells.back().second.bottom() - barHeight() - 6 + 1) + 6;
}

QSize RoleBar::sizeHint() const
{
    return {480, heightForWidth(width() > 0 ? width() : 480)};
}

QSize RoleBar::minimumSizeHint() const
{
    return {200, heightForWidth(width() > 0 ? width() : 480)};
}

void RoleBar::resizeEvent(QResizeEvent* e)
{
    QWidget::resizeEvent(e);
    updateGeometry(); // the legend may have wrapped onto another line
}

int RoleBar::partAt(QPoint pos) const
{
    const quint64 t = total();
    const QRect bar(kMargin, 4, width() - 2 * kMargin, barHeight() - 4);
    if (t && bar.contains(pos)) {
        double x = bar.left();
        for (int i = 0; i < int(m_parts.size()); ++i) {
            x += double(bar.width()) * double(m_parts[size_t(i)].bytes) / double(t);
            if (m_parts[size_t(i)].bytes && pos.x() < x) return i;
        }
    }
    for (const auto& [i, r] : legend(width()))
        if (r.contains(pos)) return i;
    return -1;
}

void RoleBar::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    const QFontMetrics fm = fontMetrics();
    const QRect bar(kMargin, 4, width() - 2 * kMargin, barHeight() - 4);
    const quint64 t = total();
    p.fillRect(bar, palette().color(QPalette::Base));
    if (t) {
        double x = bar.left();
        for (int i = 0; i < int(m_parts.size()); ++i) {
            const quint64 n = m_parts[size_t(i)].bytes;
            if (!n) continue;
            const double w = double(bar.width()) * double(n) / double(t);
            const QRectF seg(x, bar.top(), w, bar.height());
            p.fillRect(seg, color(i));
            // The share inside the segment when it fits (black reads on every colour here).
            const QString pc = percentText(n, t) + QLatin1Char('%');
            if (fm.horizontalAdvance(pc) + 6 < w) {
                p.setPen(Qt::black);
                p.drawText(seg, Qt::AlignCenter, pc);
            }
            x += w;
            if (x < bar.right()) {
                p.setPen(palette().color(QPalette::Base));
                p.drawLine(QPointF(x, bar.top()), QPointF(x, bar.bottom()));
            }
        }
    }
    p.setPen(palette().color(QPalette::Mid));
    p.drawRect(bar.adjusted(0, 0, -1, -1));
    const int sw = fm.height() - 4;
    for (const auto& [i, r] : legend(width())) {
        swatch(p, QRect(r.left(), r.top() + 2, sw, sw), color(i));
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(r.adjusted(sw + 6, 0, 0, 0), Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip,
                   label(i));
    }
}

bool RoleBar::event(QEvent* e)
{
    if (e->type() == QEvent::ToolTip) {
        auto* h = static_cast<QHelpEvent*>(e);
        const int i = partAt(h->pos());
        if (i >= 0)
            QToolTip::showText(h->globalPos(),
                               tr("%1: %2 bytes (%3), %4% of %5")
                                   .arg(m_parts[size_t(i)].name, exact(m_parts[size_t(i)].bytes),
                                        humanBytes(m_parts[size_t(i)].bytes),
                                        percentText(m_parts[size_t(i)].bytes, total()), humanBytes(total())),
                               this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(e);
}

} // namespace ckpt::app
