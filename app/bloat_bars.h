// The two charts of the Bloat view, painted by hand: FileBars (one bar per file, used / wasted /
// overhead, to scale against the largest file) and RoleBar (a checkpoint's bytes by what they
// are for, as one stacked bar with a legend). Dumb widgets: they paint the plain values they are
// given and say which row was clicked; the numbers come from ops::analyzeFolderBloat elsewhere.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

namespace ckpt::app {

// A share as people read it: "0", "< 0.1", "0.4", "56", "> 99.9", "100" (locale digits).
QString percentText(quint64 part, quint64 whole);

class FileBars : public QWidget
{
    Q_OBJECT
public:
    struct Row
    {
        QString name;
        quint64 used = 0;     // storage bytes some view reaches
        quint64 wasted = 0;   // storage bytes no view reaches: what slim gives back
        quint64 overhead = 0; // pickle, zip records
        quint64 other = 0;    // a file that is not a torch.save file, whole
        quint64 total() const { return used + wasted + overhead + other; }
    };
    // The colours, shared with the legend and the tests' screenshots.
    static QColor usedColor() { return {0x4e, 0x9a, 0x6b}; }
    static QColor wastedColor() { return {0xd6, 0x4f, 0x45}; }
    static QColor overheadColor() { return {0x8c, 0x8f, 0x96}; }

    explicit FileBars(QWidget* parent = nullptr);
    void setRows(std::vector<Row> rows); // drawn in this order
    const std::vector<Row>& rows() const { return m_rows; }
    void setCurrent(int row);
    int current() const { return m_current; }
    // The text beside a row's bar (also what a test reads).
    QString label(int row) const;
    QString toolTip(int row) const;
    QRect barRect(int row) const; // where a row's bar is drawn, for tests that click it
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

signals:
    void rowClicked(int row);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* e) override;
    bool event(QEvent* e) override;

private:
    int rowHeight() const;
    int legendHeight() const;
    int rowAt(QPoint p) const;

    std::vector<Row> m_rows;
    int m_current = -1;
};

class RoleBar : public QWidget
{
    Q_OBJECT
public:
    struct Part
    {
        QString name;
        quint64 bytes = 0;
    };
    explicit RoleBar(QWidget* parent = nullptr);
    // Parts keep their place (and colour) even when empty; empty ones are left out of the bar
    // and the legend.
    void setParts(std::vector<Part> parts);
    const std::vector<Part>& parts() const { return m_parts; }
    static QColor color(int part);
    QString label(int part) const;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;

protected:
    void paintEvent(QPaintEvent*) override;
    bool event(QEvent* e) override;
    void resizeEvent(QResizeEvent* e) override;

private:
    quint64 total() const;
    int partAt(QPoint p) const;
    int barHeight() const;
    // The legend's cells for a width: where each non-empty part's entry goes.
    std::vector<std::pair<int, QRect>> legend(int width) const;

    std::vector<Part> m_parts;
};

} // namespace ckpt::app
