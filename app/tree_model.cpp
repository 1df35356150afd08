#include "tree_model.h"

#include "workspace.h"

#include <QApplication>
#include <QBrush>
#include <QStyle>

#include "ops/inspect.h"

#include <QIcon>
#include <QLocale>
#include <QRegularExpression>

namespace ckpt::app {

QIcon kindIcon(const Node& n); // kinds.cpp

QString humanBytes(uint64_t n)
{
    return QString::fromStdString(ops::humanBytes(n)); // one rendering for the CLI and the window
}

TreeModel::TreeModel(QObject* parent) : TreeModelBase<Node>(parent) {}

void TreeModel::setSnapshot(std::shared_ptr<const Snapshot> snapshot)
{
    beginResetModel();
    m_snapshot = std::move(snapshot);
    endResetModel();
}

void TreeModel::setDamaged(std::map<std::string, QString> damaged)
{
    m_damaged = std::move(damaged);
    if (!m_snapshot) return;
    // Only rank files are marked: say so for each of them (the others never change).
    std::vector<const Node*> stack{m_snapshot->root.get()};
    while (!stack.empty()) {
        const Node* n = stack.back();
        stack.pop_back();
        if (n->kind == NodeKind::RankFile) {
            const QModelIndex i = indexOf(n);
            emit dataChanged(i, i.siblingAtColumn(ColumnCount - 1));
            continue;
        }
        for (const auto& c : n->children)
            stack.push_back(c.get());
    }
}

const QString* TreeModel::damageOf(const Node& n) const
{
    if (n.kind != NodeKind::RankFile || m_damaged.empty() || n.file.empty()) return nullptr;
    const auto it = m_damaged.find(Workspace::keyOf(n.file.substr(0, n.file.find('!'))));
    return it == m_damaged.end() ? nullptr : &it->second;
}

QString TreeModel::kindLabel(const Node& n)
{
    // _codecs.encode(str, 'latin1') is how protocol 2 pickles bytes: it is data, not a call.
    if (n.kindText == "encode") return tr("bytes");
    return wordText("ckpt::app::TreeModel", n.kindText);
}

QModelIndex TreeModel::indexOfPath(const QString& path) const
{
    if (!m_snapshot) return {};
    const Node* n = m_snapshot->root.get();
    if (path.isEmpty()) return indexOf(n);
    // Paths may contain '/' inside names (file entries): match whole prefixes greedily.
    const std::string want = path.toStdString();
    while (n) {
        const Node* next = nullptr;
        for (const auto& c : n->children) {
            if (c->path == want) return indexOf(c.get());
            if (want.rfind(c->path + "/", 0) == 0) next = c.get();
        }
        n = next;
    }
    return {};
}

int TreeModel::childCount(const Node* parent) const
{
    if (!m_snapshot) return 0;
    return parent ? int(parent->children.size()) : 1; // one root: the checkpoint or file
}

const Node* TreeModel::childAt(const Node* parent, int row) const
{
    return parent ? parent->children[size_t(row)].get() : m_snapshot->root.get();
}

std::span<const ModelColumn> TreeModel::columns() const
{
    static constexpr ModelColumn kColumns[] = {
        {QT_TR_NOOP("Name")},  {QT_TR_NOOP("Kind")},     {QT_TR_NOOP("Value")}, {QT_TR_NOOP("dtype")},
        {QT_TR_NOOP("Shape")}, {QT_TR_NOOP("Elements")}, {QT_TR_NOOP("Bytes")}, {QT_TR_NOOP("Ranks")},
    };
    static_assert(std::size(kColumns) == ColumnCount);
    return kColumns;
}

QVariant TreeModel::data(const QModelIndex& index, int role) const
{
    const Node* n = node(index);
    if (!n) return {};
    if (role == PathRole) return QString::fromStdString(n->path);
    if (role == NodeRole) return QVariant::fromValue(static_cast<const void*>(n));
    const QString* damage = damageOf(*n);
    if (role == Qt::DecorationRole) {
        if (index.column() != Name) return {};
        return damage ? QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical) : kindIcon(*n);
    }
    if (role == Qt::ForegroundRole && damage && (index.column() == Name || index.column() == Kind))
        return QBrush(QColor(0xd0, 0x30, 0x30));
    const bool sort = role == SortRole;
    if (role != Qt::DisplayRole && !sort) {
        if (role == Qt::TextAlignmentRole && index.column() >= Elements)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        if (role == Qt::ToolTipRole && damage && index.column() <= Kind)
            return tr("Damaged (found by Verify): %1").arg(*damage);
        if (role == Qt::ToolTipRole && index.column() == Name) return QString::fromStdString(n->path);
        if (role == Qt::ToolTipRole && index.column() == Value) return data(index, Qt::DisplayRole);
        return {};
    }
    switch (index.column()) {
    case Name: // structural labels are ours and translated; everything else is data
        if (n->kind == NodeKind::Group || n->kind == NodeKind::Config) return tr(n->name.c_str());
        return QString::fromStdString(n->name);
    case Kind:
        return damage ? tr("%1 \u2014 damaged").arg(kindLabel(*n)) : kindLabel(*n);
    case DType:
        return QString::fromStdString(n->dtype);
    case Shape: {
        if (n->shape.empty() && n->dtype.empty()) return QString();
        QStringList dims;
        for (auto d : n->shape)
            dims << QString::number(d);
        return QLatin1Char('[') + dims.join(QLatin1String(", ")) + QLatin1Char(']');
    }
    case Elements:
        if (sort) return qulonglong(n->elements);
        return n->elements ? QLocale().toString(qulonglong(n->elements)) : QString();
    case Bytes:
        if (sort) return qulonglong(n->bytes);
        return n->bytes ? humanBytes(n->bytes) : QString();
    case Ranks:
        if (sort) return n->ranks;
        return n->ranks ? QString::number(n->ranks) : QString();
    case Value:
        return n->kind == NodeKind::Entry || n->kind == NodeKind::Tensor ? QString::fromStdString(n->value)
                                                                         : QString();
    }
    return {};
}

FilterProxy::FilterProxy(QObject* parent) : QSortFilterProxyModel(parent)
{
    setRecursiveFilteringEnabled(true);
    setSortRole(TreeModel::SortRole);
    setFilterKeyColumn(TreeModel::Name);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
}

QString FilterProxy::setPattern(const QString& text, bool regex)
{
    if (text.isEmpty()) {
        setFilterRegularExpression(QRegularExpression());
        return {};
    }
    QRegularExpression re = regex ? QRegularExpression(text, QRegularExpression::CaseInsensitiveOption)
                                  : QRegularExpression(QRegularExpression::wildcardToRegularExpression(
                                                           QLatin1Char('*') + text + QLatin1Char('*'),
                                                           QRegularExpression::UnanchoredWildcardConversion),
                                                       QRegularExpression::CaseInsensitiveOption);
    if (!re.isValid())
        return tr("Not a valid regular expression: %1 (at character %2)")
            .arg(re.errorString())
            .arg(re.patternErrorOffset() + 1);
    setFilterRegularExpression(re);
    return {};
}

} // namespace ckpt::app
