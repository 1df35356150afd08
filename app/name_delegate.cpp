#include "name_delegate.h"

#include "param_names.h"

#include <QApplication>
#include <QStyle>

namespace ckpt::app {

void NameDelegate::initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const
{
    QStyledItemDelegate::initStyleOption(option, index);
    const QStyle* style = option->widget ? option->widget->style() : QApplication::style();
    // What the text gets of the cell: less the icon and the style's margins on both sides.
    const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, option->widget) + 1;
    int available = option->rect.width() - 2 * margin;
    if (option->features & QStyleOptionViewItem::HasDecoration)
        available -= option->decorationSize.width() + margin;
    const QFontMetrics fm(option->font);
    option->text = elideName(
        option->text, [&fm](const QString& s) { return fm.horizontalAdvance(s); }, available);
    option->textElideMode = Qt::ElideRight; // what is left of it: nothing, the text fits
}

} // namespace ckpt::app
