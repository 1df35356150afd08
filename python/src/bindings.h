// What the binding's files share: the opened checkpoint as Python holds it, and the operations'
// registration.
#pragma once

#include "layout/family.h"
#include "torch/dtype.h"

#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>

namespace ckpt::python {

namespace nb = nanobind;
using namespace nb::literals;

// An opened checkpoint (every tag, or the one asked for): immutable and shared, so tensors and
// operations taken from it never parse a file twice.
struct Opened
{
    std::shared_ptr<const layout::OpenedCheckpoint> checkpoint;
    // The tag a job means (OpenedCheckpoint::chooseTag's rules: empty = latest or the only one).
    layout::OpenedTag tag(const std::string& name) const;
};

// "float32", "bfloat16", ... (torch's names); nullopt or empty: none asked for.
std::optional<torch::DType> dtypeOf(const std::optional<std::string>& name);

void bindOperations(nb::module_& m);

} // namespace ckpt::python
