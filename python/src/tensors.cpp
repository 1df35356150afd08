#include "tensors.h"

#include "io/error.h"
#include "ops/analyze.h"

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

namespace ckpt::python {

namespace {

using Kind = layout::Parameter::Kind;

const layout::Parameter* findParam(const layout::Tag& tag, const std::string& name)
{
    for (const auto& p : tag.params)
        if (p.name == name) return &p;
    return nullptr;
}

// A tag holding only `params` (tagTensors reads nothing else of a tag but its name and folder).
layout::Tag subTag(const layout::Tag& tag, std::vector<layout::Parameter> params,
                   std::optional<torch::DType> exportDtype)
{
    layout::Tag t;
    t.name = tag.name;
    t.dir = tag.dir;
    t.params = std::move(params);
    t.exportDtype = exportDtype;
    return t;
}

void adopt(ops::TensorSet& into, ops::TensorSet&& from)
{
    into.keepAlive = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
        std::move(into.keepAlive), std::move(from.keepAlive));
}

// The family's own in-memory dictionary (DeepSpeed's get_fp32_state_dict_from_zero_checkpoint):
// the names, order and dtype `ckpt export` gives, except where the family says its loader gives
// frozen parameters otherwise (as stored, or none at all).
ops::TensorSet deepspeedSet(const layout::OpenedTag& in, ops::SourceOptions options)
{
    const layout::Tag& tag = *in;
    using Frozen = layout::Tag::FrozenInMemory;
    options.excludeFrozen = options.excludeFrozen || tag.frozenInMemory == Frozen::Absent;
    ops::TensorSet set = ops::tagTensors(in.checkpoint, tag, options);
    if (tag.frozenInMemory != Frozen::AsStored || options.excludeFrozen) return set;
    std::vector<layout::Parameter> frozen;
    for (const auto& p : tag.params)
        if (p.kind == Kind::Frozen && p.tiedTo.empty()) frozen.push_back(p);
    if (frozen.empty()) return set;
    ops::SourceOptions asStored = options;
    asStored.dtype.reset();
    ops::TensorSet lp =
        ops::tagTensors(in.checkpoint, subTag(tag, std::move(frozen), std::nullopt), asStored);
    for (auto& t : lp.tensors)
        for (auto& s : set.tensors)
            if (s.tensor.name == t.tensor.name) s = std::move(t);
    adopt(set, std::move(lp));
    return set;
}

// One parameter's fp32 master, exp_avg, exp_avg_sq (and step), the names of ds_to_universal's
// files for it.
ops::TensorSet optimizerSet(const layout::OpenedTag& in, const ops::SourceOptions& options,
                            const std::string& name)
{
    const layout::Tag& tag = *in;
    const layout::Parameter* p = findParam(tag, name);
    if (!p) throw Error("no parameter '" + name + "' in tag " + tag.name, tag.dir);
    if (!p->tiedTo.empty()) p = findParam(tag, p->tiedTo);
    if (!p) throw Error("'" + name + "' is tied to a parameter the tag does not have", tag.dir);
    // The optimizer's own fp32 copy where the family states one (Megatron's fp32_param, or param
    // in the distributed optimizer's formats), else the weights read as fp32 (what ZeRO's
    // consolidated fp32 masters are).
    layout::Parameter master = *p;
    for (const char* own : {"fp32_param", "param"})
        if (const layout::OptimizerState* st = p->stateNamed(own);
            st && st->elementwise(p->shape) && st->complete()) {
            master = layout::stateTensor(*p, *st, "fp32");
            break;
        }
    master.name = "fp32";
    ops::SourceOptions o = options;
    o.dtype = torch::DType::Float32;
    ops::TensorSet set = ops::tagTensors(in.checkpoint, subTag(tag, {master}, torch::DType::Float32), o);
    // Its state as the family states it, under the optimizer's names: the moments sliced as
    // the parameter, then the step (a tensor of its own).
    std::vector<layout::Parameter> stored;
    for (auto& m : layout::momentTensors(tag))
        if (m.name == p->name + "/exp_avg" || m.name == p->name + "/exp_avg_sq") {
            m.name = m.name.substr(p->name.size() + 1);
            stored.push_back(std::move(m));
        }
    if (stored.empty()) throw Error("no optimizer moments for '" + name + "' in tag " + tag.name, tag.dir);
    if (const layout::OptimizerState* st = p->stateNamed("step"); st && st->complete())
        stored.push_back(layout::stateTensor(*p, *st, "step"));
    o.dtype.reset();
    ops::TensorSet moments = ops::tagTensors(in.checkpoint, subTag(tag, std::move(stored), std::nullopt), o);
    for (auto& t : moments.tensors)
        set.tensors.push_back(std::move(t));
    adopt(set, std::move(moments));
    return set;
}

// Fresh memory is faulted in a page at a time as the copy first writes it, and on a virtual
// machine each fault costs more than copying the page (bench/python.sh: about 0.8 s a GB). One
// MADV_POPULATE_WRITE per range makes the kernel populate it in a batch first. Where the kernel
// predates it (5.14) the call fails and the copy faults the pages in as before.
void populate(uint8_t* dst, uint64_t count)
{
#ifndef MADV_POPULATE_WRITE
    constexpr int MADV_POPULATE_WRITE = 23;
#endif
    static const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(dst) + page - 1) / page * page;
    const uintptr_t end = (reinterpret_cast<uintptr_t>(dst) + count) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

} // namespace

Tensors::Tensors(const layout::OpenedTag& in, const SetRequest& request)
{
    ops::SourceOptions o;
    o.tag = in->name;
    o.dtype = request.dtype;
    o.excludeFrozen = request.excludeFrozen;
    o.all = request.all;
    o.ignore = request.ignore;
    if (request.mode == "deepspeed")
        m_set = deepspeedSet(in, o);
    else if (request.mode == "optimizer")
        m_set = optimizerSet(in, o, request.param);
    else
        m_set = ops::tagTensors(in.checkpoint, *in, o);
    for (size_t i = 0; i < m_set.tensors.size(); ++i)
        m_index.emplace(m_set.tensors[i].tensor.name, i);
}

const ops::SourceTensor& Tensors::at(size_t i) const
{
    if (i >= m_set.tensors.size()) throw Error("tensor index out of range");
    const ops::SourceTensor& t = m_set.tensors[i];
    if (!t.aliasOf.empty()) {
        const long target = indexOf(t.aliasOf);
        if (target < 0)
            throw Error("'" + t.tensor.name + "' is tied to '" + t.aliasOf + "', which is not read");
        return m_set.tensors[size_t(target)];
    }
    return t;
}

long Tensors::indexOf(const std::string& name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? -1 : long(it->second);
}

void Tensors::fill(size_t i, uint64_t offset, uint64_t count, uint8_t* dst) const
{
    const ops::SourceTensor& t = at(i);
    if (offset + count > t.tensor.nbytes) throw Error("byte range outside tensor '" + t.tensor.name + "'");
    if (!count) return;
    if (const uint8_t* in = contiguous(i)) {
        populate(dst, count);
        std::copy_n(in + offset, count, dst);
        return;
    }
    // A large tensor in pieces of whole elements on every core: fill() is thread-safe (the
    // writers' workers call it concurrently).
    const uint64_t element = std::max<uint32_t>(1, torch::elementSize(t.tensor.dtype));
    const uint64_t piece = (16ull << 20) / element * element;
    const unsigned workers =
        std::min<uint64_t>(std::max(1u, std::thread::hardware_concurrency()), (count + piece - 1) / piece);
    if (workers <= 1) {
        populate(dst, count);
        return t.tensor.fill(offset, count, dst);
    }
    std::atomic<uint64_t> next{0};
    std::exception_ptr failure;
    std::mutex failed;
    auto work = [&] {
        for (uint64_t at; (at = next.fetch_add(piece)) < count;) {
            try {
                populate(dst + at, std::min(piece, count - at));
                t.tensor.fill(offset + at, std::min(piece, count - at), dst + at);
            } catch (...) {
                std::lock_guard<std::mutex> l(failed);
                if (!failure) failure = std::current_exception();
            }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w)
        pool.emplace_back(work);
    work();
    for (auto& th : pool)
        th.join();
    if (failure) std::rethrow_exception(failure);
}

const uint8_t* Tensors::contiguous(size_t i) const
{
    const ops::SourceTensor& t = at(i);
    if (t.direct || !t.tensor.nbytes) return t.direct;
    if (!t.oneRun || !t.inPlace) return nullptr;
    uint64_t run = 0;
    const uint8_t* p = t.inPlace(0, &run);
    const uint64_t elements = t.tensor.nbytes / std::max<uint32_t>(1, torch::elementSize(t.tensor.dtype));
    return p && run >= elements ? p : nullptr;
}

bool Tensors::maybeContiguous(size_t i) const
{
    const ops::SourceTensor& t = at(i);
    return t.direct || (t.oneRun && t.inPlace);
}

uint8_t* Tensors::mapped(size_t i, std::shared_ptr<io::PrivateMap>& owner)
{
    const ops::SourceTensor& t = at(i);
    const uint8_t* in = t.tensor.nbytes ? contiguous(i) : nullptr;
    if (!in) return nullptr;
    std::lock_guard<std::mutex> lock(m_mutex);
    const auto where = m_maps.locate(in);
    if (!where) return nullptr; // bytes in memory (an archive member inflated): a copy it is
    auto& kept = m_private[where->path];
    if (!kept) kept = io::PrivateMap::open(*where);
    if (!kept || where->offset + t.tensor.nbytes > kept->size()) return nullptr;
    owner = kept;
    return kept->data() + where->offset;
}

std::vector<std::string> optimizerParameters(const layout::Tag& tag)
{
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& m : layout::momentTensors(tag)) {
        const std::string name = m.name.substr(0, m.name.rfind('/'));
        if (seen.insert(name).second) out.push_back(name);
    }
    return out;
}

} // namespace ckpt::python
