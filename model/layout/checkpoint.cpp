// The domain model's few functions (checkpoint.h): the interning table behind SharedText,
// role names, the lookups on a parameter and a checkpoint, and a tag's configuration as text.
#include "layout/checkpoint.h"

#include "compute_backend.h"
#include "layout/words.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
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
        return QT_TRANSLATE_NOOP("ckpt::layout", "model states");
    case FileRole::OptimStates:
        return QT_TRANSLATE_NOOP("ckpt::layout", "optimizer states");
    case FileRole::Layer:
        return QT_TRANSLATE_NOOP("ckpt::layout", "pipeline layer");
    case FileRole::Expert:
        return QT_TRANSLATE_NOOP("ckpt::layout", "MoE expert");
    case FileRole::ExpertOptim:
        return QT_TRANSLATE_NOOP("ckpt::layout", "MoE expert optimizer");
    case FileRole::Rng:
        return QT_TRANSLATE_NOOP("ckpt::layout", "RNG state");
    case FileRole::Scheduler:
        return QT_TRANSLATE_NOOP("ckpt::layout", "LR scheduler");
    case FileRole::RunConfig:
        return QT_TRANSLATE_NOOP("ckpt::layout", "training arguments");
    case FileRole::Other:
        return QT_TRANSLATE_NOOP("ckpt::layout", "other");
    }
    return "?";
}

int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to)
{
    int64_t n = 1;
    for (size_t i = from; i < to && i < shape.size(); ++i)
        n *= shape[i];
    return n;
}

uint64_t Parameter::numel() const
{
    return gpu::numelOf(shape);
}

const OptimizerState* Parameter::stateNamed(std::string_view stateName) const
{
    for (const auto& s : state)
        if (s.name == stateName) return &s;
    return nullptr;
}

void Parameter::addStatePieces(std::string_view stateName, size_t slice, std::vector<Source> pieces)
{
    if (pieces.empty()) return;
    auto it = std::find_if(state.begin(), state.end(), [&](const auto& s) { return s.name == stateName; });
    if (it == state.end())
        it = state.insert(
            state.end(),
            OptimizerState{std::string(stateName), shape, pieces.front().dtype, {}, true, false});
    if (it->slices.size() <= slice) it->slices.resize(slice + 1);
    auto& master = it->slices[slice].master;
    master.insert(master.end(), std::make_move_iterator(pieces.begin()),
                  std::make_move_iterator(pieces.end()));
}

void Parameter::alignStates()
{
    for (auto& st : state) {
        if (!st.perSlice) continue;
        st.slices.resize(slices.size());
        for (size_t i = 0; i < slices.size(); ++i) {
            RankSlice& r = st.slices[i];
            r.rank = slices[i].rank, r.paramOffset = slices[i].paramOffset;
            r.length = slices[i].length, r.padding = slices[i].padding;
        }
    }
}

bool OptimizerState::complete() const
{
    if (slices.empty()) return false;
    return std::all_of(slices.begin(), slices.end(),
                       [](const RankSlice& s) { return !s.master.empty() || s.length == 0; });
}

Parameter stateTensor(const Parameter& owner, const OptimizerState& state, std::string name)
{
    Parameter m;
    m.name = std::move(name);
    m.shape = state.shape;
    m.dtype = state.dtype;
    m.kind = owner.kind;
    m.group = owner.group;
    for (const auto& s : state.slices)
        if (!s.master.empty()) m.slices.push_back(s); // a rank that saved none of a per-slice state
    return m;
}

void stateBadge(Tag& tag, const char* key, const char* label, nlohmann::ordered_json value)
{
    const auto text = [](const nlohmann::ordered_json& v) {
        if (v.is_string()) return v.get<std::string>();
        if (v.is_boolean())
            return std::string(v.get<bool>() ? QT_TRANSLATE_NOOP("ckpt::layout", "yes")
                                             : QT_TRANSLATE_NOOP("ckpt::layout", "no"));
        return v.dump();
    };
    std::string shown;
    if (value.is_array())
        for (const auto& item : value)
            shown += (shown.empty() ? "" : ", ") + text(item);
    else
        shown = text(value);
    Fact fact{label, std::move(shown), key, std::move(value)};
    const auto same =
        std::find_if(tag.facts.begin(), tag.facts.end(), [&](const Fact& f) { return f.key == key; });
    if (same != tag.facts.end())
        *same = std::move(fact);
    else
        tag.facts.push_back(std::move(fact));
}

const DeepSpeedTag& deepSpeedOrNone(const Tag& tag)
{
    static const DeepSpeedTag none;
    return tag.deepspeed ? *tag.deepspeed : none;
}

std::vector<Parameter> momentTensors(const Tag& tag)
{
    std::vector<Parameter> out;
    for (const auto& p : tag.params) {
        if (!p.tiedTo.empty() || !p.unreadable.empty()) continue; // an alias has no state of its own
        for (const auto& st : p.state) {
            if (st.elementwise(p.shape) && st.complete())
                out.push_back(stateTensor(p, st, p.name + "/" + st.name));
        }
    }
    out.insert(out.end(), tag.unownedMoments.begin(), tag.unownedMoments.end());
    return out;
}

namespace {

// "a/state/<owner>/<leaf>", or as torch's flatten_optimizer_state_dict writes it (torchtitan)
// "a/state.<owner>.<leaf>" -> {owner, leaf}; nullopt when the path is not optimizer state.
std::optional<std::pair<std::string, std::string>> stateKey(const std::string& path)
{
    const size_t cut = path.rfind('/');
    const size_t last = cut == std::string::npos ? 0 : cut + 1;
    if (path.compare(last, 6, "state.") == 0) {
        const size_t dot = path.rfind('.');
        if (dot <= last + 6 || dot + 1 == path.size()) return std::nullopt;
        return std::pair{path.substr(last + 6, dot - last - 6), path.substr(dot + 1)};
    }
    if (cut == std::string::npos || cut == 0) return std::nullopt;
    const size_t up = path.rfind('/', cut - 1);
    if (up == std::string::npos || up < 5 || path.compare(up - 5, 6, "state/") != 0) return std::nullopt;
    if (up > 5 && path[up - 6] != '/') return std::nullopt; // "optimizer_state/...", not "state/"
    return std::pair{path.substr(up + 1, cut - up - 1), path.substr(cut + 1)};
}

bool isMoment(const std::string& leaf)
{
    return leaf == "exp_avg" || leaf == "exp_avg_sq" || leaf == "momentum_buffer";
}

} // namespace

void attachKeyedOptimizerState(Tag& tag)
{
    for (const auto& p : tag.params)
        if (!p.state.empty()) return; // the family stated it (ZeRO partitions); its files are not keyed
    std::unordered_map<std::string, Parameter*> byName;
    for (auto& p : tag.params)
        byName.emplace(p.name, &p);
    std::vector<const Parameter*> unowned;
    bool attached = false;
    for (const auto& o : tag.otherTensors) {
        const auto key = stateKey(o.name);
        if (!key || !o.unreadable.empty()) continue;
        if (const auto it = byName.find(key->first); it != byName.end()) {
            it->second->state.push_back(
                OptimizerState{key->second, o.shape, o.dtype, o.slices, false, key->second == "step"});
            attached = true;
        } else if (isMoment(key->second)) {
            unowned.push_back(&o);
        }
    }
    if (attached) return;
    for (const Parameter* o : unowned)
        tag.unownedMoments.push_back(*o);
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
