// Python's repr() of unpickled values, which the Value column shows: numbers, strings and
// containers as Python prints them, plus the few library objects whose value is plain data
// (numpy arrays, scalars and dtypes, datetime.timedelta, torch.Size, set/frozenset, ...).
// Nothing is run: the text is read off the value tree.
//
// pyRepr() and bigIntToDecimal() are defined in py_repr.cpp but stay declared in
// torch/torch_file.h, where their callers have always found them.
#pragma once

#include "pickle/value.h"

namespace ckpt::torch {

// Whether v is a numpy array, scalar or dtype: data that pyRepr() prints as numpy does, so the
// torch reader shows it as a value rather than as an opaque object.
bool isNumpyValue(const pickle::Value* v);

} // namespace ckpt::torch
