// ckpt export to safetensors: every exportable fixture, values equal to PyTorch's, aliases
// recorded, unsupported dtypes refused, nothing left behind on failure or cancel.
#include "layout/family.h"
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/export.h"
#include "safetensors/safetensors_file.h"
#include "testutil.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

using namespace ckpt;

class TestExport : public QObject
{
    Q_OBJECT
private slots:
    void fixtures_data() { testutil::addExpectationRows(); }

    void fixtures()
    {
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        const std::string src =
            QFileInfo(expect).dir().filePath(QString::fromStdString(exp["file"])).toStdString();
        QTemporaryDir dir;
        const std::string out = dir.filePath("out.safetensors").toStdString();
        ops::CancelToken cancel;
        ops::ExportOptions opt;
        if (!exp["exportable"].get<bool>()) {
            try {
                ops::exportFileToSafetensors(src, out, opt, {}, cancel);
                QFAIL("export of unsupported dtypes should fail");
            } catch (const ops::UnsupportedTensors& e) { // the CLI adds its flag (tst_cli)
                QVERIFY(std::string(e.what()).find("cannot be exported to safetensors") != std::string::npos);
                QVERIFY(std::string(e.what()).find(src) != std::string::npos);
            }
            QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
            opt.skipUnsupported = true;
        }
        const auto r = ops::exportFileToSafetensors(src, out, opt, {}, cancel);
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{"out.safetensors"});

        const auto st = safetensors::SafetensorsFile::open(out);
        QCOMPARE(st->metadata().at("format"), std::string("pt"));
        std::map<std::string, const safetensors::TensorInfo*> byName;
        for (const auto& t : st->tensors())
            byName[t.name] = &t;
        size_t checked = 0;
        for (const auto& et : exp["tensors"]) {
            std::string name = et["path"];
            if (!byName.count(name) && st->metadata().count(name)) name = st->metadata().at(name); // alias
            if (!byName.count(name)) {
                QVERIFY2(!exp["exportable"].get<bool>(), ("missing " + name).c_str());
                continue;
            }
            const auto* t = byName[name];
            QCOMPARE(std::string(torch::name(t->dtype)), et["dtype"].get<std::string>());
            QCOMPARE(t->shape, et["shape"].get<std::vector<int64_t>>());
            const auto b = st->bytes(*t);
            QCOMPARE(testutil::sha256Hex(b.data(), b.size()), et["sha256"].get<std::string>());
            ++checked;
        }
        QVERIFY(checked > 0 || !exp["exportable"].get<bool>());
        QCOMPARE(r.tensors, st->tensors().size());
    }

    // A run whose latest tag lost a rank file: opened leniently (as the window and Python open it)
    // that tag is kept, marked unreadable, with no parameters. Every operation given it refuses
    // with its reason, naming the tag's folder once, and writes nothing (issue 36, items 1-2: the
    // window wrote a 40-byte model.safetensors of 0 tensors and said "Wrote 1 file(s)"). The
    // readable tag beside it still exports.
    void anUnreadableTagIsRefusedByEveryOperation()
    {
        namespace fs = std::filesystem;
        QTemporaryDir dir;
        const fs::path run = testutil::runWithAnUnreadableLatestTag(dir.path().toStdString());
        const auto opened = layout::openCheckpoint(run.string());
        const layout::OpenedTag tag = layout::tagOf(opened, "global_step4");
        QVERIFY(!tag->unreadable.empty());
        QVERIFY(tag->params.empty());
        const std::string out = dir.filePath("out").toStdString();
        ops::CancelToken cancel;
        // DeepSpeed's loader says the same of it: the save did not complete on every rank.
        const QString why = "optimizer states of rank 1 are missing";
        const QString e = testutil::errorOf([&] { ops::consolidate(tag, out, {}, {}, cancel); });
        QVERIFY2(e.contains(why) && e.count(QString::fromStdString((run / "global_step4").string())) == 1,
                 qPrintable(e));
        QVERIFY(!fs::exists(out));
        ops::AnalyzeOptions stats;
        const QString s =
            testutil::errorOf([&] { ops::computeStats(tag, stats, gpu::cpuBackend(), {}, cancel); });
        QVERIFY2(s.contains(why), qPrintable(s));
        const layout::OpenedTag good = layout::tagOf(opened, "global_step2");
        ops::DiffOptions diff;
        const QString d =
            testutil::errorOf([&] { ops::computeDiff(good, tag, diff, gpu::cpuBackend(), {}, cancel); });
        QVERIFY2(d.contains(why), qPrintable(d));
        QVERIFY(ops::consolidate(good, out, {}, {}, cancel).tensors > 0);
    }

    // A tag with no model tensors is no model: refused, not written as an empty file.
    void aTagWithNoTensorsIsNoModel()
    {
        const auto opened = layout::openCheckpoint(testutil::dataDir() + "/deepspeed/zero2_bf16_w2");
        layout::OpenedTag tag = layout::tagOf(opened, "global_step2");
        ops::ConsolidateOptions opt;
        opt.ignore = {"*"};
        QTemporaryDir dir;
        const std::string out = dir.filePath("out").toStdString();
        ops::CancelToken cancel;
        const QString e = testutil::errorOf([&] { ops::consolidate(tag, out, opt, {}, cancel); });
        QVERIFY2(e.contains("has no tensor to export") && e.contains("global_step2"), qPrintable(e));
        QVERIFY(!std::filesystem::exists(out));
    }

    void tiedWeightsAreEachWritten()
    {
        // Distinct tensors over one storage (tied embedding) are both written in full; the same
        // Python object reached twice is written once with an alias in the metadata.
        QTemporaryDir dir;
        const std::string out = dir.filePath("s.safetensors").toStdString();
        ops::CancelToken cancel;
        ops::exportFileToSafetensors(testutil::dataDir() + "/torch/torch-2.x/shared.pt", out, {}, {}, cancel);
        const auto st = safetensors::SafetensorsFile::open(out);
        std::set<std::string> names;
        for (const auto& t : st->tensors())
            names.insert(t.name);
        QVERIFY(names.count("embed.weight") && names.count("lm_head.weight") && names.count("first_half"));
        QVERIFY(names.count("same_object/0") && !names.count("same_object/1"));
        QCOMPARE(st->metadata().at("same_object/1"), std::string("same_object/0"));
    }

    void cancelLeavesNothing()
    {
        QTemporaryDir dir;
        const std::string out = dir.filePath("c.safetensors").toStdString();
        ops::CancelToken cancel;
        int calls = 0;
        // Cancel from the progress callback after the first chunk, as the GUI's button would.
        auto progress = [&](const ops::Progress&) {
            if (++calls == 1) cancel.cancel();
        };
        QVERIFY_THROWS_EXCEPTION(
            Cancelled, ops::exportFileToSafetensors(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt",
                                                    out, {}, progress, cancel));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
    }

    // The safetensors library's own output for every dtype it has (written by
    // tools/fixtures/make_safetensors_reference.py): header key order, data order (dtype rank
    // descending, then name), alignment padding and bytes, all equal.
    void headerOrderMatchesReference()
    {
        QTemporaryDir dir;
        const std::string out = dir.filePath("o.safetensors").toStdString();
        ops::CancelToken cancel;
        ops::ExportOptions opt;
        opt.skipUnsupported = true; // complex32, complex128: the reference leaves them out too
        const auto r = ops::exportFileToSafetensors(testutil::dataDir() + "/torch/torch-2.x/dtypes.pt", out,
                                                    opt, {}, cancel);
        QCOMPARE(r.warnings.size(), size_t(2));
        auto read = [](const std::string& path) {
            QFile f(QString::fromStdString(path));
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        const QByteArray ours = read(out);
        const QByteArray reference =
            read(testutil::dataDir() + "/torch/torch-2.x/dtypes.reference.safetensors");
        QVERIFY(reference.size() > 1000);
        QCOMPARE(ours.size(), reference.size());
        const auto header = [](const QByteArray& b) {
            uint64_t n = 0;
            std::memcpy(&n, b.constData(), 8);
            return b.mid(8, qsizetype(n));
        };
        QCOMPARE(header(ours), header(reference));
        QVERIFY(ours == reference);
    }
};

QTEST_APPLESS_MAIN(TestExport)
#include "tst_export.moc"
