// The storage table of the Bloat view: one row per storage of a torch.save file (its key, size,
// the bytes its views reach, the share used, the tensors that view it), each tensor a child row
// that can be clicked to find it in the main tree. A two-level item model over plain values
// built on a worker (ops::analyzeBloat); the rows arrive in the order they are shown.
#pragma once

#include "tree_model_base.h"

#include <QString>
#include <vector>

namespace ckpt::app {

struct StorageRow
{
    struct TensorRow
    {
        QString path; // the tensor's path in the file: the tree's name for it below the file node
        QString dtype;
        QString shape; // "[12, 7]"
        quint64 bytes = 0;
    };
    QString key; // the zip record's name (data/0), or the legacy storage key
    QString dtype;
    QString viewOf; // legacy view storages: the key of the storage whose bytes these are
    quint64 size = 0;
    quint64 used = 0;
    bool wholeUse = false;    // reached by something other than a plain view: all of it counts
    bool approximate = false; // a view too fragmented to enumerate, counted by its hull
    std::vector<TensorRow> tensors;
    quint64 wasted() const { return size > used ? size - used : 0; }
};

// A row of the storage table: a storage, or one of the tensors that view it.
struct StorageItem
{
    const StorageItem* parent = nullptr;
    int row = 0;
    size_t storage = 0; // index into StorageModel::rows()
    int tensor = -1;    // index into that storage's tensors; -1 for the storage's own row
    std::vector<StorageItem> children;
};

class StorageModel : public TreeModelBase<StorageItem>
{
    Q_OBJECT
public:
    enum Column { Name, Size, Used, UsedPercent, Tensors, ColumnCount };
    // TensorPathRole: a tensor row's path, or a storage row's when one tensor views it.
    enum Role { TensorPathRole = Qt::UserRole + 1, BytesRole };

    explicit StorageModel(QObject* parent = nullptr);
    void setRows(std::vector<StorageRow> rows);
    const std::vector<StorageRow>& rows() const { return m_rows; }
    // The row that stands for a tensor: its storage's when that has only this tensor, else its
    // child row; invalid when no storage lists it.
    QModelIndex indexOfTensor(const QString& path) const;
    static bool isTensor(const QModelIndex& index) { return item(index) && item(index)->tensor >= 0; }

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

private:
    int childCount(const StorageItem* parent) const override;
    const StorageItem* childAt(const StorageItem* parent, int row) const override;
    std::span<const ModelColumn> columns() const override;
    std::vector<StorageRow> m_rows;
    std::vector<StorageItem> m_items; // one per storage, its tensors as children
};

} // namespace ckpt::app
