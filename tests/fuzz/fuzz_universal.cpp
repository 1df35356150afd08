// Fuzzes the DeepSpeed Universal folder reader: hostile model-states files (param_shapes,
// buffer_names, shared_params of the wrong types or lying shapes), zero/optimizer_state.pt, a
// parameter's fp32.pt / exp_avg.pt / exp_avg_sq.pt (no tensor, another element count, no data) and
// latest_universal must end in an Error, never in an out-of-bounds read. No Universal folder is
// committed: at start the target converts two one-rank DeepSpeed fixtures (ZeRO-2, whose fp32.pt
// hold a dict, and ZeRO-3, whose flat ones are shaped from param_shapes) with `ckpt universal`'s
// own conversion into its private folder. The first input byte picks the folder, the file the rest
// replaces (any file under the root: latest_universal, the model files, zero/...) and whether the
// Universal folder or its root is opened; every tensor is then read.
#include "fuzz_folder.h"
#include "ops/universal.h"

namespace {

struct Fixture
{
    fuzz::fs::path root, folder;
    std::vector<std::string> files; // relative to root, sorted
    std::vector<std::string> originals;
};

const std::vector<Fixture>& fixtures()
{
    static const std::vector<Fixture> all = [] {
        std::vector<Fixture> out;
        for (const char* name : {"zero2_fp32_w1", "zero3_bf16_w1"}) {
            Fixture f;
            f.root = fuzz::privateDir("fuzz_universal") / name;
            f.folder = f.root / "uni";
            ckpt::ops::UniversalOptions o;
            o.injectMissingState = true;
            ckpt::ops::CancelToken cancel;
            ckpt::ops::universal(std::string(CKPT_TEST_DATA) + "/deepspeed/" + name + "/global_step2",
                                 f.folder.string(), o, {}, cancel);
            for (const auto& e : fuzz::fs::recursive_directory_iterator(f.root))
                if (e.is_regular_file())
                    f.files.push_back(e.path().lexically_relative(f.root).generic_string());
            std::sort(f.files.begin(), f.files.end());
            for (const auto& n : f.files)
                f.originals.push_back(fuzz::readFile(f.root / n));
            out.push_back(std::move(f));
        }
        return out;
    }();
    return all;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const auto& all = fixtures();
    if (!fuzz::seedDir()) return 0;
    // Selector: fixture + 2 x (root opened) + 4 x file index.
    for (size_t f = 0; f < all.size(); ++f)
        for (size_t i = 0; i < all[f].files.size() && f + 4 * i < 256; ++i)
            fuzz::writeSeed("seed-" + std::to_string(f) + "-" + std::to_string(i), uint8_t(f + 4 * i),
                            all[f].root / all[f].files[i]);
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = fixtures();
    const Fixture& fx = all[data[0] % 2];
    const bool root = (data[0] / 2) % 2; // the root, whose latest_universal names the folder
    const size_t victim = (data[0] / 4) % fx.files.size();
    fuzz::writeFile(fx.root / fx.files[victim], data + 1, size - 1);
    fuzz::openAndRead(root ? fx.root.string() : fx.folder.string());
    const std::string& orig = fx.originals[victim];
    fuzz::writeFile(fx.root / fx.files[victim], reinterpret_cast<const uint8_t*>(orig.data()), orig.size());
    return 0;
}
