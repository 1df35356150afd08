// ckpt: the command-line twin of Checkpoint Studio. Thin: parse arguments, call model/ops,
// turn errors into one line on stderr. Exit codes: 0 ok, 1 error, 2 usage, 3 scan found danger.
// Each subcommand registers its own options (add*) and says what runs when it was given; the
// options every command spells alike (--json, -q, --device) come from one helper each.
#include "commands.h"
#include "progress.h"

#include "io/fetch_watch.h"
#include "io/interrupt.h"
#include "io/output.h"
#include "ops/export.h"

#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

namespace {

using ckpt::ops::CancelToken;

ckpt::ops::CancelToken g_cancel;

// A subcommand: where CLI11 records that it was given, and what then runs.
struct Command
{
    CLI::App* sub;
    std::function<int(const CancelToken&)> run;
};

void addJson(CLI::App* sub, bool& json)
{
    sub->add_flag("--json", json, "Print one JSON document");
}

void addQuiet(CLI::App* sub, bool& quiet)
{
    sub->add_flag("-q,--quiet", quiet, "No progress on stderr");
}

void addDevice(CLI::App* sub, std::string& device, const std::string& what = "auto, cpu or cuda")
{
    sub->add_option("--device", device, what)->check(CLI::IsMember({"auto", "cpu", "cuda"}));
}

void addShard(CLI::App* sub, ckpt::cli::ShardArgs& a, const std::string& units)
{
    auto* shard = sub->add_option(
        "--shard", a.shard,
        "Do part I of N of the job (0 <= I < N; " + units +
            ", balanced by bytes), or `auto` to take I and N from mpirun, srun, a Slurm array or torchrun. "
            "Every part writes into the same output folder; then run --finalize once (under a launcher, "
            "rank 0 does)");
    sub->add_option("--shards", a.shards,
                    "N for --shard auto in a Slurm job array (else SLURM_ARRAY_TASK_COUNT)")
        ->check(CLI::Range(1, 100000))
        ->needs(shard);
    auto* fin =
        sub->add_flag("--finalize", a.finalize,
                      "After every --shard I/N has finished: check their files and write what binds them "
                      "(index, latest_universal, ...); refuses, naming them, while shards are missing");
    fin->excludes(shard);
    sub->add_flag(
        "--rehash", a.rehash,
        "Finalize reads every part's files back and compares their hashes with what the parts recorded "
        "(else sizes and modification times are compared)");
    sub->add_option("--wait", a.wait,
                    "Under a launcher, how long rank 0 waits for the other ranks before finalizing (seconds, "
                    "default 3600)")
        ->check(CLI::PositiveNumber);
}

Command addInspect(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::InspectArgs>();
    auto* sub = app.add_subcommand("inspect", "Show what is inside a file; reads no tensor bytes");
    sub->add_option("path", a->path, "checkpoint folder, torch.save file (.pt/.bin/.pth) or .safetensors")
        ->required();
    sub->add_option("--tag", a->tag, "Only this tag of a checkpoint folder");
    sub->add_flag(
        "--entries", a->entries,
        "Each tag's files with their object trees and every tensor entry (a checkpoint given as one "
        "file always has them)");
    addJson(sub, a->json);
    return {sub, [a](const CancelToken&) { return ckpt::cli::runInspect(*a); }};
}

Command addExport(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::ExportArgs>();
    auto* sub = app.add_subcommand(
        "export",
        "Write the model of a checkpoint as a Hugging Face style folder: a DeepSpeed tag consolidated "
        "(as zero_to_fp32), a Hugging Face folder resharded; or copy every tensor of a torch.save file "
        "into one safetensors file");
    sub->add_option("input", a->input,
                    "checkpoint folder (or tag folder), model folder, or a torch.save file")
        ->required();
    sub->add_option("output", a->output,
                    "output folder for a checkpoint; output .safetensors file for a file")
        ->required();
    sub->add_option("--tag", a->tag, "Tag to export (default: the one `latest` names)");
    sub->add_option("--format", a->format, "safetensors or bin")
        ->check(CLI::IsMember({"safetensors", "bin"}));
    sub->add_option("--max-shard-size", a->maxShardSize,
                    "Largest shard, decimal units as huggingface_hub: 5GB, 500MB");
    sub->add_option("--dtype", a->dtype,
                    "Dtype of floating tensors: fp32, bf16 or fp16 (default: fp32 for DeepSpeed tags, as "
                    "zero_to_fp32; as stored for other checkpoints)")
        ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
    sub->add_flag("--exclude-frozen", a->excludeFrozen, "Leave out frozen (requires_grad=False) parameters");
    sub->add_option(
        "--ignore", a->ignore,
        "Leave out tensors whose `/` path (state/model/fc.weight) or an ancestor matches this glob, "
        "as Composer's ignore_keys; repeatable");
    sub->add_flag("--all", a->all,
                  "Every tensor (optimizer state too), named by its `/` path, not only the model");
    sub->add_flag("--raw", a->raw,
                  "The model under the checkpoint's own names where it is mapped to a Hugging Face class "
                  "(Megatron's decoder.layers.*); needed where no class matches");
    addDevice(sub, a->device, "Where casts run: auto, cpu or cuda");
    sub->add_flag(
        "--skip-unsupported", a->skipUnsupported,
        "Leave out tensors safetensors cannot hold (complex128, quantized, meta) instead of failing");
    sub->add_flag("--overwrite", a->overwrite,
                  "The output folder holds files: replace the export in it (earlier shards and index "
                  "removed, other files kept; the new set swapped in atomically)");
    sub->add_option("--manifest-out", a->manifestOut,
                    "Also write a manifest of the output: each file's size and each tensor's xxh3 as read "
                    "from the checkpoint (`ckpt verify OUT --manifest FILE` then proves the export whole)");
    addShard(sub, a->shard, "the parts are the output's shard files");
    addJson(sub, a->json);
    addQuiet(sub, a->quiet);
    return {sub, [a](const CancelToken& cancel) { return ckpt::cli::runExport(*a, cancel); }};
}

Command addStats(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::AnalyzeArgs>();
    auto* sub =
        app.add_subcommand("stats", "Per-tensor statistics (min, max, mean, std, zeros, NaN, Inf), streamed");
    sub->add_option("path", a->a, "checkpoint folder, tag folder, torch.save or safetensors file")
        ->required();
    sub->add_option("--tag", a->tag, "Tag of a checkpoint folder (default: latest)");
    sub->add_option("--histogram", a->bins, "Add a histogram with this many bins");
    sub->add_flag("--log10", a->log10, "Histogram of log10|x| instead of x");
    addDevice(sub, a->device);
    addJson(sub, a->json);
    addQuiet(sub, a->quiet);
    return {sub, [a](const CancelToken& cancel) { return ckpt::cli::runStats(*a, cancel); }};
}

Command addDiff(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::AnalyzeArgs>();
    auto* sub = app.add_subcommand(
        "diff", "Compare two files, or two tags (tag folders) of a checkpoint, tensor by tensor");
    sub->add_option("a", a->a, "first file or checkpoint/tag folder")->required();
    sub->add_option("b", a->b, "second file or checkpoint/tag folder")->required();
    sub->add_option("--tag", a->tag, "Tag of both checkpoint folders (default: each one's latest)");
    sub->add_option("--tag-a", a->tagA, "Tag of A (overrides --tag for A)");
    sub->add_option("--tag-b", a->tagB, "Tag of B (overrides --tag for B)");
    sub->add_flag("--moments", a->moments,
                  "Compare the optimizer moments too: each parameter's exp_avg and exp_avg_sq (SGD's "
                  "momentum_buffer), as <param>/exp_avg and <param>/exp_avg_sq");
    addDevice(sub, a->device);
    addJson(sub, a->json);
    addQuiet(sub, a->quiet);
    return {sub, [a](const CancelToken& cancel) { return ckpt::cli::runDiff(*a, cancel); }};
}

Command addSlim(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::SlimArgs>();
    auto* sub = app.add_subcommand(
        "slim",
        "Rewrite torch.save files so each storage holds only what its tensors use (a file, or a folder "
        "into a new folder: other files copied)");
    sub->add_option("input", a->input, "torch.save file (zip or legacy), or a folder")->required();
    sub->add_option("output", a->output, "output file (for a file) or new folder (for a folder)")->required();
    sub->add_flag("--dry-run", a->dryRun, "Only report what would be saved; write nothing");
    sub->add_flag("--overwrite", a->overwrite,
                  "The output folder holds files: replace those the new output writes (others kept)");
    addJson(sub, a->json);
    addQuiet(sub, a->quiet);
    return {sub, [a](const CancelToken& cancel) { return ckpt::cli::runSlim(*a, cancel); }};
}

Command addUniversal(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::UniversalArgs>();
    auto* sub = app.add_subcommand(
        "universal",
        "Convert a DeepSpeed ZeRO 1/2/3 tag into a DeepSpeed Universal checkpoint (as ds_to_universal), "
        "so DeepSpeed resumes it on another number of GPUs; latest_universal is written beside OUT");
    sub->add_option("input", a->input, "checkpoint folder (tag from `latest`) or tag folder")->required();
    sub->add_option("output", a->output, "the Universal folder to create (ds_to_universal's --output_folder)")
        ->required();
    sub->add_option("--tag", a->tag, "Tag to convert (default: the one `latest` names)");
    sub->add_flag("--inject-missing-state", a->injectMissingState,
                  "Convert a checkpoint without universal_checkpoint_info (a data-parallel-only model, e.g. "
                  "Hugging Face) as ds_to_universal's --inject_missing_state does");
    sub->add_flag("--overwrite", a->overwrite,
                  "The output folder holds files: replace the earlier conversion in it (its zero/ "
                  "folder and model files; the new set swapped in atomically)");
    addShard(sub, a->shard, "the parts are the parameters' folders");
    addJson(sub, a->json);
    addQuiet(sub, a->quiet);
    return {sub, [a](const CancelToken& cancel) { return ckpt::cli::runUniversal(*a, cancel); }};
}

Command addScan(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::ScanArgs>();
    auto* sub = app.add_subcommand("scan", "List pickle globals; exit 3 if any is dangerous");
    sub->add_option("path", a->path,
                    "file, archive or checkpoint folder to scan (every pickle of every file, archive members "
                    "included)")
        ->required();
    addJson(sub, a->json);
    return {sub, [a](const CancelToken&) { return ckpt::cli::runScan(*a); }};
}

Command addVerify(CLI::App& app)
{
    auto a = std::make_shared<ckpt::cli::VerifyArgs>();
    auto* sub = app.add_subcommand(
        "verify",
        "Prove a checkpoint whole: its family's files all there, every zip record's CRC-32, "
        "safetensors offsets, archives read to their end, a manifest's SHA-256; exit 4 when damaged");
    sub->add_option("path", a->path, "checkpoint folder, tag folder or file (local or a URL)")->required();
    sub->add_option("--tag", a->tag, "Tag to verify (default: the one `latest` names)");
    sub->add_flag("--all-tags", a->allTags, "Every tag of the checkpoint");
    sub->add_option("--manifest", a->manifest,
                    "Check each file's size and SHA-256 against this manifest (ours, or Megatron-Core's "
                    "integrity.json; one found among the files is checked without asking)");
    sub->add_option("--write-manifest", a->writeManifest,
                    "Write a manifest (size and SHA-256 of each file verified) to this path");
    sub->add_option("--format", a->format, "The manifest written: ckpt, or megatron (integrity.json)")
        ->check(CLI::IsMember({"ckpt", "megatron"}));
    addJson(sub, a->json);
    addQuiet(sub, a->quiet);
    return {sub, [a](const CancelToken& cancel) { return ckpt::cli::runVerify(*a, cancel); }};
}

std::string versionText()
{
    // Driver and device queries only: no context is made, nothing allocated.
    return std::string("ckpt 0.1.0\ncompute: ") + ckpt::gpu::autoChoice() +
           (ckpt::gpu::cudaBuilt() ? " [built with CUDA]" : "");
}

// Runs the command given, its errors turned into the one line main() prints (empty: none).
int runGiven(const std::vector<Command>& commands, std::string& error)
{
    // A signal's cancel reaches remote transfers in flight too (io/fetch_watch.h).
    // Retries are said by the command's progress printer while it draws, else here.
    const ckpt::io::FetchWatch watch(&g_cancel, [](const ckpt::io::FetchProgress& f) {
        if (!f.retry.empty()) ckpt::cli::printRetry(f);
    });
    const ckpt::io::FetchWatch::Scope scope(&watch);
    try {
        for (const Command& c : commands)
            if (*c.sub) {
                const int rc = c.run(g_cancel);
                ckpt::cli::printFetched(watch);
                return rc;
            }
        return 2;
    } catch (const ckpt::Cancelled&) {
        error = "cancelled; partial output removed";
    } catch (const ckpt::ops::UnsupportedTensors& e) {
        error = std::string("error: ") + e.what() + " (use --skip-unsupported to leave them out)";
    } catch (const ckpt::io::OutputNotEmpty& e) {
        error =
            std::string("error: ") + e.what() + "; pass --overwrite to replace it, or choose another folder";
    } catch (const std::bad_alloc&) {
        error = "error: out of memory";
    } catch (const std::exception& e) {
        // Stopped by a signal, a job may unwind through an error (a transfer cut short): it was
        // cancelled all the same.
        error =
            g_cancel.cancelled() ? "cancelled; partial output removed" : std::string("error: ") + e.what();
    }
    return 1;
}

} // namespace

int main(int argc, char** argv)
{
    CLI::App app{"ckpt: inspect, export and check deep-learning checkpoints without Python"};
    app.set_version_flag("--version", versionText);
    app.require_subcommand(1);
    const std::vector<Command> commands = {addInspect(app), addExport(app),    addStats(app), addDiff(app),
                                           addSlim(app),    addUniversal(app), addScan(app),  addVerify(app)};
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : 2;
    }

    // SIGINT/SIGTERM/SIGHUP cancel the job; its temporaries go with it (see io/interrupt.h).
    // Created before any worker thread so that every thread inherits the blocked signals.
    std::optional<ckpt::io::InterruptHandler> interrupts;
    interrupts.emplace("ckpt", [] { g_cancel.cancel(); });
    std::string error;
    const int rc = runGiven(commands, error);
    const int sig = interrupts->signal();
    interrupts.reset();          // the job has unwound: its outputs are committed or removed
    if (sig && !error.empty()) { // the job was torn down by the signal, whatever it said
        std::cerr << ckpt::io::InterruptHandler::message("ckpt", sig) << "\n";
        return ckpt::io::InterruptHandler::exitCode(sig);
    }
    if (!error.empty()) {
        std::cerr << ckpt::cli::logPrefix() << error << "\n";
        return 1;
    }
    return rc;
}
