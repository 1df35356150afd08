// The domain model's few functions (checkpoint.h): the interning table behind SharedText,
// role names, the lookups on a parameter and a checkpoint, and a tag's configuration as text.
#include "layout/checkpoint.h"

#include "compute_backend.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ckpt::layout {

SharedText::SharedText()
{
    static const auto empty = std::make_shared<const std::string>();
    m_text = empty;
}

SharedText::SharedText(std::string_view text)
{
    // Interned while anything holds the text; expired entries are swept when the table has
    // doubled since the last sweep, so it stays the size of the texts in use.
    struct Hash
    {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    using Table = std::unordered_map<std::string, std::weak_ptr<const std::string>, Hash, std::equal_to<>>;
    // Never destroyed: a SharedText made during static destruction must not find it gone.
    static std::mutex& mutex = *new std::mutex;
    static Table& table = *new Table;
    static size_t sweepAt = 1024;
    std::lock_guard lock(mutex);
    auto it = table.find(text); // no key string made for a text already in the table
    if (it != table.end())
        if (auto live = it->second.lock()) {
            m_text = std::move(live);
            return;
        }
    m_text = std::make_shared<const std::string>(text);
    if (it == table.end()) it = table.emplace(std::string(text), std::weak_ptr<const std::string>()).first;
    it->second = m_text;
    if (table.size() >= sweepAt) {
        std::erase_if(table, [](const auto& e) { return e.second.expired(); });
        sweepAt = std::max<size_t>(1024, 2 * table.size());
    }
}

const char* roleName(FileRole r)
{
    switch (r) {
    case FileRole::ModelStates:
        return "model states";
    case FileRole::OptimStates:
        return "optimizer states";
    case FileRole::Layer:
        return "pipeline layer";
    case FileRole::Expert:
        return "MoE expert";
    case FileRole::ExpertOptim:
        return "MoE expert optimizer";
    case FileRole::Other:
        return "other";
    }
    return "?";
}

uint64_t Parameter::numel() const
{
    return gpu::numelOf(shape);
}

const Tag* Checkpoint::latest() const
{
    for (const auto& t : tags)
        if (t.latest) return &t;
    return tags.size() == 1 ? &tags.front() : nullptr;
}

const Tag* Checkpoint::find(const std::string& name) const
{
    for (const auto& t : tags)
        if (t.name == name) return &t;
    return nullptr;
}

std::string configurationText(const Tag& tag)
{
    const nlohmann::ordered_json all = {
        {"ds_config", tag.config}, {"client_state", tag.clientState}, {"lr_scheduler", tag.lrScheduler}};
    return all.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

} // namespace ckpt::layout
