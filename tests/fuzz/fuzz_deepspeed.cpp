// Fuzzes the DeepSpeed layout reader and the consolidation plan built on it: hostile object
// trees in a model-states or optimizer-states file (wrong types, lying shapes, partition
// offsets and lengths past the flat buffers, missing keys) must end in an Error, never in an
// out-of-bounds read. The fuzzed bytes replace one file of a real one-rank fixture tag; the
// first input byte picks which (ZeRO-2 or ZeRO-3, model or optimizer file). The files go to a
// private folder because the layout reader opens checkpoints by path.
#include "io/error.h"
#include "ops/tensor_source.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct Fixture
{
    fs::path dir;
    std::vector<std::string> files;
};

const std::vector<Fixture>& fixtures()
{
    static const std::vector<Fixture> all = [] {
        std::vector<Fixture> out;
        const fs::path tmp = fs::temp_directory_path() / ("fuzz_deepspeed-" + std::to_string(::getpid()));
        for (const char* name : {"zero2_fp32_w1", "zero3_fp32_w1"}) {
            const fs::path src = fs::path(CKPT_TEST_DATA) / "deepspeed" / name / "global_step2";
            Fixture f;
            f.dir = tmp / name / "global_step2";
            fs::create_directories(f.dir);
            for (const auto& e : fs::directory_iterator(src)) {
                fs::copy_file(e.path(), f.dir / e.path().filename(), fs::copy_options::overwrite_existing);
                f.files.push_back(e.path().filename().string());
            }
            std::sort(f.files.begin(), f.files.end());
            out.push_back(f);
        }
        static const fs::path root = tmp;
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(root, ec);
        });
        return out;
    }();
    return all;
}

void restore(const Fixture& f, const std::string& name)
{
    const fs::path src =
        fs::path(CKPT_TEST_DATA) / "deepspeed" / f.dir.parent_path().filename() / "global_step2" / name;
    fs::copy_file(src, f.dir / name, fs::copy_options::overwrite_existing);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = fixtures();
    const Fixture& fx = all[data[0] % all.size()];
    const std::string& victim = fx.files[(data[0] / all.size()) % fx.files.size()];
    {
        std::ofstream out(fx.dir / victim, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data + 1), std::streamsize(size - 1));
    }
    try {
        ckpt::ops::SourceOptions o;
        const auto set = ckpt::ops::checkpointTensors(fx.dir.string(), o);
        std::vector<uint8_t> buf;
        for (const auto& t : set.tensors) {
            if (!t.tensor.fill || t.tensor.nbytes > (16u << 20)) continue;
            buf.resize(t.tensor.nbytes);
            t.tensor.fill(0, t.tensor.nbytes, buf.data());
        }
    } catch (const ckpt::Error&) {
    }
    restore(fx, victim);
    return 0;
}
