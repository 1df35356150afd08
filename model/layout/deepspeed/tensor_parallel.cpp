// A ZeRO save over several tensor-parallel ranks (Megatron-DeepSpeed writes one set of rank files
// per mp rank): the parts the ranks beyond the first hold of each parameter, and how they make
// the whole, as merge_tp_slices (deepspeed/checkpoint/ds_to_universal.py) merges them by the
// save's universal_checkpoint_info. Stated on the parameters (Parameter::tensorParallel), so
// that whoever merges them (the Universal conversion) reads data instead of re-opening ranks or
// re-reading the rules. With one rank only the keys merge_tp_slices writes and the vocabulary cut
// remain.
#include "layout/deepspeed.h"
#include "layout/deepspeed/internal.h"

#include <algorithm>
#include <deque>
#include <regex>
#include <set>

namespace ckpt::layout::ds {

namespace {

struct Pattern
{
    std::string text;
    std::regex re;
};

Pattern compiled(const std::string& s, const std::string& file)
{
    try {
        return {s, std::regex(s)};
    } catch (const std::regex_error& e) {
        throw Error("universal_checkpoint_info pattern '" + s +
                        "' is not a regular expression we can read (" + e.what() + ")",
                    file);
    }
}

// Python's re.match: anchored at the start only.
bool reMatch(const Pattern& p, const std::string& name)
{
    return std::regex_search(name, p.re, std::regex_constants::match_continuous);
}

// One entry of parameter_with_sub_params: SubparamShape(patterns, shape, partition_dim).
struct SubParams
{
    std::vector<Pattern> patterns;
    const Value* shapeNode = nullptr;
    int64_t partitionDim = 0;
};

// universal_checkpoint_info, read: the pattern lists, in the order merge_tp_slices tries them.
struct Rules
{
    std::vector<Pattern> replicated, average, row, vocab, twoSub;
    std::vector<SubParams> subParams;
    const Value* shardWidths = nullptr; // sub_param_shard_widths (version >= 0.4)
    double version = 0;
    std::optional<int64_t> originalVocab;
    std::set<std::string> all;

    std::vector<Pattern> list(const Value* info, const char* key, const std::string& file)
    {
        std::vector<Pattern> out;
        const Value* l = dictGet(info, key);
        if (!l || l->kind == Kind::None) return out;
        if (l->kind != Kind::List && l->kind != Kind::Tuple)
            throw Error(std::string("universal_checkpoint_info '") + key + "' is not a list of patterns",
                        file);
        for (const Value* p : l->items) {
            const auto s = asString(p);
            if (!s)
                throw Error(std::string("universal_checkpoint_info '") + key + "' holds a non-string", file);
            out.push_back(compiled(*s, file));
            all.insert(*s);
        }
        return out;
    }

    // re.match of each pattern; more than one match is DeepSpeed's error too.
    const Pattern* match(const std::vector<Pattern>& ps, const std::string& name, const std::string& file,
                         UniversalMergeKeys& keys) const
    {
        const Pattern* hit = nullptr;
        for (const Pattern& p : ps)
            if (reMatch(p, name)) {
                if (hit)
                    throw Error("parameter '" + name + "' matches more than one pattern ('" + hit->text +
                                    "', '" + p.text + "') of universal_checkpoint_info",
                                file);
                hit = &p;
            }
        if (hit) keys.patterns.push_back(hit->text);
        return hit;
    }

    // The first sub-parameter entry with a matching pattern (DeepSpeed takes the first).
    std::pair<int, const Pattern*> matchSub(const std::string& name, UniversalMergeKeys& keys) const
    {
        for (size_t i = 0; i < subParams.size(); ++i)
            for (const Pattern& p : subParams[i].patterns)
                if (reMatch(p, name)) {
                    keys.patterns.push_back(p.text);
                    return {int(i), &p};
                }
        return {-1, nullptr};
    }
};

SubParams subParamsEntry(const Value* e, Rules& r, const std::string& file)
{
    // SubparamShape(**entry): exactly these three keys.
    if (!e || e->kind != Kind::Dict || e->entries.size() != 3 || !dictGet(e, "patterns") ||
        !dictGet(e, "shape") || !dictGet(e, "partition_dim"))
        throw Error("universal_checkpoint_info 'parameter_with_sub_params' holds an entry that is not "
                    "{patterns, shape, partition_dim}",
                    file);
    SubParams s;
    const Value* patterns = dictGet(e, "patterns");
    s.shapeNode = dictGet(e, "shape");
    const auto dim = asInt(dictGet(e, "partition_dim"));
    if (!dim || *dim < 0 || (s.shapeNode->kind != Kind::Tuple && s.shapeNode->kind != Kind::List) ||
        size_t(*dim) >= s.shapeNode->items.size())
        throw Error("universal_checkpoint_info 'parameter_with_sub_params': partition_dim is not a "
                    "dimension of its shape",
                    file);
    s.partitionDim = *dim;
    if (patterns->kind != Kind::List && patterns->kind != Kind::Tuple)
        throw Error("universal_checkpoint_info 'parameter_with_sub_params' patterns are not a list", file);
    for (const Value* p : patterns->items) {
        const auto text = asString(p);
        if (!text)
            throw Error("universal_checkpoint_info 'parameter_with_sub_params' holds a non-string pattern",
                        file);
        s.patterns.push_back(compiled(*text, file));
        r.all.insert(*text);
    }
    return s;
}

Rules readRules(const Value* info, const std::string& file)
{
    Rules r;
    if (!info) return r;
    if (info->kind != Kind::Dict) throw Error("universal_checkpoint_info is not a dict", file);
    for (const char* refused : {"affine_map", "autotp_unsupported_parameter_patterns"}) {
        const Value* v = dictGet(info, refused);
        if (v && !(v->kind == Kind::Dict && v->entries.empty()) && v->kind != Kind::None)
            throw Error(std::string("universal_checkpoint_info has '") + refused +
                            "' (AutoTP metadata): not converted to Universal yet",
                        file);
    }
    r.replicated = r.list(info, "tp_replicated_parameter_patterns", file);
    r.average = r.list(info, "parameter_to_average_patterns", file);
    r.row = r.list(info, "parameter_with_row_parallelism_patterns", file);
    r.vocab = r.list(info, "vocabulary_parameter_patterns", file);
    r.twoSub = r.list(info, "parameter_with_2_sub_params_cat_dim_0", file);
    if (const Value* sp = dictGet(info, "parameter_with_sub_params"); sp && sp->kind != Kind::None) {
        if (sp->kind != Kind::List && sp->kind != Kind::Tuple)
            throw Error("universal_checkpoint_info 'parameter_with_sub_params' is not a list", file);
        for (const Value* e : sp->items)
            r.subParams.push_back(subParamsEntry(e, r, file));
    }
    r.shardWidths = dictGet(info, "sub_param_shard_widths");
    r.version = torch::asFloat(dictGet(info, "universal_checkpoint_version"))
                    .value_or(double(asInt(dictGet(info, "universal_checkpoint_version")).value_or(0)));
    r.originalVocab = asInt(dictGet(info, "original_vocab_size"));
    if (!r.vocab.empty() && !r.originalVocab)
        throw Error("universal_checkpoint_info has vocabulary patterns but no original_vocab_size", file);
    return r;
}

// How merge_tp_slices merges one parameter, rule by rule: the first matching rule wins, as there.
class MergePlanner
{
public:
    MergePlanner(const Rules& rules, const std::string& name, const std::vector<std::vector<int64_t>>& shapes,
                 const std::string& file, TensorParallel& plan)
        : m_rules(rules), m_name(name), m_shapes(shapes), m_file(file), m_tp(shapes.size()), m_plan(plan)
    {
        m_plan.views = shapes;
    }

    void plan()
    {
        UniversalMergeKeys& keys = m_plan.keys;
        const auto [sub, subPattern] = m_rules.matchSub(m_name, keys); // matched first, as there
        if (m_rules.match(m_rules.replicated, m_name, m_file, keys))
            whole(TensorParallel::Mode::Replicated, "replicated");
        else if (m_rules.match(m_rules.average, m_name, m_file, keys))
            whole(TensorParallel::Mode::Average, "averaged");
        else if (m_rules.match(m_rules.twoSub, m_name, m_file, keys))
            twoSubParams();
        else if (sub >= 0)
            subParams(sub, *subPattern);
        else
            concatenated(m_rules.match(m_rules.row, m_name, m_file, keys) ? 1 : 0);
        if (m_plan.mode != TensorParallel::Mode::Gather) { // the slices whole, along a flat view
            for (auto& v : m_plan.views)
                v = {product(v, 0, v.size())};
            m_plan.dim = 0;
            m_plan.blocks = {{0, 0, m_plan.views[0][0]}};
        }
        if (m_rules.match(m_rules.vocab, m_name, m_file, keys)) {
            if (m_plan.shape.size() < 2)
                throw refuse("a vocabulary parameter with fewer than two dimensions");
            keys.vocab = true;
            m_plan.shape[0] =
                std::min(m_plan.shape[0], *m_rules.originalVocab); // param[:original_vocab_size, :]
        }
    }

private:
    Error refuse(const std::string& why) const
    {
        return Error("parameter '" + m_name + "': " + why + " (ds_to_universal cannot merge it either)",
                     m_file);
    }

    // Replicated or averaged: every slice has the parameter's whole shape.
    void whole(TensorParallel::Mode mode, const char* rule)
    {
        for (size_t t = 1; t < m_tp; ++t)
            if (m_shapes[t] != m_shapes[0])
                throw refuse(std::string("its tensor-parallel slices differ in shape but it is ") + rule);
        m_plan.mode = mode;
        m_plan.shape = m_shapes[0];
    }

    // torch.cat of the slices along `dim`: all other dimensions agree.
    void cat(size_t dim)
    {
        m_plan.dim = dim;
        m_plan.shape = m_shapes[0];
        if (m_tp == 1) return; // the slice as it is (also where torch.cat would refuse a 0-d one)
        const std::string cannot =
            "its tensor-parallel slices cannot be concatenated along dimension " + std::to_string(dim);
        for (size_t t = 0; t < m_tp; ++t) {
            if (m_shapes[t].size() != m_shapes[0].size() || m_shapes[t].size() <= dim) throw refuse(cannot);
            for (size_t d = 0; d < m_shapes[0].size(); ++d)
                if (d != dim && m_shapes[t][d] != m_shapes[0][d]) throw refuse(cannot);
        }
        m_plan.shape[dim] = 0;
        for (size_t t = 0; t < m_tp; ++t)
            m_plan.shape[dim] += m_shapes[t][dim];
    }

    // The default: each slice whole, one after another along dim 0 (1 for row parallelism).
    void concatenated(size_t dim)
    {
        cat(dim);
        for (size_t t = 0; t < m_tp && m_tp > 1; ++t)
            m_plan.blocks.push_back({t, 0, m_shapes[t][dim]});
        m_plan.keys.catDim = int64_t(dim);
    }

    // torch.chunk(slice, 2, dim=0) of each slice: first halves, then second halves.
    void twoSubParams()
    {
        cat(0);
        for (int half = 0; half < 2 && m_tp > 1; ++half)
            for (size_t t = 0; t < m_tp; ++t) {
                const int64_t n = m_shapes[t][0], c = (n + 1) / 2;
                if (n < 2) throw refuse("a tensor-parallel slice too small for two sub-parameters");
                m_plan.blocks.push_back({t, half ? c : 0, half ? n - c : c});
            }
        m_plan.keys.catDim = 0;
        m_plan.keys.subParams = 2;
    }

    std::vector<int64_t> intsOf(const Value* v) const
    {
        std::vector<int64_t> out;
        if (!v || (v->kind != Kind::Tuple && v->kind != Kind::List))
            throw refuse("its sub-parameter metadata is not a list of sizes");
        for (const Value* x : v->items) {
            const auto i = asInt(x);
            if (!i) throw refuse("its sub-parameter metadata is not a list of sizes");
            out.push_back(*i);
        }
        return out;
    }

    // Each sub-parameter's size and its width on each TP rank; `normalized`: the sizes replace
    // the count the save gave in the shape written back.
    struct SubSizes
    {
        std::vector<int64_t> sizes;
        std::vector<std::vector<int64_t>> widths; // per sub-parameter, per TP rank
        bool normalized = false;
    };

    // Version >= 0.4: the sizes, and the widths sub_param_shard_widths records.
    SubSizes recordedWidths(const SubParams& sub, const Pattern& pattern) const
    {
        SubSizes z{intsOf(sub.shapeNode->items[size_t(sub.partitionDim)]), {}, false};
        const Value* w = dictGet(m_rules.shardWidths, pattern.text);
        if (!w)
            throw refuse(
                "universal checkpoint version >= 0.4 records no sub_param_shard_widths for its pattern '" +
                pattern.text + "'");
        if (w->kind != Kind::List && w->kind != Kind::Tuple)
            throw refuse("sub_param_shard_widths is not a list");
        for (const Value* x : w->items)
            z.widths.push_back(intsOf(x));
        return z;
    }

    // Older versions: sizes (or a count dividing the partition dimension), split evenly.
    SubSizes evenWidths(const SubParams& sub) const
    {
        const size_t pd = size_t(sub.partitionDim);
        const Value* spec = sub.shapeNode->items[pd];
        SubSizes z;
        if (spec->kind == Kind::Tuple) {
            z.sizes = intsOf(spec);
        } else {
            const auto count = asInt(spec);
            if (!count) throw refuse("its sub-parameter shape holds neither a count nor sizes");
            int64_t full = 0;
            for (const auto& s : m_shapes) {
                if (s.size() <= pd) throw refuse("its slices have no partition dimension");
                full += s[pd];
            }
            if (*count <= 0 || full % *count)
                throw refuse("its sub-parameter count does not divide the partition dimension");
            z.sizes.assign(size_t(*count), full / *count);
            z.normalized = true; // tuple(shape) with the sizes in place
        }
        for (int64_t s : z.sizes)
            if (s % int64_t(m_tp))
                throw refuse("a sub-parameter size is not divisible by the tensor-parallel degree and the "
                             "universal checkpoint version predates sub_param_shard_widths");
        for (int64_t s : z.sizes)
            z.widths.push_back(std::vector<int64_t>(m_tp, s / int64_t(m_tp)));
        return z;
    }

    // The logical shape: tuples summed, the partition dimension the sizes' sum, one placeholder
    // resolved from the element count.
    std::vector<int64_t> logicalShape(const SubParams& sub, const std::vector<int64_t>& sizes) const
    {
        std::vector<int64_t> logical;
        for (const Value* d : sub.shapeNode->items) {
            if (d->kind == Kind::Tuple) {
                int64_t sum = 0;
                for (int64_t x : intsOf(d))
                    sum += x;
                logical.push_back(sum);
            } else if (const auto i = asInt(d)) {
                logical.push_back(*i);
            } else {
                throw refuse("its sub-parameter shape holds something other than sizes");
            }
        }
        const size_t pd = size_t(sub.partitionDim);
        logical[pd] = 0;
        for (int64_t s : sizes)
            logical[pd] += s;
        int64_t total = 0;
        for (const auto& s : m_shapes)
            total += product(s, 0, s.size());
        size_t holes = 0, hole = 0;
        int64_t known = 1;
        for (size_t d = 0; d < logical.size(); ++d)
            if (logical[d] < 0)
                ++holes, hole = d;
            else
                known *= logical[d];
        if (holes > 1) throw refuse("its sub-parameter shape has more than one placeholder");
        if (holes) {
            if (known <= 0 || total % known)
                throw refuse("its sub-parameter shape does not fit its elements");
            logical[hole] = total / known;
        }
        return logical;
    }

    // The widths agree with the sizes and with what each rank holds.
    void checkWidths(const SubSizes& z) const
    {
        if (z.widths.size() != z.sizes.size())
            throw refuse("its shard widths do not match its sub-parameters");
        for (size_t k = 0; k < z.sizes.size(); ++k) {
            int64_t sum = 0;
            for (int64_t w : z.widths[k])
                sum += w;
            if (z.widths[k].size() != m_tp || sum != z.sizes[k])
                throw refuse("its shard widths do not add up to its sub-parameter sizes");
        }
    }

    // parameter_with_sub_params: each TP rank holds its width of every sub-parameter, one after
    // another along the partition dimension; the merged tensor takes sub-parameter by sub-parameter.
    void subParams(int entry, const Pattern& pattern)
    {
        const SubParams& sub = m_rules.subParams[size_t(entry)];
        const SubSizes z = m_rules.version >= 0.4 ? recordedWidths(sub, pattern) : evenWidths(sub);
        checkWidths(z);
        const size_t pd = size_t(sub.partitionDim);
        const std::vector<int64_t> logical = logicalShape(sub, z.sizes);
        for (size_t t = 0; t < m_tp; ++t) {
            std::vector<int64_t> rank = logical;
            rank[pd] = 0;
            for (const auto& w : z.widths)
                rank[pd] += w[t];
            if (product(rank, 0, rank.size()) != product(m_shapes[t], 0, m_shapes[t].size()))
                throw refuse("tensor-parallel rank " + std::to_string(t) +
                             " holds a different number of elements than its shard widths describe");
            m_plan.views[t] = rank;
        }
        std::vector<int64_t> offsets(m_tp, 0);
        for (const auto& w : z.widths)
            for (size_t t = 0; t < m_tp; ++t) {
                m_plan.blocks.push_back({t, offsets[t], w[t]});
                offsets[t] += w[t];
            }
        m_plan.dim = pd;
        m_plan.shape = logical;
        m_plan.keys.subParamEntry = entry;
        if (z.normalized) m_plan.keys.subParamSizes = z.sizes;
    }

    const Rules& m_rules;
    const std::string& m_name;
    const std::vector<std::vector<int64_t>>& m_shapes;
    const std::string& m_file;
    const size_t m_tp;
    TensorParallel& m_plan;
};

int degreeOf(const Tag& tag)
{
    int degree = 1;
    for (const RankFile& f : tag.files)
        if (f.role == FileRole::ModelStates || f.role == FileRole::OptimStates)
            degree = std::max(degree, f.mpRank + 1);
    return degree;
}

// The tag as tensor-parallel rank `t` holds it: its model and optimizer files, read as mp rank 0
// is read (param_shapes of that rank, its partitions), through the same FileSet.
Tag rankTag(const Tag& tag, int t, FileSet& files)
{
    std::vector<RankFile> mine;
    for (const RankFile& f : tag.files)
        if ((f.role == FileRole::ModelStates || f.role == FileRole::OptimStates) && f.mpRank == t) {
            mine.push_back(f);
            mine.back().mpRank = 0;
        }
    if (std::none_of(mine.begin(), mine.end(),
                     [](const RankFile& f) { return f.role == FileRole::ModelStates; }))
        fail("tensor-parallel rank " + std::to_string(t) + " of " + std::to_string(degreeOf(tag)) +
                 " has no model states file",
             tag.dir);
    return openDeepSpeedRank(std::move(mine), tag.dir, tag.name, tag.latest, files);
}

// ZeRO partitions saved alike by every tensor-parallel rank.
void checkRanksAgree(const Tag& tag, const std::deque<Tag>& others)
{
    for (size_t i = 0; i < others.size(); ++i) {
        const Tag& other = others[i];
        if (!other.deepspeed || other.deepspeed->zeroStage != tag.deepspeed->zeroStage ||
            other.deepspeed->optimizer != tag.deepspeed->optimizer || other.worldSize != tag.worldSize)
            throw Error("tensor-parallel rank " + std::to_string(i + 1) +
                            " was saved by another optimizer or data-parallel world size than rank 0",
                        other.files.empty() ? tag.dir : other.files.front().path);
    }
}

bool merged(const Parameter& p)
{
    return p.kind == Parameter::Kind::Trainable && p.tiedTo.empty();
}

// Each rank's trainable parameters by name: every rank holds the same ones.
std::vector<std::map<std::string, Parameter*>> partsByName(const Tag& tag, std::deque<Tag>& others)
{
    std::set<std::string> names;
    for (const Parameter& p : tag.params)
        if (merged(p)) names.insert(p.name);
    std::vector<std::map<std::string, Parameter*>> byName;
    for (size_t i = 0; i < others.size(); ++i) {
        auto& mine = byName.emplace_back();
        for (Parameter& p : others[i].params)
            if (merged(p)) {
                if (!names.count(p.name))
                    throw Error(
                        "parameter '" + p.name + "' is in the param_shapes of mp rank " +
                            std::to_string(i + 1) +
                            " but not of mp rank 0: the tensor-parallel ranks do not hold the same model",
                        others[i].files.front().path);
                mine[p.name] = &p;
            }
    }
    for (size_t i = 0; i < byName.size(); ++i)
        for (const Parameter& p : tag.params)
            if (merged(p) && !byName[i].count(p.name))
                throw Error(
                    "parameter '" + p.name + "' is in the param_shapes of mp rank 0 but not of mp rank " +
                        std::to_string(i + 1) + ": the tensor-parallel ranks do not hold the same model",
                    others[i].files.front().path);
    return byName;
}

// The model file whose universal_checkpoint_info speaks for the save: the first model file of
// mp rank 0 (mp_rank_00_model_states.pt; ZeRO-3's rank 0 file).
const RankFile& firstModelFile(const Tag& tag)
{
    for (const RankFile& f : tag.files)
        if (f.role == FileRole::ModelStates && f.mpRank == 0) return f;
    fail("no *_model_states.pt file in the tag folder", tag.dir);
}

// Every trainable parameter's parts and merge; a parameter the rules cannot merge says why.
void planParameters(Tag& tag, std::deque<Tag>& others, const Rules& rules, const std::string& model0)
{
    const auto byName = partsByName(tag, others);
    for (Parameter& p : tag.params) {
        if (!merged(p)) continue;
        auto tp = std::make_shared<TensorParallel>();
        std::vector<std::vector<int64_t>> shapes{p.shape};
        for (const auto& rank : byName) {
            Parameter& part = *rank.at(p.name);
            shapes.push_back(part.shape);
            tp->parts.push_back(std::move(part));
        }
        try {
            MergePlanner(rules, p.name, shapes, model0, *tp).plan();
        } catch (const Error& e) {
            tp->unmergeable = e;
        }
        p.tensorParallel = std::move(tp);
    }
}

} // namespace

void stateTensorParallel(Tag& tag, FileSet& files)
{
    TensorParallelSave& save = tag.deepspeed->tensorParallel.emplace();
    save.degree = degreeOf(tag);
    // ZeRO-3 on one rank: ds_to_universal concatenates the fragments flat and reads no rules.
    if (tag.deepspeed->zeroStage == 3 && save.degree == 1) return;
    try {
        std::deque<Tag> others;
        for (int t = 1; t < save.degree; ++t)
            others.push_back(rankTag(tag, t, files));
        checkRanksAgree(tag, others);
        const std::string model0 = firstModelFile(tag).path;
        const auto m0 = files.get(model0);
        const Value* info = m0->torch() ? dictGet(m0->torch()->root(), "universal_checkpoint_info") : nullptr;
        if (info && info->kind == Kind::None) info = nullptr;
        save.rulesSaved = info != nullptr;
        const Rules rules = readRules(info, model0);
        save.patterns.assign(rules.all.begin(), rules.all.end());
        planParameters(tag, others, rules, model0);
    } catch (const Error& e) {
        save.error = e;
    }
}

} // namespace ckpt::layout::ds
