// The one tree model of the window: checkpoint -> tags -> configuration, rank files -> entries,
// parameters -> optimizer state, over an immutable Snapshot whose nodes know their parent and
// their row (TreeModelBase); internalPointer is the node itself.
#pragma once

#include "snapshot.h"
#include "tree_model_base.h"

#include <QSortFilterProxyModel>
#include <map>
#include <memory>

namespace ckpt::app {

class TreeModel : public TreeModelBase<Node>
{
    Q_OBJECT
public:
    // Value: a scalar entry's value as Python would print it ("0.1", "torch.Size([2, 3])").
    enum Column { Name, Kind, Value, DType, Shape, Elements, Bytes, Ranks, ColumnCount };
    enum Role { SortRole = Qt::UserRole + 1, PathRole, NodeRole };

    explicit TreeModel(QObject* parent = nullptr);

    void setSnapshot(std::shared_ptr<const Snapshot> snapshot);
    const Snapshot* snapshot() const { return m_snapshot.get(); }
    static const Node* node(const QModelIndex& index) { return item(index); }
    static QString kindLabel(const Node& n); // the Kind column's text, translated
    QModelIndex indexOfPath(const QString& path) const;

    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    // Files a verification found damaged or missing, by Workspace::keyOf of their path, each with
    // its first problem: their rows are marked (icon, colour, "damaged" in Kind, the problem as
    // the tooltip). Replaces the last set.
    void setDamaged(std::map<std::string, QString> damaged);

private:
    const QString* damageOf(const Node& n) const;
    std::map<std::string, QString> m_damaged;
    int childCount(const Node* parent) const override;
    const Node* childAt(const Node* parent, int row) const override;
    std::span<const ModelColumn> columns() const override;
    std::shared_ptr<const Snapshot> m_snapshot;
};

// Sorting by the model's SortRole; a wildcard or regular-expression filter matched against a
// node's name anywhere in the tree (ancestors of a match stay visible).
class FilterProxy : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    explicit FilterProxy(QObject* parent = nullptr);
    // Returns why a regular expression is invalid (then the filter is unchanged), else empty.
    QString setPattern(const QString& text, bool regex);
};

QString humanBytes(uint64_t n);

} // namespace ckpt::app
