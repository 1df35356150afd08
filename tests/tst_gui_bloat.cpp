// The Bloat view and the Slim dialog, offscreen: the storage model under
// QAbstractItemModelTester; the bars' and the role breakdown's numbers against
// ops::analyzeFolderBloat, the storage table against ops::analyzeBloat; a click on a tensor selects
// it in the main tree (a file on its own and a DeepSpeed rank file); slim through the dialog end
// to end with the event loop running throughout (no hang), cancel midway or close the dialog
// leaving nothing, an error naming its file, and an output inside the input refused before
// anything runs.
#include "bloat_bars.h"
#include "bloat_view.h"
#include "large_model.h"
#include "main_window.h"
#include "ops/bloat.h"
#include "slim_dialog.h"
#include "stall_meter.h"
#include "storage_model.h"
#include "testutil.h"
#include "torch/torch_file.h"
#include "tree_model.h"
#include "workspace.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDirIterator>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QMessageBox>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QTimer>
#include <QTreeView>
#include <filesystem>
#include <map>
#include <set>

using namespace ckpt;

namespace {

using testutil::StallMeter;

QString data(const char* rel)
{
    return QString::fromStdString(testutil::dataDir()) + QLatin1Char('/') + QLatin1String(rel);
}

const char* k3303 = "bloat/torch-2.x/zero2_bf16_3303";

quint64 folderBytes(const QString& dir)
{
    quint64 n = 0;
    QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext())
        n += quint64(QFileInfo(it.next()).size());
    return n;
}

QStringList everything(const QString& dir)
{
    QStringList out;
    QDirIterator it(dir, QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot,
                    QDirIterator::Subdirectories);
    while (it.hasNext())
        out << it.next();
    out.sort();
    return out;
}

void copyTree(const QString& from, const QString& to)
{
    QDirIterator it(from, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString f = it.next();
        const QString dst = to + QLatin1Char('/') + QDir(from).relativeFilePath(f);
        QDir().mkpath(QFileInfo(dst).path());
        QVERIFY(QFile::copy(f, dst));
    }
}

// Waits until the view has nothing running (its result, or its failure, is in).
bool settle(app::BloatView& v, int ms = 60000)
{
    QElapsedTimer t;
    t.start();
    while (v.busy() && t.elapsed() < ms)
        QTest::qWait(20);
    return !v.busy();
}

} // namespace

class TestGuiBloat : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

    void storageModelPassesTheTester()
    {
        app::StorageModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        app::StorageRow a;
        a.key = QStringLiteral("0");
        a.size = 400;
        a.used = 100;
        a.tensors = {{QStringLiteral("x"), QStringLiteral("float32"), QStringLiteral("[25]"), 100},
                     {QStringLiteral("y"), QStringLiteral("float32"), QStringLiteral("[5]"), 20}};
        app::StorageRow b;
        b.key = QStringLiteral("1");
        b.size = 8;
        b.used = 8;
        model.setRows({a, b, app::StorageRow{}});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.rowCount(model.index(0, 0)), 2);
        QCOMPARE(model.rowCount(model.index(0, 1)), 0);
        QCOMPARE(model.rowCount(model.index(0, 0, model.index(0, 0))), 0);
        QCOMPARE(model.indexOfTensor(QStringLiteral("y")).parent(), model.index(0, 0));
        model.setRows({});
        // and the view's own model while the view fills it from a real file
        app::Workspace workspace;
        app::BloatView v(workspace);
        QAbstractItemModelTester t2(v.storageModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy shown(&v, &app::BloatView::storagesShown);
        v.setTarget(data(k3303));
        QVERIFY(shown.wait(60000));
        QVERIFY(v.storageModel()->rowCount() > 0);
        v.showFile(1);
        QVERIFY(shown.wait(60000));
        v.clear();
        QCOMPARE(v.storageModel()->rowCount(), 0);
    }

    void barsMatchTheAnalysis_data()
    {
        QTest::addColumn<QString>("path");
        QTest::newRow("3303 shards") << data(k3303);
        QTest::newRow("deepspeed checkpoint") << data("deepspeed/zero2_bf16_w2");
        QTest::newRow("deepspeed tag") << data("deepspeed/zero2_bf16_w2/global_step4");
        QTest::newRow("one file") << data("bloat/torch-2.x/gaps.pt");
        QTest::newRow("legacy file") << data("bloat/torch-1.13/legacy_mix.pt");
    }

    void barsMatchTheAnalysis()
    {
        QFETCH(QString, path);
        app::Workspace workspace;
        app::BloatView v(workspace);
        v.resize(1200, 400);
        QSignalSpy analysed(&v, &app::BloatView::analysed);
        StallMeter stall;
        v.setTarget(path);
        QVERIFY(analysed.wait(60000));
        QVERIFY(analysed.first().first().toBool());
        CKPT_VERIFY_RESPONSIVE(stall);
        qInfo("longest event-loop stall while analysing: %lld ms", stall.longest());
        ops::CancelToken cancel;
        const ops::FolderBloat ref = ops::analyzeFolderBloat(path.toStdString(), {}, cancel);
        const auto& rows = v.fileBars()->rows();
        QCOMPARE(rows.size(), ref.files.size());
        std::map<QString, const ops::FolderFile*> byName;
        for (const auto& f : ref.files)
            byName[QString::fromStdString(f.path)] = &f;
        quint64 previousWaste = ~quint64(0);
        for (int i = 0; i < int(rows.size()); ++i) {
            const auto& r = rows[size_t(i)];
            QVERIFY2(byName.count(r.name), qPrintable(r.name));
            const ops::FolderFile& f = *byName[r.name];
            QCOMPARE(r.total(), f.fileBytes);
            if (f.torch) {
                QCOMPARE(r.used, f.bloat.usedBytes);
                QCOMPARE(r.wasted, f.bloat.reclaimableBytes());
                QCOMPARE(r.overhead, f.bloat.overheadBytes);
                QCOMPARE(r.other, quint64(0));
            } else {
                QCOMPARE(r.other, f.fileBytes);
            }
            QVERIFY(r.wasted <= previousWaste); // sorted by waste
            previousWaste = r.wasted;
            // the numbers are readable beside the bar and in its tooltip
            QVERIFY2(v.fileBars()->label(i).contains(app::humanBytes(r.total())),
                     qPrintable(v.fileBars()->label(i)));
            if (r.wasted) QVERIFY(v.fileBars()->label(i).contains(app::humanBytes(r.wasted)));
            QVERIFY(v.fileBars()->toolTip(i).contains(QLocale().toString(qulonglong(r.total()))));
        }
        const auto& parts = v.roleBar()->parts();
        QCOMPARE(parts.size(), ops::kByteRoles);
        for (size_t role = 0; role < ops::kByteRoles; ++role) {
            QCOMPARE(parts[role].bytes, ref.roleBytes[role]);
            QCOMPARE(parts[role].name, app::BloatView::roleLabel(ops::ByteRole(role)));
        }
        QCOMPARE(v.result().reclaimableBytes(), ref.reclaimableBytes());
        QVERIFY(settle(v));
    }

    // A checkpoint opened (again) while the view waits for an analysis: the workspace drops the
    // analyses of the last checkpoint, and the view asks again instead of waiting for ever (the
    // window opening a slimmed file it had already pointed the view at, under load).
    void aNewSnapshotWhileAnalysingIsAskedAgain()
    {
        app::Workspace workspace;
        app::BloatView v(workspace);
        const QString path = data("deepspeed/zero2_bf16_w2/global_step4");
        v.setTarget(path); // its result cannot arrive before the event loop runs
        QVERIFY(v.busy());
        workspace.setSnapshot(nullptr);
        v.setTarget(path);
        QVERIFY(settle(v, 20000));
        QVERIFY(v.result().fileBytes > 0);
    }

    void deepSpeedRolesAreThere()
    {
        // A DeepSpeed tag: weights, fp32 masters and both Adam moments, each a part of the bar.
        app::Workspace workspace;
        app::BloatView v(workspace);
        QSignalSpy analysed(&v, &app::BloatView::analysed);
        v.setTarget(data("deepspeed/zero2_bf16_w2/global_step4"));
        QVERIFY(analysed.wait(60000));
        const auto& parts = v.roleBar()->parts();
        for (auto role : {ops::ByteRole::ModelWeights, ops::ByteRole::Fp32Master, ops::ByteRole::ExpAvg,
                          ops::ByteRole::ExpAvgSq})
            QVERIFY2(parts[size_t(role)].bytes > 0, ops::roleName(role));
        QVERIFY(settle(v));
    }

    void storageTableMatchesTheAnalysis_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("bar");
        QTest::newRow("3303 worst shard") << data(k3303) << 0;
        QTest::newRow("3303 second shard") << data(k3303) << 1;
        QTest::newRow("gaps") << data("bloat/torch-2.x/gaps.pt") << 0;
        QTest::newRow("overlapping") << data("bloat/torch-2.x/overlapping.pt") << 0;
        QTest::newRow("legacy") << data("bloat/torch-1.13/legacy_mix.pt") << 0;
        QTest::newRow("optimizer states") << data("deepspeed/zero2_bf16_w2/global_step4") << 0;
    }

    void storageTableMatchesTheAnalysis()
    {
        QFETCH(QString, path);
        QFETCH(int, bar);
        app::Workspace workspace;
        app::BloatView v(workspace);
        QSignalSpy shown(&v, &app::BloatView::storagesShown);
        v.setTarget(path);
        QVERIFY(shown.wait(60000));
        if (bar) {
            // a click on another file's bar shows that file's storages
            QTest::mouseClick(v.fileBars(), Qt::LeftButton, {}, v.fileBars()->barRect(bar).center());
            QVERIFY(shown.wait(60000));
            QCOMPARE(v.fileBars()->current(), bar);
        }
        QCOMPARE(v.currentFile(), v.filePath(bar));
        const auto f = torch::TorchFile::open(v.currentFile().toStdString());
        const ops::FileBloat ref = ops::analyzeBloat(*f);
        const auto& rows = v.storageModel()->rows();
        QCOMPARE(rows.size(), ref.storages.size());
        std::map<QString, const ops::StorageBloat*> byKey;
        for (const auto& s : ref.storages)
            byKey[QString::fromStdString(f->storages()[size_t(s.storage)].key)] = &s;
        quint64 previousWaste = ~quint64(0);
        for (int i = 0; i < int(rows.size()); ++i) {
            const app::StorageRow& r = rows[size_t(i)];
            QVERIFY2(byKey.count(r.key), qPrintable(r.key));
            const ops::StorageBloat& s = *byKey[r.key];
            QCOMPARE(r.size, s.nbytes);
            QCOMPARE(r.used, s.usedBytes);
            QVERIFY(r.wasted() <= previousWaste);
            previousWaste = r.wasted();
            QStringList want, got;
            for (int t : s.tensors)
                want << QString::fromStdString(f->tensors()[size_t(t)].path);
            for (const auto& t : r.tensors)
                got << t.path;
            QCOMPARE(got, want);
            // what the table shows
            const QModelIndex row = v.storageModel()->index(i, 0);
            QCOMPARE(row.data().toString(), r.key);
            QCOMPARE(row.siblingAtColumn(app::StorageModel::Size).data().toString(),
                     app::humanBytes(s.nbytes));
            QCOMPARE(row.siblingAtColumn(app::StorageModel::Used).data().toString(),
                     app::humanBytes(s.usedBytes));
            QCOMPARE(v.storageModel()->rowCount(row), int(s.tensors.size()));
        }
    }

    void clickingATensorSelectsItInTheTree_data()
    {
        QTest::addColumn<QString>("open");
        QTest::addColumn<QString>("bloat");
        QTest::newRow("a file on its own")
            << data("bloat/torch-2.x/gaps.pt") << data("bloat/torch-2.x/gaps.pt");
        QTest::newRow("a DeepSpeed tag")
            << data("deepspeed/zero2_bf16_w2") << data("deepspeed/zero2_bf16_w2/global_step4");
    }

    void clickingATensorSelectsItInTheTree()
    {
        QFETCH(QString, open);
        QFETCH(QString, bloat);
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(open);
        QVERIFY(loaded.wait(30000));
        QVERIFY(loaded.first().first().toBool());
        app::BloatView* v = w.bloatView();
        w.showBloat(bloat);
        QVERIFY(w.bloatDock()->isVisible());
        QVERIFY(settle(*v));
        QCOMPARE(v->target(), bloat);
        QVERIFY(v->storageModel()->rowCount() > 0);
        // every tensor of the table, clicked on the row that names it (its storage's when it
        // is the storage's only view), is the tree's current node: the same tensor of the same file
        QTreeView* table = v->storageView();
        table->expandAll();
        int clicked = 0;
        const auto rows = v->storageModel()->rows();
        for (const auto& storage : rows) {
            for (const auto& t : storage.tensors) {
                if (clicked == 12) break;
                const QModelIndex row = v->storageModel()->indexOfTensor(t.path);
                QVERIFY(row.isValid());
                QCOMPARE(app::StorageModel::isTensor(row), storage.tensors.size() > 1);
                QCOMPARE(row.data(app::StorageModel::TensorPathRole).toString(), t.path);
                table->scrollTo(row);
                QTest::mouseClick(
                    table->viewport(), Qt::LeftButton, {},
                    table->visualRect(row.siblingAtColumn(app::StorageModel::Tensors)).center());
                const app::Node* n = app::TreeModel::node(w.proxy()->mapToSource(w.tree()->currentIndex()));
                QVERIFY(n);
                QCOMPARE(n->kind, app::NodeKind::Tensor);
                QVERIFY(n->tensor);
                QCOMPARE(QString::fromStdString(n->tensor->tensor.path), t.path);
                QCOMPARE(QFileInfo(QString::fromStdString(n->file)).canonicalFilePath(),
                         QFileInfo(v->currentFile()).canonicalFilePath());
                // the view stays on what it showed, its tensor selected
                QCOMPARE(v->target(), bloat);
                QCOMPARE(table->currentIndex().siblingAtColumn(0), row);
                ++clicked;
            }
        }
        QVERIFY(clicked > 0);
        QVERIFY(settle(*v));
    }

    void theViewFollowsTheTree()
    {
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        const QString ck = data("deepspeed/zero2_bf16_w2");
        w.open(ck);
        QVERIFY(loaded.wait(30000));
        app::BloatView* v = w.bloatView();
        QVERIFY(v->target().isEmpty()); // hidden: nothing computed
        w.bloatDock()->show();
        QVERIFY(settle(*v));
        QCOMPARE(v->target(), ck);
        QVERIFY(w.select(QStringLiteral("global_step2")));
        QCOMPARE(v->target(), ck + QStringLiteral("/global_step2"));
        QVERIFY(settle(*v));
        // a parameter inside the tag keeps the tag's view
        QVERIFY(w.select(QStringLiteral("global_step2/parameters/fc1.weight")));
        QCOMPARE(v->target(), ck + QStringLiteral("/global_step2"));
        // a rank file is shown on its own; a tensor of it selects its storage
        QVERIFY(w.select(QStringLiteral("global_step4/rank files/mp_rank_00_model_states.pt")));
        QCOMPARE(v->target(), ck + QStringLiteral("/global_step4/mp_rank_00_model_states.pt"));
        QVERIFY(settle(*v));
        QVERIFY(
            w.select(QStringLiteral("global_step4/rank files/mp_rank_00_model_states.pt/module/fc1.weight")));
        QVERIFY(settle(*v));
        QCOMPARE(v->storageView()->currentIndex().data(app::StorageModel::TensorPathRole).toString(),
                 QStringLiteral("module/fc1.weight"));
    }

    void slimEndToEnd()
    {
        QTemporaryDir tmp;
        const QString in = data(k3303);
        const QString out = tmp.filePath(QStringLiteral("slim"));
        app::SlimDialog d(in);
        d.show();
        QTRY_VERIFY_WITH_TIMEOUT(d.hasPrediction(), 60000);
        QVERIFY2(d.prediction().ok, qPrintable(d.prediction().message));
        QVERIFY(d.prediction().result.bytesAfter() < d.prediction().result.bytesBefore());
        // the prediction is the Bloat view's: the wasted storage bytes go
        ops::CancelToken cancel;
        const ops::FolderBloat bloat = ops::analyzeFolderBloat(in.toStdString(), {}, cancel);
        QVERIFY(d.prediction().result.bytesBefore() - d.prediction().result.bytesAfter() <=
                bloat.reclaimableBytes() + 4096);
        QVERIFY(d.prediction().result.bytesBefore() - d.prediction().result.bytesAfter() >=
                bloat.reclaimableBytes() / 2);

        d.setOutput(out);
        QSignalSpy done(&d, &app::SlimDialog::finished);
        QSignalSpy progressed(&d, &app::SlimDialog::progressed);
        StallMeter stall;
        d.start();
        QVERIFY(d.running());
        QVERIFY(done.wait(120000));
        qInfo("longest event-loop stall while slimming: %lld ms (%lld progress reports)", stall.longest(),
              qlonglong(progressed.size()));
        QVERIFY2(d.outcome().ok, qPrintable(d.outcome().message));
        CKPT_VERIFY_RESPONSIVE(stall);
        QVERIFY(QFileInfo(out).isDir());
        QCOMPARE(folderBytes(out), d.outcome().result.bytesAfter());
        QCOMPARE(folderBytes(in), d.outcome().result.bytesBefore());
        QVERIFY(folderBytes(out) < folderBytes(in));
        QCOMPARE(d.outcome().result.files.size(), size_t(5));
        // every shard reads back with the same tensors, none bloated any more
        for (const QString& name : QDir(out).entryList({QStringLiteral("*.bin")}, QDir::Files)) {
            const auto a = torch::TorchFile::open(QDir(in).filePath(name).toStdString());
            const auto b = torch::TorchFile::open(QDir(out).filePath(name).toStdString());
            QCOMPARE(b->tensors().size(), a->tensors().size());
            QCOMPARE(ops::analyzeBloat(*b).reclaimableBytes(), uint64_t(0));
            for (size_t i = 0; i < a->tensors().size(); ++i) {
                const auto& ta = a->tensors()[i];
                const torch::Tensor* tb = b->tensor(ta.path);
                QVERIFY(tb);
                const auto x = testutil::contiguousBytes(*a, ta), y = testutil::contiguousBytes(*b, *tb);
                QVERIFY(x == y);
            }
        }
        // "Open in window": the window shows the result in its Bloat view
        app::MainWindow w;
        w.show();
        app::SlimDialog* d2 = w.openSlimDialog(in);
        QSignalSpy openReq(d2, &app::SlimDialog::openRequested);
        emit d2->openRequested(out);
        QVERIFY(w.bloatDock()->isVisible());
        QCOMPARE(w.bloatView()->target(), out);
        QVERIFY(settle(*w.bloatView()));
        QCOMPARE(w.bloatView()->result().reclaimableBytes(), uint64_t(0));
        d2->close();
    }

    void slimAFileOfTheTreeOpensTheResult()
    {
        QTemporaryDir tmp;
        const QString in = tmp.filePath(QStringLiteral("slice_of_large.pt"));
        QVERIFY(QFile::copy(data("bloat/torch-2.x/slice_of_large.pt"), in));
        app::MainWindow w;
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(in);
        QVERIFY(loaded.wait(30000));
        app::SlimDialog* d = w.openSlimDialog(in);
        QCOMPARE(d->output(), tmp.filePath(QStringLiteral("slice_of_large.slim.pt")));
        QSignalSpy done(d, &app::SlimDialog::finished);
        d->start();
        QVERIFY(done.wait(60000));
        QVERIFY2(d->outcome().ok, qPrintable(d->outcome().message));
        QVERIFY(QFileInfo(d->output()).size() < QFileInfo(in).size());
        QCOMPARE(quint64(QFileInfo(d->output()).size()), d->outcome().result.bytesAfter());
        const QString out = d->output();
        emit d->openRequested(out);
        QVERIFY(loaded.wait(30000));
        QVERIFY(loaded.last().first().toBool());
        QCOMPARE(QString::fromStdString(w.model()->snapshot()->path), out);
        QVERIFY(settle(*w.bloatView()));
        QCOMPARE(w.bloatView()->target(), out);
        // a saved slice of a large tensor: the slimmed file keeps the slice only
        QCOMPARE(w.bloatView()->result().reclaimableBytes(), uint64_t(0));
    }

    // Cancel through the dialog's public API once bytes flow: a large model is still being
    // copied when the GUI thread hears of it.
    void cancelMidRunLeavesNothing()
    {
        QTemporaryDir in, tmp;
        testutil::writeLargeModel(in.path());
        const QString out = tmp.filePath(QStringLiteral("slim"));
        app::SlimDialog d(in.path());
        d.setOutput(out);
        bool cancelling = true;
        testutil::whenWriting(&d, [&] {
            if (cancelling) d.cancel();
        });
        QSignalSpy done(&d, &app::SlimDialog::finished);
        d.start();
        QVERIFY(done.wait(120000));
        QVERIFY(d.outcome().cancelled);
        QVERIFY(!d.outcome().ok);
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(everything(tmp.path()), QStringList());
        // and a second run into the same place works: nothing stale in the way
        cancelling = false;
        d.start();
        QVERIFY(done.wait(120000));
        QVERIFY2(d.outcome().ok, qPrintable(d.outcome().message));
        QVERIFY(QFileInfo(out).isDir());
    }

    void cancelASingleFile()
    {
        QTemporaryDir in, tmp;
        const QString file = testutil::writeLargeModel(in.path());
        const QString out = tmp.filePath(QStringLiteral("x.pt"));
        app::SlimDialog d(file);
        d.setOutput(out);
        testutil::whenWriting(&d, [&d] { d.cancel(); });
        QSignalSpy done(&d, &app::SlimDialog::finished);
        d.start();
        QVERIFY(done.wait(120000));
        QVERIFY(d.outcome().cancelled);
        QCOMPARE(everything(tmp.path()), QStringList());
    }

    // Closing the dialog while it runs cancels the job; destroying it (the window quitting)
    // cancels it and waits, so nothing is written after it.
    void closingTheSlimDialogCancels()
    {
        QTemporaryDir in, tmp;
        testutil::writeLargeModel(in.path());
        const QString out = tmp.filePath(QStringLiteral("slim"));
        {
            app::SlimDialog d(in.path());
            d.show();
            d.setOutput(out);
            testutil::whenWriting(&d, [&d] { d.close(); });
            QSignalSpy done(&d, &app::SlimDialog::finished);
            d.start();
            QVERIFY(done.wait(120000));
            QVERIFY(d.outcome().cancelled);
            QVERIFY(d.isVisible()); // it stays to say so; closed again, it closes
            d.close();
            QVERIFY(!d.isVisible());
        }
        QCOMPARE(everything(tmp.path()), QStringList());
        {
            app::SlimDialog d(in.path());
            d.setOutput(out);
            d.start();
            testutil::waitUntilWriting(&d); // then the dialog goes at once
            QVERIFY(d.running());
        }
        QThreadPool::globalInstance()->waitForDone();
        QCOMPARE(everything(tmp.path()), QStringList());
    }

    void anErrorNamesTheFile()
    {
        // A damaged file among good ones: the job fails naming it, in the outcome and in the
        // error dialog, and leaves no output.
        QTemporaryDir tmp;
        const QString in = tmp.filePath(QStringLiteral("in"));
        QVERIFY(QDir().mkpath(in));
        QVERIFY(QFile::copy(data("bloat/torch-2.x/gaps.pt"), in + QStringLiteral("/a.pt")));
        QVERIFY(QFile::copy(data("corrupt/short_storage.pt"), in + QStringLiteral("/broken.pt")));
        const QString out = tmp.filePath(QStringLiteral("out"));
        app::SlimDialog d(in);
        d.setOutput(out);
        d.show();
        QString boxText;
        QTimer poll;
        poll.setInterval(20);
        connect(&poll, &QTimer::timeout, this, [&] {
            if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
                boxText = box->text() + QLatin1Char('\n') + box->informativeText();
                box->accept();
            }
        });
        poll.start();
        QSignalSpy done(&d, &app::SlimDialog::finished);
        d.start();
        QVERIFY(done.wait(60000));
        QVERIFY(!d.outcome().ok && !d.outcome().cancelled);
        QVERIFY2(d.outcome().file.endsWith(QLatin1String("broken.pt")), qPrintable(d.outcome().file));
        QVERIFY2(d.outcome().message.contains(QLatin1String("broken.pt")), qPrintable(d.outcome().message));
        QTRY_VERIFY_WITH_TIMEOUT(!boxText.isEmpty(), 10000);
        QVERIFY2(boxText.contains(QLatin1String("broken.pt")), qPrintable(boxText));
        QVERIFY(!QFileInfo::exists(out));
        QCOMPARE(everything(tmp.path()).filter(QStringLiteral("ckpt-partial")), QStringList());
    }

    void anOutputInsideTheInputIsRefused_data()
    {
        QTest::addColumn<QString>("inside"); // relative to the copied input folder
        QTest::newRow("a new folder inside") << QStringLiteral("slim");
        QTest::newRow("the input itself") << QString();
        QTest::newRow("over a shard") << QStringLiteral("pytorch_model-00001-of-00003.bin");
        QTest::newRow("through ..") << QStringLiteral("sub/../slim");
    }

    void anOutputInsideTheInputIsRefused()
    {
        QFETCH(QString, inside);
        QTemporaryDir tmp;
        const QString in = tmp.filePath(QStringLiteral("in"));
        copyTree(data(k3303), in);
        const QStringList before = everything(tmp.path());
        app::SlimDialog d(in);
        d.setOutput(inside.isEmpty() ? in : in + QLatin1Char('/') + inside);
        QSignalSpy done(&d, &app::SlimDialog::finished);
        d.start();
        QCOMPARE(done.size(), 1); // refused at once, on the GUI thread, before any worker
        QVERIFY(!d.running());
        QVERIFY(!d.outcome().ok && !d.outcome().cancelled);
        QVERIFY2(d.outcome().message.contains(QLatin1String("input")), qPrintable(d.outcome().message));
        QTRY_VERIFY_WITH_TIMEOUT(d.hasPrediction(), 60000);
        QCOMPARE(everything(tmp.path()), before);
        // and a file input's output on itself
        app::SlimDialog f(in + QStringLiteral("/pytorch_model-00002-of-00003.bin"));
        f.setOutput(in + QStringLiteral("/pytorch_model-00002-of-00003.bin"));
        QSignalSpy done2(&f, &app::SlimDialog::finished);
        f.start();
        QCOMPARE(done2.size(), 1);
        QVERIFY(!f.outcome().ok);
        QTRY_VERIFY_WITH_TIMEOUT(f.hasPrediction(), 60000);
        QCOMPARE(everything(tmp.path()), before);
    }
};

QTEST_MAIN(TestGuiBloat)
#include "tst_gui_bloat.moc"
