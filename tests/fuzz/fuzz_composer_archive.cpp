// Fuzzes Composer's wrappers: a checkpoint file that is a tar (plain, read in place, or
// compressed), a raw compressed torch.save (.gz, .bz2, .xz, .lzma, .zst, .lz4) or a plain
// torch.save, read through libarchive and the Composer family; and Composer's per-rank DeepSpeed
// tarballs, one of which is fuzzed. Hostile headers (names leaving the archive, links, devices,
// sizes past the file or the limits), truncated streams and members that are no torch.save must
// end in an Error, never in a crash or in memory beyond the unpacking limits.
// The first input byte picks: the fixture (0: a lone `ep0-ba1-rank0.pt` in a folder of its own,
// 1/2: tests/data/composer-tar's ZeRO-2 tar and ZeRO-3 tar.gz pairs), the rank file the rest of the
// input replaces, and whether the file or its folder is opened.
#include "fuzz_folder.h"

namespace {

struct Fixture
{
    fuzz::fs::path dir, source; // source empty: the lone file
    std::vector<std::string> files;
};

const std::vector<Fixture>& fixtures()
{
    static const std::vector<Fixture> all = [] {
        std::vector<Fixture> out;
        Fixture lone;
        lone.dir = fuzz::privateDir("fuzz_composer_archive") / "lone";
        fuzz::fs::create_directories(lone.dir);
        lone.files = {"ep0-ba1-rank0.pt"};
        out.push_back(lone);
        for (const char* name : {"zero2_fp32_w2", "zero3_bf16_w2"}) {
            Fixture f;
            f.source = fuzz::fs::path(CKPT_TEST_DATA) / "composer-tar" / name;
            f.dir = fuzz::privateDir("fuzz_composer_archive") / name;
            f.files = fuzz::copyFixture(f.source, f.dir); // rank 0 first
            out.push_back(f);
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
    const fuzz::fs::path data(CKPT_TEST_DATA);
    // The lone file: Composer's own save in every wrapper, and the hostile archives (but the raw
    // bomb, which inflates 256 MiB each time before it is refused).
    for (const auto& dir : {data / "composer", data / "composer-hostile"})
        for (const auto& e : fuzz::fs::directory_iterator(dir)) {
            const std::string n = e.path().filename().string();
            if (n.starts_with("classifier.pt") && !n.ends_with(".json"))
                fuzz::writeSeed("seed-" + n, 0, e.path());
            else if (dir.filename() == "composer-hostile" && !n.ends_with(".md") && n != "bomb.pt.bz2")
                fuzz::writeSeed("seed-hostile-" + n, 0, e.path());
        }
    for (size_t f = 1; f < all.size(); ++f)
        for (size_t i = 0; i < all[f].files.size(); ++i)
            fuzz::writeSeed("seed-" + all[f].dir.filename().string() + "-" + std::to_string(i),
                            uint8_t(f + all.size() * i), all[f].dir / all[f].files[i]);
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = fixtures();
    const Fixture& fx = all[data[0] % all.size()];
    const std::string& victim = fx.files[(data[0] / all.size()) % fx.files.size()];
    const bool folder = (data[0] / (all.size() * 2)) % 2;
    fuzz::writeFile(fx.dir / victim, data + 1, size - 1);
    fuzz::openAndRead(folder ? fx.dir.string() : (fx.dir / fx.files.front()).string());
    if (!fx.source.empty())
        fuzz::fs::copy_file(fx.source / victim, fx.dir / victim, fuzz::fs::copy_options::overwrite_existing);
    return 0;
}
