// The comparison table: one row per tensor of a two-sided comparison (ops::TensorDiff, plain
// values computed on a worker), appended in batches as they arrive; the proxy sorts by number
// and filters by name and status. Also the heatmap's grid: tensors placed by layer and kind.
#pragma once

#include "model_columns.h"
#include "ops/analyze.h"

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>
#include <QStringList>
#include <optional>
#include <vector>

namespace ckpt::app {

class CompareModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        Name,
        Status,
        MaxAbsDiff,
        RelL2,
        Cosine,
        BitwiseEqual,
        MeanA,
        MeanB,
        StdA,
        StdB,
        ColumnCount
    };
    // SortRole: numbers as numbers (missing ones last); StatusRole: the ops::DiffStatus as int.
    enum Role { SortRole = Qt::UserRole + 1, StatusRole, RowRole };

    explicit CompareModel(QObject* parent = nullptr);
    void clear();
    void append(std::vector<ops::TensorDiff> rows);
    const std::vector<ops::TensorDiff>& rows() const { return m_rows; }
    int rowOf(const QString& name) const; // -1 when absent
    static QString statusText(ops::DiffStatus s);
    // A cosine as the table shows it: never "1" for a tensor that changed (0.9999997 reads
    // "1 − 3.0e-07"), "1" only when it is 1.
    static QString cosineText(double cosine);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // The table as CSV (every column, full precision) and as a JSON array of objects: the rows
    // given (source rows, in the order shown), or every row when none are given.
    QByteArray toCsv(const std::optional<QList<int>>& rows = std::nullopt) const;
    QByteArray toJson(const std::optional<QList<int>>& rows = std::nullopt) const;

private:
    static std::span<const ModelColumn> columns();
    QVariant number(const ops::TensorDiff& d, int column) const; // invalid when not known
    QList<int> rowsOrAll(const std::optional<QList<int>>& rows) const;
    std::vector<ops::TensorDiff> m_rows;
};

// Name filter (wildcards, like the main tree) and a status filter (-1: every status;
// -2: every status but identical).
class CompareProxy : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    enum { AnyStatus = -1, NotIdentical = -2 };
    explicit CompareProxy(QObject* parent = nullptr);
    void setPattern(const QString& text);
    void setStatus(int status);

protected:
    bool filterAcceptsRow(int row, const QModelIndex& parent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    int m_status = AnyStatus;
};

// Where each tensor sits in the heatmap (by splitLayer, param_names.h). Rows are layers — a name's first
// numeric part with what comes before it ("model.layers.17") — in numeric order; columns the kinds within a
// layer (what follows the number: "mlp.up_proj.weight"), in the order first seen. A tensor of no layer gets
// a row of its own module ("embed" for "embed.weight") after the layers, its leaf as the column.
// A cell's value is the relative L2 change (0: identical; NaN: not comparable).
struct HeatmapGrid
{
    struct Cell
    {
        int row = 0, column = 0;
        QString name;
        double value = 0;
        ops::DiffStatus status = ops::DiffStatus::Identical;
        bool dtypeChanged = false; // compared across dtypes: coloured, and marked as such
    };
    QStringList rows, columns;
    std::vector<Cell> cells;
    int layerRows = 0; // rows [0, layerRows) are layers
    const Cell* find(const QString& name) const;
};
HeatmapGrid heatmapGrid(const std::vector<ops::TensorDiff>& tensors);

QString dtypeText(torch::DType t); // "float32"

} // namespace ckpt::app
