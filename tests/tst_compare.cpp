// The comparison (issue 12): ops::computeDiff's typed result (each side its own tag, tensors as
// they arrive, a tied alias compared once, histograms that add up); the comparison window
// offscreen — its table against `ckpt diff --json`, the heatmap against the table, the models
// under QAbstractItemModelTester, sorting and filtering, cancel midway, and the longest
// event-loop stall while it computes.
#include "compare_heatmap.h"
#include "compare_histograms.h"
#include "compare_model.h"
#include "compare_window.h"
#include "main_window.h"
#include "stall_meter.h"
#include "testutil.h"
#include "tree_model.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QProcess>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeView>
#include <cmath>
#include <map>
#include <set>

using namespace ckpt;

namespace {

std::string fixture(const char* rel)
{
    return testutil::dataDir() + "/deepspeed/" + rel;
}

// A safetensors file of `count` float32 tensors of n elements each, values from `seed`: big
// enough that a comparison takes a while (for cancel), written by hand so no tool is needed.
void writeSafetensors(const QString& path, int count, qint64 n, float seed)
{
    QJsonObject header;
    for (int i = 0; i < count; ++i)
        header.insert(QStringLiteral("layers.%1.weight").arg(i),
                      QJsonObject{{QStringLiteral("dtype"), QStringLiteral("F32")},
                                  {QStringLiteral("shape"), QJsonArray{double(n)}},
                                  {QStringLiteral("data_offsets"),
                                   QJsonArray{double(i * n * 4), double((i + 1) * n * 4)}}});
    QByteArray h = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (h.size() % 8)
        h += ' ';
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const quint64 len = quint64(h.size());
    f.write(reinterpret_cast<const char*>(&len), 8);
    f.write(h);
    std::vector<float> v(static_cast<size_t>(n));
    for (int i = 0; i < count; ++i) {
        for (qint64 j = 0; j < n; ++j)
            v[size_t(j)] = std::sin(float(j) * 0.001f + seed * float(i + 1));
        f.write(reinterpret_cast<const char*>(v.data()), n * 4);
    }
}

// `ckpt diff --json` writes NaN and Inf as strings (JSON has neither).
double jsonNumber(const QJsonValue& v)
{
    if (!v.isString()) return v.toDouble();
    const QString s = v.toString();
    return s == QLatin1String("nan") ? std::nan("") : s.startsWith(QLatin1Char('-')) ? -INFINITY : INFINITY;
}

bool waitFinished(app::CompareWindow& w, int ms = 120000)
{
    // The worker may be done before its outcome is taken in (a queued signal): wait for that.
    QSignalSpy spy(&w, &app::CompareWindow::finished);
    return w.done() || spy.wait(ms);
}

} // namespace

class TestCompare : public QObject
{
    Q_OBJECT

private slots:
    // Two tags of one checkpoint: each side says which tag it is; every tensor reaches the
    // callback once, in the result's order; tied aliases are not compared twice.
    void typedResultKeepsBothTags()
    {
        const std::string root = fixture("zero2_bf16_w2");
        ops::DiffOptions o;
        o.a.tag = "global_step2";
        o.b.tag = "global_step4";
        o.sideStats = true;
        o.histogramBins = 16;
        std::vector<std::string> arrived;
        const ops::DiffResult r =
            ops::computeDiff(root, root, o, gpu::cpuBackend(), {}, {},
                             [&](const ops::TensorDiff& d) { arrived.push_back(d.name); });
        QCOMPARE(r.a.tag, std::string("global_step2"));
        QCOMPARE(r.b.tag, std::string("global_step4"));
        QVERIFY(r.a.label != r.b.label);
        QCOMPARE(arrived.size(), r.tensors.size());
        std::set<std::string> names;
        for (size_t i = 0; i < r.tensors.size(); ++i) {
            QCOMPARE(arrived[i], r.tensors[i].name);
            QVERIFY2(names.insert(r.tensors[i].name).second, r.tensors[i].name.c_str());
        }
        const ops::TensorSet set = ops::anyTensors(root, o.a);
        size_t aliases = 0;
        for (const auto& t : set.tensors)
            if (!t.aliasOf.empty()) {
                ++aliases;
                QVERIFY2(!names.count(t.tensor.name), t.tensor.name.c_str());
            }
        QVERIFY(aliases > 0); // the fixture ties head.weight to embed.weight
        QCOMPARE(r.tensors.size(), set.tensors.size() - aliases);

        const ops::DiffTotals t = ops::totalsOf(r.tensors);
        QVERIFY(t.changed > 0); // two training steps apart
        QCOMPARE(t.compared, uint64_t(r.tensors.size()));
        for (const auto& d : r.tensors) {
            QVERIFY(d.compared && d.sideStats && d.histA && d.histB && d.histDiff);
            // A and B share their bins so they overlay; each adds up to its element count.
            QCOMPARE(d.histA->lo, d.histB->lo);
            QCOMPARE(d.histA->hi, d.histB->hi);
            for (const auto* h : {&*d.histA, &*d.histB, &*d.histDiff}) {
                uint64_t sum = h->nonFinite;
                for (auto b : h->bins)
                    sum += b;
                QCOMPARE(sum, d.diff.count);
            }
            QCOMPARE(d.statsA.count, d.diff.count);
            const bool same = d.diff.maxAbsDiff == 0 && d.diff.bitwiseEqual == d.diff.count;
            QCOMPARE(d.status == ops::DiffStatus::Identical, same);
        }
    }

    // Names only one side has, and a shape change, get their own statuses.
    void statusesOfMissingAndReshaped()
    {
        QTemporaryDir dir;
        const QString a = dir.filePath(QStringLiteral("a.safetensors")),
                      b = dir.filePath(QStringLiteral("b.safetensors"));
        writeSafetensors(a, 3, 10, 1.f);
        writeSafetensors(b, 2, 10, 1.f);
        ops::DiffOptions o;
        auto r = ops::computeDiff(a.toStdString(), b.toStdString(), o, gpu::cpuBackend(), {}, {});
        QCOMPARE(r.tensors.size(), size_t(3));
        QCOMPARE(r.tensors[0].status, ops::DiffStatus::Identical);
        QCOMPARE(r.tensors[2].status, ops::DiffStatus::OnlyInA);
        r = ops::computeDiff(b.toStdString(), a.toStdString(), o, gpu::cpuBackend(), {}, {});
        QCOMPARE(r.tensors.back().status, ops::DiffStatus::OnlyInB);
        writeSafetensors(b, 3, 12, 1.f);
        r = ops::computeDiff(a.toStdString(), b.toStdString(), o, gpu::cpuBackend(), {}, {});
        QCOMPARE(r.tensors[0].status, ops::DiffStatus::ShapeOrDTypeChanged);
        QVERIFY(!r.tensors[0].compared);
    }

    void heatmapGridPlacesLayersAndModules()
    {
        std::vector<ops::TensorDiff> rows;
        for (const char* n : {"embed.weight", "layers.10.mlp.weight", "layers.2.mlp.weight",
                              "layers.2.attn.weight", "norm.weight", "layers.10.attn.weight"}) {
            ops::TensorDiff d;
            d.name = n;
            d.compared = true;
            d.status = ops::DiffStatus::Changed;
            d.diff.count = 1, d.diff.sumSqA = 1, d.diff.sumSqDiff = 0.01; // rel. L2 0.1
            rows.push_back(d);
        }
        const app::HeatmapGrid g = app::heatmapGrid(rows);
        QCOMPARE(g.rows, (QStringList{"layers.2", "layers.10", "embed", "norm"}));
        QCOMPARE(g.layerRows, 2);
        QCOMPARE(g.columns, (QStringList{"weight", "mlp.weight", "attn.weight"}));
        const auto* c = g.find(QStringLiteral("layers.10.attn.weight"));
        QVERIFY(c);
        QCOMPARE(c->row, 1);
        QCOMPARE(c->column, 2);
        QVERIFY(std::abs(c->value - 0.1) < 1e-12);
        QCOMPARE(g.find(QStringLiteral("norm.weight"))->row, 3);
    }

    // The window on two tags: every row as `ckpt diff --json` says, the heatmap one cell per
    // row with the row's relative change, sorting and filtering through the proxy.
    void windowMatchesCkptDiff()
    {
        const QString a = QString::fromStdString(fixture("zero3_bf16_w2/global_step2"));
        const QString b = QString::fromStdString(fixture("zero3_bf16_w2/global_step4"));
        app::CompareWindow w;
        QAbstractItemModelTester t1(w.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester t2(w.proxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        w.show();
        testutil::StallMeter stall;
        w.start(a, b);
        QVERIFY(waitFinished(w));
        qInfo("longest event-loop stall while comparing: %lld ms", stall.longest());
        QVERIFY(stall.longest() < 250);
        QVERIFY2(w.outcome().error.isEmpty(), qPrintable(w.outcome().error));
        QCOMPARE(w.outcome().a.tag, std::string("global_step2"));
        QCOMPARE(w.outcome().b.tag, std::string("global_step4"));

        QProcess p;
        p.start(QStringLiteral(CKPT_BINARY),
                {QStringLiteral("diff"), a, b, QStringLiteral("--json"), QStringLiteral("-q")});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QJsonObject doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        const QJsonArray tensors = doc[QStringLiteral("tensors")].toArray();
        QVERIFY(tensors.size() > 5);
        QCOMPARE(w.model()->rowCount(), int(tensors.size()));
        for (const auto& v : tensors) {
            const QJsonObject t = v.toObject();
            const int row = w.model()->rowOf(t[QStringLiteral("name")].toString());
            QVERIFY(row >= 0);
            const ops::TensorDiff& d = w.model()->rows()[size_t(row)];
            QCOMPARE(d.diff.maxAbsDiff, jsonNumber(t[QStringLiteral("max_abs_diff")]));
            QCOMPARE(d.diff.relL2(), jsonNumber(t[QStringLiteral("rel_l2")]));
            QCOMPARE(d.diff.cosine(), jsonNumber(t[QStringLiteral("cosine")]));
            QCOMPARE(double(d.diff.bitwiseEqual), t[QStringLiteral("bitwise_equal")].toDouble());
            QCOMPARE(d.status == ops::DiffStatus::Identical, t[QStringLiteral("identical")].toBool());
            const QModelIndex rel = w.model()->index(row, app::CompareModel::RelL2);
            QCOMPARE(rel.data(app::CompareModel::SortRole).toDouble(), d.diff.relL2());
        }
        // The heatmap: one cell per row, each with its row's relative change.
        const app::HeatmapGrid& g = w.heatmap()->grid();
        QCOMPARE(g.cells.size(), w.model()->rows().size());
        for (const auto& d : w.model()->rows()) {
            const auto* c = g.find(QString::fromStdString(d.name));
            QVERIFY(c);
            if (d.status == ops::DiffStatus::Identical)
                QCOMPARE(c->value, 0.0);
            else
                QCOMPARE(c->value, d.diff.relL2());
        }
        // A click on a cell selects its row and shows its histograms.
        const auto& cell = g.cells.back();
        QTest::mouseClick(w.heatmap(), Qt::LeftButton, {},
                          w.heatmap()->cellRect(cell.row, cell.column).center());
        const QModelIndex cur = w.proxy()->mapToSource(w.table()->currentIndex());
        QCOMPARE(QString::fromStdString(w.model()->rows()[size_t(cur.row())].name), cell.name);
        QCOMPARE(w.histograms()->seriesCount(0), 2);
        QCOMPARE(w.histograms()->seriesCount(1), 1);
        w.histograms()->setLogScale(true);
        QCOMPARE(w.histograms()->seriesCount(0), 2);

        // Sorted by relative change, descending: numbers in order.
        w.table()->sortByColumn(app::CompareModel::RelL2, Qt::DescendingOrder);
        double last = INFINITY;
        for (int r = 0; r < w.proxy()->rowCount(); ++r) {
            const QVariant v =
                w.proxy()->index(r, app::CompareModel::RelL2).data(app::CompareModel::SortRole);
            if (!v.isValid() || std::isnan(v.toDouble())) continue;
            QVERIFY(v.toDouble() <= last);
            last = v.toDouble();
        }
        w.filterBox()->setText(QStringLiteral("fc1"));
        QVERIFY(w.proxy()->rowCount() >= 1);
        for (int r = 0; r < w.proxy()->rowCount(); ++r)
            QVERIFY(w.proxy()->index(r, 0).data().toString().contains(QLatin1String("fc1")));
        w.filterBox()->clear();
        w.statusBox()->setCurrentIndex(w.statusBox()->findData(int(ops::DiffStatus::Identical)));
        for (int r = 0; r < w.proxy()->rowCount(); ++r)
            QCOMPARE(w.proxy()->index(r, 0).data(app::CompareModel::StatusRole).toInt(),
                     int(ops::DiffStatus::Identical));
        // Selecting a row the filter hides shows everything again.
        QVERIFY(w.selectTensor(QString::fromStdString(w.model()->rows().front().name)));

        // Exports: CSV with one line per row, JSON with one object per row.
        QCOMPARE(w.model()->toCsv().count('\n'), qsizetype(tensors.size() + 1));
        QCOMPARE(QJsonDocument::fromJson(w.model()->toJson()).array().size(), tensors.size());
        QVERIFY(w.summaryText().contains(QString::number(tensors.size())));
    }

    // Cancel while rows are arriving: the worker stops early, the rows so far stay.
    void cancelMidway()
    {
        QTemporaryDir dir;
        const QString a = dir.filePath(QStringLiteral("a.safetensors")),
                      b = dir.filePath(QStringLiteral("b.safetensors"));
        writeSafetensors(a, 48, 1 << 20, 1.f);
        writeSafetensors(b, 48, 1 << 20, 1.5f);
        app::CompareWindow w;
        QAbstractItemModelTester tester(w.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        w.show();
        connect(w.model(), &QAbstractItemModel::rowsInserted, &w, [&w] { w.cancel(); });
        QSignalSpy done(&w, &app::CompareWindow::finished);
        w.start(a, b);
        QVERIFY(done.wait(120000));
        QCOMPARE(done.first().first().toBool(), false);
        QVERIFY(w.outcome().cancelled);
        QVERIFY(w.model()->rowCount() > 0);
        QVERIFY2(w.model()->rowCount() < 48, qPrintable(QString::number(w.model()->rowCount())));
        QVERIFY(w.summaryText().contains(QLatin1String("Cancelled")));
    }

    // Two tags selected in the tree open the window on them, older first.
    void twoTagsInTheTreeCompare()
    {
        app::MainWindow m;
        QSignalSpy loaded(&m, &app::MainWindow::loaded);
        m.open(QString::fromStdString(fixture("zero2_fp32_w2")));
        QVERIFY(loaded.wait(60000));
        QVERIFY(loaded.first().first().toBool());
        QVERIFY(m.selectedTagPaths().isEmpty());
        QItemSelectionModel* sel = m.tree()->selectionModel();
        for (const char* tag : {"global_step4", "global_step2"}) {
            const QModelIndex i = m.proxy()->mapFromSource(m.model()->indexOfPath(QLatin1String(tag)));
            QVERIFY(i.isValid());
            sel->select(i, QItemSelectionModel::Select | QItemSelectionModel::Rows);
        }
        const QStringList tags = m.selectedTagPaths();
        QCOMPARE(tags.size(), 2);
        QVERIFY(tags[0].endsWith(QLatin1String("global_step2")));
        QVERIFY(tags[1].endsWith(QLatin1String("global_step4")));
        app::CompareWindow* w = m.openCompare(tags[0], tags[1]);
        QVERIFY(waitFinished(*w));
        QCOMPARE(w->outcome().a.tag, std::string("global_step2"));
        QVERIFY(w->model()->rowCount() > 5);
    }
};

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
