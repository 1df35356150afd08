// checkpoint_studio._engine: the C++ engine as Python sees it. Opened checkpoints and their
// tensor sets are bound here; operations in operations.cpp. The Python package
// (checkpoint_studio/) builds the public API on these: tensors, state dicts, DeepSpeed's
// functions, typed results.
#include "bindings.h"
#include "job.h"
#include "results.h"
#include "tensors.h"

#include "io/error.h"
#include "layout/family.h"
#include "layout/file_set.h"
#include "ops/inspect.h"
#include "safetensors/safetensors_file.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace ckpt::python {

namespace {

PyObject* g_checkpointError = nullptr;
PyObject* g_cancelled = nullptr;

// ckpt::Error becomes CheckpointError with the engine's one line, and the file as an attribute.
void translate(const std::exception_ptr& p, void*)
{
    try {
        std::rethrow_exception(p);
    } catch (const Error& e) {
        PyObject* value = PyObject_CallFunction(g_checkpointError, "s", e.what());
        if (!value) return;
        PyObject* file = PyUnicode_FromString(e.file().c_str());
        PyObject* message = PyUnicode_FromString(e.message().c_str());
        if (file) PyObject_SetAttrString(value, "file", file);
        if (message) PyObject_SetAttrString(value, "message", message);
        Py_XDECREF(file);
        Py_XDECREF(message);
        PyErr_SetObject(g_checkpointError, value);
        Py_DECREF(value);
    } catch (const Cancelled& e) {
        PyErr_SetString(g_cancelled, "cancelled");
    }
}

// What the window's overview shows of a tag (Python's Tag.info): a copy, so that it outlives the
// checkpoint it came from. It starts as `ckpt inspect --json` lists a tag.
struct TagInfo
{
    ops::TagHeader header;
    std::string dir;
    ops::Keyed<std::string> facts; // label -> value, in the family's order
    size_t parameters = 0;
    std::vector<std::string> files; // the tag's file names
    std::vector<std::string> warnings;
    std::string unreadable, notExportable;
    bool convertsToUniversal = false;

    template <class V> static void describe(V& v)
    {
        ops::describeFlat(v, &TagInfo::header);
        v("dir", &TagInfo::dir);
        v("facts", &TagInfo::facts);
        v("parameters", &TagInfo::parameters);
        v("files", &TagInfo::files);
        v("warnings", &TagInfo::warnings);
        v("unreadable", &TagInfo::unreadable);
        v("not_exportable", &TagInfo::notExportable);
        v("converts_to_universal", &TagInfo::convertsToUniversal);
    }
};

TagInfo tagInfo(const layout::Tag& t)
{
    TagInfo i;
    i.header = ops::tagHeader(t);
    i.dir = t.dir;
    for (const auto& f : t.facts)
        i.facts.items.emplace_back(f.label, f.value);
    i.parameters = t.params.size();
    for (const auto& f : t.files)
        i.files.push_back(f.name);
    i.warnings = t.warnings;
    i.unreadable = t.unreadable;
    i.notExportable = t.notExportable;
    i.convertsToUniversal = t.convertsToUniversal;
    return i;
}

// `tag` nullopt: every tag, leniently (a damaged tag keeps its error); else that tag (empty:
// latest or the only one), strictly.
std::shared_ptr<Opened> openPath(const std::string& path, const std::optional<std::string>& tag,
                                 nb::object poll)
{
    auto opened = runJob<std::shared_ptr<const layout::OpenedCheckpoint>>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            layout::OpenObserver observer;
            observer.progress = [&](uint64_t done, uint64_t total, const std::string& file) {
                io::Progress p;
                p.stage = "Loading checkpoint shards: " + file;
                p.doneBytes = done;
                p.totalBytes = total;
                p.permille = total ? int(done * 1000 / total) : 0;
                sink(p);
            };
            observer.cancelled = [&] { return cancel.cancelled(); };
            return tag ? layout::openCheckpointTag(path, *tag, observer)
                       : layout::openCheckpoint(path, observer);
        });
    return std::make_shared<Opened>(Opened{std::move(opened)});
}

nb::object tensorInfo(const Tensors& ts, size_t i)
{
    const ops::SourceTensor& raw = ts.set().tensors.at(i);
    const ops::SourceTensor& t = ts.at(i);
    return nb::make_tuple(raw.tensor.name, std::string(torch::name(t.tensor.dtype)), t.tensor.shape,
                          t.tensor.nbytes, raw.aliasOf, ts.maybeContiguous(i));
}

// Tensor i's bytes as a writable uint8 numpy array over a private map of its file (the Python
// side views it as the tensor's dtype and shape), or None when they must be copied.
nb::object mappedArray(Tensors& ts, size_t i)
{
    std::shared_ptr<io::PrivateMap> owner;
    uint8_t* data = ts.mapped(i, owner);
    if (!data) return nb::none();
    auto* keep = new std::shared_ptr<io::PrivateMap>(std::move(owner));
    nb::capsule capsule(keep,
                        [](void* p) noexcept { delete static_cast<std::shared_ptr<io::PrivateMap>*>(p); });
    const size_t n = size_t(ts.at(i).tensor.nbytes);
    return nb::cast(nb::ndarray<nb::numpy, uint8_t, nb::ndim<1>>(data, {n}, capsule));
}

void bindTensors(nb::module_& m)
{
    nb::class_<Tensors>(m, "Tensors")
        .def("__len__", &Tensors::size)
        .def("info", &tensorInfo, "index"_a, "(name, dtype, shape, nbytes, alias_of, in_place)")
        .def("index", &Tensors::indexOf, "name"_a)
        .def(
            "fill",
            [](const Tensors& ts, size_t i, uintptr_t address, uint64_t offset, uint64_t count) {
                nb::gil_scoped_release unlocked;
                ts.fill(i, offset, count, reinterpret_cast<uint8_t*>(address));
            },
            "index"_a, "address"_a, "offset"_a, "count"_a)
        .def("mapped", &mappedArray, "index"_a)
        .def_prop_ro("label", [](const Tensors& ts) { return ts.set().label; })
        .def_prop_ro("tag", [](const Tensors& ts) { return ts.set().tag; })
        .def_prop_ro("skipped", [](const Tensors& ts) { return ts.set().skipped; })
        .def_prop_ro("warnings", [](const Tensors& ts) { return ts.set().warnings; });
}

std::shared_ptr<Tensors> makeTensors(const Opened& o, const std::string& tag, const std::string& mode,
                                     std::optional<std::string> dtype, bool excludeFrozen, bool all,
                                     std::vector<std::string> ignore, std::string param)
{
    SetRequest r;
    r.tag = tag;
    r.mode = mode;
    r.dtype = dtypeOf(dtype);
    r.excludeFrozen = excludeFrozen;
    r.all = all;
    r.ignore = std::move(ignore);
    r.param = std::move(param);
    const layout::OpenedTag in = o.tag(tag);
    nb::gil_scoped_release unlocked;
    return std::make_shared<Tensors>(in, r);
}

// A checkpoint given as one safetensors file: its header's "__metadata__" (safe_open's
// metadata()); None for any other checkpoint or a file without one.
std::optional<std::map<std::string, std::string>> safetensorsMetadata(const Opened& o)
{
    const layout::Checkpoint& model = o.checkpoint->model;
    if (!model.singleFile || model.tags.empty() || model.tags.front().files.empty()) return std::nullopt;
    const auto file = o.checkpoint->files->get(model.tags.front().files.front().path);
    const safetensors::SafetensorsFile* st = file ? file->safetensors() : nullptr;
    if (!st || st->metadata().empty()) return std::nullopt;
    return st->metadata();
}

void bindCheckpoint(nb::module_& m)
{
    bindDescribed<TagInfo>(m, "TagInfo");
    nb::class_<Opened>(m, "Checkpoint")
        .def_prop_ro("root", [](const Opened& o) { return o.checkpoint->model.root; })
        .def_prop_ro("path", [](const Opened& o) { return o.checkpoint->model.opened; })
        .def_prop_ro("family", [](const Opened& o) { return o.checkpoint->model.family; })
        .def_prop_ro("family_name", [](const Opened& o) { return o.checkpoint->model.familyName; })
        .def_prop_ro("single_file", [](const Opened& o) { return o.checkpoint->model.singleFile; })
        .def_prop_ro("warnings", [](const Opened& o) { return o.checkpoint->model.warnings; })
        .def_prop_ro("tags",
                     [](const Opened& o) {
                         std::vector<std::string> names;
                         for (const auto& t : o.checkpoint->model.tags)
                             names.push_back(t.name);
                         return names;
                     })
        .def_prop_ro("latest",
                     [](const Opened& o) -> std::optional<std::string> {
                         const layout::Tag* t = o.checkpoint->model.latest();
                         return t ? std::optional<std::string>(t->name) : std::nullopt;
                     })
        .def(
            "choose", [](const Opened& o, const std::string& name) { return o.tag(name)->name; }, "name"_a)
        .def(
            "tag_info", [](const Opened& o, const std::string& name) { return tagInfo(*o.tag(name)); },
            "name"_a)
        .def(
            "optimizer_parameters",
            [](const Opened& o, const std::string& name) { return optimizerParameters(*o.tag(name)); },
            "name"_a)
        .def("safetensors_metadata", &safetensorsMetadata)
        .def("tensors", &makeTensors, "tag"_a, "mode"_a = "model", "dtype"_a = nb::none(),
             "exclude_frozen"_a = false, "all"_a = false, "ignore"_a = std::vector<std::string>{},
             "param"_a = "");
    m.def("open", &openPath, "path"_a, "tag"_a = nb::none(), "poll"_a = nb::none(),
          "Opens a checkpoint through the family registry: every tag leniently, or one tag strictly.");
}

} // namespace

std::optional<torch::DType> dtypeOf(const std::optional<std::string>& name)
{
    if (!name || name->empty()) return std::nullopt;
    const auto d = torch::fromName(*name);
    if (!d) throw Error("unknown dtype '" + *name + "'");
    return d;
}

layout::OpenedTag Opened::tag(const std::string& name) const
{
    return layout::tagOf(checkpoint, name);
}

} // namespace ckpt::python

NB_MODULE(_engine, m)
{
    using namespace ckpt::python;
    g_checkpointError = PyErr_NewException("checkpoint_studio.CheckpointError", PyExc_ValueError, nullptr);
    g_cancelled = PyErr_NewException("checkpoint_studio.Cancelled", PyExc_Exception, nullptr);
    m.attr("CheckpointError") = nb::handle(g_checkpointError);
    m.attr("Cancelled") = nb::handle(g_cancelled);
    nb::register_exception_translator(&translate);
    bindTensors(m);
    bindCheckpoint(m);
    bindOperations(m);
}
