// Every result class the operations return, each bound from its one description, plus what
// Python code of the package has always had on top: a tensor by name, a comparison's verdict.
#include "results.h"

#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/scan.h"
#include "ops/slim.h"
#include "ops/universal.h"
#include "ops/verify.h"

#include <nanobind/stl/map.h>

#include <algorithm>
#include <map>

namespace ckpt::python {

std::string describedRepr(nb::handle self)
{
    std::string s = nb::cast<std::string>(self.type().attr("__name__")) + "(";
    const char* sep = "";
    for (nb::handle key : nb::tuple(self.attr("_fields"))) {
        s += sep + nb::cast<std::string>(key) + "=" + nb::cast<std::string>(nb::repr(self.attr(key)));
        sep = ", ";
    }
    return s + ")";
}

namespace {

// The tensor of that name among those the result lists (StatsResult's, DiffResult's compared
// ones: `listed`); KeyError when there is none.
template <class Tensor, class Listed>
Tensor byName(const std::vector<Tensor>& tensors, const std::string& name, Listed listed)
{
    const auto it = std::find_if(tensors.begin(), tensors.end(),
                                 [&](const Tensor& t) { return t.name == name && listed(t); });
    if (it == tensors.end()) throw nb::key_error(name.c_str());
    return *it;
}

// How many tensors of the comparison have each status ("identical", "changed", "only_a", ...).
std::map<std::string, size_t> statusCounts(const ops::DiffResult& r)
{
    std::map<std::string, size_t> counts;
    for (const auto& t : r.tensors)
        ++counts[ops::statusName(t.status)];
    return counts;
}

bool allIdentical(const ops::DiffResult& r)
{
    return std::all_of(r.tensors.begin(), r.tensors.end(),
                       [](const ops::TensorDiff& t) { return t.status == ops::DiffStatus::Identical; });
}

} // namespace

void bindResults(nb::module_& m)
{
    bindDescribed<ops::ConsolidateResult>(m, "ExportResult");
    bindDescribed<ops::UniversalResult>(m, "UniversalResult");
    bindDescribed<ops::SlimFile>(m, "SlimFile");
    bindDescribed<ops::SlimResult>(m, "SlimResult");
    bindDescribed<ops::ScanFinding>(m, "ScanFinding");
    bindDescribed<ops::ScanReport>(m, "ScanReport");
    bindDescribed<ops::FolderScan>(m, "FolderScan");
    bindDescribed<ops::TensorDigest>(m, "TensorDigest");
    bindDescribed<ops::FileVerdict>(m, "FileVerdict");
    bindDescribed<ops::VerifyReport>(m, "VerifyReport");
    bindDescribed<gpu::Histogram>(m, "Histogram");
    bindDescribed<ops::TensorStats>(m, "TensorStats");
    bindDescribed<ops::StatsResult>(m, "StatsResult")
        .def("__getitem__", [](const ops::StatsResult& r, const std::string& name) {
            return byName(r.tensors, name, [](const ops::TensorStats&) { return true; });
        });
    bindDescribed<ops::TensorDiff>(m, "TensorDiff");
    bindDescribed<ops::DiffShape>(m, "DiffShape");
    bindDescribed<ops::DiffChange>(m, "DiffChange");
    bindDescribed<ops::DiffSummary>(m, "DiffSummary");
    bindDescribed<ops::DiffResult>(m, "DiffResult")
        .def("__getitem__",
             [](const ops::DiffResult& r, const std::string& name) {
                 return byName(r.tensors, name, [](const ops::TensorDiff& t) { return t.compared; });
             })
        .def_prop_ro("identical", &allIdentical, "Every tensor of both sides is identical.")
        .def("counts", &statusCounts, "{status: number of tensors}");
}

} // namespace ckpt::python
