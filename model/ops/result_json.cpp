// Each result's `--json` document: what `ckpt` prints and scripts read (../shared/DESIGN.md,
// the ckpt contract), written from the fields each result describes (ops/describe.h). Defined
// here, in one translation unit, so the result headers need only nlohmann's forward declarations.
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/describe_json.h"
#include "ops/export.h"
#include "ops/scan.h"
#include "ops/slim.h"
#include "ops/universal.h"

namespace ckpt::ops {

nlohmann::ordered_json toJson(const StatsResult& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const DiffResult& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const ConsolidateResult& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const ExportResult& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const UniversalResult& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const SlimResult& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const ScanReport& r)
{
    return describedJson(r);
}

nlohmann::ordered_json toJson(const FolderScan& r)
{
    return describedJson(r);
}

} // namespace ckpt::ops
