// One function per `ckpt` subcommand; each returns the process exit code (0 ok, 1 error,
// 3 scan found danger). Errors escape as ckpt::Error and main() prints them as one line.
#pragma once

#include "compute_backend.h"
#include "ops/job.h"
#include "ops/sharded.h"

#include <memory>

#include <string>

namespace ckpt::cli {

struct InspectArgs
{
    std::string path;
    std::string tag;
    bool json = false;
    bool entries = false;
};
// A job split across processes (ops/sharded.h): `--shard I/N|auto`, `--shards N`, `--finalize`,
// `--rehash`, `--wait SECONDS`.
struct ShardArgs
{
    std::string shard;
    int shards = 0;
    bool finalize = false;
    bool rehash = false;
    double wait = 3600;
};
struct ExportArgs
{
    std::string input;
    std::string output;
    std::string tag;
    std::string format = "safetensors";
    std::string maxShardSize = "5GB";
    std::string dtype; // empty: the family's default (fp32 for ZeRO tags, as stored otherwise)
    std::string device = "auto";
    bool excludeFrozen = false;
    bool all = false;
    bool raw = false;
    std::vector<std::string> ignore;
    bool skipUnsupported = false;
    bool overwrite = false;
    bool quiet = false;
    bool json = false;
    ShardArgs shard;
    std::string manifestOut;
};
struct AnalyzeArgs
{
    std::string a, b; // b only for diff
    std::string tag;
    std::string tagA, tagB; // diff: each side's tag, else `tag`
    bool moments = false;   // diff: the optimizer moments too
    std::string device = "auto";
    int bins = 0;
    bool log10 = false;
    bool json = false;
    bool quiet = false;
};
struct SlimArgs
{
    std::string input;
    std::string output;
    bool dryRun = false;
    bool overwrite = false;
    bool json = false;
    bool quiet = false;
};
struct UniversalArgs
{
    std::string input;
    std::string output;
    std::string tag;
    bool injectMissingState = false;
    bool overwrite = false;
    bool json = false;
    bool quiet = false;
    ShardArgs shard;
};
struct ScanArgs
{
    std::string path;
    bool json = false;
};

struct VerifyArgs
{
    std::string path;
    std::string tag;
    bool allTags = false;
    std::string manifest, writeManifest;
    std::string format = "ckpt"; // of a manifest written: ckpt or megatron
    bool json = false;
    bool quiet = false;
};

int runInspect(const InspectArgs& a);
int runVerify(const VerifyArgs& a, const ops::CancelToken& cancel);
int runExport(const ExportArgs& a, const ops::CancelToken& cancel);
int runScan(const ScanArgs& a);
int runSlim(const SlimArgs& a, const ops::CancelToken& cancel);
int runUniversal(const UniversalArgs& a, const ops::CancelToken& cancel);
int runStats(const AnalyzeArgs& a, const ops::CancelToken& cancel);
int runDiff(const AnalyzeArgs& a, const ops::CancelToken& cancel);
// The split the shard options ask for (none: ShardSpec{}); names the shard in every line this
// process prints from then on (cli/progress.h).
ops::ShardSpec shardSpec(const ShardArgs& a);
// The backend for --device auto|cpu|cuda; the choice and its reason go to stderr unless quiet.
std::shared_ptr<gpu::ComputeBackend> backendFor(const std::string& device, bool quiet);

} // namespace ckpt::cli
