// PyTorch Lightning checkpoints (issue 40) made by lightning 2.6.6 on CPU
// (tools/fixtures/make_lightning_fixtures.py): ModelCheckpoint folders of single .ckpt files (the
// net under `self.model`, and submodules as direct attributes in bf16 with SGD), and of the
// DeepSpeed (ZeRO-2, ZeRO-3) and FSDP strategies' .ckpt folders. Every saved tensor is listed,
// the optimizer's moments belong to their parameters, the facts are the checkpoint's, and the
// export equals the model Lightning's own tools give (the state dict; for DeepSpeed,
// convert_zero_checkpoint_to_fp32_state_dict; for FSDP, dcp_to_torch_save).
#include "testutil.h"

#include "layout/family.h"
#include "ops/consolidate.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <QTemporaryDir>
#include <filesystem>
#include <set>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string lightningDir()
{
    return testutil::dataDir() + "/lightning";
}

std::map<std::string, std::string> exported(const std::string& dir)
{
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".safetensors") {
            const auto f = safetensors::SafetensorsFile::open(e.path().string());
            for (const auto& t : f->tensors()) {
                const auto b = f->bytes(t);
                out[t.name] = testutil::sha256Hex(b.data(), b.size());
            }
        }
    return out;
}

// The reference's names as the family gives them: the single files' one attribute ("model.")
// left out, as said among the facts.
std::string named(const std::string& run, const std::string& key)
{
    return run == "single" && key.starts_with("model.") ? key.substr(6) : key;
}

} // namespace

class TestLightning : public QObject
{
    Q_OBJECT

private slots:
    void runs_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : {"single", "direct_sgd_bf16", "deepspeed_stage2", "deepspeed_stage3", "fsdp"})
            QTest::newRow(r) << QString(r);
    }

    // Each .ckpt (file or strategy folder) is a tag in training order, last.ckpt latest; the export
    // of every tag equals the reference of that checkpoint.
    void exportsEqualLightningsOwn_data() { runs_data(); }
    void exportsEqualLightningsOwn()
    {
        QFETCH(QString, run);
        const std::string dir = lightningDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.family, std::string("lightning"));
        QCOMPARE(opened->model.tags.size(), expect["reference"].size());
        QCOMPARE(opened->model.tags.back().latest, true);
        for (const auto& [tag, ref] : expect["reference"].items()) {
            const auto& tensors = ref.contains("state_dict") ? ref["state_dict"]
                                  : ref.contains("model")    ? ref["model"]
                                                             : ref;
            QTemporaryDir out;
            ops::ConsolidateOptions o;
            o.tag = tag;
            ops::consolidate(dir, out.path().toStdString(), o, {}, {});
            const auto got = exported(out.path().toStdString());
            QCOMPARE(got.size(), tensors.size());
            for (const auto& [name, t] : tensors.items()) {
                const std::string n = named(run.toStdString(), name);
                QVERIFY2(got.count(n), (tag + ": " + n).c_str());
                QCOMPARE(got.at(n), t["sha256"].get<std::string>());
            }
        }
    }

    // A single .ckpt: its facts, every saved tensor listed, and each optimizer moment under its
    // parameter (ids mapped in the order the optimizer was given the parameters), equal to the
    // tensor Lightning saved for it.
    void singleFiles_data()
    {
        QTest::addColumn<QString>("run");
        QTest::newRow("single") << QString("single");
        QTest::newRow("direct_sgd_bf16") << QString("direct_sgd_bf16");
    }
    void singleFiles()
    {
        QFETCH(QString, run);
        const std::string dir = lightningDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        for (const layout::Tag& tag : opened->model.tags) {
            const auto badges = testutil::badges(tag);
            const auto& facts = expect["facts"][tag.name];
            QCOMPARE(badges["global_step"].get<int64_t>(), facts["global_step"].get<int64_t>());
            QCOMPARE(badges["lightning_version"].get<std::string>(),
                     facts["pytorch-lightning_version"].get<std::string>());
            std::set<std::string> listed;
            for (const auto* list : {&tag.params, &tag.otherTensors})
                for (const auto& p : *list)
                    listed.insert(p.path.empty() ? p.name : p.path);
            for (const auto& p : tag.params)
                for (const auto& st : p.state)
                    listed.insert(st.slices.at(0).master.at(0).tensorPath.str());
            for (const auto& [key, k] : expect["saved_keys"][tag.name].items())
                QVERIFY2(listed.count(key), (tag.name + ": " + key).c_str());
            for (const auto& [param, states] : expect["optimizer"][tag.name].items()) {
                const std::string n = named(run.toStdString(), param);
                const auto p = std::find_if(tag.params.begin(), tag.params.end(),
                                            [&](const layout::Parameter& x) { return x.name == n; });
                QVERIFY2(p != tag.params.end(), n.c_str());
                for (const auto& [name, s] : states.items()) {
                    if (name == "scalars") continue;
                    const layout::OptimizerState* st = p->stateNamed(name);
                    QVERIFY2(st, (n + " " + name).c_str());
                    QCOMPARE(st->shape, s["shape"].get<std::vector<int64_t>>());
                    const auto f = torch::TorchFile::open(st->slices[0].master[0].file.str());
                    const torch::Tensor* t = f->tensor(st->slices[0].master[0].tensorPath.str());
                    const auto bytes = testutil::contiguousBytes(*f, *t);
                    QCOMPARE(testutil::sha256Hex(bytes.data(), bytes.size()), s["sha256"].get<std::string>());
                }
            }
        }
    }
};

QTEST_APPLESS_MAIN(TestLightning)
#include "tst_lightning.moc"
