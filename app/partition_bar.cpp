#include "partition_bar.h"

#include <QPainter>

namespace ckpt::app {

PartitionBar::PartitionBar(QWidget* parent) : QWidget(parent)
{
    setMinimumHeight(36);
}

void PartitionBar::setSlices(std::vector<Slice> slices, quint64 total)
{
    m_slices = std::move(slices);
    m_total = total;
    update();
}

void PartitionBar::paintEvent(QPaintEvent*)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing, false);
    const QRect r = rect().adjusted(1, 4, -2, -4);
    p.fillRect(r, palette().base());
    quint64 span = 0;
    for (const auto& s : m_slices)
        span += s.length + s.padding;
    span = std::max(span, m_total);
    if (!span) return;
    double x = r.left();
    for (const auto& s : m_slices) {
        const double w = r.width() * double(s.length) / double(span);
        const double pw = r.width() * double(s.padding) / double(span);
        const QColor c = QColor::fromHsv((s.rank * 67) % 360, 140, 220);
        const QRectF seg(x, r.top(), w, r.height());
        p.fillRect(seg, c);
        // Dark text on these light colours in every theme (the palette's text is white in dark mode).
        p.setPen(c.lightnessF() > 0.5 ? QColor(Qt::black) : QColor(Qt::white));
        if (w > 24) p.drawText(seg, Qt::AlignCenter, QString::number(s.rank));
        if (pw > 0)
            p.fillRect(QRectF(x + w, r.top(), pw, r.height()), QBrush(c.darker(130), Qt::BDiagPattern));
        x += w + pw;
        p.setPen(palette().mid().color());
        p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
    }
    p.setPen(palette().mid().color());
    p.drawRect(r);
}

} // namespace ckpt::app
