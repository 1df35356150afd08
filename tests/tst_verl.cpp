// verl's FSDP checkpoints (issue 40) made by verl 0.9.1's FSDPCheckpointManager on CPU
// (tools/fixtures/make_verl_fixtures.py): FSDP1, FSDP2 and HSDP (a 2-D mesh). The DTensors'
// placements and mesh are read from their pickled specs, every saved parameter is there with its
// global shape, the export equals verl.model_merger's output bit for bit when cast as it casts
// (bf16) and the fp32 truth otherwise, and FSDP2's moments belong to their parameters.
#include "testutil.h"

#include "layout/family.h"
#include "ops/consolidate.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <QTemporaryDir>
#include <filesystem>
#include <fstream>
#include <set>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string verlDir()
{
    return testutil::dataDir() + "/verl";
}

std::map<std::string, std::string> exported(const std::string& dir)
{
    std::map<std::string, std::string> out;
    const auto f = safetensors::SafetensorsFile::open(dir + "/model.safetensors");
    for (const auto& t : f->tensors()) {
        const auto b = f->bytes(t);
        out[t.name] = testutil::sha256Hex(b.data(), b.size());
    }
    return out;
}

const layout::Parameter* param(const layout::Tag& t, const std::string& name)
{
    for (const auto& p : t.params)
        if (p.name == name) return &p;
    return nullptr;
}

} // namespace

class TestVerl : public QObject
{
    Q_OBJECT

private slots:
    void cases_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : {"fsdp1_w2", "fsdp2_w2", "hsdp_fsdp1_w4", "actor_critic_fsdp2_w2"})
            QTest::newRow(r) << QString(r);
    }

    // The run's steps are its tags, the tracked one latest; every saved parameter under its name with
    // its global shape and dtype; the mesh and placements as facts.
    void opens_data() { cases_data(); }
    void opens()
    {
        QFETCH(QString, run);
        const std::string dir = verlDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.family, std::string("verl"));
        QCOMPARE(opened->model.tags.size(), expect["steps"].size());
        const layout::Tag& tag = opened->chooseTag("");
        const std::string tracked = expect["latest_checkpointed_iteration"]; // as the file holds it
        QCOMPARE(tag.name, "global_step_" + tracked);
        QCOMPARE(tag.globalSteps, std::stoll(tracked));
        const auto& step = expect["steps"][tag.name];
        size_t n = 0;
        for (const auto& [key, ranks] : step["saved_keys"].items()) {
            const auto& r0 = ranks["rank0"];
            const layout::Parameter* p = param(tag, key);
            QVERIFY2(p, key.c_str());
            QCOMPARE(p->shape, r0["global_shape"].get<std::vector<int64_t>>());
            QCOMPARE(std::string(torch::name(p->dtype)), r0["dtype"].get<std::string>());
            ++n;
        }
        QCOMPARE(tag.params.size(), n);
        const auto badges = testutil::badges(tag);
        QCOMPARE(badges["family"].get<std::string>(), std::string("verl"));
        const std::string placements = badges["placements"].get<std::string>();
        QVERIFY2(placements.find("Shard(dim=0)") != std::string::npos, placements.c_str());
        QCOMPARE(placements.find("Replicate()") != std::string::npos, run == "hsdp_fsdp1_w4");
        QCOMPARE(tag.exportCopies.size(), size_t(4)); // config, generation config, tokenizer files
    }

    // verl.model_merger casts to bf16: --dtype bf16 gives its model.safetensors bit for bit; as
    // stored, the export is FSDP's own full state dict (fp32). Only the ddp = 0 row of an HSDP
    // mesh is read, as the merger reads it.
    void exportEqualsVerlsMerger_data() { cases_data(); }
    void exportEqualsVerlsMerger()
    {
        QFETCH(QString, run);
        const std::string dir = verlDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        QTemporaryDir out;
        ops::ConsolidateOptions bf16;
        bf16.dtype = torch::DType::BFloat16;
        ops::consolidate(dir, out.filePath("bf16").toStdString(), bf16, {}, {});
        const auto merged = exported(out.filePath("bf16").toStdString());
        QCOMPARE(merged.size(), expect["reference"]["tensors"].size());
        for (const auto& [name, t] : expect["reference"]["tensors"].items())
            QCOMPARE(merged.at(name), t["sha256"].get<std::string>());
        ops::consolidate(dir, out.filePath("fp32").toStdString(), {}, {}, {});
        const auto whole = exported(out.filePath("fp32").toStdString());
        for (const auto& [name, t] : expect["final_model_truth_fp32"].items())
            QCOMPARE(whole.at(name), t["sha256"].get<std::string>());
        QVERIFY(fs::exists(out.filePath("fp32/config.json").toStdString()));
        QVERIFY(fs::exists(out.filePath("fp32/tokenizer.json").toStdString()));
    }

    // A PPO run saves the critic beside the actor: the step's tag is the actor's (what the merger
    // exports), the critic's files and tensors listed under critic/ with their global shapes; the
    // critic folder opened alone is the value model, exported equal to FSDP's full state dict (and
    // to the merger's output as it casts) under the class its weights are, not the actor's
    // config's. The trainer's data.pt and the hf_model save are listed, not read as the model.
    void criticIsTheValueModel()
    {
        const std::string dir = verlDir() + "/actor_critic_fsdp2_w2";
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        const layout::Tag& tag = opened->chooseTag("");
        std::set<std::string> names;
        for (const auto& f : tag.files)
            names.insert(f.name);
        for (const char* f : {"critic/model_world_size_2_rank_1.pt", "critic/optim_world_size_2_rank_0.pt",
                              "data.pt", "huggingface/model.safetensors"})
            QVERIFY2(names.count(f), f);
        size_t critic = 0;
        for (const auto& p : tag.otherTensors)
            if (p.name.starts_with("critic/")) {
                const auto& want = expect["keys"]["critic"][p.name.substr(7)];
                QVERIFY2(want.is_object(), p.name.c_str());
                QCOMPARE(p.shape, want["shape"].get<std::vector<int64_t>>());
                ++critic;
            }
        QCOMPARE(critic, expect["keys"]["critic"].size());
        QVERIFY(!param(tag, "score.weight"));

        QTemporaryDir out;
        const std::string role = dir + "/global_step_4/critic";
        ops::consolidate(role, out.filePath("fp32").toStdString(), {}, {}, {});
        const auto whole = exported(out.filePath("fp32").toStdString());
        QCOMPARE(whole.size(), expect["critic"]["final_model_truth_fp32"].size());
        for (const auto& [name, t] : expect["critic"]["final_model_truth_fp32"].items())
            QCOMPARE(whole.at(name), t["sha256"].get<std::string>());
        ops::ConsolidateOptions bf16;
        bf16.dtype = torch::DType::BFloat16;
        ops::consolidate(role, out.filePath("bf16").toStdString(), bf16, {}, {});
        const auto merged = exported(out.filePath("bf16").toStdString());
        for (const auto& [name, t] : expect["critic"]["reference"]["tensors"].items())
            if (t["dtype"] == "bfloat16") QCOMPARE(merged.at(name), t["sha256"].get<std::string>());
        const auto config = testutil::readJson(out.filePath("fp32/config.json").toStdString());
        QCOMPARE(config["architectures"][0].get<std::string>(), std::string("LlamaForTokenClassification"));
        QCOMPARE(expect["critic"]["reference"]["config.json"]["architectures"][0].get<std::string>(),
                 std::string("LlamaForCausalLM")); // what verl saved, and its merger keeps
    }

    // FSDP2's optimizer state is keyed by parameter index: each parameter's exp_avg and exp_avg_sq
    // are its shape, assembled from each rank's DTensor shard (those the generator recorded).
    void fsdp2MomentsBelongToTheirParameters()
    {
        const std::string dir = verlDir() + "/fsdp2_w2";
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        const layout::Tag& tag = opened->chooseTag("");
        const auto& optim = expect["steps"][tag.name]["optimizer"];
        for (size_t i = 0; i < tag.params.size(); ++i) {
            const layout::Parameter& p = tag.params[i];
            for (const char* name : {"exp_avg", "exp_avg_sq"}) {
                const layout::OptimizerState* st = p.stateNamed(name);
                QVERIFY2(st && st->shape == p.shape, (p.name + " " + name).c_str());
                QCOMPARE(st->slices.size(), size_t(2));
                for (const layout::RankSlice& s : st->slices) {
                    const auto f = torch::TorchFile::open(s.master.at(0).file.str());
                    const torch::Tensor* t = f->tensor(s.master[0].tensorPath.str());
                    QVERIFY(t && t->dtensor);
                    const auto bytes = testutil::contiguousBytes(*f, *t);
                    const auto& want = optim["rank" + std::to_string(s.rank)]["state"][std::to_string(i)]
                                            [name]["local_sha256"];
                    QCOMPARE(testutil::sha256Hex(bytes.data(), bytes.size()), want.get<std::string>());
                }
            }
            QVERIFY(p.stateNamed("step"));
        }
        // FSDP1 saves flat slices nothing ties to a name: said, never guessed.
        const auto fsdp1 = layout::openCheckpoint(verlDir() + "/fsdp1_w2");
        const layout::Tag& t1 = fsdp1->chooseTag("");
        QVERIFY(
            std::all_of(t1.params.begin(), t1.params.end(), [](const auto& p) { return p.state.empty(); }));
        QVERIFY(!t1.warnings.empty());
    }

    // A rank's file gone, or another save's file among them: one error naming the file.
    void aMissingOrForeignRankIsOneError()
    {
        QTemporaryDir tmp;
        const fs::path run = fs::path(tmp.path().toStdString()) / "run";
        fs::copy(verlDir() + "/fsdp2_w2", run, fs::copy_options::recursive);
        const fs::path actor = run / "global_step_4" / "actor";
        fs::remove(actor / "model_world_size_2_rank_1.pt");
        QString why = testutil::errorOf([&] { layout::openTag(run.string(), "global_step_4"); });
        QVERIFY2(why.contains("model_world_size_2_rank_1.pt") && why.contains("missing"), qPrintable(why));
        fs::copy_file(run / "global_step_2" / "actor" / "model_world_size_2_rank_0.pt",
                      actor / "model_world_size_2_rank_1.pt");
        why = testutil::errorOf([&] { layout::openTag(run.string(), "global_step_4"); });
        QVERIFY2(why.contains("model_world_size_2_rank_1.pt"), qPrintable(why));
        std::ofstream(run / "latest_checkpointed_iteration.txt", std::ios::trunc) << "6";
        why = testutil::errorOf([&] { layout::openCheckpoint(run.string()); });
        QVERIFY2(why.contains("latest_checkpointed_iteration.txt") && why.contains("global_step_6"),
                 qPrintable(why));
    }
};

QTEST_APPLESS_MAIN(TestVerl)
#include "tst_verl.moc"
