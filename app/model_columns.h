// A model's columns as one table instead of a headerData switch: each column's header and
// tooltip, marked with QT_TR_NOOP in a member function of the model (so lupdate puts them in the
// model's context, as tr() would) and translated when asked for, so translations still apply.
#pragma once

#include <QVariant>
#include <span>

namespace ckpt::app {

struct ModelColumn
{
    const char* header;
    const char* tooltip = nullptr; // none when null
};

// headerData over a column table: the horizontal header's text and tooltip, translated in
// `context` (the model's class name, metaObject()->className(), which is what tr() uses);
// nothing for other roles.
QVariant columnHeader(std::span<const ModelColumn> columns, const char* context, int section,
                      Qt::Orientation orientation, int role);

} // namespace ckpt::app
