#include "param_names.h"

#include "layout/sharding.h"

namespace ckpt::app {

LayerName splitLayer(const QString& name)
{
    const layout::LayerName l = layout::splitLayer(name.toStdString());
    return {l.isLayer, QString::fromStdString(l.stem), QString::fromStdString(l.rest), l.number};
}

} // namespace ckpt::app
