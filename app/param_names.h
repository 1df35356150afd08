// What a parameter's name says about where it sits in the model, for the views that group or
// colour tensors by layer (the comparison's heatmap, the sharding map).
#pragma once

#include <QString>

namespace ckpt::app {

// A tensor name cut at its layer number: "model.layers.17.mlp.weight" -> stem "model.layers.",
// number 17, rest "mlp.weight". isLayer is false when the name has no number of its own
// ("fc1.weight" has none: the digit belongs to a word).
struct LayerName
{
    bool isLayer = false;
    QString stem, rest;
    qlonglong number = 0;
};
LayerName splitLayer(const QString& name);

} // namespace ckpt::app
