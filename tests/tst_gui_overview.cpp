// The tag overview and the sharding map (issue 12), offscreen: the map's geometry against the
// layout for DeepSpeed fixtures of every ZeRO stage and for DCP, files, Hugging Face, Composer
// and Universal tags, the overview's counts against the layout
// and its bytes by role against ops::analyzeFolderBloat, a click in the map selecting the
// parameter in the tree, the tree's Value column, and the map's paint time for 64 ranks x 10,000 parameters
// (printed, for the record; the assertion is only that level of detail bounds the work).
#include "bloat_view.h"
#include "details_pane.h"
#include "layout/family.h"
#include "layout/trainer_state.h"
#include "main_window.h"
#include "ops/universal.h"
#include "sharding_map.h"
#include "storage_model.h"
#include "tag_overview.h"
#include "testutil.h"
#include "training_chart.h"
#include "tree_model.h"
#include "workspace.h"

#include <QApplication>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTranslator>
#include <QTreeView>
#include <map>
#include <set>

using namespace ckpt;

namespace {

// A ZeRO-1/2 or ZeRO-3 tag with `ranks` ranks and `count` parameters of varied sizes, laid out
// as DeepSpeed does (one flat group cut into equal partitions; or each parameter cut in W).
layout::Tag syntheticTag(int stage, int ranks, int count)
{
    layout::Tag t;
    t.name = "synthetic";
    t.deepspeed.emplace().zeroStage = stage;
    t.sharding = stage == 3 ? layout::Sharding::ParameterPartitions : layout::Sharding::FlatPartitions;
    t.worldSize = ranks;
    const uint64_t W = uint64_t(ranks);
    uint64_t total = 0;
    for (int i = 0; i < count; ++i) {
        layout::Parameter p;
        p.name = "model.layers." + std::to_string(i / 12) + ".p" + std::to_string(i % 12) + ".weight";
        p.shape = {int64_t(1000 + (i * 7919) % 90000)};
        p.group = 0;
        p.groupOffset = total;
        total += p.numel();
        t.params.push_back(std::move(p));
    }
    const uint64_t P = (total + W - 1) / W;
    for (auto& p : t.params) {
        const uint64_t n = p.numel();
        for (uint64_t r = 0; r < W; ++r) {
            layout::RankSlice s;
            s.rank = int(r);
            if (stage == 3) {
                const uint64_t per = (n + W - 1) / W, lo = std::min(r * per, n),
                               hi = std::min((r + 1) * per, n);
                s.paramOffset = lo, s.length = hi - lo, s.padding = per - (hi - lo);
            } else {
                const uint64_t lo = std::max(p.groupOffset, r * P),
                               hi = std::min(p.groupOffset + n, (r + 1) * P);
                if (lo >= hi) continue;
                s.paramOffset = lo - p.groupOffset, s.length = hi - lo;
            }
            p.slices.push_back(s);
        }
    }
    return t;
}

// Every parameter's slices appear once, with their lengths; lanes do not overlap.
void checkGeometry(const layout::Tag& tag, const app::ShardingLayout& l)
{
    std::map<int, uint64_t> held;
    for (const auto& s : l.segments)
        held[s.param] += s.length;
    for (size_t i = 0; i < tag.params.size(); ++i) {
        const auto& p = tag.params[i];
        if (p.group < 0) continue; // not partitioned (buffers, aliases): not on the map
        QCOMPARE(held[int(i)], p.numel());
    }
    if (l.mode == app::ShardingLayout::Mode::Lanes) {
        std::vector<uint64_t> end(size_t(l.ranks), 0), sum(size_t(l.ranks), 0);
        for (const auto& s : l.segments) {
            QVERIFY(s.begin >= end[size_t(s.rank)]); // sorted, no overlap
            end[size_t(s.rank)] = s.begin + s.length;
            sum[size_t(s.rank)] += s.length;
            QVERIFY(end[size_t(s.rank)] <= l.laneLength);
        }
        for (int r = 0; r < l.ranks; ++r) {
            uint64_t used = 0;
            for (const auto& g : l.groupUsed)
                used += g[size_t(r)];
            QCOMPARE(sum[size_t(r)], used); // a rank's share of a group is contiguous
        }
    } else {
        QCOMPARE(l.mode, app::ShardingLayout::Mode::Grid);
        for (size_t row = 0; row < l.gridParams.size(); ++row) {
            const auto& p = tag.params[size_t(l.gridParams[row])];
            for (int r = 0; r < l.ranks; ++r) {
                const auto& s = l.segments[l.gridFirst[row] + size_t(r)];
                QCOMPARE(s.param, l.gridParams[row]);
                QCOMPARE(s.rank, r);
                QCOMPARE(s.length + s.padding, l.perRank[row]);
                for (const auto& sl : p.slices)
                    if (sl.rank == r) QCOMPARE(s.length, sl.length);
            }
        }
    }
}

} // namespace

class TestOverview : public QObject
{
    Q_OBJECT

private:
    // The window shown at a size where every pane lays out, with a fixture opened in it.
    static bool openShown(app::MainWindow& w, const std::string& fixture)
    {
        w.resize(1280, 800);
        w.show();
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        w.open(QString::fromStdString(testutil::dataDir() + fixture));
        return loaded.wait(60000) && loaded.last().first().toBool();
    }

private slots:
    void mapGeometryOfEveryStage_data()
    {
        QTest::addColumn<QString>("fixture");
        for (const char* f :
             {"zero1_bf16_w4", "zero2_fp32_w2", "zero2_bf16_w4", "zero3_bf16_w4", "zero3_fp32_w2_subgroups"})
            QTest::newRow(f) << QString::fromLatin1(f);
    }
    void mapGeometryOfEveryStage()
    {
        QFETCH(QString, fixture);
        const auto s = app::loadSnapshot(testutil::dataDir() + "/deepspeed/" + fixture.toStdString());
        QVERIFY(!s->tags().empty());
        for (const auto& tag : s->tags()) {
            const app::ShardingLayout l = app::shardingLayout(tag);
            QCOMPARE(l.ranks, tag.worldSize);
            QCOMPARE(l.mode, tag.deepspeed->zeroStage == 3 ? app::ShardingLayout::Mode::Grid
                                                           : app::ShardingLayout::Mode::Lanes);
            QVERIFY(!l.segments.empty());
            checkGeometry(tag, l);
            // Hovering a segment's centre finds that segment.
            app::ShardingMap map;
            map.resize(900, 300);
            map.setSharding(l);
            for (size_t i = 0; i < l.segments.size(); ++i) {
                if (!l.segments[i].length) continue;
                const int at = map.segmentAt(map.pointOf(int(i)));
                if (at < 0) continue; // narrower than a pixel at this zoom
                QCOMPARE(l.segments[size_t(at)].param, l.segments[i].param);
            }
        }
    }

    // Other families: DCP's N-d chunks as a parameters x ranks grid (each rank's cells the
    // elements of its chunks, and which block); unsharded tags (a file, a Hugging Face folder,
    // Composer, a Universal folder) a lane per file with its tensors back to back, by bytes.
    void mapOfOtherFamilies_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("mode");
        const QString d = QString::fromStdString(testutil::dataDir());
        const int grid = int(app::ShardingLayout::Mode::Grid), files = int(app::ShardingLayout::Mode::Files);
        QTest::newRow("dcp fsdp2") << d + QStringLiteral("/dcp/fsdp2_fp32_w2") << grid;
        QTest::newRow("dcp dtensor") << d + QStringLiteral("/dcp/dtensor_mixed_w3") << grid;
        QTest::newRow("torch file") << d + QStringLiteral("/torch/torch-2.x/state_dict.pt") << files;
        QTest::newRow("hf sharded") << d + QStringLiteral("/hf/safetensors_sharded") << files;
        QTest::newRow("composer file") << d + QStringLiteral("/composer/classifier.pt") << files;
        QTest::newRow("universal") << QStringLiteral("universal") << files;
    }
    void mapOfOtherFamilies()
    {
        QFETCH(QString, path);
        QFETCH(int, mode);
        QTemporaryDir dir;
        if (path == QLatin1String("universal")) {
            path = dir.filePath(QStringLiteral("uni"));
            ops::universal(testutil::dataDir() + "/deepspeed/zero3_bf16_w2/global_step4", path.toStdString(),
                           {}, {}, {});
        }
        const auto opened = layout::openCheckpointTag(path.toStdString(), "");
        const layout::Tag& tag = opened->model.tags.front();
        const app::ShardingLayout l = app::shardingLayout(tag);
        QCOMPARE(int(l.mode), mode);
        QVERIFY(!l.segments.empty());
        if (l.mode == app::ShardingLayout::Mode::Grid) {
            int maxRank = 0;
            for (const auto& p : tag.params)
                for (const auto& sl : p.slices)
                    maxRank = std::max(maxRank, sl.rank);
            QCOMPARE(l.ranks, maxRank + 1);
            QVERIFY(l.ranks > 1);
            bool chunked = false;
            for (size_t row = 0; row < l.gridParams.size(); ++row) {
                const auto& p = tag.params[size_t(l.gridParams[row])];
                uint64_t sum = 0;
                for (int r = 0; r < l.ranks; ++r) {
                    const auto& s = l.segments[l.gridFirst[row] + size_t(r)];
                    QCOMPARE(s.rank, r);
                    uint64_t want = 0;
                    for (const auto& sl : p.slices)
                        want += sl.rank == r ? sl.length : 0;
                    QCOMPARE(s.length, want);
                    QVERIFY(s.length <= l.perRank[row]);
                    sum += s.length;
                    chunked = chunked || !s.where.empty();
                }
                QCOMPARE(sum, p.numel()); // DCP saves each element once
            }
            QVERIFY(chunked);
        } else {
            QCOMPARE(int(l.laneNames.size()), l.ranks);
            // Every lane says which file it is (a Universal folder's are all fp32.pt: their
            // parameter folder tells them apart, without the zero/ every one shares).
            QCOMPARE(int(std::set<std::string>(l.laneNames.begin(), l.laneNames.end()).size()), l.ranks);
            for (const std::string& n : l.laneNames)
                QVERIFY2(n.rfind("zero/", 0) != 0, n.c_str());
            std::vector<uint64_t> end(size_t(l.ranks), 0);
            std::map<int, uint64_t> bytes;
            for (const auto& s : l.segments) {
                QCOMPARE(s.begin, end[size_t(s.rank)]); // back to back, in the tag's order
                end[size_t(s.rank)] += s.length;
                bytes[s.param] += s.length;
            }
            QCOMPARE(*std::max_element(end.begin(), end.end()), l.laneLength);
            for (size_t i = 0; i < tag.params.size(); ++i) {
                const auto& p = tag.params[i];
                if (p.slices.empty()) continue; // an alias, or unreadable: nothing of its own
                QCOMPARE(bytes[int(i)], p.numel() * torch::elementSize(p.slices[0].master[0].dtype));
            }
        }
        app::ShardingMap map;
        map.resize(900, 300);
        map.setSharding(l);
        int found = 0;
        for (size_t i = 0; i < l.segments.size(); ++i) {
            if (!l.segments[i].length) continue;
            const int at = map.segmentAt(map.pointOf(int(i)));
            if (at < 0) continue;
            QCOMPARE(l.segments[size_t(at)].param, l.segments[i].param);
            QVERIFY(!map.describe(at).isEmpty());
            ++found;
        }
        QVERIFY(found > 0);
        QVERIFY(map.timePaint(QSize(900, 300)) >= 0);
    }

    void overviewCountsAndRoles()
    {
        const std::string dir = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        const auto s = app::loadSnapshot(dir);
        const layout::Tag& tag = s->tags().back();
        app::Workspace workspace;
        app::TagOverview o(workspace);
        QSignalSpy ready(&o, &app::TagOverview::rolesReady);
        o.setTag(tag);
        QVERIFY(ready.wait(60000));
        const app::ParameterCounts c = app::countParameters(tag);
        QVERIFY(c.trainable > 0 && c.frozen > 0 && c.buffers > 0 && c.tied > 0); // the fixture has each
        QCOMPARE(c.trainable + c.frozen + c.buffers + c.tied, uint64_t(tag.params.size()));
        const QString text = o.text();
        QVERIFY2(text.contains(QLocale().toString(qulonglong(c.trainableElements))), qPrintable(text));
        const ops::FolderBloat b = ops::analyzeFolderBloat(tag.dir, {}, {});
        QVERIFY2(text.contains(app::humanBytes(b.fileBytes)), qPrintable(text));
        for (const auto& f : tag.files)
            QVERIFY(text.contains(QString::fromStdString(f.name)));
        // What the family states of the tag, each fact (the overview knows no family).
        QVERIFY(!tag.facts.empty());
        for (const auto& f : tag.facts)
            QVERIFY2(text.contains(QString::fromStdString(f.value)), qPrintable(text));
    }

    // The window's workspace reads a tag's bytes by role once: the overview asks for them, and the
    // Bloat view of the same tag then shows that analysis without running one of its own. Every
    // job of the window (the opening, the overview's, the Bloat view's, the statistics) runs on
    // the workspace's one manager.
    void overviewAndBloatViewShareOneAnalysis()
    {
        app::MainWindow w;
        QVERIFY(openShown(w, "/deepspeed/zero2_bf16_w2"));
        app::Workspace& ws = w.workspace();
        QVERIFY(ws.snapshot() && ws.snapshot().get() == w.model()->snapshot());
        QSignalSpy roles(w.details()->overview(), &app::TagOverview::rolesReady);
        QVERIFY(w.select(QStringLiteral("global_step4")));
        const std::string dir = ws.snapshot()->tags().back().dir;
        QVERIFY(roles.wait(60000));
        const ops::FolderBloat* known = ws.analysis(dir);
        QVERIFY(known);
        QVERIFY(!ws.analysing(dir));
        QSignalSpy analysed(w.bloatView(), &app::BloatView::analysed);
        w.showBloat(QString::fromStdString(dir));
        QVERIFY(!ws.analysing(dir)); // read already: no job for it
        QVERIFY(ws.jobs().idle());
        QVERIFY(analysed.wait(10000));
        QCOMPARE(analysed.last().first().toBool(), true);
        QCOMPARE(w.bloatView()->result().fileBytes, known->fileBytes);
        QCOMPARE(w.bloatView()->result().roleBytes, known->roleBytes);
        QCOMPARE(ws.analysis(dir), known); // still the one analysis
        // The statistics of a parameter run on the same manager, under the details pane's lane.
        QVERIFY(w.select(QStringLiteral("global_step4/parameters/embed.weight")));
        w.details()->computeStatistics();
        QVERIFY(!ws.jobs().idle());
        QVERIFY(w.details()->computing());
        QTRY_VERIFY_WITH_TIMEOUT(ws.jobs().idle(), 60000);
        // Another checkpoint: what was computed for the last one is forgotten.
        QVERIFY(openShown(w, "/deepspeed/zero3_bf16_w2"));
        QVERIFY(!ws.analysis(dir));
    }

    // A Hugging Face Trainer run: its log_history drawn against step (a point per logged loss,
    // evaluation loss, grad norm and learning rate), each checkpoint marked, the one shown picked
    // out; a DeepSpeed folder saved without the Trainer shows no chart.
    void trainingChartOfARun()
    {
        app::MainWindow w;
        QVERIFY(openShown(w, "/trainer/gpt2_zero2_fp32_w2"));
        QVERIFY(w.select(QStringLiteral("checkpoint-2")));
        app::TagOverview* o = w.details()->overview();
        app::TrainingChart* chart = o->trainingChart();
        QTRY_VERIFY(chart->isVisible());
        const layout::TrainingLog state = layout::readTrainerState(
            testutil::dataDir() + "/trainer/gpt2_zero2_fp32_w2/checkpoint-4/trainer_state.json");
        int losses = 0, evals = 0, grads = 0, rates = 0;
        for (const auto& e : state.logHistory)
            losses += e.loss.has_value(), evals += e.evalLoss.has_value(), grads += e.gradNorm.has_value(),
                rates += e.learningRate.has_value();
        QVERIFY(losses >= 2 && evals >= 1); // the newest checkpoint's log: the whole run so far
        QCOMPARE(chart->points(QStringLiteral("loss")), losses);
        QCOMPARE(chart->points(QStringLiteral("eval loss")), evals);
        QCOMPARE(chart->points(QStringLiteral("grad norm")), grads);
        QCOMPARE(chart->points(QStringLiteral("learning rate")), rates);
        // Two checkpoints: the one shown, and checkpoint-4, the best by the newest state.
        QCOMPARE(state.bestCheckpointName(), std::string("checkpoint-4"));
        QCOMPARE(chart->lines(QStringLiteral("shown")), 1);
        QCOMPARE(chart->lines(QStringLiteral("best")), 1);
        QCOMPARE(chart->lines(QStringLiteral("checkpoint")), 0);
        QVERIFY(w.select(QStringLiteral("checkpoint-4")));
        QCOMPARE(chart->lines(QStringLiteral("shown")), 1);
        QCOMPARE(chart->lines(QStringLiteral("best")), 0); // shown, and best: drawn as the one shown
        QCOMPARE(chart->lines(QStringLiteral("checkpoint")), 1);
        // The Trainer's own pickles are files of the tag, their values read (never run).
        QVERIFY(w.select(QStringLiteral("checkpoint-2/rank files/training_args.bin/learning_rate")));
        QVERIFY(w.select(QStringLiteral("checkpoint-2/rank files/rng_state_1.pth")));
        QVERIFY(w.select(QStringLiteral("checkpoint-2/rank files/scheduler.pt")));
        QVERIFY(openShown(w, "/deepspeed/zero2_bf16_w2"));
        QVERIFY(w.select(QStringLiteral("global_step4")));
        QTRY_VERIFY(o->isVisible());
        QVERIFY(!chart->isVisible());
    }

    // A click on a segment selects its parameter in the tree.
    void clickSelectsInTree()
    {
        app::MainWindow w;
        QVERIFY(openShown(w, "/deepspeed/zero3_bf16_w2"));
        QVERIFY(w.select(QStringLiteral("global_step4")));
        app::TagOverview* o = w.details()->overview();
        QVERIFY(o->isVisible());
        app::ShardingMap* map = o->map();
        QTRY_VERIFY(map->height() > 50);
        const auto& l = map->sharding();
        const int seg = int(l.gridFirst[l.gridFirst.size() / 2]);
        QTest::mouseClick(map, Qt::LeftButton, {}, map->pointOf(seg));
        const app::Node* n = app::TreeModel::node(w.proxy()->mapToSource(w.tree()->currentIndex()));
        QVERIFY(n);
        QCOMPARE(n->kind, app::NodeKind::Parameter);
        QCOMPARE(n->name, l.names[size_t(l.segments[size_t(seg)].param)]);
    }

    // Scalars show their value in the tree; bytes pickled as _codecs.encode(...) are bytes.
    void valueColumnShowsScalars()
    {
        app::TreeModel model;
        model.setSnapshot(app::loadSnapshot(testutil::dataDir() + "/torch/torch-1.13/nested.pt"));
        auto cell = [&](const char* path, int column) {
            const QModelIndex i = model.indexOfPath(QLatin1String(path));
            return i.siblingAtColumn(column).data().toString();
        };
        QCOMPARE(cell("config/lr", app::TreeModel::Value), QStringLiteral("3e-04"));
        QCOMPARE(cell("config/name", app::TreeModel::Value), QStringLiteral("'run-7'"));
        QCOMPARE(cell("bytes", app::TreeModel::Kind), QStringLiteral("bytes"));
        QCOMPARE(cell("bytes", app::TreeModel::Value), QStringLiteral("b'\\x00\\x01binary'"));
        QCOMPARE(cell("config/weights", app::TreeModel::Value), QString()); // a tensor has no value
    }

    // The tree models' headers come from their column tables (TreeModelBase), translated in each
    // model's own context, as tr() did.
    void headersFromTheColumnTables()
    {
        app::TreeModel tree;
        app::StorageModel storage;
        QCOMPARE(tree.columnCount(), int(app::TreeModel::ColumnCount));
        QCOMPARE(storage.columnCount(), int(app::StorageModel::ColumnCount));
        QCOMPARE(tree.headerData(app::TreeModel::DType, Qt::Horizontal).toString(), QStringLiteral("dtype"));
        QCOMPARE(tree.headerData(app::TreeModel::Value, Qt::Horizontal).toString(), QStringLiteral("Value"));
        QCOMPARE(storage.headerData(app::StorageModel::UsedPercent, Qt::Horizontal).toString(),
                 QStringLiteral("% used"));
        QVERIFY(!tree.headerData(0, Qt::Vertical).isValid());
        QVERIFY(!storage.headerData(0, Qt::Horizontal, Qt::ToolTipRole).isValid());
        const std::pair<QAbstractItemModel*, const char*> models[] = {{&tree, "ckpt::app::TreeModel"},
                                                                      {&storage, "ckpt::app::StorageModel"}};
        std::map<std::pair<int, int>, QString> english;
        for (int m = 0; m < 2; ++m)
            for (int c = 0; c < models[m].first->columnCount(); ++c)
                english[{m, c}] = models[m].first->headerData(c, Qt::Horizontal).toString();
        QTranslator zh;
        QVERIFY(zh.load(QStringLiteral(":/i18n/checkpoint-studio_zh_CN.qm")));
        QCoreApplication::installTranslator(&zh);
        for (const auto& [at, text] : english) {
            const QString want = zh.translate(models[at.first].second, text.toUtf8().constData());
            QVERIFY2(!want.isEmpty(), qPrintable(text));
            QCOMPARE(models[at.first].first->headerData(at.second, Qt::Horizontal).toString(), want);
        }
        QCoreApplication::removeTranslator(&zh);
    }

    // 64 ranks x 10,000 parameters: the layout's geometry is right and the map paints at every
    // zoom. The paint time is printed, not asserted (bench/gui measures it: bench/scale.sh);
    // level of detail keeps the number of rectangles bounded by the pixels.
    void mapGeometryAtScale()
    {
        for (const int stage : {2, 3}) {
            const layout::Tag tag = syntheticTag(stage, 64, 10000);
            const app::ShardingLayout l = app::shardingLayout(tag);
            checkGeometry(tag, l);
            app::ShardingMap map;
            map.setSharding(l);
            qint64 worst = 0;
            for (const double zoom : {1.0, 10.0, 1000.0}) {
                map.setZoom(zoom, 0.37);
                qint64 best = INT64_MAX;
                for (int i = 0; i < 3; ++i)
                    best = std::min(best, map.timePaint(QSize(1200, 500)));
                qInfo("ZeRO-%d, 64 ranks x 10,000 parameters (%zu slices), zoom %g: paint %lld us", stage,
                      l.segments.size(), zoom, best);
                worst = std::max(worst, best);
            }
            QVERIFY(worst > 0);
        }
    }
};

QTEST_MAIN(TestOverview)
#include "tst_gui_overview.moc"
