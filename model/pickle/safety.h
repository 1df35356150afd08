// Classifies the globals a pickle references, the way PyTorch's weights_only allowlist and the
// security scanners (picklescan, modelscan, fickling) do. We never execute a pickle, so this
// only decides what we report to users who might later load the file with Python.
#pragma once

#include <string_view>

namespace ckpt::pickle {

enum class Safety {
    TensorSafe, // on PyTorch's default weights_only allowlist
    Opaque,     // not executable by us, merely represented (numpy, argparse, user classes)
    Dangerous,  // would run code or touch the system when loaded by Python
};

Safety classifyGlobal(std::string_view module, std::string_view name);
const char* safetyName(Safety s);

} // namespace ckpt::pickle
