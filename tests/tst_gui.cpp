// The window, offscreen: models under QAbstractItemModelTester; open a real DeepSpeed fixture,
// expand, filter, select a parameter and check its partition table; every fixture renders its
// tree; export through the dialog and compare with what zero_to_fp32 wrote; cancel midway, close
// the dialog or the window while it runs, and find nothing left; the statistics of a node are
// never shown under another; opening reports progress and stops on Cancel; the event loop keeps
// running (no hang) while loading and exporting; the zh_CN translation is complete.
#include "details_pane.h"
#include "export_dialog.h"
#include "io/location.h"
#include "io/mapped_file.h"
#include "io/output.h"
#include "io/remote/aws_config.h"
#include "io/zip_reader.h"
#include "job_manager.h"
#include "large_model.h"
#include "layout/deepspeed.h"
#include "layout/family.h"
#include "main_window.h"
#include "name_delegate.h"
#include "open_url_dialog.h"
#include "ops/tensor_source.h"
#include "ops/universal.h"
#include "param_names.h"
#include "preferences_dialog.h"
#include "slim_dialog.h"
#include "snapshot.h"
#include "stall_meter.h"
#include "testutil.h"
#include "torch/torch_writer.h"
#include "tree_model.h"
#include "verify_dialog.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <QAbstractItemModelTester>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QThread>
#include <QThreadPool>
#include <QTimer>
#include <QTranslator>
#include <QTreeView>
#include <QXmlStreamReader>
#include <filesystem>
#include <future>
#include <map>
#include <tuple>

using namespace ckpt;

namespace {

// Every node below `root` (and it), depth first.
std::vector<const app::Node*> allNodes(const app::Node* root)
{
    std::vector<const app::Node*> out, stack{root};
    while (!stack.empty()) {
        const app::Node* n = stack.back();
        stack.pop_back();
        out.push_back(n);
        for (const auto& c : n->children)
            stack.push_back(c.get());
    }
    return out;
}

using testutil::StallMeter;

std::string fixture(const char* name)
{
    return testutil::dataDir() + "/deepspeed/" + name;
}

// The optimizer-state nodes of a snapshot (children of parameters), by path.
void optimizerStates(const app::Node& n, std::vector<const app::Node*>& out)
{
    if (n.kindText == "optimizer state") out.push_back(&n);
    for (const auto& c : n.children)
        optimizerStates(*c, out);
}

// The rows under `parent` of a proxy, recursively, with their names.
void visibleRows(const QAbstractItemModel& m, const QModelIndex& parent, QList<QModelIndex>& out)
{
    for (int r = 0; r < m.rowCount(parent); ++r) {
        const QModelIndex i = m.index(r, 0, parent);
        out << i;
        visibleRows(m, i, out);
    }
}

// Whether every pixel of an image is the same: nothing was drawn.
bool blank(const QImage& image)
{
    const QImage img = image.convertToFormat(QImage::Format_ARGB32);
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            if (img.pixel(x, y) != img.pixel(0, 0)) return false;
    return true;
}

// The .bin export in `out` holds what zero_to_fp32 wrote for `tag` of the fixture (`key`: "bin",
// "bin_sharded"): the same files and every tensor's sha256.
void expectZeroToFp32(const QString& out, const char* fixtureName, const char* tag, const char* key)
{
    const auto exp = testutil::readJson(fixture(fixtureName) + ".expect.json");
    const auto& ref = exp["tags"][tag][key];
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(out.toStdString()))
        files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    QCOMPARE(files, ref["files"].get<std::vector<std::string>>());
    for (const auto& t : ref["tensors"]) {
        const auto f = torch::TorchFile::open(
            QDir(out).filePath(QString::fromStdString(t["file"].get<std::string>())).toStdString());
        const torch::Tensor* tt = f->tensor(t["name"].get<std::string>());
        QVERIFY(tt);
        const auto b = testutil::contiguousBytes(*f, *tt);
        QCOMPARE(testutil::sha256Hex(b.data(), b.size()), t["sha256"].get<std::string>());
    }
}

// Exports through the dialog into `out` as `format`; whether it succeeded (a failure is the test's).
bool exportThroughDialog(app::ExportDialog* d, const QString& out, const QString& format)
{
    d->setOutputFolder(out);
    d->setFormat(format);
    QSignalSpy done(d, &app::ExportDialog::finished);
    d->start();
    if (!done.wait(60000)) return false;
    if (!d->outcome().ok) qWarning("export failed: %s", qPrintable(d->outcome().message));
    return d->outcome().ok;
}

// Exports through the dialog as .bin into a fresh folder: what zero_to_fp32 wrote for `tag`.
void exportBinMatchesZeroToFp32(app::ExportDialog* d, const char* fixtureName, const char* tag)
{
    QTemporaryDir out;
    QVERIFY(exportThroughDialog(d, out.path(), QStringLiteral("bin")));
    expectZeroToFp32(out.path(), fixtureName, tag, "bin");
}

// Opens `path` in the window and waits for it.
bool openAndWait(app::MainWindow& w, const QString& path)
{
    QSignalSpy loaded(&w, &app::MainWindow::loaded);
    w.open(path);
    return loaded.wait(60000) && loaded.first().first().toBool();
}

// Every worker the jobs started has stopped, and what they posted has been delivered.
void settleWorkers()
{
    QThreadPool::globalInstance()->waitForDone();
    QCoreApplication::processEvents();
    QCoreApplication::processEvents();
}

} // namespace

class TestGui : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); } // keep the user's recent list alone

    void modelsPassTheTester()
    {
        app::TreeModel model;
        QAbstractItemModelTester t1(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        app::FilterProxy proxy;
        proxy.setSourceModel(&model);
        QAbstractItemModelTester t2(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setSnapshot(app::loadSnapshot(fixture("zero3_bf16_w4_subgroups")));
        proxy.setPattern(QStringLiteral("weight"), false);
        proxy.sort(app::TreeModel::Bytes, Qt::DescendingOrder);
        proxy.setPattern(QStringLiteral("^fc[12]\\.bias$"), true);
        QVERIFY(proxy.rowCount() == 1);
        model.setSnapshot(app::loadSnapshot(testutil::dataDir() + "/torch/torch-2.x/nested.pt"));
        proxy.setPattern(QString(), false);
        QVERIFY(model.rowCount(model.index(0, 0)) > 5);
    }

    void openFilterSelect()
    {
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        StallMeter stall;
        w.open(QString::fromStdString(fixture("zero2_bf16_w4")));
        QVERIFY(loaded.wait(30000));
        QCOMPARE(loaded.first().first().toBool(), true);
        CKPT_VERIFY_RESPONSIVE(stall);
        qInfo("longest event-loop stall while opening: %lld ms", stall.longest());
        QCOMPARE(app::loadsOnGuiThread(), 0);

        w.tree()->expandAll();
        w.filterBox()->setText(QStringLiteral("fc2*"));
        const QModelIndex tag = w.proxy()->index(0, 0, w.proxy()->index(0, 0));
        QVERIFY(tag.isValid());
        // Every visible row matches the filter or leads to a row that does, and no matching node
        // of the model is hidden.
        QList<QModelIndex> rows;
        visibleRows(*w.proxy(), {}, rows);
        auto matches = [](const QModelIndex& i) {
            return i.data().toString().contains(QLatin1String("fc2"), Qt::CaseInsensitive);
        };
        int shownMatches = 0;
        for (const QModelIndex& i : rows) {
            if (matches(i)) {
                ++shownMatches;
                continue;
            }
            QList<QModelIndex> below;
            visibleRows(*w.proxy(), i, below);
            QVERIFY2(std::any_of(below.begin(), below.end(), matches), qPrintable(i.data().toString()));
        }
        QList<QModelIndex> all;
        visibleRows(*w.model(), {}, all);
        QVERIFY(shownMatches > 0);
        QCOMPARE(shownMatches, int(std::count_if(all.begin(), all.end(), matches)));
        QVERIFY(rows.size() < all.size());
        // An invalid regular expression keeps the filter and says why where the user types.
        QVERIFY(w.filterBox()->toolTip().isEmpty());
        auto* regex = w.findChild<QCheckBox*>();
        QVERIFY(regex);
        regex->setChecked(true);
        w.filterBox()->setText(QStringLiteral("fc2\\.b"));
        QList<QModelIndex> before, kept;
        visibleRows(*w.proxy(), {}, before);
        w.filterBox()->setText(QStringLiteral("fc2(")); // an unclosed group
        QVERIFY2(w.filterBox()->toolTip().contains(QLatin1String("regular expression")),
                 qPrintable(w.filterBox()->toolTip()));
        visibleRows(*w.proxy(), {}, kept);
        QCOMPARE(kept.size(), before.size()); // still the last valid expression's rows
        w.filterBox()->setText(QStringLiteral("fc2"));
        QVERIFY(w.filterBox()->toolTip().isEmpty());
        regex->setChecked(false);
        w.filterBox()->setText(QStringLiteral("fc2*"));
        QVERIFY(w.select(QStringLiteral("global_step4/parameters/fc2.bias")));
        QTableWidget* table = w.details()->partitionTable();
        const auto opened = layout::openCheckpoint(fixture("zero2_bf16_w4"));
        const layout::Checkpoint& ck = opened->model;
        const layout::Parameter* p = nullptr;
        for (const auto& q : ck.latest()->params)
            if (q.name == "fc2.bias") p = &q;
        QVERIFY(p);
        QCOMPARE(table->rowCount(), int(p->slices.size()));
        for (int r = 0; r < table->rowCount(); ++r) {
            QCOMPARE(table->item(r, 0)->text().toInt(), p->slices[size_t(r)].rank);
            QCOMPARE(table->item(r, 2)->text().toULongLong(), p->slices[size_t(r)].paramOffset);
            QCOMPARE(table->item(r, 3)->text().toULongLong(), p->slices[size_t(r)].length);
        }
        // values and statistics come from a worker
        QSignalSpy stats(w.details(), &app::DetailsPane::statisticsReady);
        QMetaObject::invokeMethod(w.details(), [&] {
            for (auto* b : w.details()->findChildren<QPushButton*>())
                b->click();
        });
        QVERIFY(stats.wait(30000));
        QVERIFY(w.details()->statisticsText().contains(QStringLiteral("mean")));

        w.open(QStringLiteral("/nonexistent/checkpoint"));
        QVERIFY(loaded.wait(30000));
        QCOMPARE(loaded.last().first().toBool(), false);
        QVERIFY(!w.lastError().isEmpty());
    }

    void everyFixtureOpensAndRenders_data()
    {
        QTest::addColumn<QString>("path");
        for (const auto& e : std::filesystem::directory_iterator(testutil::dataDir() + "/deepspeed"))
            if (e.is_directory())
                QTest::newRow(e.path().filename().c_str()) << QString::fromStdString(e.path().string());
        for (const auto& e : testutil::torchExpectations()) {
            const std::string pt = e.substr(0, e.size() - 12) + ".pt";
            QTest::newRow(pt.substr(testutil::dataDir().size()).c_str()) << QString::fromStdString(pt);
        }
    }
    void everyFixtureOpensAndRenders()
    {
        QFETCH(QString, path);
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(path);
        QVERIFY(loaded.wait(30000));
        QVERIFY2(loaded.first().first().toBool(), qPrintable(w.lastError()));
        // The tree shows the checkpoint (or file) as its one top row, with its tags (or its
        // entries) below; the window and the tree draw something.
        QCOMPARE(w.proxy()->rowCount(), 1);
        const QModelIndex root = w.proxy()->index(0, 0);
        QCOMPARE(root.data().toString(), QFileInfo(path).fileName());
        if (QFileInfo(path).isDir()) {
            const auto opened = layout::openCheckpoint(path.toStdString());
            QCOMPARE(w.proxy()->rowCount(root), int(opened->model.tags.size()));
            for (int r = 0; r < w.proxy()->rowCount(root); ++r)
                QCOMPARE(app::TreeModel::node(w.proxy()->mapToSource(w.proxy()->index(r, 0, root)))->kind,
                         app::NodeKind::Tag);
        } else {
            QVERIFY(w.proxy()->rowCount(root) > 0);
        }
        QVERIFY(w.tree()->isVisible());
        QVERIFY(!blank(w.tree()->viewport()->grab().toImage()));
        QVERIFY(!blank(w.grab().toImage()));
    }

    // Moments kept in bf16 (tools/fixtures/make_edited_fixtures.py, case bf16_moments) were
    // shown as float32 with 4 bytes per element, whatever the file held.
    void optimizerStatesShowTheirStoredDtype()
    {
        const auto edits = testutil::readJson(testutil::dataDir() + "/deepspeed-edits/edits.json");
        const std::filesystem::path base = fixture(edits["base"].get<std::string>().c_str());
        QTemporaryDir dir;
        const std::filesystem::path tag = std::filesystem::path(dir.path().toStdString()) / base.filename();
        std::filesystem::copy(base, tag);
        const std::string file = edits["cases"]["bf16_moments"]["file"];
        std::filesystem::copy_file(testutil::dataDir() + "/deepspeed-edits/bf16_moments/" + file, tag / file,
                                   std::filesystem::copy_options::overwrite_existing);
        for (const auto& [path, dtype, size] :
             {std::tuple{tag.string(), "bfloat16", 2}, std::tuple{base.string(), "float32", 4}}) {
            // on a worker, as the window does: the GUI thread never reads files
            const auto snap = std::async(std::launch::async, [&] { return app::loadSnapshot(path); }).get();
            std::vector<const app::Node*> states;
            optimizerStates(*snap->root, states);
            QVERIFY(states.size() >= 2);
            for (const app::Node* n : states) {
                QCOMPARE(n->dtype, std::string(dtype));
                QCOMPARE(n->bytes, n->elements * uint64_t(size));
            }
        }
    }

    void largeCheckpointKeepsTheWindowResponsive()
    {
        // A synthetic file of 20,000 tensors, written by our own (verified) torch.save writer:
        // building its tree must happen on a worker; the GUI thread only adopts the snapshot.
        QTemporaryDir dir;
        const std::string path = dir.filePath("large.pt").toStdString();
        {
            std::vector<torch::OutTensor> tensors;
            for (int i = 0; i < 20000; ++i)
                tensors.push_back({"layers." + std::to_string(i / 8) + ".w" + std::to_string(i % 8),
                                   torch::DType::Float32,
                                   {4, 4},
                                   64,
                                   [](uint64_t, uint64_t n, uint8_t* d) { std::memset(d, 0, n); }});
            io::OutputTransaction tx({}, path, io::OutputTransaction::Shape::File);
            ops::CancelToken cancel;
            torch::writeTorchZip(tx.create(), tensors, {}, "archive", {}, cancel);
            tx.commit();
        }
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        StallMeter stall;
        QElapsedTimer clock;
        clock.start();
        w.open(QString::fromStdString(path));
        QVERIFY(loaded.wait(120000));
        QVERIFY(loaded.first().first().toBool());
        CKPT_VERIFY_RESPONSIVE(stall);
        qInfo("20,000-tensor file: opened in %lld ms, longest event-loop stall %lld ms", clock.elapsed(),
              stall.longest());
        QCOMPARE(app::loadsOnGuiThread(), 0);
        QCOMPARE(w.model()->rowCount(w.model()->index(0, 0)), 20000);
    }

    void exportDialogRefusesAnOutputInsideTheCheckpoint()
    {
        // The dialog makes the same check as the operation, before any worker starts.
        QTemporaryDir tmp;
        const QString ck = tmp.filePath("ck");
        QVERIFY(QDir().mkpath(ck));
        const QString src = QString::fromStdString(fixture("zero2_bf16_w2"));
        QDirIterator it(src, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString f = it.next();
            const QString dst = ck + "/" + QDir(src).relativeFilePath(f);
            QDir().mkpath(QFileInfo(dst).path());
            QVERIFY(QFile::copy(f, dst));
        }
        const QStringList before = QDir(ck).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);
        app::ExportDialog d(ck, {"global_step2", "global_step4"}, QStringLiteral("global_step4"));
        d.setOutputFolder(ck + "/global_step4/export");
        QSignalSpy done(&d, &app::ExportDialog::finished);
        d.start();
        QCOMPARE(done.size(), 1);
        QVERIFY(!d.running());
        QVERIFY(!d.outcome().ok);
        QVERIFY2(d.outcome().message.contains("lies inside the input"), qPrintable(d.outcome().message));
        QVERIFY(!QFileInfo::exists(ck + "/global_step4/export"));
        QCOMPARE(QDir(ck).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot), before);
    }

    void exportThroughTheDialog()
    {
        QTemporaryDir out;
        app::ExportDialog d(QString::fromStdString(fixture("zero3_fp32_w2")),
                            {"global_step2", "global_step4"}, QStringLiteral("global_step4"));
        d.setOutputFolder(out.path());
        d.setFormat(QStringLiteral("bin"));
        d.setMaxShardSize(QStringLiteral("2KB"));
        QSignalSpy done(&d, &app::ExportDialog::finished);
        StallMeter stall;
        d.start();
        QVERIFY(done.wait(60000));
        CKPT_VERIFY_RESPONSIVE(stall);
        qInfo("longest event-loop stall while exporting: %lld ms", stall.longest());
        QVERIFY2(d.outcome().ok, qPrintable(d.outcome().message));
        // the casts ran on a backend the job chose, as the status bar names them
        QVERIFY2(d.outcome().compute.startsWith(QLatin1String("cpu")) ||
                     d.outcome().compute.startsWith(QLatin1String("cuda")),
                 qPrintable(d.outcome().compute));
        expectZeroToFp32(out.path(), "zero3_fp32_w2", "global_step4", "bin_sharded");
    }

    // Issue 21 #1: Export starts from the tag chosen in the tree (the tag, or anything inside
    // it), says it in its title, and writes that tag; from the checkpoint, the latest.
    void exportStartsFromTheSelectedTag()
    {
        app::MainWindow w;
        w.show();
        const QString ck = QString::fromStdString(fixture("zero2_bf16_w2"));
        QVERIFY(openAndWait(w, ck));
        QVERIFY(w.select(QStringLiteral("global_step2")));
        QPointer<app::ExportDialog> d = w.openExportDialog();
        QVERIFY(d);
        QCOMPARE(d->tag(), QStringLiteral("global_step2"));
        QVERIFY2(d->windowTitle().contains("global_step2") && d->windowTitle().contains("zero2_bf16_w2"),
                 qPrintable(d->windowTitle()));
        QCOMPARE(d->source(), ck);
        d->close();
        QVERIFY(w.select(QStringLiteral("global_step2/parameters/fc1.weight")));
        d = w.openExportDialog();
        QCOMPARE(d->tag(), QStringLiteral("global_step2"));
        d->close();
        w.tree()->setCurrentIndex(w.proxy()->index(0, 0)); // the checkpoint itself
        d = w.openExportDialog();
        QCOMPARE(d->tag(), QStringLiteral("global_step4")); // `latest`
        d->close();
        QVERIFY(w.select(QStringLiteral("global_step2")));
        d = w.openExportDialog();
        exportBinMatchesZeroToFp32(d, "zero2_bf16_w2", "global_step2");
    }

    // Issue 36 #1: a run whose latest tag lost a rank file. File > Export Model starts from the
    // newest tag that can be read; the unreadable one, chosen by hand, says why beside the tag and
    // Export refuses it, writing nothing (it wrote a 40-byte model of 0 tensors, "Wrote 1 file(s)").
    void exportDialogNeverStartsFromAnUnreadableTag()
    {
        QTemporaryDir tmp;
        const QString run =
            QString::fromStdString(testutil::runWithAnUnreadableLatestTag(tmp.path().toStdString()));
        app::MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, run));
        w.tree()->setCurrentIndex(w.proxy()->index(0, 0)); // the checkpoint itself: `latest` is global_step4
        QPointer<app::ExportDialog> d = w.openExportDialog();
        QVERIFY(d);
        QCOMPARE(d->tag(), QStringLiteral("global_step2"));
        d->setTag(QStringLiteral("global_step4"));
        QLabel* note = nullptr;
        for (auto* l : d->findChildren<QLabel*>())
            if (l->text().contains("cannot be read") && l->text().contains("rank 1 are missing")) note = l;
        QVERIFY2(note && note->isVisible(), "the dialog does not say the tag cannot be read");
        const QString out = tmp.filePath("out");
        d->setOutputFolder(out);
        QSignalSpy finished(d, &app::ExportDialog::finished);
        d->start();
        QVERIFY(finished.count() == 1 || finished.wait(30000));
        QCOMPARE(finished.first().first().toBool(), false);
        QVERIFY(!QFileInfo::exists(out));
        d->close();
    }

    // Issue 36 #3 and #7: a Universal folder converted into the run is a Universal tag there; the
    // window exports it as zero_to_fp32 exports the tag it came from, int64 buffer included (it
    // was a ZeRO-0 tag of the copied model file's weights, and the counter came out float32).
    void aUniversalFolderInsideARunExportsAsTheTagItCameFrom()
    {
        QTemporaryDir tmp;
        const std::string run = tmp.filePath("run").toStdString();
        std::filesystem::copy(fixture("zero2_bf16_w2"), run, std::filesystem::copy_options::recursive);
        ops::UniversalOptions o;
        o.injectMissingState = true;
        ops::CancelToken cancel;
        const std::string staged = tmp.filePath("staged/global_step4_universal").toStdString();
        ops::universal(run, staged, o, {}, cancel);
        std::filesystem::rename(staged, run + "/global_step4_universal");
        app::MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, QString::fromStdString(run)));
        QVERIFY(w.select(QStringLiteral("global_step4_universal")));
        QPointer<app::ExportDialog> d = w.openExportDialog();
        QVERIFY(d);
        QCOMPARE(d->tag(), QStringLiteral("global_step4_universal"));
        exportBinMatchesZeroToFp32(d, "zero2_bf16_w2", "global_step4");
        d->close();
    }

    // Issue 36 #14: long PEFT/LoRA names, elided to a column's width, stay told apart: the layer
    // number, the projection and lora_A/lora_B survive where Qt's middle elision cut them.
    void longNamesKeepWhatDiffers()
    {
        const auto chars = [](const QString& s) { return int(s.size()); };
        const QString base =
            QStringLiteral("base_model.model.model.layers.%1.self_attn.%2.lora_%3.default.weight");
        QSet<QString> shown;
        for (int layer : {17, 18})
            for (const char* proj : {"q_proj", "v_proj"})
                for (const char* ab : {"A", "B"}) {
                    const QString name = base.arg(layer).arg(QLatin1String(proj)).arg(QLatin1String(ab));
                    for (int width : {48, 40}) {
                        const QString e = app::elideName(name, chars, width);
                        QVERIFY2(e.size() <= width, qPrintable(e));
                        QVERIFY2(e.contains(QStringLiteral("layers.%1.").arg(layer)) &&
                                     e.contains(QLatin1String(proj)) &&
                                     e.contains(QStringLiteral("lora_") + ab),
                                 qPrintable(e));
                        shown.insert(QString::number(width) + QLatin1Char(':') + e);
                    }
                }
        QCOMPARE(shown.size(), 16); // at each width, each of the 8 names its own text
        // Too narrow for "…layers.1.…gate_proj.weight": the word before the number goes, not the
        // projection ("…layers.1.…weight" was gate_proj, up_proj and down_proj alike).
        QSet<QString> projections;
        for (const char* proj : {"gate_proj", "up_proj", "down_proj"})
            projections.insert(app::elideName(
                QStringLiteral("model.layers.1.mlp.%1.weight").arg(QLatin1String(proj)), chars, 22));
        QCOMPARE(projections, (QSet<QString>{QStringLiteral("\u20261.\u2026gate_proj.weight"),
                                             QStringLiteral("\u20261.mlp.up_proj.weight"),
                                             QStringLiteral("\u20261.\u2026down_proj.weight")}));
        QCOMPARE(app::elideName(QStringLiteral("fc1.weight"), chars, 40), QStringLiteral("fc1.weight"));
        // No layer number: leading segments go, then characters, the end kept.
        QCOMPARE(app::elideName(QStringLiteral("transformer.wte.weight"), chars, 12),
                 QStringLiteral("\u2026wte.weight"));
        // The window's tree draws its names through it.
        app::MainWindow w;
        QVERIFY(dynamic_cast<app::NameDelegate*>(w.tree()->itemDelegateForColumn(0)));
    }

    // Issue 36 #15: Compare and Slim have shortcuts; Help opens the documentation.
    void compareAndSlimHaveShortcutsAndHelpLinksTheDocs()
    {
        app::MainWindow w;
        QMap<QString, QAction*> byText;
        for (QAction* a : w.findChildren<QAction*>())
            byText[a->text().remove(QLatin1Char('&'))] = a;
        QVERIFY(byText.contains(QStringLiteral("Compare...")) && byText.contains(QStringLiteral("Slim...")));
        QCOMPARE(byText[QStringLiteral("Compare...")]->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_D));
        QCOMPARE(byText[QStringLiteral("Slim...")]->shortcut(),
                 QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
        QVERIFY(!byText[QStringLiteral("Compare Selected Tags")]->shortcut().isEmpty());
        QVERIFY(byText.contains(QStringLiteral("Documentation")));
        const QString readme = app::MainWindow::documentation();
        QVERIFY2(readme.endsWith(QLatin1String("README.md")) && QFileInfo(readme).isFile(),
                 qPrintable(readme));
        // Every shortcut once: a second action on one key would take neither.
        QSet<QString> keys;
        for (QAction* a : w.findChildren<QAction*>())
            for (const QKeySequence& k : a->shortcuts()) {
                QVERIFY2(!keys.contains(k.toString()), qPrintable(k.toString() + QStringLiteral(" twice")));
                keys.insert(k.toString());
            }
    }

    // Issue 36 #8: the licence, ours and that of what the program links, where a legal review
    // looks: Help > About, the LICENSE file and the package metadata.
    void aboutSaysTheLicences()
    {
        app::MainWindow w;
        const QString about = w.aboutText();
        for (const char* said :
             {"Apache License 2.0", "Qt (LGPL-3.0, linked dynamically)", "libarchive", "OpenSSL"})
            QVERIFY2(about.contains(QLatin1String(said)), said);
        QFile license(QStringLiteral(CKPT_SOURCE_DIR "/LICENSE"));
        QVERIFY(license.open(QIODevice::ReadOnly));
        QVERIFY(license.readAll().contains(
            "Apache License\n                           Version 2.0, January 2004"));
        QFile pyproject(QStringLiteral(CKPT_SOURCE_DIR "/python/pyproject.toml"));
        QVERIFY(pyproject.open(QIODevice::ReadOnly));
        QVERIFY(pyproject.readAll().contains("license = {text = \"Apache-2.0\"}"));
    }

    // Issue 36 #5 in the window: a ZeRO-0 bf16 tag whose masters no order or value can place
    // (real DeepSpeed, two look-alike LayerNorms in a second group) is no "0 tensors": the
    // overview says why the masters are not used, and Export writes the module's own bf16 weights
    // as DeepSpeed's engine held them, saying so.
    void aZeroStage0TagWithAlikeMastersSaysWhyAndExportsTheModule()
    {
        const std::string dir = testutil::dataDir() + "/deepspeed-layouts/zero0_bf16_w2_groups_alike";
        app::MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, QString::fromStdString(dir)));
        QVERIFY(w.select(QStringLiteral("global_step4")));
        QCoreApplication::processEvents();
        bool said = false;
        for (auto* b : w.findChildren<QTextBrowser*>())
            said = said ||
                   (b->isVisible() && b->toPlainText().contains(QStringLiteral("masters are not exported")) &&
                    b->toPlainText().contains(QStringLiteral("'norm.weight', 'norm2.weight'")));
        QVERIFY2(said, "the overview does not say why the fp32 masters are not exported");
        QPointer<app::ExportDialog> d = w.openExportDialog();
        QVERIFY(d);
        QCOMPARE(d->tag(), QStringLiteral("global_step4"));
        QTemporaryDir out;
        QVERIFY(exportThroughDialog(d, out.path(), QStringLiteral("safetensors")));
        QVERIFY(std::any_of(
            d->outcome().result.warnings.begin(), d->outcome().result.warnings.end(),
            [](const std::string& note) { return note.find("not exported") != std::string::npos; }));
        const ops::TensorSet got =
            ops::fileTensors(out.filePath(QStringLiteral("model.safetensors")).toStdString());
        const ops::TensorSet held = ops::fileTensors(
            testutil::dataDir() +
            "/deepspeed-layouts/expected/zero0_bf16_w2_groups_alike/global_step4.module.safetensors");
        std::map<std::string, const ops::SourceTensor*> byName;
        for (const auto& t : got.tensors)
            byName[t.tensor.name] = &t;
        QCOMPARE(byName.size() + 1, held.tensors.size()); // the tied head.weight: safetensors keeps one name
        for (const auto& h : held.tensors) {
            const auto it = byName.find(h.tensor.name);
            if (h.tensor.name == "head.weight") continue;
            QVERIFY2(it != byName.end(), h.tensor.name.c_str());
            QVERIFY2(it->second->tensor.dtype == h.tensor.dtype, h.tensor.name.c_str());
            std::vector<uint8_t> a(h.tensor.nbytes), b(it->second->tensor.nbytes);
            h.tensor.fill(0, a.size(), a.data());
            it->second->tensor.fill(0, b.size(), b.data());
            QVERIFY2(a == b, h.tensor.name.c_str());
        }
        d->close();
    }

    // Issue 21 #2: a dialog left open while the window opens another checkpoint keeps to its
    // own, says so, and writes its own.
    void anOpenExportDialogKeepsToItsCheckpoint()
    {
        app::MainWindow w;
        w.show();
        const QString a = QString::fromStdString(fixture("zero2_bf16_w2"));
        const QString b = QString::fromStdString(fixture("zero3_fp32_w2"));
        QVERIFY(openAndWait(w, a));
        QVERIFY(w.select(QStringLiteral("global_step2")));
        QPointer<app::ExportDialog> d = w.openExportDialog();
        QVERIFY(openAndWait(w, b));
        QVERIFY(d);
        QCOMPARE(d->source(), a);
        QCOMPARE(d->tag(), QStringLiteral("global_step2"));
        QVERIFY(d->windowTitle().contains("zero2_bf16_w2"));
        QLabel* note = nullptr;
        for (auto* l : d->findChildren<QLabel*>())
            if (l->text().contains("zero3_fp32_w2")) note = l;
        QVERIFY2(note && note->isVisible(), "the dialog does not say the window shows another checkpoint");
        exportBinMatchesZeroToFp32(d, "zero2_bf16_w2", "global_step2");
    }

    // Issue 21 #3 in the window: a folder holding files is written only after the user says to
    // replace; then the earlier export goes and the user's other files stay.
    void exportIntoAFolderThatHoldsFilesAsksFirst()
    {
        const QString ck = QString::fromStdString(fixture("zero2_bf16_w2"));
        QTemporaryDir out;
        for (const char* name : {"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin",
                                 "pytorch_model.bin.index.json", "README.md"}) {
            QFile f(out.filePath(name));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("an earlier export's");
        }
        const QStringList before = QDir(out.path()).entryList(QDir::Files);
        app::ExportDialog d(ck, {"global_step2", "global_step4"}, QStringLiteral("global_step2"));
        d.show();
        d.setOutputFolder(out.path());
        d.setFormat(QStringLiteral("bin"));
        QSignalSpy done(&d, &app::ExportDialog::finished);
        // asked, with the question box: Cancel writes nothing
        bool asked = false;
        QTimer::singleShot(0, &d, [&asked] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                asked = box->text().contains(QLatin1String("Replace"));
                box->button(QMessageBox::Cancel)->click();
            }
        });
        d.start();
        QVERIFY(asked);
        QVERIFY(!d.running());
        QCOMPARE(QDir(out.path()).entryList(QDir::Files), before);
        d.setReplaceAnswer(app::ReplaceAnswer::Yes);
        d.start();
        QVERIFY(done.wait(60000));
        QVERIFY2(d.outcome().ok, qPrintable(d.outcome().message));
        QCOMPARE(QDir(out.path()).entryList(QDir::Files, QDir::Name),
                 QStringList({"README.md", "pytorch_model.bin"}));
        QVERIFY(QFile::remove(out.filePath("README.md")));
        expectZeroToFp32(out.path(), "zero2_bf16_w2", "global_step2", "bin");
    }

    // Issue 21 #5: a failed opening says so in the window. Over an open checkpoint, its tree and
    // its own warnings stay under a banner naming the failed path; with nothing open, the start
    // page says it.
    void failedOpensAreShownInTheWindow()
    {
        app::MainWindow w;
        w.show();
        const QString torch2 = QString::fromStdString(testutil::dataDir() + "/torch/torch-2.x/");
        QVERIFY(openAndWait(w, torch2 + "dangerous.pt"));
        QLabel* banner = nullptr;
        for (auto* l : w.findChildren<QLabel*>())
            if (l->isVisible() && l->text().contains(QLatin1String("dangerous global"))) banner = l;
        QVERIFY2(banner, "the dangerous file's warning is not shown");
        const QString truncated = QString::fromStdString(testutil::dataDir() + "/corrupt/short_storage.pt");
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(truncated);
        QVERIFY(loaded.wait(30000));
        QVERIFY(!loaded.first().first().toBool());
        QVERIFY2(w.shownError().contains(QLatin1String("Could not open ") + truncated),
                 qPrintable(w.shownError()));
        QVERIFY2(w.shownError().contains(QLatin1String("Still showing ") + torch2 + "dangerous.pt"),
                 qPrintable(w.shownError()));
        QVERIFY(banner->isVisible() && banner->text().contains(QLatin1String("dangerous global")));
        QVERIFY(w.windowTitle().contains(QLatin1String("dangerous.pt")));
        QVERIFY(openAndWait(w, torch2 + "state_dict.pt")); // a good one clears it
        QCOMPARE(w.shownError(), QString());

        app::MainWindow fresh;
        fresh.show();
        QTemporaryDir unrelated;
        QFile f(unrelated.filePath("notes.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a checkpoint");
        f.close();
        QSignalSpy freshLoaded(&fresh, &app::MainWindow::loaded);
        fresh.open(unrelated.path());
        QVERIFY(freshLoaded.wait(30000));
        QVERIFY2(fresh.shownError().contains(QLatin1String("no checkpoint found")),
                 qPrintable(fresh.shownError()));
    }

    // Issue 21 #6: the shortcuts and menus of every Qt application.
    void shortcutsAndMenus()
    {
        app::MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        auto action = [&w](const QString& text) -> QAction* {
            for (QAction* a : w.findChildren<QAction*>())
                if (a->text().remove(QLatin1Char('&')) == text) return a;
            return nullptr;
        };
        QCOMPARE(action("Open File...")->shortcut(), QKeySequence(QKeySequence::Open));
        QCOMPARE(action("Open Folder...")->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
        QCOMPARE(action("Export Model...")->shortcut(), QKeySequence(Qt::CTRL | Qt::Key_E));
        QCOMPARE(action("Quit")->shortcut(), QKeySequence(QKeySequence::Quit));
        QVERIFY(!action("Export Model...")->isEnabled());
        const QString ck = QString::fromStdString(fixture("zero2_bf16_w2"));
        QVERIFY(openAndWait(w, ck));
        // Ctrl+F: the filter box
        QTest::keyClick(&w, Qt::Key_F, Qt::ControlModifier);
        QVERIFY(w.filterBox()->hasFocus());
        // F5: read again
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        QTest::keyClick(&w, Qt::Key_F5);
        QVERIFY(loaded.wait(30000));
        QVERIFY(loaded.first().first().toBool());
        // Ctrl+E: the export dialog, for the selected tag
        QVERIFY(w.select(QStringLiteral("global_step2")));
        QTest::keyClick(&w, Qt::Key_E, Qt::ControlModifier);
        QList<app::ExportDialog*> dialogs = w.findChildren<app::ExportDialog*>();
        QCOMPARE(dialogs.size(), 1);
        QCOMPARE(dialogs.first()->tag(), QStringLiteral("global_step2"));
        dialogs.first()->close();
        QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        // File > Open Recent lists it
        QMenu* recent = nullptr;
        for (QMenu* m : w.findChildren<QMenu*>())
            if (m->title().remove(QLatin1Char('&')) == QLatin1String("Open Recent")) recent = m;
        QVERIFY(recent);
        emit recent->aboutToShow();
        bool listed = false;
        for (QAction* a : recent->actions())
            listed = listed || a->text().endsWith(ck);
        QVERIFY(listed);
        // Help: shortcuts from the actions themselves, and the version and compute device
        QVERIFY(action("Keyboard Shortcuts") && action("About Checkpoint Studio"));
        // Ctrl+W: nothing open, back to the start page
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QVERIFY(action("Close Checkpoint")->shortcuts().contains(QKeySequence(Qt::CTRL | Qt::Key_W)));
        QTest::keyClick(&w, Qt::Key_W, Qt::ControlModifier);
        QVERIFY(!w.model()->snapshot());
        QVERIFY(!action("Export Model...")->isEnabled());
        QCOMPARE(w.windowTitle(), QStringLiteral("Checkpoint Studio"));
    }

    // Issue 21 #4: a parameter's optimizer moments are nodes with values: statistics, their
    // partition table, a file of their own with the parameter (bit for bit what DeepSpeed's
    // ds_to_universal wrote for them); DCP's optimizer state is in the tree, under its parameter
    // and as it was saved.
    void optimizerStateHasValues()
    {
        app::MainWindow w;
        w.show();
        QVERIFY(openAndWait(w, QString::fromStdString(fixture("zero2_bf16_w2"))));
        const QString moment = QStringLiteral("global_step4/parameters/fc1.weight/exp_avg");
        QVERIFY(w.select(moment));
        const app::Node* n = app::TreeModel::node(w.proxy()->mapToSource(w.tree()->currentIndex()));
        QVERIFY(n && n->kind == app::NodeKind::Parameter && n->held == app::Node::Held::Moment);
        QSignalSpy ready(w.details(), &app::DetailsPane::statisticsReady);
        w.details()->computeStatistics();
        QVERIFY(ready.wait(30000));
        QVERIFY2(w.details()->statisticsText().contains(QLatin1String("mean")),
                 qPrintable(w.details()->statisticsText()));
        auto* table = w.details()->findChild<QTableWidget*>();
        QVERIFY(table && table->isVisible() && table->rowCount() >= 1);
        QVERIFY2(table->item(0, 1)->text().contains(QLatin1String("optim_states")),
                 qPrintable(table->item(0, 1)->text()));

        // The parameter with its moments, against ds_to_universal's zero/fc1.weight/*.pt
        const auto uni = testutil::readJson(testutil::dataDir() + "/universal/zero2_bf16_w2.expect.json");
        auto reference = [&uni](const std::string& file) {
            for (const auto& f : uni["files"])
                if (f["path"] == file) {
                    nlohmann::json want = f["summary"].value("tensor", nlohmann::json());
                    for (const auto& kv : f["summary"].value("dict", nlohmann::json::array()))
                        if (kv[0] == "param") want = kv[1]["tensor"];
                    return want.value("sha256", std::string());
                }
            return std::string();
        };
        QTemporaryDir out;
        for (const char* name : {"fc1.safetensors", "fc1.pt"}) {
            QSignalSpy exported(&w, &app::MainWindow::tensorsExported);
            w.exportTensors(QStringLiteral("global_step4/parameters/fc1.weight"), out.filePath(name), true);
            QVERIFY(exported.wait(30000));
            QVERIFY2(exported.first().first().toBool(), qPrintable(exported.first().at(1).toString()));
            const ops::TensorSet set = ops::anyTensors(out.filePath(name).toStdString(), {});
            std::map<std::string, std::string> sha;
            for (const auto& t : set.tensors) {
                std::vector<uint8_t> b(t.tensor.nbytes);
                t.tensor.fill(0, b.size(), b.data());
                sha[t.tensor.name] = testutil::sha256Hex(b.data(), b.size());
            }
            QCOMPARE(sha.size(), size_t(3));
            QCOMPARE(sha["fc1.weight"], reference("zero/fc1.weight/fp32.pt"));
            QCOMPARE(sha["fc1.weight/exp_avg"], reference("zero/fc1.weight/exp_avg.pt"));
            QCOMPARE(sha["fc1.weight/exp_avg_sq"], reference("zero/fc1.weight/exp_avg_sq.pt"));
        }

        // DCP: under the parameter, and the optimizer's state as saved, values as dcp_to_torch_save's
        QVERIFY(openAndWait(w, QString::fromStdString(testutil::dataDir() + "/dcp/fsdp2_fp32_w2")));
        QVERIFY(w.select(QStringLiteral("fsdp2_fp32_w2/parameters/embed.weight/exp_avg_sq")));
        QVERIFY(
            w.model()
                ->indexOfPath(QStringLiteral("fsdp2_fp32_w2/other tensors/optimizer/state/embed.weight/step"))
                .isValid());
        QSignalSpy exported(&w, &app::MainWindow::tensorsExported);
        w.exportTensors(QStringLiteral("fsdp2_fp32_w2/parameters/embed.weight/exp_avg_sq"),
                        out.filePath("dcp.safetensors"), false);
        QVERIFY(exported.wait(30000));
        QVERIFY(exported.first().first().toBool());
        const auto dcp = testutil::readJson(testutil::dataDir() + "/dcp/fsdp2_fp32_w2.expect.json");
        std::string want;
        for (const auto& t : dcp["dcp_to_torch_save"]["tensors"])
            if (t["path"] == "optimizer/state/embed.weight/exp_avg_sq") want = t["sha256"];
        QVERIFY(!want.empty());
        const ops::TensorSet got = ops::anyTensors(out.filePath("dcp.safetensors").toStdString(), {});
        QCOMPARE(got.tensors.size(), size_t(1));
        std::vector<uint8_t> b(got.tensors[0].tensor.nbytes);
        got.tensors[0].tensor.fill(0, b.size(), b.data());
        QCOMPARE(testutil::sha256Hex(b.data(), b.size()), want);
    }

    // Issue 21 #7: a single torch.save file exports in the window as `ckpt export FILE OUT`.
    void aSingleFileExportsToSafetensors()
    {
        app::MainWindow w;
        w.show();
        const QString file = QString::fromStdString(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt");
        QVERIFY(openAndWait(w, file));
        QAction* exportAction = nullptr;
        for (QAction* a : w.findChildren<QAction*>())
            if (a->text().contains(QLatin1String("Export"))) exportAction = a;
        QVERIFY(exportAction && exportAction->isEnabled());
        QPointer<app::ExportDialog> d = w.openExportDialog();
        QVERIFY(d && d->singleFile());
        QVERIFY(d->outputFolder().endsWith(QLatin1String("state_dict.safetensors")));
        QTemporaryDir out;
        d->setOutputFolder(out.filePath("m.safetensors"));
        QSignalSpy done(d.data(), &app::ExportDialog::finished);
        d->start();
        QVERIFY(done.wait(60000));
        QVERIFY2(d->outcome().ok, qPrintable(d->outcome().message));
        QCOMPARE(d->outcome().result.files,
                 std::vector<std::string>{out.filePath("m.safetensors").toStdString()});
        QVERIFY(layout::familyOf(out.filePath("m.safetensors").toStdString()).singleFile());
    }

    // Cancel through the dialog's public API once bytes flow: a large model is still being
    // written when the GUI thread hears of it.
    void cancelMidwayLeavesNothing()
    {
        QTemporaryDir in, out;
        testutil::writeLargeModel(in.path());
        app::ExportDialog d(in.path(), {QFileInfo(in.path()).fileName()}, QFileInfo(in.path()).fileName());
        d.setOutputFolder(out.path());
        d.setMaxShardSize(QStringLiteral("16MB"));
        testutil::whenWriting(&d, [&d] { d.cancel(); });
        QSignalSpy done(&d, &app::ExportDialog::finished);
        d.start();
        QVERIFY(done.wait(120000));
        QVERIFY(d.outcome().cancelled);
        QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList());
    }

    // Closing the dialog (its window's close button, Escape) while it runs cancels the export
    // (it used to run on, and the application's exit to wait for it) and leaves nothing.
    void closingTheExportDialogCancels()
    {
        QTemporaryDir in, out;
        testutil::writeLargeModel(in.path());
        const QString tag = QFileInfo(in.path()).fileName();
        app::ExportDialog d(in.path(), {tag}, tag);
        d.show();
        d.setOutputFolder(out.path());
        testutil::whenWriting(&d, [&d] { d.close(); });
        QSignalSpy done(&d, &app::ExportDialog::finished);
        d.start();
        QVERIFY(done.wait(120000));
        QVERIFY(d.outcome().cancelled);
        QVERIFY(!d.running());
        QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList());
    }

    // The window closing while its export runs: the dialog's jobs are cancelled and waited for
    // with it, so no worker writes on after it and nothing is left.
    void closingTheWindowStopsItsExport()
    {
        QTemporaryDir in, out;
        testutil::writeLargeModel(in.path());
        {
            app::MainWindow w;
            w.show();
            QSignalSpy loaded(&w, &app::MainWindow::loaded);
            w.open(in.path());
            QVERIFY(loaded.wait(60000));
            QVERIFY2(loaded.first().first().toBool(), qPrintable(w.lastError()));
            app::ExportDialog* d = w.openExportDialog();
            QVERIFY(d);
            d->setOutputFolder(out.path());
            d->start();
            testutil::waitUntilWriting(d); // then the window goes at once
            QVERIFY(d->running());
        } // the window and its dialog go, as when the application quits
        settleWorkers();
        QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList());
    }

    // A report still computing when another node is selected is never shown under it.
    void statisticsBelongToTheSelectedNode()
    {
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(QString::fromStdString(fixture("zero2_bf16_w4")));
        QVERIFY(loaded.wait(30000));
        const QString a = QStringLiteral("global_step4/parameters/fc1.weight");
        const QString b = QStringLiteral("global_step4/parameters/fc2.bias");
        QSignalSpy ready(w.details(), &app::DetailsPane::statisticsReady);
        auto request = [&](const QString& node) {
            QVERIFY(w.select(node));
            for (auto* button : w.details()->findChildren<QPushButton*>())
                if (button->isVisible()) button->click();
        };
        // B alone: what its report says
        request(b);
        QVERIFY(ready.wait(30000));
        const QString reportB = w.details()->statisticsText();
        QVERIFY(reportB.contains(QLatin1String("mean")));
        // A asked for, then B selected: A's report never appears under B
        ready.clear();
        request(a);
        QVERIFY(w.details()->computing());
        QVERIFY(w.select(b));
        QVERIFY(!w.details()->computing());
        settleWorkers();
        QCOMPARE(ready.size(), 0);
        QCOMPARE(w.details()->statisticsText(), QString());
        // A, then B asked for at once: only B's report arrives
        request(a);
        request(b);
        QVERIFY(ready.wait(30000));
        settleWorkers();
        QCOMPARE(ready.size(), 1);
        QCOMPARE(w.details()->statisticsText(), reportB);
    }

    // Opening reports its progress; Cancel stops the worker (a cancelled result, not a
    // snapshot dropped on arrival) and the tree keeps what it showed.
    // "Convert to Universal..." is offered for a node of a ZeRO tag, and not for a single file.
    void convertToUniversalFollowsTheSelection()
    {
        auto action = [](app::MainWindow& w) -> QAction* {
            for (QAction* a : w.findChildren<QAction*>())
                if (a->text() == app::MainWindow::tr("Convert to &Universal...")) return a;
            return nullptr;
        };
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(QString::fromStdString(fixture("zero3_bf16_w4")));
        QVERIFY(loaded.wait(30000));
        QAction* convert = action(w);
        QVERIFY(convert);
        QVERIFY(!convert->isEnabled());
        QVERIFY(w.select(QStringLiteral("global_step4/parameters")));
        QVERIFY(convert->isEnabled());
        QVERIFY(w.select(QStringLiteral("global_step2")));
        QVERIFY(convert->isEnabled());
        w.open(QString::fromStdString(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt"));
        QVERIFY(loaded.wait(30000));
        w.tree()->setCurrentIndex(w.proxy()->index(0, 0));
        QVERIFY(!convert->isEnabled());
    }

    void openingReportsProgressAndCancels()
    {
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        QSignalSpy progress(&w, &app::MainWindow::openProgressed);
        const QString first = QString::fromStdString(fixture("zero3_bf16_w4_subgroups"));
        w.open(first);
        QVERIFY(loaded.wait(30000));
        QVERIFY(loaded.first().first().toBool());
        QVERIFY(!progress.isEmpty());
        for (const auto& report : progress) {
            QVERIFY(report.at(0).toInt() >= 0 && report.at(0).toInt() <= 1000);
            QVERIFY(!report.at(1).toString().isEmpty());
        }
        w.open(QString::fromStdString(fixture("zero2_bf16_w4")));
        QVERIFY(w.loading());
        w.cancelOpen();
        QVERIFY(loaded.wait(30000));
        QCOMPARE(loaded.last().first().toBool(), false);
        QCOMPARE(w.lastError(), app::MainWindow::tr("Opening cancelled"));
        QVERIFY(!w.loading());
        QCOMPARE(QString::fromStdString(w.model()->snapshot()->path), first);
        settleWorkers();
        QCOMPARE(loaded.size(), 2); // nothing more arrives from the cancelled opening
    }

    // The job manager on its own: the latest request on a channel wins, the superseded result
    // is never delivered, and results and reports arrive on the GUI thread.
    void jobsOnAChannelLatestWins()
    {
        app::JobManager jobs;
        QStringList results;
        int reports = 0;
        auto slowJob = [](int value) {
            return [value](const ops::ProgressSink& progress, const ops::CancelToken& cancel) {
                for (int i = 0; i <= 1000; i += 100) {
                    cancel.throwIfCancelled();
                    progress({i, "step", uint64_t(i), 1000});
                    QThread::msleep(2);
                }
                return value;
            };
        };
        auto onResult = [&](const app::JobResult<int>& r) {
            QCOMPARE(QThread::currentThread(), qApp->thread());
            results << (r.ok()        ? QString::number(*r.value)
                        : r.cancelled ? QStringLiteral("cancelled")
                                      : r.error);
        };
        auto onProgress = [&](const app::JobProgress& p) {
            QCOMPARE(QThread::currentThread(), qApp->thread());
            QVERIFY(p.permille >= 0 && p.permille <= 1000);
            ++reports;
        };
        jobs.run(QStringLiteral("c"), slowJob(1), onResult, onProgress);
        jobs.run(QStringLiteral("c"), slowJob(2), onResult, onProgress);
        QTRY_VERIFY_WITH_TIMEOUT(jobs.idle(), 30000);
        settleWorkers();
        QCOMPARE(results, QStringList{QStringLiteral("2")});
        QVERIFY(reports > 0);
        // cancel() delivers the cancelled result; drop() delivers nothing
        jobs.run(QStringLiteral("c"), slowJob(3), onResult);
        jobs.cancel(QStringLiteral("c"));
        QTRY_VERIFY_WITH_TIMEOUT(jobs.idle(), 30000);
        QCOMPARE(results.last(), QStringLiteral("cancelled"));
        jobs.run(QStringLiteral("c"), slowJob(4), onResult);
        jobs.drop(QStringLiteral("c"));
        QVERIFY(jobs.idle());
        settleWorkers();
        QCOMPARE(results.size(), 2);
    }

    // Lanes on one manager: two views' channels of the same name do not replace each other's
    // job, the manager sees both, and a lane that goes drops its jobs and waits for its worker
    // (which may use what the lane's owner holds) before its owner is gone.
    void lanesShareOneManager()
    {
        app::JobManager jobs;
        std::atomic<int> running{0};
        QStringList results;
        auto job = [&running](int value, int ms) {
            return [&running, value, ms](const ops::ProgressSink&, const ops::CancelToken& cancel) {
                ++running;
                for (int i = 0; i < ms; ++i) {
                    if (cancel.cancelled()) break; // finishes anyway: the lane must wait for it
                    QThread::msleep(1);
                }
                --running;
                return value;
            };
        };
        auto record = [&results](const app::JobResult<int>& r) {
            results << (r.ok() ? QString::number(*r.value) : QStringLiteral("cancelled"));
        };
        app::JobLane a(&jobs), b(&jobs);
        a.run(QStringLiteral("stats"), job(1, 50), record);
        b.run(QStringLiteral("stats"), job(2, 50), record);
        QVERIFY(a.running(QStringLiteral("stats")) && b.running(QStringLiteral("stats")));
        QCOMPARE(jobs.channels().size(), 2);
        QTRY_VERIFY_WITH_TIMEOUT(a.idle() && b.idle(), 30000);
        results.sort();
        QCOMPARE(results, (QStringList{QStringLiteral("1"), QStringLiteral("2")}));
        results.clear();
        {
            app::JobLane gone(&jobs);
            gone.run(QStringLiteral("stats"), job(3, 5000), record);
            QTRY_VERIFY_WITH_TIMEOUT(running.load() == 1, 30000);
        } // the lane's owner goes: its worker is stopped and waited for here
        QCOMPARE(running.load(), 0);
        QVERIFY(jobs.idle());
        settleWorkers();
        QVERIFY(results.isEmpty()); // and nothing of it is delivered afterwards
        // A lane made without a manager runs on one of its own.
        app::JobLane alone(nullptr);
        alone.run(QStringLiteral("stats"), job(4, 1), record);
        QTRY_VERIFY_WITH_TIMEOUT(alone.idle(), 30000);
        QCOMPARE(results, QStringList{QStringLiteral("4")});
    }

    // The labels the window makes from the model's words (family names, tag and file kinds,
    // parameter kinds, group names) are looked up at run time (app::wordText): each must be
    // listed (the window's own in app/kinds.cpp, a family's marked where model/layout defines it)
    // and translated. Walks the tree of every family.
    void everyLabelFromTheModelIsTranslated()
    {
        QTranslator zh;
        QVERIFY(zh.load(QStringLiteral(":/i18n/checkpoint-studio_zh_CN.qm")));
        QTemporaryDir tmp;
        const std::string uni = tmp.filePath("uni").toStdString();
        ops::UniversalOptions o;
        o.injectMissingState = true;
        ops::universal(fixture("zero2_bf16_w2"), uni, o, {}, {});
        const std::string d = testutil::dataDir();
        QSet<QString> missing;
        for (const std::string& path :
             {fixture("zero2_bf16_w2"), fixture("zero3_bf16_w4_subgroups"), d + "/dcp/fsdp2_fp32_w2",
              d + "/composer/run", d + "/composer/hf_run", d + "/hf/safetensors_sharded",
              d + "/torch/torch-2.x/state_dict.pt", uni}) {
            const auto snapshot = app::loadSnapshot(path);
            for (const app::Node* n : allNodes(snapshot->root.get())) {
                QStringList words;
                if (n->kind == app::NodeKind::Group || n->kind == app::NodeKind::Config)
                    words << QString::fromStdString(n->name);
                // Entries and tensors carry the file's own type names: data, not words of ours.
                if (n->kind != app::NodeKind::Entry && n->kind != app::NodeKind::Tensor)
                    words << QString::fromStdString(n->kindText);
                for (const QString& w : words)
                    if (zh.translate("ckpt::app::TreeModel", w.toUtf8().constData()).isEmpty() &&
                        zh.translate("ckpt::layout", w.toUtf8().constData()).isEmpty())
                        missing << w;
            }
        }
        QStringList list(missing.begin(), missing.end());
        list.sort();
        QVERIFY2(list.isEmpty(), qPrintable(list.join(QLatin1String(" | "))));
    }

    // A DCP folder's .distcp files show the items .metadata stores in them (each chunk under its
    // key path), not an empty node: the tree lists them as `ckpt inspect --entries` does.
    void distcpFilesShowTheirItems()
    {
        const auto snapshot = app::loadSnapshot(testutil::dataDir() + "/dcp/fsdp2_fp32_w2");
        int files = 0;
        for (const app::Node* n : allNodes(snapshot->root.get())) {
            if (n->kind != app::NodeKind::RankFile || !n->name.ends_with(".distcp")) continue;
            ++files;
            QVERIFY2(n->error.empty(), n->error.c_str());
            bool embed = false;
            for (const auto& c : n->children)
                embed |= c->name.starts_with("model/embed.weight@") && c->kind == app::NodeKind::Tensor;
            QVERIFY2(embed, n->name.c_str());
        }
        QCOMPARE(files, 2);
    }

    // File > Preferences: what it accepts is saved, the palette applies at once, the remote
    // settings reach the engine for every variable the environment does not set (the one it sets
    // wins, and the dialog says so), the Open URL dialog names the endpoint a URL will use, and
    // outputs default to the chosen folder.
    void preferencesReachTheEngineWhereTheEnvironmentIsSilent()
    {
        QTemporaryDir out;
        qunsetenv("AWS_ENDPOINT_URL");
        qunsetenv("AWS_ENDPOINT_URL_S3");
        qunsetenv("AWS_PROFILE");
        const QByteArray region = qgetenv("AWS_REGION");
        qputenv("AWS_REGION", "us-east-2");
        app::MainWindow w;
        app::PreferencesDialog* d = w.openPreferences();
        QVERIFY(d->remoteNote("AWS_REGION").contains(QLatin1String("us-east-2")));
        QVERIFY(d->remoteNote("AWS_ENDPOINT_URL").isEmpty());
        d->palette()->setCurrentIndex(d->palette()->findData(QStringLiteral("dark")));
        d->device()->setCurrentIndex(d->device()->findData(QStringLiteral("cpu")));
        d->outputFolder()->setText(out.path());
        d->remoteField("AWS_ENDPOINT_URL")->setText(QStringLiteral(" http://127.0.0.1:9 "));
        d->remoteField("AWS_REGION")->setText(QStringLiteral("eu-west-3"));
        d->accept();

        const app::Preferences p = app::Preferences::load();
        QCOMPARE(p.palette, QStringLiteral("dark"));
        QCOMPARE(p.outputFolder, out.path());
        QVERIFY(p.computeDevice() == gpu::Device::Cpu);
        QCOMPARE(p.remote.at("AWS_ENDPOINT_URL"), QStringLiteral("http://127.0.0.1:9"));
        QVERIFY(QApplication::palette().color(QPalette::Window).lightness() < 128);
        QCOMPARE(io::remote::processEnv("AWS_ENDPOINT_URL").value_or(""), std::string("http://127.0.0.1:9"));
        QCOMPARE(io::remote::processEnv("AWS_REGION").value_or(""), std::string("us-east-2"));
        const QString source = QString::fromStdString(io::remoteSourceOf("s3://bucket/run"));
        QVERIFY2(source.contains(QLatin1String("endpoint http://127.0.0.1:9")), qPrintable(source));
        app::OpenUrlDialog url({});
        url.setUrl(QStringLiteral("s3://bucket/run"));
        QCOMPARE(url.source(), source);
        url.setUrl(QStringLiteral("https://host/model.safetensors"));
        QVERIFY(url.source().isEmpty());
        const QString file = QStringLiteral(CKPT_TEST_DATA "/torch/torch-2.x/dtypes.pt");
        QCOMPARE(QFileInfo(app::SlimDialog::defaultOutput(file)).absolutePath(), out.path());

        // Set back: the tests after see the defaults.
        w.applyPreferences(app::Preferences{});
        region.isNull() ? qunsetenv("AWS_REGION") : qputenv("AWS_REGION", region);
        QVERIFY(!io::remote::processEnv("AWS_ENDPOINT_URL"));
        QCOMPARE(QFileInfo(app::SlimDialog::defaultOutput(file)).absolutePath(),
                 QFileInfo(file).absolutePath());
    }

    void chineseTranslationIsComplete()
    {
        QFile ts(QStringLiteral(CKPT_SOURCE_DIR "/translations/checkpoint-studio_zh_CN.ts"));
        QVERIFY(ts.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&ts);
        int messages = 0;
        QStringList unfinished;
        QString source;
        while (!xml.atEnd()) {
            xml.readNext();
            if (!xml.isStartElement()) continue;
            if (xml.name() == QLatin1String("source")) source = xml.readElementText();
            if (xml.name() == QLatin1String("translation")) {
                ++messages;
                const bool bad = xml.attributes().value(QLatin1String("type")) == QLatin1String("unfinished");
                const QString text = xml.readElementText(QXmlStreamReader::IncludeChildElements);
                if (bad || text.trimmed().isEmpty()) unfinished << source;
            }
        }
        QVERIFY(!xml.hasError());
        QVERIFY(messages > 100);
        QVERIFY2(unfinished.isEmpty(), qPrintable(unfinished.join(QLatin1String(" | "))));
    }

    // Issue 39: File > Verify... on the open checkpoint: a job whose table lists every file of the
    // tag with its format and verdict; a record whose bytes changed is marked damaged with its
    // CRC-32 named, and the dialog says the checkpoint is damaged instead of whole.
    void verifyDialogShowsEveryFileAndItsDamage()
    {
        QTemporaryDir tmp;
        const QString ck = tmp.filePath("ck");
        std::filesystem::copy(testutil::dataDir() + "/deepspeed/zero2_bf16_w2", ck.toStdString(),
                              std::filesystem::copy_options::recursive);
        app::MainWindow w;
        QVERIFY(openAndWait(w, ck));
        auto run = [&](app::VerifyDialog* d) {
            QSignalSpy done(d, &app::VerifyDialog::finished);
            d->start();
            return done.wait(60000) && done.size() == 1 ? done.first().first().toBool() : false;
        };
        app::VerifyDialog* clean = w.openVerifyDialog();
        QVERIFY(clean);
        QVERIFY(run(clean));
        QVERIFY(clean->report() && clean->report()->whole());
        const auto* table = clean->findChild<QTableWidget*>();
        QCOMPARE(table->rowCount(), 3); // the tag `latest` names: its model and two optimizer files
        QVERIFY2(clean->status().startsWith(QStringLiteral("Whole")), qPrintable(clean->status()));
        clean->close();

        const std::string victim =
            (ck + "/global_step4/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt").toStdString();
        const io::ZipReader zip(io::MappedFile::open(victim));
        uint64_t at = 0;
        for (const auto& e : zip.entries())
            if (e.name.ends_with("/data/0")) at = e.dataOffset + e.size / 2;
        QVERIFY(at > 0);
        {
            QFile f(QString::fromStdString(victim));
            QVERIFY(f.open(QIODevice::ReadWrite));
            f.seek(qint64(at));
            char c = 0;
            f.getChar(&c);
            f.seek(qint64(at));
            f.putChar(char(c ^ 0x5a));
        }
        app::VerifyDialog* damaged = w.openVerifyDialog(true);
        QVERIFY(!run(damaged));
        QVERIFY2(damaged->status().startsWith(QStringLiteral("Damaged")), qPrintable(damaged->status()));
        const auto* rows = damaged->findChild<QTableWidget*>();
        int bad = 0;
        for (int r = 0; r < rows->rowCount(); ++r)
            if (rows->item(r, 2)->text().contains(QChar(0x2717))) {
                ++bad;
                QVERIFY(rows->item(r, 0)->text().endsWith(
                    QStringLiteral("bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt")));
                QVERIFY2(rows->item(r, 3)->text().contains(QStringLiteral("CRC-32")),
                         qPrintable(rows->item(r, 3)->text()));
            }
        QCOMPARE(bad, 1);
        QVERIFY(rows->rowCount() > 3); // every tag's files
        damaged->close();

        // What it found marks the tree's row of that file, the problem as its tooltip...
        const app::TreeModel* model = w.model();
        QModelIndex marked;
        int markedRows = 0;
        for (std::vector<QModelIndex> stack{QModelIndex()}; !stack.empty();) {
            const QModelIndex parent = stack.back();
            stack.pop_back();
            for (int r = 0; r < model->rowCount(parent); ++r) {
                const QModelIndex i = model->index(r, 0, parent);
                const app::Node* n = app::TreeModel::node(i);
                if (n->kind == app::NodeKind::RankFile &&
                    model->data(i.siblingAtColumn(app::TreeModel::Kind)).toString().contains("damaged")) {
                    ++markedRows;
                    if (n->file == victim) marked = i;
                }
                stack.push_back(i);
            }
        }
        QVERIFY(marked.isValid());
        QCOMPARE(markedRows, 1);
        QVERIFY2(model->data(marked, Qt::ToolTipRole).toString().contains(QStringLiteral("CRC-32")),
                 qPrintable(model->data(marked, Qt::ToolTipRole).toString()));
        // ...and an export of its tag asks first: declined, nothing is written.
        QVERIFY(w.select(QStringLiteral("global_step4")));
        QPointer<app::ExportDialog> e = w.openExportDialog();
        QVERIFY(e);
        e->setOutputFolder(tmp.filePath("out"));
        e->setDamagedAnswer(app::ReplaceAnswer::No);
        QSignalSpy declined(e.data(), &app::ExportDialog::finished);
        e->start();
        QCOMPARE(declined.size(), 1);
        QCOMPARE(declined.first().first().toBool(), false);
        QVERIFY(!QFileInfo::exists(tmp.filePath("out/model.safetensors")));
        // The whole tag beside it is exported without a question (the answer No is never read).
        e->setTag(QStringLiteral("global_step2"));
        QSignalSpy exported(e.data(), &app::ExportDialog::finished);
        e->start();
        QVERIFY(exported.wait(60000));
        QCOMPARE(exported.first().first().toBool(), true);
        QVERIFY(QFileInfo::exists(tmp.filePath("out/model.safetensors")));
        e->close();
    }
};

QTEST_MAIN(TestGui)
#include "tst_gui.moc"
