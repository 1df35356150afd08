// The window, offscreen: models under QAbstractItemModelTester; open a real DeepSpeed fixture,
// expand, filter, select a parameter and check its partition table; export through the dialog
// and compare with what zero_to_fp32 wrote; cancel midway and find nothing left; measure the
// longest event-loop stall while loading and exporting; the zh_CN translation is complete.
#include "details_pane.h"
#include "export_dialog.h"
#include "io/output.h"
#include "layout/deepspeed.h"
#include "main_window.h"
#include "snapshot.h"
#include "stall_meter.h"
#include "testutil.h"
#include "torch/torch_writer.h"
#include "tree_model.h"

#include <cstring>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QTreeView>
#include <QXmlStreamReader>
#include <filesystem>
#include <future>
#include <tuple>

using namespace ckpt;

namespace {

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
        qInfo("longest event-loop stall while opening: %lld ms", stall.longest());
        QCOMPARE(app::loadsOnGuiThread(), 0);

        w.tree()->expandAll();
        w.filterBox()->setText(QStringLiteral("fc2*"));
        const QModelIndex tag = w.proxy()->index(0, 0, w.proxy()->index(0, 0));
        QVERIFY(tag.isValid());
        // every visible leaf under a tag's parameters matches the filter
        QVERIFY(w.select(QStringLiteral("global_step4/parameters/fc2.bias")));
        QTableWidget* table = w.details()->partitionTable();
        const auto ck = layout::openDeepSpeed(fixture("zero2_bf16_w4"));
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
        QVERIFY(!w.grab().isNull());
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
        qInfo("longest event-loop stall while exporting: %lld ms", stall.longest());
        QVERIFY2(d.outcome().ok, qPrintable(d.outcome().message));
        const auto exp = testutil::readJson(fixture("zero3_fp32_w2") + ".expect.json");
        const auto& ref = exp["tags"]["global_step4"]["bin_sharded"];
        std::vector<std::string> files;
        for (const auto& e : std::filesystem::directory_iterator(out.path().toStdString()))
            files.push_back(e.path().filename().string());
        std::sort(files.begin(), files.end());
        QCOMPARE(files, ref["files"].get<std::vector<std::string>>());
        for (const auto& t : ref["tensors"]) {
            const auto f = torch::TorchFile::open(
                out.filePath(QString::fromStdString(t["file"].get<std::string>())).toStdString());
            const torch::Tensor* tt = f->tensor(t["name"].get<std::string>());
            QVERIFY(tt);
            const auto b = testutil::contiguousBytes(*f, *tt);
            QCOMPARE(testutil::sha256Hex(b.data(), b.size()), t["sha256"].get<std::string>());
        }
    }

    void cancelMidwayLeavesNothing()
    {
        QTemporaryDir out;
        app::ExportDialog d(QString::fromStdString(fixture("zero3_bf16_w4_subgroups")), {"global_step4"},
                            QStringLiteral("global_step4"));
        d.setOutputFolder(out.path());
        d.setMaxShardSize(QStringLiteral("1KB"));
        d.setCancelAfterProgress(2);
        QSignalSpy done(&d, &app::ExportDialog::finished);
        d.start();
        QVERIFY(done.wait(60000));
        QVERIFY(d.outcome().cancelled);
        QCOMPARE(QDir(out.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
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
};

QTEST_MAIN(TestGui)
#include "tst_gui.moc"
