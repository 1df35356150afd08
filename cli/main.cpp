// ckpt: the command-line twin of Checkpoint Studio. Thin: parse arguments, call model/ops,
// turn errors into one line on stderr. Exit codes: 0 ok, 1 error, 2 usage, 3 scan found danger.
#include "commands.h"

#include "io/interrupt.h"
#include "io/output.h"
#include "ops/export.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>

namespace {

ckpt::ops::CancelToken g_cancel;

int run(CLI::App* inspect, CLI::App* exp, CLI::App* scan, CLI::App* stats, CLI::App* diff, CLI::App* slim,
        CLI::App* uni, const ckpt::cli::InspectArgs& ia, const ckpt::cli::ExportArgs& ea,
        const ckpt::cli::ScanArgs& sa, const ckpt::cli::AnalyzeArgs& st, const ckpt::cli::AnalyzeArgs& df,
        const ckpt::cli::SlimArgs& sl, const ckpt::cli::UniversalArgs& ua)
{
    if (*slim) return ckpt::cli::runSlim(sl, g_cancel);
    if (*uni) return ckpt::cli::runUniversal(ua, g_cancel);
    if (*inspect) return ckpt::cli::runInspect(ia);
    if (*exp) return ckpt::cli::runExport(ea, g_cancel);
    if (*scan) return ckpt::cli::runScan(sa);
    if (*stats) return ckpt::cli::runStats(st, g_cancel);
    if (*diff) return ckpt::cli::runDiff(df, g_cancel);
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    CLI::App app{"ckpt: inspect, export and check deep-learning checkpoints without Python"};
    app.set_version_flag("--version", [] {
        std::string reason;
        try {
            ckpt::gpu::makeBackend(ckpt::gpu::Device::Auto, &reason);
        } catch (const std::exception& e) {
            reason = e.what();
        }
        return std::string("ckpt 0.1.0\ncompute: ") + reason +
               (ckpt::gpu::cudaBuilt() ? " [built with CUDA]" : "");
    });
    app.require_subcommand(1);

    ckpt::cli::InspectArgs ia;
    auto* inspect = app.add_subcommand("inspect", "Show what is inside a file; reads no tensor bytes");
    inspect->add_option("path", ia.path, "checkpoint folder, torch.save file (.pt/.bin/.pth) or .safetensors")
        ->required();
    inspect->add_option("--tag", ia.tag, "Only this tag of a checkpoint folder");
    inspect->add_flag("--json", ia.json, "Print one JSON document");

    ckpt::cli::ExportArgs ea;
    auto* exp = app.add_subcommand(
        "export",
        "Write the model of a checkpoint as a Hugging Face style folder: a DeepSpeed tag consolidated "
        "(as zero_to_fp32), a Hugging Face folder resharded; or copy every tensor of a torch.save file "
        "into one safetensors file");
    exp->add_option("input", ea.input,
                    "checkpoint folder (or tag folder), model folder, or a torch.save file")
        ->required();
    exp->add_option("output", ea.output,
                    "output folder for a checkpoint; output .safetensors file for a file")
        ->required();
    exp->add_option("--tag", ea.tag, "Tag to export (default: the one `latest` names)");
    exp->add_option("--format", ea.format, "safetensors or bin")
        ->check(CLI::IsMember({"safetensors", "bin"}));
    exp->add_option("--max-shard-size", ea.maxShardSize,
                    "Largest shard, decimal units as huggingface_hub: 5GB, 500MB");
    exp->add_option("--dtype", ea.dtype,
                    "Dtype of floating tensors: fp32, bf16 or fp16 (default: fp32 for DeepSpeed tags, as "
                    "zero_to_fp32; as stored for other checkpoints)")
        ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
    exp->add_flag("--exclude-frozen", ea.excludeFrozen, "Leave out frozen (requires_grad=False) parameters");
    exp->add_option(
        "--ignore", ea.ignore,
        "Leave out tensors whose `/` path (state/model/fc.weight) or an ancestor matches this glob, "
        "as Composer's ignore_keys; repeatable");
    exp->add_flag("--all", ea.all,
                  "Every tensor (optimizer state too), named by its `/` path, not only the model");
    exp->add_option("--device", ea.device, "Where casts run: auto, cpu or cuda")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    exp->add_flag(
        "--skip-unsupported", ea.skipUnsupported,
        "Leave out tensors safetensors cannot hold (complex128, quantized, meta) instead of failing");
    exp->add_flag("--overwrite", ea.overwrite,
                  "The output folder holds files: replace the export in it (earlier shards and index "
                  "removed, other files kept; the new set swapped in atomically)");
    exp->add_flag("-q,--quiet", ea.quiet, "No progress on stderr");

    ckpt::cli::AnalyzeArgs st;
    auto* stats =
        app.add_subcommand("stats", "Per-tensor statistics (min, max, mean, std, zeros, NaN, Inf), streamed");
    stats->add_option("path", st.a, "checkpoint folder, tag folder, torch.save or safetensors file")
        ->required();
    stats->add_option("--tag", st.tag, "Tag of a checkpoint folder (default: latest)");
    stats->add_option("--histogram", st.bins, "Add a histogram with this many bins");
    stats->add_flag("--log10", st.log10, "Histogram of log10|x| instead of x");
    stats->add_option("--device", st.device, "auto, cpu or cuda")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    stats->add_flag("--json", st.json, "Print one JSON document");
    stats->add_flag("-q,--quiet", st.quiet, "No progress on stderr");

    ckpt::cli::AnalyzeArgs df;
    auto* diff = app.add_subcommand(
        "diff", "Compare two files, or two tags (tag folders) of a checkpoint, tensor by tensor");
    diff->add_option("a", df.a, "first file or checkpoint/tag folder")->required();
    diff->add_option("b", df.b, "second file or checkpoint/tag folder")->required();
    diff->add_option("--tag", df.tag, "Tag of both checkpoint folders (default: each one's latest)");
    diff->add_option("--tag-a", df.tagA, "Tag of A (overrides --tag for A)");
    diff->add_option("--tag-b", df.tagB, "Tag of B (overrides --tag for B)");
    diff->add_flag("--moments", df.moments,
                   "Compare the optimizer moments too: each parameter's exp_avg and exp_avg_sq, as "
                   "<param>/exp_avg and <param>/exp_avg_sq");
    diff->add_option("--device", df.device, "auto, cpu or cuda")
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    diff->add_flag("--json", df.json, "Print one JSON document");
    diff->add_flag("-q,--quiet", df.quiet, "No progress on stderr");

    ckpt::cli::SlimArgs sl;
    auto* slim = app.add_subcommand(
        "slim",
        "Rewrite torch.save files so each storage holds only what its tensors use (a file, or a folder "
        "into a new folder: other files copied)");
    slim->add_option("input", sl.input, "torch.save file (zip or legacy), or a folder")->required();
    slim->add_option("output", sl.output, "output file (for a file) or new folder (for a folder)")
        ->required();
    slim->add_flag("--dry-run", sl.dryRun, "Only report what would be saved; write nothing");
    slim->add_flag("--overwrite", sl.overwrite,
                   "The output folder holds files: replace those the new output writes (others kept)");
    slim->add_flag("--json", sl.json, "Print one JSON document");
    slim->add_flag("-q,--quiet", sl.quiet, "No progress on stderr");

    ckpt::cli::UniversalArgs ua;
    auto* uni = app.add_subcommand(
        "universal",
        "Convert a DeepSpeed ZeRO 1/2/3 tag into a DeepSpeed Universal checkpoint (as ds_to_universal), "
        "so DeepSpeed resumes it on another number of GPUs; latest_universal is written beside OUT");
    uni->add_option("input", ua.input, "checkpoint folder (tag from `latest`) or tag folder")->required();
    uni->add_option("output", ua.output, "the Universal folder to create (ds_to_universal's --output_folder)")
        ->required();
    uni->add_option("--tag", ua.tag, "Tag to convert (default: the one `latest` names)");
    uni->add_flag("--inject-missing-state", ua.injectMissingState,
                  "Convert a checkpoint without universal_checkpoint_info (a data-parallel-only model, e.g. "
                  "Hugging Face) as ds_to_universal's --inject_missing_state does");
    uni->add_flag("--overwrite", ua.overwrite,
                  "The output folder holds files: replace the earlier conversion in it (its zero/ "
                  "folder and model files; the new set swapped in atomically)");
    uni->add_flag("--json", ua.json, "Print one JSON document");
    uni->add_flag("-q,--quiet", ua.quiet, "No progress on stderr");

    ckpt::cli::ScanArgs sa;
    auto* scan = app.add_subcommand("scan", "List pickle globals; exit 3 if any is dangerous");
    scan->add_option("path", sa.path, "file to scan")->required();
    scan->add_flag("--json", sa.json, "Print one JSON document");

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
    int rc = 1;
    try {
        rc = run(inspect, exp, scan, stats, diff, slim, uni, ia, ea, sa, st, df, sl, ua);
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
        error = std::string("error: ") + e.what();
    }
    const int sig = interrupts->signal();
    interrupts.reset();          // the job has unwound: its outputs are committed or removed
    if (sig && !error.empty()) { // the job was torn down by the signal, whatever it said
        std::cerr << ckpt::io::InterruptHandler::message("ckpt", sig) << "\n";
        return ckpt::io::InterruptHandler::exitCode(sig);
    }
    if (!error.empty()) {
        std::cerr << "ckpt: " << error << "\n";
        return 1;
    }
    return rc;
}
