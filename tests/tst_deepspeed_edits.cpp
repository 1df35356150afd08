// DeepSpeed saves that DeepSpeed 0.19 does not write but users have: a real fixture with one
// file rewritten by tools/fixtures/make_edited_fixtures.py (a key missing, a dangling tie, a
// malformed shape). Each is read, or refused with an error naming the file, and whatever is
// left out is said in the tag's warnings and by `ckpt` on stderr; nothing is dropped silently.
#include "layout/deepspeed.h"
#include "ops/tensor_source.h"
#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

// A copy of the tag folder the edits started from, with that case's edited file in place of
// its namesake.
std::string editedTag(const QTemporaryDir& dir, const std::string& editCase)
{
    const std::string edits = testutil::dataDir() + "/deepspeed-edits";
    const auto manifest = testutil::readJson(edits + "/edits.json");
    const fs::path base = testutil::dataDir() + "/deepspeed/" + manifest["base"].get<std::string>();
    const std::string file = manifest["cases"][editCase]["file"];
    const fs::path tag = fs::path(dir.path().toStdString()) / editCase / base.filename();
    fs::create_directories(tag.parent_path());
    fs::copy(base, tag);
    fs::copy_file(edits + "/" + editCase + "/" + file, tag / file, fs::copy_options::overwrite_existing);
    return tag.string();
}

bool anyContains(const std::vector<std::string>& v, const std::string& what)
{
    return std::any_of(v.begin(), v.end(),
                       [&](const std::string& s) { return s.find(what) != std::string::npos; });
}

QByteArray ckptStderr(const QStringList& args, int& code)
{
    QProcess p;
    p.start(CKPT_BINARY, args);
    p.waitForFinished(120000);
    code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    return p.readAllStandardError();
}

} // namespace

class TestDeepSpeedEdits : public QObject
{
    Q_OBJECT
private slots:
    // No global_steps in the (only) model file: the default stood for "missing" on one side of
    // the same-save check and for something else on the other, so the file disagreed with itself.
    void missingGlobalStepsIsNotADifferentSave()
    {
        QTemporaryDir dir;
        const std::string tagDir = editedTag(dir, "no_global_steps");
        layout::Tag tag;
        try {
            tag = layout::openDeepSpeedTag(tagDir, "global_step4", true);
        } catch (const Error& e) {
            QFAIL(e.what());
        }
        QCOMPARE(tag.globalSteps, int64_t(-1));
        QCOMPARE(tag.deepspeed->zeroStage, 2);
        QVERIFY(!tag.params.empty());
        // and the consolidated model is there, same as the unedited save's
        const auto edited = ops::checkpointTensors(tagDir, {});
        const auto original = ops::checkpointTensors(testutil::dataDir() + "/deepspeed/zero2_fp32_w1", {});
        QCOMPARE(edited.tensors.size(), original.tensors.size());
    }

    void danglingTieIsAWarning()
    {
        QTemporaryDir dir;
        const std::string tagDir = editedTag(dir, "tie_target_missing");
        const layout::Tag tag = layout::openDeepSpeedTag(tagDir, "global_step4", true);
        QVERIFY(std::none_of(tag.params.begin(), tag.params.end(),
                             [](const layout::Parameter& p) { return p.name == "head.weight"; }));
        QVERIFY2(anyContains(tag.warnings, "tied parameter 'head.weight' is an alias of 'missing.weight'"),
                 tag.warnings.empty() ? "no warning" : tag.warnings.back().c_str());
        QVERIFY(anyContains(ops::checkpointTensors(tagDir, {}).warnings, "'missing.weight'"));
        int code = 0;
        const QByteArray err = ckptStderr({"inspect", QString::fromStdString(tagDir)}, code);
        QCOMPARE(code, 0);
        QVERIFY2(err.contains(("ckpt: warning: " + tagDir + ": ").c_str()) &&
                     err.contains("'missing.weight'"),
                 err.constData());
    }

    void bufferMissingFromModuleIsAWarning()
    {
        QTemporaryDir dir;
        const std::string tagDir = editedTag(dir, "buffer_missing_from_module");
        const layout::Tag tag = layout::openDeepSpeedTag(tagDir, "global_step4", true);
        QVERIFY(std::none_of(tag.params.begin(), tag.params.end(),
                             [](const layout::Parameter& p) { return p.name == "scale"; }));
        QVERIFY(std::any_of(tag.params.begin(), tag.params.end(),
                            [](const layout::Parameter& p) { return p.name == "counter"; }));
        QVERIFY2(anyContains(tag.warnings, "buffer 'scale'"),
                 tag.warnings.empty() ? "no warning" : tag.warnings.back().c_str());
        int code = 0;
        const QByteArray err = ckptStderr({"stats", "-q", QString::fromStdString(tagDir)}, code);
        QCOMPARE(code, 0);
        QVERIFY2(err.contains(("ckpt: warning: " + tagDir + ": ").c_str()) && err.contains("buffer 'scale'"),
                 err.constData());
    }

    void malformedFrozenShapeIsAnError()
    {
        QTemporaryDir dir;
        const std::string tagDir = editedTag(dir, "frozen_shape_malformed");
        try {
            layout::openDeepSpeedTag(tagDir, "global_step4", true);
            QFAIL("a frozen parameter without a shape was read as a scalar");
        } catch (const Error& e) {
            QCOMPARE(e.file(), (fs::path(tagDir) / "mp_rank_00_model_states.pt").string());
            QVERIFY2(std::string(e.what()).find("frozen_param_shapes entry 'frozen.weight' is not a shape") !=
                         std::string::npos,
                     e.what());
        }
    }

    // A file listed in the tag folder whose size cannot be read (it vanished meanwhile) is an
    // error naming it, not a size of 0 or 16 EiB.
    void unreadableFileSizeIsAnError()
    {
        const std::string real =
            testutil::dataDir() + "/deepspeed/zero2_fp32_w1/global_step4/mp_rank_00_model_states.pt";
        const layout::RankFile f = layout::classifyTagFile(real);
        QCOMPARE(f.role, layout::FileRole::ModelStates);
        QCOMPARE(f.size, uint64_t(fs::file_size(real)));
        QTemporaryDir dir;
        const std::string gone = dir.filePath("mp_rank_00_model_states.pt").toStdString();
        try {
            layout::classifyTagFile(gone);
            QFAIL("no error for a file whose size cannot be read");
        } catch (const Error& e) {
            QCOMPARE(e.file(), gone);
            QVERIFY2(std::string(e.what()).find("size") != std::string::npos, e.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestDeepSpeedEdits)
#include "tst_deepspeed_edits.moc"
