// DeepSpeed checkpoints made by DeepSpeed itself: the domain model, and `ckpt export` against
// what DeepSpeed's own zero_to_fp32 wrote for every fixture, tag and output variant (file
// names, index JSON byte for byte, per-tensor dtype, shape and sha256). Damaged checkpoints
// give one clear error and leave nothing behind.
#include "layout/deepspeed.h"
#include "ops/consolidate.h"
#include "ops/inspect.h"
#include "safetensors/safetensors_file.h"
#include "testutil.h"

#include <QDirIterator>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

struct Written
{
    std::string dtype;
    std::vector<int64_t> shape;
    std::string sha256;
    std::string file;
};

// Every tensor of every output file, aliases resolved to their target's content.
std::map<std::string, Written> readOutput(const std::string& dir, std::map<std::string, std::string>& aliases)
{
    std::map<std::string, Written> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") {
            const auto f = safetensors::SafetensorsFile::open(e.path().string());
            for (const auto& t : f->tensors()) {
                const auto b = f->bytes(t);
                out[t.name] = {std::string(torch::name(t.dtype)), t.shape,
                               testutil::sha256Hex(b.data(), b.size()), name};
            }
            for (const auto& [k, v] : f->metadata())
                if (k != "format") aliases[k] = v;
        } else if (name.size() > 4 && name.substr(name.size() - 4) == ".bin") {
            const auto f = torch::TorchFile::open(e.path().string());
            for (const auto& t : f->tensors()) {
                const auto b = testutil::contiguousBytes(*f, t);
                out[t.path] = {std::string(torch::name(t.dtype)), t.shape,
                               testutil::sha256Hex(b.data(), b.size()), name};
                // not bloated: each tensor's storage is exactly its bytes
                QTest::qVerify(f->storages()[size_t(t.storage)].nbytes == t.nbytes(), "compact storage", "",
                               __FILE__, __LINE__);
            }
        }
    }
    for (const auto& [alias, target] : aliases)
        if (out.count(target)) out[alias] = out[target];
    return out;
}

std::string readText(const fs::path& p)
{
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::vector<std::string> deepspeedExpectations()
{
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(testutil::dataDir() + "/deepspeed"))
        if (e.path().string().size() > 12 &&
            e.path().string().substr(e.path().string().size() - 12) == ".expect.json")
            out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A damaged copy of a real fixture, made in `dir`.
std::string copyFixture(const QTemporaryDir& dir, const std::string& name)
{
    const fs::path dst = fs::path(dir.path().toStdString()) / name;
    fs::copy(testutil::dataDir() + "/deepspeed/" + name, dst, fs::copy_options::recursive);
    return dst.string();
}

} // namespace

class TestDeepSpeed : public QObject
{
    Q_OBJECT
private slots:
    void exportMatchesZeroToFp32_data()
    {
        QTest::addColumn<QString>("expect");
        QTest::addColumn<QString>("tag");
        QTest::addColumn<QString>("variant");
        const auto all = deepspeedExpectations();
        QVERIFY(all.size() >= 21);
        for (const auto& e : all)
            for (const char* tag : {"global_step2", "global_step4"})
                for (const char* v : {"safetensors", "safetensors_sharded", "bin", "bin_sharded"}) {
                    const std::string row = fs::path(e).stem().stem().string() + "/" + tag + "/" + v;
                    QTest::newRow(row.c_str()) << QString::fromStdString(e) << tag << v;
                }
    }

    void exportMatchesZeroToFp32()
    {
        QFETCH(QString, expect);
        QFETCH(QString, tag);
        QFETCH(QString, variant);
        const auto exp = testutil::readJson(expect.toStdString());
        const std::string ck = expect.toStdString().substr(0, expect.size() - 12);
        const auto& t = exp["tags"][tag.toStdString()];
        const std::string v = variant.toStdString();
        const bool st = v.rfind("safetensors", 0) == 0;
        const bool sharded = v.find("sharded") != std::string::npos;
        const int stage = exp["case"]["stage"];

        ops::ConsolidateOptions opt;
        opt.tag = tag.toStdString();
        opt.format = st ? ops::ConsolidateOptions::Format::Safetensors : ops::ConsolidateOptions::Format::Bin;
        opt.maxShardSize = ops::parseShardSize(sharded ? "2KB" : "10GB");
        QTemporaryDir out;
        ops::CancelToken cancel;
        const auto r = ops::consolidate(ck, out.path().toStdString(), opt, {}, cancel);
        QCOMPARE(r.tag, tag.toStdString());

        // The reference: what zero_to_fp32 wrote for this variant, or, where its safetensors
        // writer refused the tied weights, what it wrote as .bin with the same sharding.
        const bool refFailed = t[v].contains("error");
        const auto& ref = refFailed ? t[sharded ? "bin_sharded" : "bin"] : t[v];
        if (refFailed) QVERIFY(t[v]["error"].get<std::string>().find("share memory") != std::string::npos);

        std::map<std::string, std::string> aliases;
        const auto got = readOutput(out.path().toStdString(), aliases);
        std::set<std::string> refNames;
        for (const auto& rt : ref["tensors"]) {
            const std::string name = rt["name"];
            refNames.insert(name);
            QVERIFY2(got.count(name), ("missing " + name).c_str());
            const Written& w = got.at(name);
            QCOMPARE(w.dtype, rt["dtype"].get<std::string>());
            QCOMPARE(w.shape, rt["shape"].get<std::vector<int64_t>>());
            QVERIFY2(w.sha256 == rt["sha256"].get<std::string>(), name.c_str());
        }
        // Stage 1: zero_to_fp32 silently drops frozen parameters; we recover them from the module.
        for (const auto& [name, w] : got)
            if (!refNames.count(name))
                QVERIFY2(stage == 1 && name.rfind("frozen.", 0) == 0, ("unexpected " + name).c_str());
        if (stage == 1) {
            QVERIFY(got.count("frozen.weight") && got.count("frozen.bias"));
            // frozen weights never train: equal to the stage-2 run of the same dtype and world size
            std::string twin = fs::path(ck).filename().string();
            twin.replace(0, 5, "zero2");
            const auto twinExp =
                testutil::readJson(testutil::dataDir() + "/deepspeed/" + twin + ".expect.json");
            for (const auto& rt : twinExp["tags"][tag.toStdString()]["bin"]["tensors"])
                if (rt["name"].get<std::string>().rfind("frozen.", 0) == 0)
                    QCOMPARE(got.at(rt["name"]).sha256, rt["sha256"].get<std::string>());
            return; // sharding differs by the recovered tensors
        }

        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(out.path().toStdString()))
            files.push_back(e.path().filename().string());
        std::sort(files.begin(), files.end());
        std::vector<std::string> want = ref["files"];
        if (refFailed)
            for (auto& f : want) {
                if (f.rfind("pytorch_model", 0) == 0) f.replace(0, 13, "model");
                if (f.size() > 4 && f.substr(f.size() - 4) == ".bin")
                    f.replace(f.size() - 4, 4, ".safetensors");
                if (f == "model.bin.index.json") f = "model.safetensors.index.json";
            }
        std::sort(want.begin(), want.end());
        QCOMPARE(files, want);
        if (ref.contains("index_text")) {
            const std::string mine = readText(fs::path(out.path().toStdString()) / files.back());
            if (!refFailed) {
                QCOMPARE(mine, ref["index_text"].get<std::string>());
            } else {
                // same shards; the alias is not in the safetensors weight map (it is in the metadata)
                auto idx = nlohmann::json::parse(mine);
                auto wantIdx = ref["index"];
                QCOMPARE(idx["metadata"]["total_size"].get<uint64_t>(),
                         wantIdx["metadata"]["total_size"].get<uint64_t>());
                for (auto it = wantIdx["weight_map"].begin(); it != wantIdx["weight_map"].end(); ++it) {
                    if (aliases.count(it.key())) {
                        QVERIFY(!idx["weight_map"].contains(it.key()));
                        continue;
                    }
                    std::string f = it.value();
                    f.replace(0, 13, "model");
                    f.replace(f.size() - 4, 4, ".safetensors");
                    QCOMPARE(idx["weight_map"][it.key()].get<std::string>(), f);
                }
            }
        }
    }

    void domainModel()
    {
        const auto opened =
            layout::openCheckpoint(testutil::dataDir() + "/deepspeed/zero3_bf16_w4_subgroups");
        const layout::Checkpoint& ck = opened->model;
        QCOMPARE(ck.tags.size(), size_t(2));
        QVERIFY(ck.latest() && ck.latest()->name == "global_step4");
        const layout::Tag& t = *ck.latest();
        QCOMPARE(t.deepspeed->zeroStage, 3);
        QCOMPARE(t.worldSize, 4);
        QCOMPARE(t.dtype, std::string("bf16"));
        QCOMPARE(t.globalSteps, int64_t(4));
        QCOMPARE(t.files.size(), size_t(8));
        QCOMPARE(t.clientState["fixture"].get<std::string>(), std::string("zero3_bf16_w4_subgroups"));
        std::set<int> groups;
        for (const auto& p : t.params) {
            if (p.kind != layout::Parameter::Kind::Trainable || !p.tiedTo.empty()) continue;
            groups.insert(p.group);
            QCOMPARE(p.slices.size(), size_t(4));
            uint64_t held = 0;
            for (const auto& s : p.slices) {
                held += s.length;
                QCOMPARE(s.length + s.padding, (p.numel() + 3) / 4); // ceil(n/W) per rank
            }
            QCOMPARE(held, p.numel());
            // Both moments, sliced as the parameter: each rank holding elements holds their state.
            QCOMPARE(p.state.size(), size_t(2));
            for (const char* name : {"exp_avg", "exp_avg_sq"}) {
                const layout::OptimizerState* st = p.stateNamed(name);
                QVERIFY(st && st->perSlice && st->complete() && st->slices.size() == p.slices.size());
                for (size_t i = 0; i < p.slices.size(); ++i) {
                    QCOMPARE(st->slices[i].paramOffset, p.slices[i].paramOffset);
                    uint64_t n = 0;
                    for (const auto& src : st->slices[i].master)
                        n += src.count;
                    QCOMPARE(n, p.slices[i].length);
                }
            }
        }
        QVERIFY(groups.size() > 2); // sub_group_size 100 splits the params into several sub-groups
        const auto doc =
            ops::inspectCheckpoint(testutil::dataDir() + "/deepspeed/zero2_bf16_w2", "global_step2");
        QCOMPARE(doc["tags"].size(), size_t(1));
        QCOMPARE(doc["tags"][0]["parameters"].back()["tied_to"].get<std::string>(),
                 std::string("embed.weight"));
    }

    void missingRank()
    {
        QTemporaryDir dir;
        const std::string ck = copyFixture(dir, "zero2_fp32_w4");
        fs::remove(fs::path(ck) / "global_step4" / "zero_pp_rank_2_mp_rank_00_optim_states.pt");
        expectError(ck, "optimizer states of rank 2 are missing");
    }

    void truncatedRank()
    {
        QTemporaryDir dir;
        const std::string ck = copyFixture(dir, "zero3_fp32_w2");
        const fs::path f = fs::path(ck) / "global_step4" / "zero_pp_rank_1_mp_rank_00_optim_states.pt";
        fs::resize_file(f, fs::file_size(f) / 2);
        expectError(ck, "zero_pp_rank_1_mp_rank_00_optim_states.pt");
    }

    void mixedTags()
    {
        QTemporaryDir dir;
        const std::string ck = copyFixture(dir, "zero2_bf16_w2");
        const fs::path a = fs::path(ck) / "global_step2" / "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt";
        fs::copy_file(a, fs::path(ck) / "global_step4" / a.filename(), fs::copy_options::overwrite_existing);
        expectError(ck, "different saves");
    }

    void staleExtraRank()
    {
        QTemporaryDir dir;
        const std::string ck = copyFixture(dir, "zero2_fp32_w2");
        const fs::path a = fs::path(ck) / "global_step4" / "zero_pp_rank_1_mp_rank_00_optim_states.pt";
        fs::copy_file(a, fs::path(ck) / "global_step4" / "zero_pp_rank_3_mp_rank_00_optim_states.pt");
        expectError(ck, "stale file");
    }

    void noLatest()
    {
        QTemporaryDir dir;
        const std::string ck = copyFixture(dir, "zero2_fp32_w1");
        fs::remove(fs::path(ck) / "latest");
        expectError(ck, "--tag");
        QTemporaryDir out;
        ops::ConsolidateOptions opt;
        opt.tag = "global_step2";
        ops::CancelToken cancel;
        QCOMPARE(ops::consolidate(ck, out.path().toStdString(), opt, {}, cancel).tag,
                 std::string("global_step2"));
    }

    void cancelLeavesNothing()
    {
        QTemporaryDir out;
        ops::CancelToken cancel;
        ops::ConsolidateOptions opt;
        opt.maxShardSize = 2000;
        int calls = 0;
        auto progress = [&](const ops::Progress& p) {
            if (p.doneBytes > 0 && ++calls == 1) cancel.cancel();
        };
        QVERIFY_THROWS_EXCEPTION(Cancelled,
                                 ops::consolidate(testutil::dataDir() + "/deepspeed/zero3_fp32_w4",
                                                  out.path().toStdString(), opt, progress, cancel));
        QCOMPARE(QDir(out.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
    }

    // Values, not only dtypes: each bf16 tensor equals the fp32 export rounded to nearest even
    // (PyTorch's rule, written here independently of gpu/cast), bit for bit.
    void castsToBf16()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        QTemporaryDir out16, out32;
        ops::CancelToken cancel;
        ops::ConsolidateOptions opt;
        opt.dtype = torch::DType::BFloat16;
        ops::consolidate(ck, out16.path().toStdString(), opt, {}, cancel);
        ops::consolidate(ck, out32.path().toStdString(), {}, {}, cancel);
        const auto f16 =
            safetensors::SafetensorsFile::open(out16.filePath("model.safetensors").toStdString());
        const auto f32 =
            safetensors::SafetensorsFile::open(out32.filePath("model.safetensors").toStdString());
        auto rne = [](uint32_t u) -> uint16_t {
            if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; // NaN
            return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        };
        std::map<std::string, const safetensors::TensorInfo*> wide;
        for (const auto& t : f32->tensors())
            wide[t.name] = &t;
        size_t checked = 0;
        for (const auto& t : f16->tensors()) {
            const auto* w = wide.count(t.name) ? wide[t.name] : nullptr;
            QVERIFY2(w, t.name.c_str());
            if (t.name == "counter") {
                QCOMPARE(std::string(torch::name(t.dtype)), std::string("int64"));
                continue;
            }
            QCOMPARE(std::string(torch::name(t.dtype)), std::string("bfloat16"));
            QCOMPARE(std::string(torch::name(w->dtype)), std::string("float32"));
            const io::ByteSpan a = f16->bytes(t), b = f32->bytes(*w);
            QCOMPARE(a.size() * 2, b.size());
            for (size_t i = 0; i < a.size() / 2; ++i) {
                uint16_t got;
                uint32_t bits;
                std::memcpy(&got, a.data() + 2 * i, 2);
                std::memcpy(&bits, b.data() + 4 * i, 4);
                if (got != rne(bits))
                    QFAIL(qPrintable(QString::fromStdString(t.name) + " element " + QString::number(i)));
            }
            ++checked;
        }
        QVERIFY(checked > 5);
    }

private:
    void expectError(const std::string& ck, const std::string& needle)
    {
        QTemporaryDir out;
        ops::CancelToken cancel;
        try {
            ops::consolidate(ck, out.path().toStdString(), {}, {}, cancel);
            QFAIL("export of a damaged checkpoint succeeded");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
        }
        QCOMPARE(QDir(out.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
    }
};

QTEST_APPLESS_MAIN(TestDeepSpeed)
#include "tst_deepspeed.moc"
