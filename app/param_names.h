// What a parameter's name says about where it sits in the model, for the views that group or
// colour tensors by layer (the comparison's heatmap, the sharding map).
#pragma once

#include <QString>
#include <functional>

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

// A dotted tensor name made to fit `available` (as `width` measures text), keeping what tells
// it from its neighbours: whole leading segments go first ("base_model.model.model." of a PEFT
// name), then the middle between the layer number and the name's last segments, so
// "…layers.17.…q_proj.lora_A.default.weight" stays told apart from layer 18's and from v_proj's.
QString elideName(const QString& name, const std::function<int(const QString&)>& width, int available);

} // namespace ckpt::app
