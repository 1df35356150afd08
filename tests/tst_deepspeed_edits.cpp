// DeepSpeed saves that DeepSpeed 0.19 does not write but users have: a real fixture with one
// file rewritten by tools/fixtures/make_edited_fixtures.py (a key missing, a dangling tie, a
// malformed shape). Each is read, or refused with an error naming the file, and whatever is
// left out is said in the tag's warnings and by `ckpt` on stderr; nothing is dropped silently.
#include "layout/deepspeed.h"
#include "ops/tensor_source.h"
#include "testutil.h"

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
        QCOMPARE(tag.zeroStage, 2);
        QVERIFY(!tag.params.empty());
        // and the consolidated model is there, same as the unedited save's
        const auto edited = ops::checkpointTensors(tagDir, {});
        const auto original = ops::checkpointTensors(testutil::dataDir() + "/deepspeed/zero2_fp32_w1", {});
        QCOMPARE(edited.tensors.size(), original.tensors.size());
    }

};

QTEST_APPLESS_MAIN(TestDeepSpeedEdits)
#include "tst_deepspeed_edits.moc"
