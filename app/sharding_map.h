// How a tag's parameters are sharded over its ranks, painted from layout::shardingLayout (no
// tensor bytes, no family names): flat partitions as one lane per rank, a segment per parameter
// coloured by layer, the partition's unused tail hatched, group boundaries marked; per-parameter
// partitions and N-d chunks as a parameters x ranks grid, each cell filled by the rank's share
// (or block) and its padding hatched; whole files as a lane per file with its tensors in order,
// sized by their bytes.
// Level of detail: segments narrower than a pixel merge into one pixel column and grid rows
// thinner than a pixel into one pixel row, so the cost follows the widget's size, not the
// parameter count. Wheel zooms about the cursor, drag pans, hover names, click selects.
#pragma once

#include "layout/checkpoint.h"
#include "layout/sharding.h"

#include <QImage>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace ckpt::app {

// The map's geometry in elements, pure data computed in the model library from the sharding the
// family states (tests check it against the layout).
using ShardingLayout = layout::ShardingLayout;
using layout::shardingLayout;

class ShardingMap : public QWidget
{
    Q_OBJECT
public:
    explicit ShardingMap(QWidget* parent = nullptr);
    void setSharding(ShardingLayout layout);
    // A layout made on a worker (the snapshot's), shared: nothing is laid out or copied here.
    void setSharding(std::shared_ptr<const ShardingLayout> layout);
    const ShardingLayout& sharding() const { return *m_layout; }
    void setZoom(double zoom, double center = 0.5); // 1 = all of it; center as a fraction
    double zoom() const { return m_zoom; }
    // The segment under a point, -1 when none (tests, tooltips, clicks).
    int segmentAt(QPoint p) const;
    QPoint pointOf(int segment) const; // the centre of a segment as drawn (its first pixel if clipped)
    QString describe(int segment) const;
    // Paints into an image of this size and says how long it took (the fluidity measurement).
    qint64 timePaint(QSize size);
    QSize sizeHint() const override { return {600, 260}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

signals:
    void parameterClicked(const QString& name);

protected:
    void paintEvent(QPaintEvent*) override;
    void wheelEvent(QWheelEvent* e) override;
    void mousePressEvent(QMouseEvent* e) override;
    void mouseMoveEvent(QMouseEvent* e) override;
    void mouseReleaseEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;

private:
    QString nameOf(int param) const;  // the parameter's name, or empty
    QString laneName(int lane) const; // Files: the lane's file
    // The three painters, one per mode; `a` is the area().
    void paint(QPainter& p, QSize size) const;
    void paintLanes(QPainter& p, const QRect& a, int width) const;
    void paintFiles(QPainter& p, const QRect& a) const;
    void paintGrid(QPainter& p, const QRect& a) const;
    // Their parts.
    void paintLaneRows(QPainter& p, const QRect& a) const;
    void paintGroupPadding(QPainter& p, const QRect& a, int rank, const QRect& lane) const;
    void paintSegments(QPainter& p, const QRect& a, int rank, const QRect& lane) const;
    void paintLaneLabels(QPainter& p, const QRect& a, const std::function<QString(int)>& label) const;
    void paintGroupBoundaries(QPainter& p, const QRect& a, int width) const;
    void paintGridLabels(QPainter& p, const QRect& a) const;
    void drawPaddingKey(QPainter& p, const QRect& line) const;
    QRect area(QSize size) const; // where lanes or cells are drawn
    int leftMargin(QSize size) const;
    double laneHeight(const QRect& a) const;
    std::pair<double, double> visibleLanes() const; // Lanes, Files: the positions in view
    std::pair<size_t, size_t> visibleRows() const;  // Grid: the rows in view, [first, last)
    double rowY(size_t row, const QRect& a) const;  // Grid: where a row begins
    double toX(uint64_t pos, const QRect& a) const;
    double fromX(double x, const QRect& a) const; // the lane position drawn at x
    QColor colorOf(int param) const;

    std::shared_ptr<const ShardingLayout> m_layout = std::make_shared<const ShardingLayout>();
    std::vector<size_t> m_laneFirst; // Lanes: first segment of each rank, plus the end
    int m_labelWidth = 0;            // the widest row label
    double m_zoom = 1, m_offset = 0; // the visible fraction [m_offset, m_offset + 1/m_zoom)
    QPoint m_dragFrom;
    double m_dragOffset = 0;
    bool m_dragging = false;
};

} // namespace ckpt::app
