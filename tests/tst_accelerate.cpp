// Accelerate's save_state folders (issue 40) made by accelerate 1.15.0 on CPU
// (tools/fixtures/make_accelerate_fixtures.py): a project's checkpoints/checkpoint_N run, two
// prepared models, pytorch_model.bin, FSDP's DCP folders. The export is the model accelerate
// saved (for FSDP, what merge_fsdp_weights writes); the optimizer's moments belong to their
// parameters where the save says which they are, and are listed by id, said, where it does not.
#include "testutil.h"

#include "layout/family.h"
#include "ops/consolidate.h"
#include "safetensors/safetensors_file.h"

#include <QTemporaryDir>
#include <filesystem>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string accelerateDir()
{
    return testutil::dataDir() + "/accelerate";
}

std::map<std::string, std::string> exported(const std::string& file)
{
    std::map<std::string, std::string> out;
    const auto f = safetensors::SafetensorsFile::open(file);
    for (const auto& t : f->tensors()) {
        const auto b = f->bytes(t);
        out[t.name] = testutil::sha256Hex(b.data(), b.size());
    }
    return out;
}

} // namespace

class TestAccelerate : public QObject
{
    Q_OBJECT

private slots:
    void exportIsTheSavedModel_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : {"plain", "two_models", "safe_false", "fsdp"})
            QTest::newRow(r) << QString(r);
    }
    void exportIsTheSavedModel()
    {
        QFETCH(QString, run);
        const std::string dir = accelerateDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.family, std::string("accelerate"));
        QCOMPARE(opened->model.tags.size(), expect["reference"].size());
        for (const auto& [where, ref] : expect["reference"].items()) {
            const std::string tag =
                where == "." ? opened->model.tags.front().name : fs::path(where).filename().string();
            const auto& files = ref.contains("files") ? ref["files"] : ref;
            const auto& model =
                files.contains("model.safetensors") ? files["model.safetensors"] : files["pytorch_model.bin"];
            QTemporaryDir out;
            ops::ConsolidateOptions o;
            o.tag = tag;
            ops::consolidate(dir, out.path().toStdString(), o, {}, {});
            const auto got = exported(out.path().toStdString() + "/model.safetensors");
            QCOMPARE(got.size(), model.size());
            for (const auto& [name, t] : model.items())
                QCOMPARE(got.at(name), t["sha256"].get<std::string>());
        }
        QVERIFY(opened->model.tags.back().latest);
    }

    // pytorch_model.bin keeps the module's order and FSDP's optimizer is keyed by name: moments on
    // their parameters. A safetensors model file keeps neither: listed by id, and said.
    void momentsWhereTheSaveSaysWhose()
    {
        for (const char* run : {"safe_false", "fsdp"}) {
            const auto opened = layout::openCheckpoint(accelerateDir() + "/" + run);
            const layout::Tag& tag = opened->model.tags.front();
            for (const auto& p : tag.params)
                QVERIFY2(p.stateNamed("exp_avg") && p.stateNamed("exp_avg")->shape == p.shape,
                         (std::string(run) + " " + p.name).c_str());
        }
        const auto plain = layout::openCheckpoint(accelerateDir() + "/plain");
        const layout::Tag& tag = plain->model.tags.back();
        QVERIFY(
            std::all_of(tag.params.begin(), tag.params.end(), [](const auto& p) { return p.state.empty(); }));
        QCOMPARE(tag.warnings.size(), size_t(1));
        QVERIFY(std::any_of(tag.otherTensors.begin(), tag.otherTensors.end(),
                            [](const auto& p) { return p.name == "optimizer/state/0/exp_avg"; }));
        const auto two = layout::openCheckpoint(accelerateDir() + "/two_models");
        const auto& others = two->model.tags.front().otherTensors;
        QVERIFY(std::any_of(others.begin(), others.end(),
                            [](const auto& p) { return p.name.starts_with("model_1/"); }));
    }
};

QTEST_APPLESS_MAIN(TestAccelerate)
#include "tst_accelerate.moc"
