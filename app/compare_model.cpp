#include "compare_model.h"

#include "param_names.h"
#include "torch/dtype.h"

#include <QBrush>
#include <QLocale>
#include <QPalette>
#include <QRegularExpression>
#include <cmath>
#include <iterator>
#include <map>

namespace ckpt::app {

QString dtypeText(torch::DType t)
{
    const std::string_view n = torch::name(t);
    return QString::fromLatin1(n.data(), qsizetype(n.size()));
}

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareModel::clear()
{
    beginResetModel();
    m_rows.clear();
    endResetModel();
}

void CompareModel::append(std::vector<ops::TensorDiff> rows)
{
    if (rows.empty()) return;
    beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + rows.size()) - 1);
    for (auto& r : rows)
        m_rows.push_back(std::move(r));
    endInsertRows();
}

int CompareModel::rowOf(const QString& name) const
{
    const std::string want = name.toStdString();
    for (size_t i = 0; i < m_rows.size(); ++i)
        if (m_rows[i].name == want) return int(i);
    return -1;
}

QString CompareModel::statusText(ops::DiffStatus s)
{
    switch (s) {
    case ops::DiffStatus::Identical:
        return tr("identical");
    case ops::DiffStatus::Changed:
        return tr("changed");
    case ops::DiffStatus::OnlyInA:
        return tr("only in A");
    case ops::DiffStatus::OnlyInB:
        return tr("only in B");
    case ops::DiffStatus::ShapeOrDTypeChanged:
        return tr("shape or dtype changed");
    case ops::DiffStatus::DTypeChanged:
        return tr("dtype changed");
    }
    return {};
}

QString CompareModel::cosineText(double cosine)
{
    const QString shown = QString::number(cosine, 'g', 4);
    if (cosine == 1.0 || shown != QLatin1String("1")) return shown;
    return QStringLiteral("1 \u2212 %1").arg(QString::number(1.0 - cosine, 'e', 1));
}

int CompareModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int CompareModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant CompareModel::number(const ops::TensorDiff& d, int column) const
{
    const bool a = d.sideStats && d.statsA.valid() > 0, b = d.sideStats && d.statsB.valid() > 0;
    switch (column) {
    case MaxAbsDiff:
        return d.compared ? QVariant(d.diff.maxAbsDiff) : QVariant();
    case RelL2:
        return d.compared ? QVariant(d.diff.relL2()) : QVariant();
    case Cosine:
        return d.compared ? QVariant(d.diff.cosine()) : QVariant();
    case BitwiseEqual:
        return d.compared && d.bitwiseKnown && d.diff.count
                   ? QVariant(double(d.diff.bitwiseEqual) / double(d.diff.count))
                   : QVariant();
    case MeanA:
        return a ? QVariant(d.statsA.mean) : QVariant();
    case MeanB:
        return b ? QVariant(d.statsB.mean) : QVariant();
    case StdA:
        return d.sideStats && d.statsA.valid() > 1 ? QVariant(d.statsA.std()) : QVariant();
    case StdB:
        return d.sideStats && d.statsB.valid() > 1 ? QVariant(d.statsB.std()) : QVariant();
    }
    return {};
}

QVariant CompareModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || size_t(index.row()) >= m_rows.size()) return {};
    const ops::TensorDiff& d = m_rows[size_t(index.row())];
    const int c = index.column();
    switch (role) {
    case StatusRole:
        return int(d.status);
    case RowRole:
        return index.row();
    case Qt::TextAlignmentRole:
        return c >= MaxAbsDiff ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::ToolTipRole:
        if (c == Name || c == Status) {
            auto side = [](torch::DType t, const std::vector<int64_t>& shape) {
                QStringList dims;
                for (auto x : shape)
                    dims << QString::number(x);
                return QStringLiteral("%1 [%2]").arg(dtypeText(t), dims.join(QLatin1String(", ")));
            };
            QString tip = QString::fromStdString(d.name);
            if (d.status != ops::DiffStatus::OnlyInB)
                tip += QLatin1Char('\n') + tr("A: %1").arg(side(d.dtypeA, d.shapeA));
            if (d.status != ops::DiffStatus::OnlyInA)
                tip += QLatin1Char('\n') + tr("B: %1").arg(side(d.dtypeB, d.shapeB));
            return tip;
        }
        return {};
    case SortRole:
        if (c == Name) return QString::fromStdString(d.name);
        if (c == Status) return int(d.status);
        return number(d, c);
    case Qt::DisplayRole:
        if (c == Name) return QString::fromStdString(d.name);
        if (c == Status) {
            if (!d.tiedTo.empty()) return tr("tied to %1").arg(QString::fromStdString(d.tiedTo));
            if (d.status != ops::DiffStatus::DTypeChanged) return statusText(d.status);
            // What changed, beside the numbers the other columns show.
            return tr("dtype changed: %1 → %2")
                .arg(QLatin1String(torch::name(d.dtypeA).data(), qsizetype(torch::name(d.dtypeA).size())),
                     QLatin1String(torch::name(d.dtypeB).data(), qsizetype(torch::name(d.dtypeB).size())));
        }
        if (c == Cosine) {
            const QVariant v = number(d, c);
            return v.isValid() ? cosineText(v.toDouble()) : QString();
        }
        if (c == BitwiseEqual) {
            const QVariant v = number(d, c);
            return v.isValid() ? QLocale().toString(v.toDouble() * 100, 'f', 1) + QLatin1Char('%')
                               : QString();
        }
        {
            const QVariant v = number(d, c);
            return v.isValid() ? QString::number(v.toDouble(), 'g', 4) : QString();
        }
    }
    return {};
}

std::span<const ModelColumn> CompareModel::columns()
{
    static constexpr ModelColumn kColumns[] = {
        {QT_TR_NOOP("Tensor")},
        {QT_TR_NOOP("Status")},
        {QT_TR_NOOP("max |a-b|")},
        {QT_TR_NOOP("rel. L2"), QT_TR_NOOP("||a - b|| / ||a||")},
        {QT_TR_NOOP("cosine"), QT_TR_NOOP("a.b / (||a|| ||b||)")},
        {QT_TR_NOOP("bitwise equal"), QT_TR_NOOP("Share of elements whose bits are equal")},
        {QT_TR_NOOP("mean A")},
        {QT_TR_NOOP("mean B")},
        {QT_TR_NOOP("std A")},
        {QT_TR_NOOP("std B")},
    };
    static_assert(std::size(kColumns) == ColumnCount);
    return kColumns;
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    return columnHeader(columns(), metaObject()->className(), section, orientation, role);
}

namespace {
// Column keys for the exports: stable English identifiers, whatever the window's language.
const char* const kKeys[] = {"name",          "status", "max_abs_diff", "rel_l2", "cosine",
                             "bitwise_equal", "mean_a", "mean_b",       "std_a",  "std_b"};
static_assert(std::size(kKeys) == size_t(CompareModel::ColumnCount));
} // namespace

QList<int> CompareModel::rowsOrAll(const std::optional<QList<int>>& rows) const
{
    if (rows) return *rows;
    QList<int> all;
    for (int r = 0; r < int(m_rows.size()); ++r)
        all << r;
    return all;
}

QByteArray CompareModel::toCsv(const std::optional<QList<int>>& rows) const
{
    QByteArray out;
    for (int c = 0; c < ColumnCount; ++c)
        out += QByteArray(c ? "," : "") + kKeys[c];
    out += '\n';
    for (const int r : rowsOrAll(rows)) {
        const ops::TensorDiff& d = m_rows.at(size_t(r));
        QString name = QString::fromStdString(d.name);
        if (name.contains(QLatin1Char(',')) || name.contains(QLatin1Char('"')))
            name = QLatin1Char('"') + name.replace(QLatin1String("\""), QLatin1String("\"\"")) +
                   QLatin1Char('"');
        out += name.toUtf8() + ',' + ops::statusName(d.status);
        for (int c = MaxAbsDiff; c < ColumnCount; ++c) {
            const QVariant v = number(d, c);
            out += ',' + (v.isValid() ? QByteArray::number(v.toDouble(), 'g', 17) : QByteArray());
        }
        out += '\n';
    }
    return out;
}

QByteArray CompareModel::toJson(const std::optional<QList<int>>& shown) const
{
    std::vector<ops::DiffRow> rows;
    for (const int r : rowsOrAll(shown)) {
        const ops::TensorDiff& d = m_rows.at(size_t(r));
        ops::DiffRow row{d.name, d.status, {}};
        for (int c = MaxAbsDiff; c < ColumnCount; ++c) {
            const QVariant v = number(d, c);
            row.numbers.push_back(
                {kKeys[c], v.isValid() ? std::optional<double>(v.toDouble()) : std::nullopt});
        }
        rows.push_back(std::move(row));
    }
    return QByteArray::fromStdString(ops::diffRowsJson(rows));
}

CompareProxy::CompareProxy(QObject* parent) : QSortFilterProxyModel(parent)
{
    setSortRole(CompareModel::SortRole);
    setFilterKeyColumn(CompareModel::Name);
    setFilterCaseSensitivity(Qt::CaseInsensitive);
}

void CompareProxy::setPattern(const QString& text)
{
    setFilterRegularExpression(text.isEmpty()
                                   ? QRegularExpression()
                                   : QRegularExpression(QRegularExpression::wildcardToRegularExpression(
                                                            QLatin1Char('*') + text + QLatin1Char('*'),
                                                            QRegularExpression::UnanchoredWildcardConversion),
                                                        QRegularExpression::CaseInsensitiveOption));
}

void CompareProxy::setStatus(int status)
{
    m_status = status;
    invalidateFilter();
}

bool CompareProxy::filterAcceptsRow(int row, const QModelIndex& parent) const
{
    if (m_status != AnyStatus) {
        const int s = sourceModel()->index(row, 0, parent).data(CompareModel::StatusRole).toInt();
        if (m_status == NotIdentical ? s == int(ops::DiffStatus::Identical) : s != m_status) return false;
    }
    return QSortFilterProxyModel::filterAcceptsRow(row, parent);
}

bool CompareProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const
{
    const QVariant l = left.data(sortRole()), r = right.data(sortRole());
    // Unknown and NaN values sort after every number, whichever the order.
    const bool ln = !l.isValid() || (l.typeId() == QMetaType::Double && std::isnan(l.toDouble()));
    const bool rn = !r.isValid() || (r.typeId() == QMetaType::Double && std::isnan(r.toDouble()));
    if (ln || rn) return sortOrder() == Qt::AscendingOrder ? !ln && rn : ln && !rn;
    return QSortFilterProxyModel::lessThan(left, right);
}

const HeatmapGrid::Cell* HeatmapGrid::find(const QString& name) const
{
    for (const auto& c : cells)
        if (c.name == name) return &c;
    return nullptr;
}

HeatmapGrid heatmapGrid(const std::vector<ops::TensorDiff>& tensors)
{
    struct Place
    {
        QString row, column;
        bool isLayer = false, tied = false;
        QString stem;
        qlonglong number = 0;
    };
    std::vector<Place> places;
    places.reserve(tensors.size());
    for (const auto& t : tensors) {
        if (!t.tiedTo.empty()) { // a listed alias: its tensor has the cell
            places.push_back({});
            places.back().tied = true;
            continue;
        }
        const QString name = QString::fromStdString(t.name);
        Place p;
        const LayerName l = splitLayer(name);
        if (l.isLayer) {
            p.isLayer = true;
            p.stem = l.stem;
            p.number = l.number;
            p.row = p.stem + QString::number(l.number);
            p.column = l.rest.isEmpty() ? QStringLiteral("·") : l.rest;
        } else {
            const qsizetype dot = name.lastIndexOf(QLatin1Char('.'));
            p.row = dot < 0 ? name : name.left(dot);
            p.column = dot < 0 ? QStringLiteral("·") : name.mid(dot + 1);
        }
        places.push_back(p);
    }
    // Layers by stem (first seen) then number; modules in the order first seen.
    std::map<QString, int> stemOrder;
    std::map<std::pair<int, qlonglong>, QString> layerRows;
    QStringList moduleRows;
    for (const auto& p : places) {
        if (p.tied) continue;
        if (p.isLayer) {
            const int stem = stemOrder.emplace(p.stem, int(stemOrder.size())).first->second;
            layerRows.emplace(std::make_pair(stem, p.number), p.row);
        } else if (!moduleRows.contains(p.row)) {
            moduleRows << p.row;
        }
    }
    HeatmapGrid g;
    for (const auto& [key, row] : layerRows)
        g.rows << row;
    g.layerRows = int(g.rows.size());
    g.rows << moduleRows;
    std::map<QString, int> rowIndex, columnIndex;
    for (int i = 0; i < g.rows.size(); ++i)
        rowIndex[g.rows[i]] = i;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& t = tensors[i];
        if (!t.tiedTo.empty()) continue;
        auto col = columnIndex.find(places[i].column);
        if (col == columnIndex.end()) {
            col = columnIndex.emplace(places[i].column, int(g.columns.size())).first;
            g.columns << places[i].column;
        }
        HeatmapGrid::Cell c;
        c.row = rowIndex[places[i].row];
        c.column = col->second;
        c.name = QString::fromStdString(t.name);
        c.status = t.status;
        c.value =
            t.compared && t.status != ops::DiffStatus::ShapeOrDTypeChanged ? t.diff.relL2() : std::nan("");
        c.dtypeChanged = t.status == ops::DiffStatus::DTypeChanged;
        if (t.status == ops::DiffStatus::Identical) c.value = 0;
        g.cells.push_back(c);
    }
    return g;
}

} // namespace ckpt::app
