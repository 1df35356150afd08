// The tree's name column, elided by elideName (param_names.h) instead of Qt's middle elision,
// which cut a PEFT name's layer number and projection ("base_model.mod…lora_A.default.weight").
#pragma once

#include <QStyledItemDelegate>

namespace ckpt::app {

class NameDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;

protected:
    void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override;
};

} // namespace ckpt::app
