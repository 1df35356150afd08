// ckpt: the command-line twin of Checkpoint Studio. Thin: parse arguments, call model/ops,
// turn errors into one line on stderr. Exit codes: 0 ok, 1 error, 2 usage, 3 scan found danger.
#include "commands.h"

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>

namespace {
ckpt::ops::CancelToken g_cancel;
extern "C" void onSignal(int)
{
    g_cancel.cancel();
}
} // namespace

int main(int argc, char** argv)
{
    CLI::App app{"ckpt: inspect, export and check deep-learning checkpoints without Python"};
    app.set_version_flag("--version", std::string("ckpt 0.1.0 (compute: cpu)"));
    app.require_subcommand(1);

    ckpt::cli::InspectArgs ia;
    auto* inspect = app.add_subcommand("inspect", "Show what is inside a file; reads no tensor bytes");
    inspect->add_option("path", ia.path, "torch.save file (.pt/.bin/.pth) or .safetensors")->required();
    inspect->add_flag("--json", ia.json, "Print one JSON document");

    ckpt::cli::ExportArgs ea;
    auto* exp = app.add_subcommand("export", "Write every tensor of a torch.save file to safetensors");
    exp->add_option("input", ea.input, "torch.save file")->required();
    exp->add_option("output", ea.output, "output .safetensors file")->required();
    exp->add_flag(
        "--skip-unsupported", ea.skipUnsupported,
        "Leave out tensors safetensors cannot hold (complex128, quantized, meta) instead of failing");
    exp->add_flag("-q,--quiet", ea.quiet, "No progress on stderr");

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

    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);
    try {
        if (*inspect) return ckpt::cli::runInspect(ia);
        if (*exp) return ckpt::cli::runExport(ea, g_cancel);
        if (*scan) return ckpt::cli::runScan(sa);
    } catch (const ckpt::Cancelled&) {
        std::cerr << "ckpt: cancelled; partial output removed\n";
        return 1;
    } catch (const ckpt::Error& e) {
        std::cerr << "ckpt: error: " << e.what() << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "ckpt: error: out of memory\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "ckpt: error: " << e.what() << "\n";
        return 1;
    }
    return 2;
}
