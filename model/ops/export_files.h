// What an export writes beside the weights, settled once its tensors are planned: the files the
// family names to copy (read now, not at every opening) and config.json's dtype set to the dtype
// the weights were written in (transformers 5 loads a model in its config's dtype).
#pragma once

#include "layout/checkpoint.h"
#include "ops/tensor_source.h"
#include "torch/dtype.h"

#include <string>

namespace ckpt::ops {

// `set` with the tag's exportCopies read into its exportFiles and its config.json's dtype made
// the one its floating tensors are written in (left as it is when they are written in several,
// or when an embedded config names none).
TensorSet withFilesBeside(TensorSet set, const layout::Tag& tag);

// config.json's text naming `dtype` in its dtype key ("dtype" of transformers 5, "torch_dtype"
// before; "dtype" added when it has neither and `addWhenMissing`), written as transformers writes
// it. The text itself when it already says so or is no JSON object.
std::string configWithDtype(const std::string& text, torch::DType dtype, bool addWhenMissing = true);

} // namespace ckpt::ops
