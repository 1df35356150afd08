// What every tree model of the window shares (after hotspot's treemodel.h): index(), parent()
// and rowCount() over items that know their parent and their row, so that parent() is O(1)
// (a recursive filter asks for it once per row). internalPointer is the item itself. A model
// says which items are at the top and which are below an item, and gives its column table
// (columnCount and headerData come from it); the rest is written once here.
//
// Item needs `parent` (a pointer to Item, null at the top) and `row` (its index among its
// siblings, the top level included).
#pragma once

#include "model_columns.h"

#include <QAbstractItemModel>

namespace ckpt::app {

template <typename Item> class TreeModelBase : public QAbstractItemModel
{
public:
    using QAbstractItemModel::QAbstractItemModel;
    using QObject::parent;

    static const Item* item(const QModelIndex& index)
    {
        return index.isValid() ? static_cast<const Item*>(index.internalPointer()) : nullptr;
    }

    QModelIndex indexOf(const Item* item, int column = 0) const
    {
        return item ? createIndex(item->row, column, const_cast<Item*>(item)) : QModelIndex();
    }

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const final
    {
        if (row < 0 || column < 0 || column >= columnCount(parent) || row >= rowCount(parent)) return {};
        return createIndex(row, column, const_cast<Item*>(childAt(item(parent), row)));
    }

    QModelIndex parent(const QModelIndex& child) const final
    {
        const Item* i = item(child);
        return i && i->parent ? indexOf(i->parent) : QModelIndex();
    }

    int rowCount(const QModelIndex& parent = {}) const final
    {
        if (parent.isValid() && parent.column() != 0) return 0; // only the first column has children
        return childCount(item(parent));
    }

    int columnCount(const QModelIndex& = {}) const final { return int(columns().size()); }

    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const final
    {
        return columnHeader(columns(), metaObject()->className(), section, orientation, role);
    }

private:
    // The children of `parent`; null is the invisible root, whose children are the top rows.
    virtual int childCount(const Item* parent) const = 0;
    virtual const Item* childAt(const Item* parent, int row) const = 0;
    // The model's columns, in the order of its Column enum.
    virtual std::span<const ModelColumn> columns() const = 0;
};

} // namespace ckpt::app
