// The one tree model of the window: checkpoint -> tags -> configuration, rank files -> entries,
// parameters -> optimizer state, over an immutable Snapshot. The row of a node is its index in
// its parent's children; internalPointer is the node itself.
#pragma once

#include "snapshot.h"

#include <QAbstractItemModel>
#include <QSortFilterProxyModel>
#include <memory>

namespace ckpt::app {

class TreeModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    // Value: a scalar entry's value as Python would print it ("0.1", "torch.Size([2, 3])").
    enum Column { Name, Kind, Value, DType, Shape, Elements, Bytes, Ranks, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, PathRole, NodeRole };

    explicit TreeModel(QObject* parent = nullptr);

    void setSnapshot(std::shared_ptr<const Snapshot> snapshot);
    const Snapshot* snapshot() const { return m_snapshot.get(); }
    static const Node* node(const QModelIndex& index);
    static QString kindLabel(const Node& n); // the Kind column's text, translated
    QModelIndex indexOfPath(const QString& path) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    QModelIndex indexOf(const Node* n, int column = 0) const;
    std::shared_ptr<const Snapshot> m_snapshot;
};

// Sorting by the model's SortRole; a wildcard or regular-expression filter matched against a
// node's name anywhere in the tree (ancestors of a match stay visible).
class FilterProxy : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    explicit FilterProxy(QObject* parent = nullptr);
    void setPattern(const QString& text, bool regex);
};

QString humanBytes(uint64_t n);

} // namespace ckpt::app
