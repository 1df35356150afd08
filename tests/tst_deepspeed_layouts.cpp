// DeepSpeed pipeline, MoE and ZeRO-0 checkpoints made by DeepSpeed 0.19.8 itself
// (tests/data/deepspeed-layouts): `ckpt export` against the full fp32 state dicts the training
// processes gathered right before each save (names, dtypes, shapes and bytes), and the domain
// model that names the pipeline stages, the experts and the ZeRO-0 masters. DeepSpeed's own
// zero_to_fp32 fails on every one of these tags.
#include "layout/deepspeed.h"
#include "layout/family.h"
#include "layout/sharding.h"
#include "ops/consolidate.h"
#include "ops/inspect.h"
#include "safetensors/safetensors_file.h"
#include "testutil.h"

#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string layouts()
{
    return testutil::dataDir() + "/deepspeed-layouts";
}

struct Held
{
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

// Every tensor of every safetensors file in `dir` (or the one file), aliases (tied weights, in
// the metadata) resolved to their target's content.
std::map<std::string, Held> readSafetensors(const std::vector<fs::path>& paths)
{
    std::map<std::string, Held> out;
    std::map<std::string, std::string> aliases;
    for (const auto& p : paths) {
        const auto f = safetensors::SafetensorsFile::open(p.string());
        for (const auto& t : f->tensors()) {
            const auto b = f->bytes(t);
            out[t.name] = {std::string(torch::name(t.dtype)), t.shape,
                           std::vector<uint8_t>(b.begin(), b.end())};
        }
        for (const auto& [k, v] : f->metadata())
            if (k != "format") aliases[k] = v;
    }
    for (const auto& [alias, target] : aliases)
        if (out.count(target)) out[alias] = out[target];
    return out;
}

std::vector<fs::path> safetensorsIn(const std::string& dir)
{
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".safetensors") out.push_back(e.path());
    return out;
}

layout::OpenedTag open(const std::string& name, const std::string& tag = "global_step4")
{
    return layout::openTag(layouts() + "/" + name, tag);
}

const layout::Parameter* find(const layout::Tag& tag, const std::string& name)
{
    const auto it = std::find_if(tag.params.begin(), tag.params.end(),
                                 [&](const layout::Parameter& p) { return p.name == name; });
    return it == tag.params.end() ? nullptr : &*it;
}

std::set<int> ranksOf(const layout::Parameter& p)
{
    std::set<int> r;
    for (const auto& s : p.slices)
        r.insert(s.rank);
    return r;
}

std::string factOf(const layout::Tag& tag, const std::string& label)
{
    for (const auto& f : tag.facts)
        if (f.label == label) return f.value;
    return {};
}

} // namespace

class TestDeepSpeedLayouts : public QObject
{
    Q_OBJECT

private slots:
    void exportMatchesGathered_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("tag");
        const char* const cases[] = {"zero0_fp32_w2",
                                     "zero0_bf16_w2",
                                     "zero0_bf16_w2_groups",
                                     "pipe_zero1_fp32_w2_pp2",
                                     "pipe_zero1_fp32_w4_pp2_dp2",
                                     "pipe_zero1_bf16_w2_pp2",
                                     "pipe_tied_zero1_fp32_w2_pp2",
                                     "moe_zero1_fp32_w2_ep2",
                                     "moe_zero2_fp32_w2_ep2",
                                     "moe_zero2_fp32_w2_ep2_e2",
                                     "moe_zero2_fp32_w4_ep2"};
        for (const char* c : cases) {
            QVERIFY2(fs::is_directory(layouts() + "/" + c), c);
            for (const char* t : {"global_step2", "global_step4"})
                QTest::newRow((std::string(c) + "/" + t).c_str()) << QString(c) << QString(t);
        }
    }

    // The export is the gathered state dict: the same names, each fp32 (ints as they are), with
    // the same shape and bit for bit the same values.
    void exportMatchesGathered()
    {
        QFETCH(QString, name);
        QFETCH(QString, tag);
        const std::string c = name.toStdString(), t = tag.toStdString();
        ops::ConsolidateOptions opt;
        opt.tag = t;
        QTemporaryDir out;
        ops::CancelToken cancel;
        try {
            QCOMPARE(ops::consolidate(layouts() + "/" + c, out.path().toStdString(), opt, {}, cancel).tag, t);
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        const auto got = readSafetensors(safetensorsIn(out.path().toStdString()));
        const auto want = readSafetensors({layouts() + "/expected/" + c + "/" + t + ".safetensors"});
        QVERIFY(want.size() >= 7);
        for (const auto& [n, w] : want) {
            QVERIFY2(got.count(n), ("missing " + n).c_str());
            const Held& g = got.at(n);
            QVERIFY2(g.dtype == w.dtype, (n + ": " + g.dtype + " vs " + w.dtype).c_str());
            QVERIFY2(g.shape == w.shape, n.c_str());
            QVERIFY2(g.bytes == w.bytes, (n + ": values differ").c_str());
        }
        for (const auto& [n, g] : got)
            QVERIFY2(want.count(n), ("unexpected " + n).c_str());
    }

    // ZeRO-0: the world size is the model file's dp_world_size; bf16 masters come from
    // FP16_UnfusedOptimizer's fp32_groups, matched to the module's parameters by shape; the
    // frozen ones and the buffers from the module; the tied head an alias.
    void zeroStage0Model()
    {
        for (const char* c : {"zero0_fp32_w2", "zero0_bf16_w2"}) {
            const auto in = open(c);
            const layout::Tag& tag = *in;
            QCOMPARE(tag.worldSize, 2);
            QCOMPARE(tag.deepspeed->zeroStage, 0);
            QVERIFY(tag.notExportable.empty());
            QCOMPARE(factOf(tag, "data-parallel ranks"), std::string("2"));
            const auto* head = find(tag, "head.weight");
            QVERIFY(head);
            QCOMPARE(head->tiedTo, std::string("embed.weight"));
            QCOMPARE(find(tag, "counter")->kind, layout::Parameter::Kind::Buffer);
            const bool bf16 = std::string(c).find("bf16") != std::string::npos;
            if (!bf16) continue;
            QCOMPARE(find(tag, "frozen.weight")->kind, layout::Parameter::Kind::Frozen);
            const auto exp = testutil::readJson(layouts() + "/expected/" + c + "/global_step4.json");
            std::vector<std::string> masters;
            for (const auto& p : tag.params)
                if (p.kind == layout::Parameter::Kind::Trainable && p.tiedTo.empty()) {
                    QVERIFY(p.slices.at(0).master.at(0).tensorPath.str().rfind("optimizer/fp32_groups/", 0) ==
                            0);
                    QCOMPARE(p.dtype, torch::DType::Float32);
                    masters.push_back(p.name);
                }
            QCOMPARE(masters, exp["master_names"].get<std::vector<std::string>>());
            QVERIFY(factOf(tag, "optimizer").find("FP16_UnfusedOptimizer") != std::string::npos);
        }
        const auto doc = ops::inspectCheckpoint(layouts() + "/zero0_bf16_w2", "global_step4");
        QVERIFY2(doc.dump().find("\"world_size\":0") == std::string::npos, doc.dump().substr(0, 400).c_str());
    }

    // Pipelines: every stage's parameters, from that stage's ZeRO partitions, on the ranks of that
    // stage (global rank = stage * dp + dp rank); the stages named in the badges; the tied module once.
    void pipelineModel()
    {
        const auto in = open("pipe_zero1_fp32_w4_pp2_dp2");
        const layout::Tag& tag = *in;
        QCOMPARE(tag.worldSize, 2);
        QCOMPARE(tag.mpWorldSize, 2);
        QVERIFY(!tag.convertsToUniversal);
        // stage 0's flat group (416 elements) is 208 per dp rank, stage 1's (280) 140
        QCOMPARE(ranksOf(*find(tag, "0.weight")), (std::set<int>{0}));
        QCOMPARE(ranksOf(*find(tag, "2.weight")), (std::set<int>{0, 1}));
        QCOMPARE(ranksOf(*find(tag, "4.weight")), (std::set<int>{2, 3}));
        QCOMPARE(ranksOf(*find(tag, "6.weight")), (std::set<int>{3}));
        const auto& stages = tag.deepspeed->pipelineStages;
        QCOMPARE(stages.size(), size_t(2));
        // stage 0 = layers 0-3 (partition_method uniform): the lambda at 3 has no parameters, and
        // the range used to stop at 2
        QVERIFY(stages[0].layers == std::pair(0, 3));
        QVERIFY(stages[1].layers == std::pair(4, 6));
        QCOMPARE(stages[1].firstRank, 2);
        QVERIFY(factOf(tag, "pipeline stages").find("layers 4") != std::string::npos);
        // Said once, as the family words it (the JSON badge was listed as a second, raw fact).
        QCOMPARE(std::count_if(
                     tag.facts.begin(), tag.facts.end(),
                     [](const layout::Fact& f) { return f.label.find("pipeline") != std::string::npos; }),
                 1);
        const layout::ShardingLayout map = layout::shardingLayout(tag);
        QCOMPARE(map.mode, layout::ShardingLayout::Mode::Lanes);
        QCOMPARE(map.ranks, 4);
        for (const auto& w : tag.warnings)
            QVERIFY2(w.find("not consolidated") == std::string::npos, w.c_str());

        const auto tied = open("pipe_tied_zero1_fp32_w2_pp2");
        const auto isTied = [](const layout::Parameter& p) { return p.name == "tied_modules.embed.weight"; };
        QCOMPARE(std::count_if(tied->params.begin(), tied->params.end(), isTied), 1);
        // stage 0 = the tied embedding (named by key, not number), a Linear and a GELU: layers 0-2,
        // not "1-1"; stage 1 from layer 3
        const auto& tiedStages = tied->deepspeed->pipelineStages;
        QVERIFY(tiedStages.at(0).layers == std::pair(0, 2));
        QCOMPARE(tiedStages.at(1).layers->first, 3);
        QVERIFY(!find(*tied, "0.weight") && !find(*tied, "5.weight"));
    }

    // MoE: every expert under its global id, each on the ranks of its expert-data-parallel group.
    void moeModel()
    {
        const auto in = open("moe_zero2_fp32_w4_ep2");
        const layout::Tag& tag = *in;
        QCOMPARE(tag.worldSize, 4);
        const std::string e = "moe.deepspeed_moe.experts.deepspeed_experts.";
        // ep rank = rank % 2; an ep rank's two experts (1616 elements) are 808 per rank of its
        // expert-data-parallel pair: expert 0 on rank 0, 1 on rank 2 (ep rank 0), 2 on 1, 3 on 3
        QCOMPARE(ranksOf(*find(tag, e + "0.0.weight")), (std::set<int>{0}));
        QCOMPARE(ranksOf(*find(tag, e + "1.0.weight")), (std::set<int>{2}));
        QCOMPARE(ranksOf(*find(tag, e + "2.2.bias")), (std::set<int>{1}));
        QCOMPARE(ranksOf(*find(tag, e + "3.2.bias")), (std::set<int>{3}));
        // the non-expert group over all 4 ranks, 390 each: embed.weight's 592 on ranks 0 and 1
        QCOMPARE(ranksOf(*find(tag, "embed.weight")), (std::set<int>{0, 1}));
        QCOMPARE(tag.deepspeed->experts->expertFiles, size_t(4));
        QVERIFY(factOf(tag, "experts").find("4") != std::string::npos);
        QCOMPARE(std::count_if(tag.facts.begin(), tag.facts.end(),
                               [](const layout::Fact& f) { return f.label == "experts"; }),
                 1);
        QVERIFY(!tag.convertsToUniversal);
        QCOMPARE(layout::shardingLayout(tag).ranks, 4);
    }

    // What cannot be joined exactly is refused, naming what is missing, never guessed.
    void damagedIsRefused()
    {
        QTemporaryDir dir;
        const fs::path root = fs::path(dir.path().toStdString());
        const std::string pipe = withoutFile(root, "pipe_zero1_fp32_w2_pp2", "mp_rank_01_model_states.pt");
        QVERIFY2(pipe.find("pipeline stage 1 is missing") != std::string::npos, pipe.c_str());
        const std::string moe =
            withoutFile(root, "moe_zero2_fp32_w2_ep2", "layer_0_expert_3_mp_rank_00_model_states.pt");
        QVERIFY2(moe.find("deepspeed_experts.3.") != std::string::npos, moe.c_str());
    }

    // Issue 36 #5. FP16_UnfusedOptimizer's masters name no parameter; where the order of the
    // groups cannot say whose each is (a shape in two groups, a frozen parameter of a trained
    // one's shape), each master is matched to the module parameter it rounds to (DeepSpeed copies
    // it there after every step). The edits of tests/data/deepspeed-layouts-edits (a master moved
    // to the other group, a frozen bias of the trained ones' shape) were refused before; now
    // their export is the tag's masters, as DeepSpeed's engine held them.
    void zeroStage0MastersArePlacedByValue_data()
    {
        QTest::addColumn<QString>("dir");
        QTest::addColumn<QString>("changed"); // the module entry the edit changed, "" if none
        const std::string edits = testutil::dataDir() + "/deepspeed-layouts-edits/";
        QTest::newRow("shape in two groups")
            << QString::fromStdString(edits + "zero0_shape_in_two_groups") << QString();
        QTest::newRow("frozen shares shape")
            << QString::fromStdString(edits + "zero0_frozen_shares_shape") << QStringLiteral("frozen.bias");
    }

    void zeroStage0MastersArePlacedByValue()
    {
        QFETCH(QString, dir);
        QFETCH(QString, changed);
        const std::string d = dir.toStdString();
        const layout::Tag tag = layout::openDeepSpeedTag(d, "global_step4", false);
        QVERIFY2(tag.notExportable.empty(), tag.notExportable.c_str());
        QVERIFY(tag.warnings.empty());
        QTemporaryDir out;
        ops::CancelToken cancel;
        ops::consolidate(d, out.path().toStdString(), {}, {}, cancel);
        const auto got = readSafetensors(safetensorsIn(out.path().toStdString()));
        const auto want = readSafetensors({layouts() + "/expected/zero0_bf16_w2/global_step4.safetensors"});
        QCOMPARE(got.size(), want.size());
        for (const auto& [n, w] : want) {
            QVERIFY2(got.count(n), ("missing " + n).c_str());
            QVERIFY2(got.at(n).dtype == w.dtype, n.c_str());
            if (n == changed.toStdString()) continue; // the edit's own shape and values
            QVERIFY2(got.at(n).shape == w.shape, n.c_str());
            QVERIFY2(got.at(n).bytes == w.bytes, (n + ": values differ").c_str());
        }
    }

    // ... and where even the values cannot say (two LayerNorms stepped by a learning rate too
    // small to move their bf16 weights: alike in the module, different masters), the model is
    // the module's own bf16 weights, exported as held, with a warning naming them: never "0
    // tensors", never a guess. Made by real DeepSpeed (make_ds_layouts_fixtures.py).
    void zeroStage0AlikeParametersExportTheModule()
    {
        const std::string c = "zero0_bf16_w2_groups_alike";
        const auto in = open(c.c_str());
        const layout::Tag& tag = *in;
        QVERIFY(tag.notExportable.empty());
        QCOMPARE(tag.warnings.size(), size_t(1));
        const std::string& w = tag.warnings.front();
        for (const char* said :
             {"mp_rank_00_model_states.pt", "'norm.weight', 'norm2.weight'", "not exported"})
            QVERIFY2(w.find(said) != std::string::npos, w.c_str());
        QVERIFY(!tag.exportDtype);
        QTemporaryDir out;
        ops::CancelToken cancel;
        ops::ConsolidateOptions opt;
        opt.tag = "global_step4";
        const auto r = ops::consolidate(layouts() + "/" + c, out.path().toStdString(), opt, {}, cancel);
        QVERIFY(!r.warnings.empty());
        const auto got = readSafetensors(safetensorsIn(out.path().toStdString()));
        const auto want =
            readSafetensors({layouts() + "/expected/" + c + "/global_step4.module.safetensors"});
        QCOMPARE(got.size(), want.size());
        for (const auto& [n, h] : want) {
            QVERIFY2(got.count(n), ("missing " + n).c_str());
            QVERIFY2(got.at(n).dtype == h.dtype, (n + ": " + got.at(n).dtype + " vs " + h.dtype).c_str());
            QVERIFY2(got.at(n).bytes == h.bytes, (n + ": values differ").c_str());
        }
    }

private:
    // The error opening a copy of the case's global_step2 without `file` ("" if it opened).
    static std::string withoutFile(const fs::path& root, const std::string& name, const std::string& file)
    {
        fs::copy(layouts() + "/" + name + "/global_step2", root / name);
        fs::remove(root / name / file);
        try {
            layout::openDeepSpeedTag((root / name).string(), "global_step2", false);
        } catch (const Error& e) {
            return e.what();
        }
        return {};
    }
};

QTEST_APPLESS_MAIN(TestDeepSpeedLayouts)
#include "tst_deepspeed_layouts.moc"
