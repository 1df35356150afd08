#include "storage_model.h"

#include "bloat_bars.h"
#include "tree_model.h"

#include <QBrush>
#include <QLocale>

namespace ckpt::app {

StorageModel::StorageModel(QObject* parent) : TreeModelBase<StorageItem>(parent) {}

void StorageModel::setRows(std::vector<StorageRow> rows)
{
    beginResetModel();
    m_rows = std::move(rows);
    m_items.assign(m_rows.size(), {});
    for (size_t s = 0; s < m_rows.size(); ++s) {
        StorageItem& item = m_items[s];
        item.row = int(s);
        item.storage = s;
        item.children.resize(m_rows[s].tensors.size());
        for (size_t t = 0; t < item.children.size(); ++t)
            item.children[t] = {&item, int(t), s, int(t), {}};
    }
    endResetModel();
}

int StorageModel::childCount(const StorageItem* parent) const
{
    if (!parent) return int(m_items.size());
    return int(parent->children.size()); // tensors have none
}

const StorageItem* StorageModel::childAt(const StorageItem* parent, int row) const
{
    return parent ? &parent->children[size_t(row)] : &m_items[size_t(row)];
}

QModelIndex StorageModel::indexOfTensor(const QString& path) const
{
    for (const StorageItem& s : m_items)
        for (const StorageItem& t : s.children)
            if (m_rows[s.storage].tensors[size_t(t.tensor)].path == path)
                return indexOf(s.children.size() == 1 ? &s : &t);
    return {};
}

std::span<const ModelColumn> StorageModel::columns() const
{
    static constexpr ModelColumn kColumns[] = {
        {QT_TR_NOOP("Storage")}, {QT_TR_NOOP("Size")},    {QT_TR_NOOP("Used")},
        {QT_TR_NOOP("% used")},  {QT_TR_NOOP("Tensors")},
    };
    static_assert(std::size(kColumns) == ColumnCount);
    return kColumns;
}

QVariant StorageModel::data(const QModelIndex& index, int role) const
{
    const StorageItem* item = TreeModelBase::item(index);
    if (!item) return {};
    if (item->tensor >= 0) {
        const StorageRow& s = m_rows[item->storage];
        const StorageRow::TensorRow& t = s.tensors[size_t(item->tensor)];
        if (role == TensorPathRole) return t.path;
        if (role == BytesRole) return qulonglong(t.bytes);
        if (role == Qt::ToolTipRole)
            return tr("%1\n%2 %3, %4 bytes of elements\nClick to select it in the tree.")
                .arg(t.path, t.dtype, t.shape, QLocale().toString(qulonglong(t.bytes)));
        if (role != Qt::DisplayRole && role != Qt::TextAlignmentRole) return {};
        if (role == Qt::TextAlignmentRole && index.column() == Size)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        switch (index.column()) {
        case Size: // how much of the storage the tensor's own elements are
            return humanBytes(t.bytes);
        case Tensors: // the path alone: dtype and shape are in the tooltip and the tree
            return t.path;
        default:
            return {};
        }
    }
    const StorageRow& s = m_rows[item->storage];
    // A storage viewed by one tensor stands for it: its row names it and a click selects it.
    if (role == TensorPathRole) return s.tensors.size() == 1 ? QVariant(s.tensors.front().path) : QVariant();
    if (role == Qt::TextAlignmentRole && index.column() >= Size && index.column() <= UsedPercent)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    if (role == BytesRole) {
        switch (index.column()) {
        case Size:
            return qulonglong(s.size);
        case Used:
            return qulonglong(s.used);
        default:
            return {};
        }
    }
    if (role == Qt::ForegroundRole && index.column() == UsedPercent && s.wasted())
        return QBrush(QColor(0xd6, 0x4f, 0x45));
    if (role == Qt::ToolTipRole) {
        QString t =
            tr("%1: %2 bytes, %3 reached by its views, %4 wasted")
                .arg(s.key, QLocale().toString(qulonglong(s.size)), QLocale().toString(qulonglong(s.used)),
                     QLocale().toString(qulonglong(s.wasted())));
        if (s.wholeUse)
            t += QLatin1Char('\n') + tr("Reached by something other than a plain view: all of it counts.");
        if (!s.viewOf.isEmpty())
            t += QLatin1Char('\n') + tr("A view of storage %1: its bytes are counted there.").arg(s.viewOf);
        if (s.approximate)
            t += QLatin1Char('\n') + tr("A view too fragmented to enumerate is counted by its hull.");
        return t;
    }
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
    case Name:
        return s.key;
    case Size:
        return humanBytes(s.size);
    case Used:
        return humanBytes(s.used);
    case UsedPercent:
        return s.size ? percentText(s.used, s.size) + QLatin1Char('%') : QStringLiteral("-");
    case Tensors: // the tensors themselves are the child rows
        if (!s.viewOf.isEmpty()) return tr("a view of storage %1").arg(s.viewOf);
        if (s.tensors.size() == 1) return s.tensors.front().path;
        return s.tensors.empty() ? tr("no tensor (saved for itself)")
                                 : tr("%n tensor(s)", nullptr, int(s.tensors.size()));
    }
    return {};
}

} // namespace ckpt::app
