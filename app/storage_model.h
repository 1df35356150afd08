// The storage table of the Bloat view: one row per storage of a torch.save file (its key, size,
// the bytes its views reach, the share used, the tensors that view it), each tensor a child row
// that can be clicked to find it in the main tree. A two-level item model over plain values
// built on a worker (ops::analyzeBloat); the rows arrive in the order they are shown.
#pragma once

#include <QAbstractItemModel>
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

class StorageModel : public QAbstractItemModel
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
    static bool isTensor(const QModelIndex& index) { return index.isValid() && index.internalId() != 0; }

    QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    // Child items carry their storage's row + 1 as internal id; storages carry 0.
    std::vector<StorageRow> m_rows;
};

} // namespace ckpt::app
