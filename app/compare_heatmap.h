// The comparison's heatmap: layers down, parameter kinds across, each cell coloured by the
// tensor's relative change on a log scale, with a legend; identical tensors in a neutral colour,
// tensors that cannot be compared hatched. Dumb widget: it paints a HeatmapGrid and says which
// tensor was clicked.
#pragma once

#include "compare_model.h"

#include <QStringList>
#include <QWidget>

class QPainter;

namespace ckpt::app {

class CompareHeatmap : public QWidget
{
    Q_OBJECT
public:
    explicit CompareHeatmap(QWidget* parent = nullptr);
    void setGrid(HeatmapGrid grid);
    const HeatmapGrid& grid() const { return m_grid; }
    void setSelected(const QString& name);
    // The log10 range the colours span (lo < hi), from the grid's positive values.
    std::pair<double, double> scale() const { return {m_lo, m_hi}; }
    static QColor colorAt(double t); // t in [0, 1] along the scale
    // A column's label as drawn: "weight/exp_avg_sq" on two lines ("weight/", "exp_avg_sq").
    static QStringList labelLines(const QString& column);
    QRect cellRect(int row, int column) const;
    QSize sizeHint() const override { return {520, 360}; }
    QSize minimumSizeHint() const override { return {200, 140}; }

signals:
    void tensorClicked(const QString& name);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;

private:
    struct Geometry
    {
        QRect cells; // where the grid is drawn
        int left = 0, top = 0;
        double cw = 0, ch = 0;
    };
    Geometry geometry() const;
    void drawLabels(QPainter& p, const Geometry& g) const;
    const HeatmapGrid::Cell* cellAt(QPoint p) const;
    QColor cellColor(const HeatmapGrid::Cell& c) const;
    void dtypeMark(QPainter& p, const QRect& r) const;

    HeatmapGrid m_grid;
    std::vector<int> m_index; // row * columns + column -> cell, -1 where none
    QString m_selected;
    double m_lo = -6, m_hi = 0;
};

} // namespace ckpt::app
