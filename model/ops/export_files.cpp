#include "ops/export_files.h"

#include "io/error.h"
#include "io/input_file.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

namespace ckpt::ops {

namespace {

// A tokenizer.json of a large vocabulary is tens of MB; nothing beside the weights is near this.
constexpr uint64_t kMaxCopyBytes = 1u << 30;

bool isFloating(torch::DType d)
{
    using D = torch::DType;
    return d == D::Float64 || d == D::Float32 || d == D::Float16 || d == D::BFloat16;
}

// The one floating dtype every written tensor has; nullopt when none has one or they differ.
std::optional<torch::DType> writtenFloatDtype(const std::vector<SourceTensor>& tensors)
{
    std::optional<torch::DType> seen;
    for (const SourceTensor& t : tensors) {
        if (!t.aliasOf.empty() || !isFloating(t.tensor.dtype)) continue;
        if (seen && *seen != t.tensor.dtype) return std::nullopt;
        seen = t.tensor.dtype;
    }
    return seen;
}

bool keysSorted(const nlohmann::ordered_json& j)
{
    std::string last;
    for (const auto& [key, value] : j.items()) {
        if (key < last) return false;
        last = key;
    }
    return true;
}

} // namespace

std::string configWithDtype(const std::string& text, torch::DType dtype, bool addWhenMissing)
{
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(text, nullptr, false);
    if (!config.is_object()) return text;
    const std::string name(torch::name(dtype));
    const bool sorted = keysSorted(config); // before a key is added at the end
    bool changed = false;
    for (const char* key : {"dtype", "torch_dtype"})
        if (config.contains(key) && config[key] != name) config[key] = name, changed = true;
    if (addWhenMissing && !config.contains("dtype") && !config.contains("torch_dtype"))
        config["dtype"] = name, changed = true;
    if (!changed) return text;
    // transformers' to_json_string: indent 2, sorted keys, ASCII, a final newline. A config whose
    // keys were not sorted (embedded by another tool) keeps its order, the new key last.
    if (sorted) return nlohmann::json(config).dump(2, ' ', true) + "\n";
    return config.dump(2, ' ', true) + "\n";
}

TensorSet withFilesBeside(TensorSet set, const layout::Tag& tag)
{
    for (const auto& copy : tag.exportCopies) {
        const std::string& name = copy.first; // not a structured binding: clang cannot capture one
        std::erase_if(set.exportFiles, [&name](const auto& f) { return f.first == name; });
        set.exportFiles.push_back({name, io::readSmallFile(copy.second, kMaxCopyBytes)});
    }
    // A config.json embedded as its reference tool wrote it (Composer's) and naming no dtype stays
    // byte for byte: transformers then takes the weights' dtype, which is right as well. A copied
    // one (a Trainer's) gets the key, as save_pretrained writes it.
    const bool copied = std::any_of(tag.exportCopies.begin(), tag.exportCopies.end(),
                                    [](const auto& c) { return c.first == "config.json"; });
    if (const auto dtype = writtenFloatDtype(set.tensors))
        for (auto& [name, content] : set.exportFiles)
            if (name == "config.json") content = configWithDtype(content, *dtype, copied);
    return set;
}

} // namespace ckpt::ops
