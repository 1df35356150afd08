#include "model_columns.h"

#include <QCoreApplication>

namespace ckpt::app {

QVariant columnHeader(std::span<const ModelColumn> columns, const char* context, int section,
                      Qt::Orientation orientation, int role)
{
    if (orientation != Qt::Horizontal || section < 0 || size_t(section) >= columns.size()) return {};
    const ModelColumn& c = columns[size_t(section)];
    if (role == Qt::DisplayRole) return QCoreApplication::translate(context, c.header);
    if (role == Qt::ToolTipRole && c.tooltip) return QCoreApplication::translate(context, c.tooltip);
    return {};
}

} // namespace ckpt::app
