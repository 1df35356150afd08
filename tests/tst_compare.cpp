// The comparison (issue 12): ops::computeDiff's typed result (each side its own tag, tensors as
// they arrive, a tied alias compared once, histograms that add up); the comparison window
// offscreen — its table against `ckpt diff --json`, the heatmap against the table, the models
// under QAbstractItemModelTester, sorting and filtering, cancel midway, and the longest
// event-loop stall while it computes. The optimizer moments (--moments, the window's checkbox)
// against ds_to_universal's files and a Universal folder; each side's tag (--tag-a/--tag-b,
// the dialog's tag lists).
#include "cast.h"
#include "compare_heatmap.h"
#include "compare_histograms.h"
#include "compare_model.h"
#include "compare_window.h"
#include "job_manager.h"
#include "main_window.h"
#include "ops/universal.h"
#include "stall_meter.h"
#include "testutil.h"
#include "tree_model.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QChart>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
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
#include <QThread>
#include <QTranslator>
#include <QTreeView>
#include <QValueAxis>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

using namespace ckpt;

namespace {

std::string fixture(const char* rel)
{
    return testutil::dataDir() + "/deepspeed/" + rel;
}

// A safetensors file of `count` float32 tensors of n elements each, values from `seed`: big
// enough that a comparison takes a while (for cancel), written by hand so no tool is needed.
void writeSafetensors(const QString& path, int count, qint64 n, float seed, bool bf16 = false)
{
    const int es = bf16 ? 2 : 4; // bf16: the same values rounded as torch's .to(torch.bfloat16)
    QJsonObject header;
    for (int i = 0; i < count; ++i)
        header.insert(
            QStringLiteral("layers.%1.weight").arg(i),
            QJsonObject{
                {QStringLiteral("dtype"), bf16 ? QStringLiteral("BF16") : QStringLiteral("F32")},
                {QStringLiteral("shape"), QJsonArray{double(n)}},
                {QStringLiteral("data_offsets"), QJsonArray{double(i * n * es), double((i + 1) * n * es)}}});
    QByteArray h = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (h.size() % 8)
        h += ' ';
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const quint64 len = quint64(h.size());
    f.write(reinterpret_cast<const char*>(&len), 8);
    f.write(h);
    std::vector<float> v(static_cast<size_t>(n));
    std::vector<uint16_t> h16(static_cast<size_t>(n));
    for (int i = 0; i < count; ++i) {
        for (qint64 j = 0; j < n; ++j)
            v[size_t(j)] = std::sin(float(j) * 0.001f + seed * float(i + 1));
        if (!bf16) {
            f.write(reinterpret_cast<const char*>(v.data()), n * 4);
            continue;
        }
        for (qint64 j = 0; j < n; ++j)
            h16[size_t(j)] = gpu::floatToBFloat16(v[size_t(j)]);
        f.write(reinterpret_cast<const char*>(h16.data()), n * 2);
    }
}

// `ckpt diff --json` writes NaN and Inf as strings (JSON has neither).
double jsonNumber(const QJsonValue& v)
{
    if (!v.isString()) return v.toDouble();
    const QString s = v.toString();
    return s == QLatin1String("nan") ? std::nan("") : s.startsWith(QLatin1Char('-')) ? -INFINITY : INFINITY;
}

QJsonObject ckptDiff(const QStringList& args)
{
    QProcess p;
    p.start(QStringLiteral(CKPT_BINARY), QStringList{QStringLiteral("diff")} + args +
                                             QStringList{QStringLiteral("--json"), QStringLiteral("-q")});
    if (!p.waitForFinished(60000) || p.exitCode() != 0) {
        qWarning("ckpt diff failed: %s", p.readAllStandardError().constData());
        return {};
    }
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

bool waitFinished(app::CompareWindow& w, int ms = 120000)
{
    // The worker may be done before its outcome is taken in (a queued signal): wait for that.
    QSignalSpy spy(&w, &app::CompareWindow::finished);
    return w.done() || spy.wait(ms);
}

} // namespace

// The tensors `ckpt diff --json A B` lists.
QJsonArray ckptDiffTensors(const QString& a, const QString& b)
{
    QProcess p;
    p.start(QStringLiteral(CKPT_BINARY),
            {QStringLiteral("diff"), a, b, QStringLiteral("--json"), QStringLiteral("-q")});
    if (!p.waitForFinished(60000) || p.exitCode() != 0) return {};
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object()[QStringLiteral("tensors")].toArray();
}

// Every row's numbers as `ckpt diff --json` gives them, and the sort role of the change.
// The rows that list a tied alias ("tied to X"): beside the tensors `ckpt diff` compares.
qsizetype tiedRows(const app::CompareWindow& w)
{
    return std::count_if(w.model()->rows().begin(), w.model()->rows().end(),
                         [](const ops::TensorDiff& d) { return !d.tiedTo.empty(); });
}

void checkRowsMatch(app::CompareWindow& w, const QJsonArray& tensors)
{
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
}

// The heatmap: one cell per row with its relative change; a click selects and shows histograms.
void checkHeatmapAndHistograms(app::CompareWindow& w)
{
    // The heatmap: one cell per row, each with its row's relative change.
    const app::HeatmapGrid& g = w.heatmap()->grid();
    QCOMPARE(qsizetype(g.cells.size()), qsizetype(w.model()->rows().size()) - tiedRows(w));
    for (const auto& d : w.model()->rows()) {
        if (!d.tiedTo.empty()) continue; // its tensor has the cell
        const auto* c = g.find(QString::fromStdString(d.name));
        QVERIFY(c);
        if (d.status == ops::DiffStatus::Identical)
            QCOMPARE(c->value, 0.0);
        else
            QCOMPARE(c->value, d.diff.relL2());
    }
    // A click on a cell selects its row and shows its histograms.
    const auto& cell = g.cells.back();
    QTest::mouseClick(w.heatmap(), Qt::LeftButton, {}, w.heatmap()->cellRect(cell.row, cell.column).center());
    const QModelIndex cur = w.proxy()->mapToSource(w.table()->currentIndex());
    QCOMPARE(QString::fromStdString(w.model()->rows()[size_t(cur.row())].name), cell.name);
    QCOMPARE(w.histograms()->seriesCount(0), 2);
    QCOMPARE(w.histograms()->seriesCount(1), 1);
    // Issue 21 #15: counts tick in whole steps (0.5 steps printed as integers read "0 0 1 1 1"),
    // values in at most four steps across (so a-b's labels never run together).
    for (int c = 0; c < 2; ++c)
        for (QAbstractAxis* axis : w.histograms()->chart(c)->axes()) {
            auto* v = qobject_cast<QValueAxis*>(axis);
            QVERIFY(v && v->tickType() == QValueAxis::TicksDynamic);
            if (axis->alignment() == Qt::AlignLeft)
                QVERIFY2(v->tickInterval() >= 1 && std::floor(v->tickInterval()) == v->tickInterval(),
                         qPrintable(QString::number(v->tickInterval())));
            else
                QVERIFY((v->max() - v->min()) / v->tickInterval() <= 4.0 + 1e-9);
        }
    w.histograms()->setLogScale(true);
    QCOMPARE(w.histograms()->seriesCount(0), 2);
}

// Sorting by the change and filtering by name and status, through the proxy.
void checkSortAndFilter(app::CompareWindow& w)
{
    // Sorted by relative change, descending: numbers in order.
    w.table()->sortByColumn(app::CompareModel::RelL2, Qt::DescendingOrder);
    double last = INFINITY;
    for (int r = 0; r < w.proxy()->rowCount(); ++r) {
        const QVariant v = w.proxy()->index(r, app::CompareModel::RelL2).data(app::CompareModel::SortRole);
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
}

// What the window exports: every row, or what it shows (the filter's rows, in the sort's order).
void checkExports(app::CompareWindow& w, const QJsonArray& tensors)
{
    // Exports: CSV with one line per row, JSON with one object per row.
    QCOMPARE(w.model()->toCsv().count('\n'), qsizetype(tensors.size()) + tiedRows(w) + 1);
    QCOMPARE(QJsonDocument::fromJson(w.model()->toJson()).array().size(), tensors.size() + tiedRows(w));
    // Issue 21 #10: what the window exports is what it shows: the filter's rows, in the
    // sort's order (it used to write every row, unsorted).
    w.statusBox()->setCurrentIndex(0);
    w.filterBox()->setText(QStringLiteral("fc"));
    w.table()->sortByColumn(app::CompareModel::Name, Qt::DescendingOrder);
    const int shown = w.proxy()->rowCount();
    QVERIFY(shown >= 2 && shown < int(tensors.size()));
    const QList<QByteArray> csv = w.shownTable(false).trimmed().split('\n');
    QCOMPARE(csv.size(), shown + 1);
    const QJsonArray js = QJsonDocument::fromJson(w.shownTable(true)).array();
    QCOMPARE(js.size(), shown);
    for (int r = 0; r < shown; ++r) {
        const QString name = w.proxy()->index(r, app::CompareModel::Name).data().toString();
        QCOMPARE(js[r].toObject()[QStringLiteral("name")].toString(), name);
        QVERIFY(csv[r + 1].startsWith(name.toUtf8() + ','));
    }
    w.filterBox()->setText(QStringLiteral("no such tensor"));
    QCOMPARE(w.shownTable(false), QByteArray(w.model()->toCsv(QList<int>{})));
    QCOMPARE(QJsonDocument::fromJson(w.shownTable(true)).array().size(), 0);
}

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

    // The moments diff reads, "<param>/exp_avg(_sq)", are bit for bit what DeepSpeed's
    // ds_to_universal wrote for that parameter (zero/<param>/exp_avg.pt, sha256 in the
    // committed expectations): ZeRO 1/2/3, sub-groups, 1 to 4 ranks.
    void momentsMatchDsToUniversal_data()
    {
        QTest::addColumn<QString>("expect");
        const QDir d(QString::fromStdString(testutil::dataDir() + "/universal"));
        for (const QString& f : d.entryList({QStringLiteral("zero*.expect.json")}, QDir::Files, QDir::Name))
            QTest::newRow(qPrintable(f)) << d.filePath(f);
    }
    void momentsMatchDsToUniversal()
    {
        QFETCH(QString, expect);
        const nlohmann::json e = testutil::readJson(expect.toStdString());
        const std::string input = e["input"].get<std::string>();
        const ops::TensorSet set = ops::diffTensors(testutil::dataDir() + "/" + input, {}, true);
        std::map<std::string, const ops::SourceTensor*> byName;
        for (const auto& t : set.tensors)
            byName[t.tensor.name] = &t;
        size_t checked = 0;
        for (const auto& f : e["files"]) {
            const std::string path = f["path"].get<std::string>(); // zero/<param>/exp_avg.pt
            if (!path.starts_with("zero/") || !f.contains("summary")) continue;
            const size_t slash = path.rfind('/');
            const std::string leaf = path.substr(slash + 1);
            if (leaf != "exp_avg.pt" && leaf != "exp_avg_sq.pt") continue;
            const std::string name = path.substr(5, slash - 5) + "/" + leaf.substr(0, leaf.size() - 3);
            QVERIFY2(byName.count(name), name.c_str());
            const ops::SourceTensor& t = *byName[name];
            // The tensor itself, or (ZeRO-1/2 conversions) a dict's "param" beside "cat_dim".
            nlohmann::json want = f["summary"].value("tensor", nlohmann::json());
            for (const auto& kv : f["summary"].value("dict", nlohmann::json::array()))
                if (kv[0] == "param") want = kv[1]["tensor"];
            QVERIFY2(want.is_object(), path.c_str());
            QCOMPARE(std::string(torch::name(t.tensor.dtype)), want["dtype"].get<std::string>());
            std::vector<uint8_t> bytes(t.tensor.nbytes);
            t.tensor.fill(0, bytes.size(), bytes.data());
            QCOMPARE(testutil::sha256Hex(bytes.data(), bytes.size()), want["sha256"].get<std::string>());
            ++checked;
        }
        if (input.find("fp16") != std::string::npos) { // every step overflowed: Adam never ran
            QCOMPARE(checked, size_t(0));
            QVERIFY(!set.warnings.empty());
            return;
        }
        QVERIFY(checked >= 14); // 7 trainable parameters, two moments each
        QCOMPARE(set.tensors.size(),
                 ops::anyTensors(testutil::dataDir() + "/" + input, {}).tensors.size() + checked);
    }

    // A Universal folder holds each parameter's moments in files of their own: compared with the
    // ZeRO tag it came from, every moment is identical, and none is missing.
    void momentsOfUniversalFolder()
    {
        QTemporaryDir dir;
        const std::string tag = fixture("zero3_bf16_w2/global_step2");
        const std::string out = dir.filePath(QStringLiteral("uni")).toStdString();
        ops::universal(tag, out, {}, {}, {});
        ops::DiffOptions o;
        o.moments = true;
        const ops::DiffResult r = ops::computeDiff(tag, out, o, gpu::cpuBackend(), {}, {});
        size_t moments = 0;
        for (const auto& d : r.tensors) {
            if (d.name.find("/exp_avg") == std::string::npos) continue;
            ++moments;
            QVERIFY2(d.status == ops::DiffStatus::Identical, d.name.c_str());
        }
        QCOMPARE(moments, size_t(14));
    }

    // `ckpt diff` takes each side's tag (--tag-a, --tag-b, else --tag for both), and with
    // --moments adds the moments' rows, numbers as the library computes them.
    void cliTagsPerSideAndMoments()
    {
        const QString root = QString::fromStdString(fixture("zero2_fp32_w2"));
        QJsonObject doc = ckptDiff({root, root, QStringLiteral("--tag-a"), QStringLiteral("global_step2"),
                                    QStringLiteral("--tag-b"), QStringLiteral("global_step4")});
        QCOMPARE(doc[QStringLiteral("a_tag")].toString(), QStringLiteral("global_step2"));
        QCOMPARE(doc[QStringLiteral("b_tag")].toString(), QStringLiteral("global_step4"));
        QVERIFY(doc[QStringLiteral("totals")][QStringLiteral("different")].toInt() > 0);
        const int plain = int(doc[QStringLiteral("tensors")].toArray().size());

        doc = ckptDiff({root, root, QStringLiteral("--tag"), QStringLiteral("global_step2")});
        QCOMPARE(doc[QStringLiteral("b_tag")].toString(), QStringLiteral("global_step2"));
        QCOMPARE(doc[QStringLiteral("totals")][QStringLiteral("different")].toInt(), 0);
        doc = ckptDiff({root, root, QStringLiteral("--tag"), QStringLiteral("global_step2"),
                        QStringLiteral("--tag-b"), QStringLiteral("global_step4")});
        QCOMPARE(doc[QStringLiteral("a_tag")].toString(), QStringLiteral("global_step2"));
        QCOMPARE(doc[QStringLiteral("b_tag")].toString(), QStringLiteral("global_step4"));

        doc = ckptDiff({root, root, QStringLiteral("--tag-a"), QStringLiteral("global_step2"),
                        QStringLiteral("--moments")});
        const QJsonArray rows = doc[QStringLiteral("tensors")].toArray();
        QCOMPARE(int(rows.size()), plain + 14);
        ops::DiffOptions o;
        o.a.tag = "global_step2";
        o.moments = true;
        const ops::DiffResult r =
            ops::computeDiff(root.toStdString(), root.toStdString(), o, gpu::cpuBackend(), {}, {});
        QCOMPARE(r.b.tag, std::string("global_step4"));
        for (const auto& v : rows) {
            const QJsonObject t = v.toObject();
            const std::string name = t[QStringLiteral("name")].toString().toStdString();
            auto it = std::find_if(r.tensors.begin(), r.tensors.end(),
                                   [&](const auto& d) { return d.name == name; });
            QVERIFY2(it != r.tensors.end(), name.c_str());
            QCOMPARE(it->diff.maxAbsDiff, jsonNumber(t[QStringLiteral("max_abs_diff")]));
            QCOMPARE(it->diff.relL2(), jsonNumber(t[QStringLiteral("rel_l2")]));
        }
        QCOMPARE(QString::fromStdString(r.tensors.back().name), QStringLiteral("norm.bias/exp_avg_sq"));

        // A side without moments says so rather than comparing nothing in silence.
        const QString hf = QString::fromStdString(testutil::dataDir() + "/hf/safetensors");
        doc = ckptDiff({hf, hf, QStringLiteral("--moments")});
        QVERIFY(doc[QStringLiteral("warnings")].toArray().size() >= 1);
        QVERIFY(doc[QStringLiteral("warnings")].toArray().first().toString().contains(
            QLatin1String("no optimizer moments")));
    }

    // The dialog lists each side's tags: a tag folder shows as its checkpoint with that tag
    // picked (so another can be), a checkpoint with its latest; the request carries the tags.
    void dialogPicksEachSidesTag()
    {
        const QString root = QString::fromStdString(fixture("zero2_fp32_w2"));
        app::CompareDialog d(
            app::CompareRequest{root + QStringLiteral("/global_step2"), root, {}, {}, false});
        // Listed on a worker: nothing is asked of the disk on the GUI thread, and Compare waits.
        QTRY_VERIFY(d.listed());
        for (int side : {0, 1}) {
            QCOMPARE(d.tagBox(side)->count(), 2);
            QVERIFY(d.tagBox(side)->isVisibleTo(&d));
            QCOMPARE(d.tagBox(side)->count(), 2);
            QCOMPARE(QFileInfo(d.pathEdit(side)->text()).absoluteFilePath(),
                     QFileInfo(root).absoluteFilePath());
        }
        QCOMPARE(d.tagBox(0)->currentData().toString(), QStringLiteral("global_step2"));
        QCOMPARE(d.tagBox(1)->currentData().toString(), QStringLiteral("global_step4")); // latest
        d.tagBox(1)->setCurrentIndex(d.tagBox(1)->findData(QStringLiteral("global_step2")));
        d.momentsBox()->setChecked(true);
        app::CompareRequest q = d.request();
        QCOMPARE(q.tagA, QStringLiteral("global_step2"));
        QCOMPARE(q.tagB, QStringLiteral("global_step2"));
        QVERIFY(q.moments);
        // Each side's tag as the location that opens it (what the window's tree-less callers pass).
        QCOMPARE(QFileInfo(d.location(1)).absoluteFilePath(),
                 QFileInfo(root + "/global_step2").absoluteFilePath());
        // A file has one tag: no choice shown, none asked for.
        d.pathEdit(1)->setText(
            QString::fromStdString(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt"));
        QTRY_VERIFY(d.listed());
        QVERIFY(!d.tagBox(1)->isVisibleTo(&d));
        QVERIFY(d.request().tagB.isEmpty());

        // The window compares what the request says, tags and moments included, and its
        // checkbox runs it again without the moments.
        q.tagB = QStringLiteral("global_step4");
        app::CompareWindow w;
        QAbstractItemModelTester t(w.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        w.show();
        w.start(q);
        QVERIFY(waitFinished(w));
        QVERIFY2(w.outcome().ok(), qPrintable(w.outcome().error));
        QCOMPARE(w.outcome().value->a.tag, std::string("global_step2"));
        QCOMPARE(w.outcome().value->b.tag, std::string("global_step4"));
        // Issue 36 #15: the title names both tags (it read "zero2_fp32_w2 vs zero2_fp32_w2").
        QCOMPARE(w.windowTitle(),
                 QStringLiteral("zero2_fp32_w2 @ global_step2 vs zero2_fp32_w2 @ global_step4 - Compare"));
        QVERIFY(w.momentsBox()->isChecked());
        const int withMoments = w.model()->rowCount();
        QVERIFY(w.model()->rowOf(QStringLiteral("fc1.weight/exp_avg_sq")) >= 0);
        QSignalSpy again(&w, &app::CompareWindow::finished);
        w.momentsBox()->setChecked(false);
        QVERIFY(again.wait(60000));
        QCOMPARE(w.model()->rowCount(), withMoments - 14);
        QCOMPARE(w.request().tagA, QStringLiteral("global_step2"));
    }

    // Typing a path lists its tags once the path rests, not at every key (a listing reads the
    // disk on the GUI thread).
    void dialogListsTagsOnceTypingRests()
    {
        app::CompareDialog d(app::CompareRequest{});
        d.show();
        QVERIFY(QTest::qWaitForWindowActive(&d));
        QLineEdit* edit = d.pathEdit(0);
        edit->setFocus();
        QVERIFY(edit->hasFocus());
        QTest::keyClicks(edit, QString::fromStdString(fixture("zero2_fp32_w2")));
        QCOMPARE(d.tagBox(0)->count(), 0); // typed without a pause: nothing listed yet
        QTRY_COMPARE(d.tagBox(0)->count(), 2);
        QVERIFY(d.tagBox(0)->isVisible());
        QCOMPARE(d.tagBox(0)->currentData().toString(), QStringLiteral("global_step4")); // latest
    }

    // JobManager's partial results, which the window's rows come through: in batches on the GUI
    // thread, in the order published, every one before the result; a superseded job's never.
    void jobPartialsArriveInOrderBeforeTheResult()
    {
        app::JobManager jobs;
        auto counting = [](int first, int count) {
            return [first, count](const ops::ProgressSink&, const ops::CancelToken& cancel,
                                  const app::PartialSink<int>& publish) {
                for (int i = 0; i < count; ++i) {
                    cancel.throwIfCancelled();
                    publish(first + i);
                    if (i % 50 == 0) QThread::msleep(20);
                }
                return count;
            };
        };
        std::vector<int> got;
        int batches = 0;
        std::optional<app::JobResult<int>> result;
        auto onPartial = [&](std::vector<int> batch) {
            QCOMPARE(QThread::currentThread(), qApp->thread());
            QVERIFY(!result);
            ++batches;
            got.insert(got.end(), batch.begin(), batch.end());
        };
        auto onResult = [&](app::JobResult<int> r) { result = std::move(r); };
        jobs.run<int>(QStringLiteral("c"), counting(1000000, 1000000), onPartial, onResult);
        jobs.run<int>(QStringLiteral("c"), counting(0, 1000), onPartial, onResult); // the first is dropped
        QTRY_VERIFY_WITH_TIMEOUT(result.has_value(), 30000);
        QVERIFY(result->ok());
        QCOMPARE(*result->value, 1000);
        std::vector<int> want(1000);
        std::iota(want.begin(), want.end(), 0);
        QVERIFY(got == want);
        // Throttled: neither one batch per value nor all of them at the end (the job takes
        // at least 400 ms, a batch goes at most every 100).
        QVERIFY2(batches > 1 && batches < 100, qPrintable(QString::number(batches)));
        QTRY_VERIFY(jobs.idle());
    }

    // The table's headers and their tooltips come from its column table, translated.
    // Issue 36 #15: a changed tensor's cosine never reads "1".
    void cosineOfAChangedTensorNeverReadsOne()
    {
        QCOMPARE(app::CompareModel::cosineText(1.0), QStringLiteral("1"));
        QCOMPARE(app::CompareModel::cosineText(0.5), QStringLiteral("0.5"));
        QCOMPARE(app::CompareModel::cosineText(0.99987), QStringLiteral("0.9999"));
        QCOMPARE(app::CompareModel::cosineText(1.0 - 3e-7), QStringLiteral("1 \u2212 3.0e-07"));
    }

    void headersFromTheColumnTable()
    {
        app::CompareModel m;
        QCOMPARE(m.headerData(app::CompareModel::Name, Qt::Horizontal).toString(), QStringLiteral("Tensor"));
        QCOMPARE(m.headerData(app::CompareModel::RelL2, Qt::Horizontal).toString(),
                 QStringLiteral("rel. L2"));
        QCOMPARE(m.headerData(app::CompareModel::Cosine, Qt::Horizontal, Qt::ToolTipRole).toString(),
                 QStringLiteral("a.b / (||a|| ||b||)"));
        QVERIFY(!m.headerData(app::CompareModel::Name, Qt::Horizontal, Qt::ToolTipRole).isValid());
        QVERIFY(!m.headerData(0, Qt::Vertical).isValid());
        QVERIFY(!m.headerData(app::CompareModel::ColumnCount, Qt::Horizontal).isValid());
        QStringList english;
        for (int c = 0; c < app::CompareModel::ColumnCount; ++c)
            english << m.headerData(c, Qt::Horizontal).toString();
        QTranslator zh;
        QVERIFY(zh.load(QStringLiteral(":/i18n/checkpoint-studio_zh_CN.qm")));
        QCoreApplication::installTranslator(&zh);
        for (int c = 0; c < app::CompareModel::ColumnCount; ++c) {
            const QString want = zh.translate("ckpt::app::CompareModel", english[c].toUtf8().constData());
            QVERIFY2(!want.isEmpty(), qPrintable(english[c]));
            QCOMPARE(m.headerData(c, Qt::Horizontal).toString(), want);
        }
        QCOMPARE(m.headerData(app::CompareModel::BitwiseEqual, Qt::Horizontal, Qt::ToolTipRole).toString(),
                 zh.translate("ckpt::app::CompareModel", "Share of elements whose bits are equal"));
        QCoreApplication::removeTranslator(&zh);
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

    // Issue 21 #9: an fp32 tensor and its bf16 copy are compared (each side widened), the numbers
    // stand, and "dtype changed" is said beside them: in the model, the table, the heatmap and
    // `ckpt diff --json`.
    void acrossDtypesValuesAreCompared()
    {
        QTemporaryDir dir;
        const QString a = dir.filePath(QStringLiteral("fp32.safetensors")),
                      b = dir.filePath(QStringLiteral("bf16.safetensors"));
        writeSafetensors(a, 3, 1000, 1.f);
        writeSafetensors(b, 3, 1000, 1.f, true);
        const auto r = ops::computeDiff(a.toStdString(), b.toStdString(), {}, gpu::cpuBackend(), {}, {});
        QCOMPARE(r.tensors.size(), size_t(3));
        for (const auto& d : r.tensors) {
            QCOMPARE(d.status, ops::DiffStatus::DTypeChanged);
            QVERIFY(d.compared && !d.bitwiseKnown);
            QVERIFY2(d.diff.relL2() > 0 && d.diff.relL2() < 1e-2,
                     qPrintable(QString::number(d.diff.relL2())));
            QVERIFY(d.diff.maxAbsDiff > 0 && d.diff.maxAbsDiff <= 1.0 / 256); // bf16 keeps 8 bits
        }
        QCOMPARE(ops::totalsOf(r.tensors).dtypeChanged, uint64_t(3));
        const app::HeatmapGrid g = app::heatmapGrid(r.tensors);
        for (const auto& c : g.cells)
            QVERIFY(c.dtypeChanged && std::isfinite(c.value) && c.value > 0); // coloured, and marked

        app::CompareWindow w;
        w.show();
        w.start(a, b);
        QVERIFY(waitFinished(w));
        QCOMPARE(w.model()->rowCount(), 3);
        const QModelIndex status = w.model()->index(0, app::CompareModel::Status);
        QCOMPARE(status.data().toString(), QStringLiteral("dtype changed: float32 → bfloat16"));
        QVERIFY(w.model()->index(0, app::CompareModel::RelL2).data().toString().size() > 0);
        QVERIFY2(w.summaryText().contains(QLatin1String("3 dtype changed (compared)")),
                 qPrintable(w.summaryText()));

        QProcess p;
        p.start(QStringLiteral(CKPT_BINARY),
                {QStringLiteral("diff"), a, b, QStringLiteral("--json"), QStringLiteral("-q")});
        QVERIFY(p.waitForFinished(60000));
        const QJsonObject doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
        const QJsonObject t0 = doc[QStringLiteral("tensors")].toArray()[0].toObject();
        QCOMPARE(t0[QStringLiteral("status")].toString(), QStringLiteral("dtype_changed"));
        QVERIFY(jsonNumber(t0[QStringLiteral("rel_l2")]) > 0);
    }

    // A tied alias (GPT-2's lm_head ties to its embedding) is listed as "tied to X" with that
    // tensor's numbers, counted once and given no heatmap cell of its own; a moment's column
    // label is drawn on two lines.
    void tiedAliasesAreListedOnce()
    {
        const QString run = QStringLiteral(CKPT_TEST_DATA "/trainer/gpt2_zero2_fp32_w2");
        app::CompareWindow w;
        w.show();
        w.start(app::CompareRequest{run, run, QStringLiteral("checkpoint-2"), QStringLiteral("checkpoint-4"),
                                    false});
        QVERIFY(waitFinished(w));
        const int row = w.model()->rowOf(QStringLiteral("lm_head.weight"));
        QVERIFY(row >= 0);
        const ops::TensorDiff& alias = w.model()->rows()[size_t(row)];
        QCOMPARE(alias.tiedTo, std::string("transformer.wte.weight"));
        QCOMPARE(w.model()->index(row, app::CompareModel::Status).data().toString(),
                 QStringLiteral("tied to transformer.wte.weight"));
        const ops::TensorDiff& target =
            w.model()->rows()[size_t(w.model()->rowOf(QStringLiteral("transformer.wte.weight")))];
        QCOMPARE(alias.diff.maxAbsDiff, target.diff.maxAbsDiff);
        QVERIFY(alias.diff.maxAbsDiff > 0);
        const ops::DiffTotals t = ops::totalsOf(w.model()->rows());
        QCOMPARE(int(t.changed + t.identical), w.model()->rowCount() - 1);
        QVERIFY2(
            w.summaryText().contains(QStringLiteral("<b>%1 tensor(s)</b>").arg(w.model()->rowCount() - 1)) &&
                w.summaryText().contains(QLatin1String("1 tied alias(es)")),
            qPrintable(w.summaryText()));
        const app::HeatmapGrid g = app::heatmapGrid(w.model()->rows());
        QVERIFY(!g.find(QStringLiteral("lm_head.weight")));
        QVERIFY(!g.rows.contains(QLatin1String("lm_head")));
        QCOMPARE(app::CompareHeatmap::labelLines(QStringLiteral("weight/exp_avg_sq")),
                 (QStringList{"weight/", "exp_avg_sq"}));
        QCOMPARE(app::CompareHeatmap::labelLines(QStringLiteral("attn.weight")), QStringList{"attn.weight"});
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
        CKPT_VERIFY_RESPONSIVE(stall); // a hang detector, not a speed claim
        QVERIFY2(w.outcome().ok(), qPrintable(w.outcome().error));
        QCOMPARE(w.outcome().value->a.tag, std::string("global_step2"));
        QCOMPARE(w.outcome().value->b.tag, std::string("global_step4"));
        QVERIFY(w.outcome().value->tensors.empty()); // the rows are the model's, not copied again

        const QJsonArray tensors = ckptDiffTensors(a, b);
        QVERIFY(tensors.size() > 5);
        QCOMPARE(w.model()->rowCount() - tiedRows(w), qsizetype(tensors.size()));
        // Each step's QVERIFYs return from it; a failure ends the test here.
        for (const auto& check : std::vector<std::function<void()>>{
                 [&] { checkRowsMatch(w, tensors); }, [&] { checkHeatmapAndHistograms(w); },
                 [&] { checkSortAndFilter(w); }, [&] { checkExports(w, tensors); }}) {
            check();
            if (QTest::currentTestFailed()) return;
        }
        w.filterBox()->clear();
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

    // Issue 36 #4: a tag that cannot be read (a rank file lost) is refused, as ckpt diff refuses
    // it, saying why; not a table of every tensor "only in A" with a note in the status bar.
    void aTagThatCannotBeReadIsRefused()
    {
        QTemporaryDir tmp;
        const QString run =
            QString::fromStdString(testutil::runWithAnUnreadableLatestTag(tmp.path().toStdString()));
        app::MainWindow m;
        QSignalSpy loaded(&m, &app::MainWindow::loaded);
        m.open(run);
        QVERIFY(loaded.wait(60000));
        QVERIFY(loaded.first().first().toBool());
        app::CompareWindow* w = m.openCompare(run + "/global_step2", run + "/global_step4");
        QVERIFY(waitFinished(*w));
        QVERIFY(!w->outcome().ok());
        QVERIFY2(w->outcome().error.contains("global_step4") &&
                     w->outcome().error.contains("rank 1 are missing"),
                 qPrintable(w->outcome().error));
        QCOMPARE(w->model()->rowCount(), 0);
        // As the Compare dialog asks: the run itself on both sides, a tag each. Both tags come from
        // the window's opened checkpoint, where the unreadable one has no parameters: before, every
        // tensor of A was "only in A".
        w->start(app::CompareRequest{run, run, QStringLiteral("global_step2"), QStringLiteral("global_step4"),
                                     false});
        QVERIFY(waitFinished(*w));
        QVERIFY(!w->outcome().ok());
        QVERIFY2(w->outcome().error.contains("rank 1 are missing"), qPrintable(w->outcome().error));
        QCOMPARE(w->model()->rowCount(), 0);
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
        QVERIFY2(w->outcome().ok(), qPrintable(w->outcome().error));
        QCOMPARE(w->outcome().value->a.tag, std::string("global_step2"));
        QVERIFY(w->model()->rowCount() > 5);
    }
};

QTEST_MAIN(TestCompare)
#include "tst_compare.moc"
