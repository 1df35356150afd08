// Draws how a parameter's elements are spread over ranks: one coloured segment per rank slice,
// hatched padding after it. Dumb widget: it paints what setSlices gave it.
#pragma once

#include <QWidget>
#include <vector>

namespace ckpt::app {

class PartitionBar : public QWidget
{
    Q_OBJECT
public:
    struct Slice
    {
        int rank;
        quint64 offset, length, padding;
    };
    explicit PartitionBar(QWidget* parent = nullptr);
    void setSlices(std::vector<Slice> slices, quint64 total);
    QSize sizeHint() const override { return {400, 36}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    std::vector<Slice> m_slices;
    quint64 m_total = 0;
};

} // namespace ckpt::app
