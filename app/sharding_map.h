// How a tag's parameters are sharded over its ranks, painted from the domain model alone (no
// tensor bytes). ZeRO-1/2: one lane per rank along its flat partition, a segment per parameter
// coloured by layer, the partition's unused tail hatched, group boundaries marked. ZeRO-3: a
// parameters x ranks grid, each cell filled by the rank's share and its padding hatched. Other
// families get what their layout says truly: tensors sharded over ranks by N-d chunks (DCP) the
// same grid, each cell the rank's chunk; unsharded ones (a file, a Hugging Face folder, Composer,
// Universal) a lane per file with its tensors in order, sized by their bytes.
// Level of detail: segments narrower than a pixel merge into one pixel column and grid rows
// thinner than a pixel into one pixel row, so the cost follows the widget's size, not the
// parameter count. Wheel zooms about the cursor, drag pans, hover names, click selects.
#pragma once

#include "layout/checkpoint.h"

#include <QImage>
#include <QStringList>
#include <QWidget>
#include <memory>
#include <vector>

namespace ckpt::app {

// The map's geometry in elements, pure data (tests check it against the layout).
struct ShardingLayout
{
    enum class Mode { Empty, Lanes, Grid, Files };
    struct Segment
    {
        int param = 0; // index into names/params of the tag
        int rank = 0;
        uint64_t begin = 0;   // Lanes: position in the rank's lane; Grid: 0
        uint64_t length = 0;  // elements held
        uint64_t padding = 0; // Grid: padding elements after them in this rank's share
        QString where;        // Grid of chunks: the block held ("[0:19, 0:12]")
    };
    Mode mode = Mode::Empty;
    int ranks = 0;                     // lanes or grid columns (Files: one lane per file)
    QStringList laneNames;             // Files: the file of each lane
    uint64_t laneLength = 0;           // Lanes: the x extent, every group at its widest (Files: bytes)
    std::vector<uint64_t> groupStarts; // Lanes: where each group begins on every lane
    std::vector<std::vector<uint64_t>> groupUsed; // Lanes: [group][rank] elements held (the rest: padding)
    std::vector<Segment> segments;                // Lanes: by rank, then begin; Grid: by param, then rank
    std::vector<int> gridParams;                  // Grid: the row's parameter
    std::vector<size_t> gridFirst;                // Grid: the row's first segment (one per rank follow)
    std::vector<uint64_t> perRank;                // Grid: the row's share per rank (length + padding)
    QStringList names;                            // every parameter of the tag, by index
    std::vector<int> layer;                       // colour key per parameter
};
ShardingLayout shardingLayout(const layout::Tag& tag);

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
    void paint(QPainter& p, QSize size) const;
    void drawPaddingKey(QPainter& p, const QRect& line) const;
    QRect area(QSize size) const; // where lanes or cells are drawn
    int leftMargin(QSize size) const;
    double toX(uint64_t pos, const QRect& a) const;
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
