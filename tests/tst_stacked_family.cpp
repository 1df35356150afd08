// A family the library has never heard of, written the way Megatron-Core, verl and torchtitan
// store a model: every layer's weights stacked in one tensor per kind (`decoder.qkv.weight`
// [layers, ...]), q, k and v fused in one tensor, and the whole split over two tensor-parallel
// ranks (column-parallel qkv and fc1 split by rows, row-parallel fc2 by columns, the embedding by
// vocabulary, the norm replicated). The recognizer below only says where each parameter's pieces
// lie: this region of that stored tensor fills that block of the parameter (layout::Source's
// region). Export, diff and statistics then read it without a line of their own (issue 37).
#include "testutil.h"

#include "io/output.h"
#include "layout/family.h"
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/writers.h"
#include "safetensors/safetensors_file.h"

#include <QTemporaryDir>
#include <QTest>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kTp = 2, kLayers = 2, kHidden = 4, kFfn = 6, kVocab = 10;

// The model as training holds it: name -> shape.
std::vector<std::pair<std::string, std::vector<int64_t>>> modelShapes()
{
    std::vector<std::pair<std::string, std::vector<int64_t>>> m{{"embed.weight", {kVocab, kHidden}}};
    for (int64_t l = 0; l < kLayers; ++l) {
        const std::string p = "decoder.layers." + std::to_string(l) + ".";
        for (const char* qkv : {"attn.q.weight", "attn.k.weight", "attn.v.weight"})
            m.push_back({p + qkv, {kHidden, kHidden}});
        m.push_back({p + "fc1.weight", {kFfn, kHidden}});
        m.push_back({p + "fc2.weight", {kHidden, kFfn}});
        m.push_back({p + "norm.weight", {kHidden}});
    }
    return m;
}

// Every parameter's values, distinct and exact in float32; `bump` adds to one parameter's.
using Model = std::map<std::string, std::vector<float>>;
Model makeModel(const std::string& bumped = {}, float bump = 0)
{
    Model m;
    float id = 0;
    for (const auto& [name, shape] : modelShapes()) {
        id += 1;
        std::vector<float> v(size_t(gpu::numelOf(shape)));
        for (size_t i = 0; i < v.size(); ++i)
            v[i] = id * 1000 + float(i) * 0.25f + (name == bumped ? bump : 0.0f);
        m[name] = std::move(v);
    }
    return m;
}

std::string layer(int64_t l, const char* what)
{
    return "decoder.layers." + std::to_string(l) + "." + what;
}

// Rows [from, from + n) of a row-major [rows, cols] parameter.
void appendRows(std::vector<float>& out, const std::vector<float>& p, int64_t cols, int64_t from, int64_t n)
{
    out.insert(out.end(), p.begin() + from * cols, p.begin() + (from + n) * cols);
}

// What tensor-parallel rank `r` stores, as Megatron lays it out.
std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> rankTensors(const Model& m,
                                                                                       int64_t r)
{
    const int64_t h = kHidden / kTp, f = kFfn / kTp, v = kVocab / kTp;
    std::map<std::string, std::pair<std::vector<int64_t>, std::vector<float>>> out;
    auto& qkv = out["decoder.qkv.weight"];
    auto& fc1 = out["decoder.fc1.weight"];
    auto& fc2 = out["decoder.fc2.weight"];
    auto& norm = out["decoder.norm.weight"];
    qkv.first = {kLayers, 3 * h, kHidden};
    fc1.first = {kLayers, f, kHidden};
    fc2.first = {kLayers, kHidden, f};
    norm.first = {kLayers, kHidden};
    for (int64_t l = 0; l < kLayers; ++l) {
        for (const char* part :
             {"attn.q.weight", "attn.k.weight", "attn.v.weight"}) // fused, this rank's rows
            appendRows(qkv.second, m.at(layer(l, part)), kHidden, r * h, h);
        appendRows(fc1.second, m.at(layer(l, "fc1.weight")), kHidden, r * f, f);
        const auto& w2 = m.at(layer(l, "fc2.weight")); // this rank's columns
        for (int64_t row = 0; row < kHidden; ++row)
            fc2.second.insert(fc2.second.end(), w2.begin() + row * kFfn + r * f,
                              w2.begin() + row * kFfn + (r + 1) * f);
        const auto& n = m.at(layer(l, "norm.weight"));
        norm.second.insert(norm.second.end(), n.begin(), n.end());
    }
    auto& embed = out["embed.weight"];
    embed.first = {v, kHidden};
    appendRows(embed.second, m.at("embed.weight"), kHidden, r * v, v);
    return out;
}

void writeTag(const std::string& dir, const Model& m, int64_t layersSaid = kLayers)
{
    io::OutputTransaction tx({}, dir, io::OutputTransaction::Shape::Folder,
                             io::OutputTransaction::Existing::Replace);
    for (int64_t r = 0; r < kTp; ++r) {
        std::vector<torch::OutTensor> tensors;
        for (auto& [name, t] : rankTensors(m, r)) {
            auto values = std::make_shared<std::vector<float>>(std::move(t.second));
            torch::OutTensor o;
            o.name = name;
            o.shape = t.first;
            o.nbytes = values->size() * 4;
            o.fill = [values](uint64_t off, uint64_t n, uint8_t* dst) {
                std::memcpy(dst, reinterpret_cast<const uint8_t*>(values->data()) + off, n);
            };
            tensors.push_back(std::move(o));
        }
        const ops::CancelToken cancel;
        ops::VerifiedWriter writer(tx, cancel);
        writer.safetensors("tp" + std::to_string(r) + ".safetensors", tensors,
                           {{"layers", std::to_string(layersSaid)}});
        writer.verified();
    }
    tx.commit();
}

class StackedFamily final : public testutil::MarkerFamily
{
public:
    StackedFamily() : MarkerFamily("STACKED_CHECKPOINT") {}
    std::string_view id() const override { return "stacked"; }
    std::string_view displayName() const override { return "Stacked tensor-parallel checkpoint"; }
    layout::Tag openTag(const layout::TagList& list, size_t index, layout::FileSet& files) const override
    {
        layout::Tag t = listedTag(list, index);
        t.mpWorldSize = int(kTp);
        std::vector<std::string> rank;
        for (int64_t r = 0; r < kTp; ++r) {
            layout::RankFile f;
            f.path = t.dir + "/tp" + std::to_string(r) + ".safetensors";
            f.name = fs::path(f.path).filename().string();
            f.mpRank = int(r);
            f.role = layout::FileRole::ModelStates;
            f.size = fs::file_size(f.path);
            rank.push_back(f.path);
            t.files.push_back(f);
        }
        const int64_t layers = std::stoll(files.get(rank[0])->safetensors()->metadata().at("layers"));
        const int64_t h = kHidden / kTp, f = kFfn / kTp, v = kVocab / kTp;
        // A parameter whose pieces are one per rank: rank r's block at `at(r)` of shape `chunk`,
        // read from `stored` at regionOffset `from(r)` with `strides` (empty: the whole tensor).
        auto add = [&](const std::string& name, std::vector<int64_t> shape, const std::string& stored,
                       std::vector<int64_t> chunk, auto at, auto from, std::vector<int64_t> strides,
                       int ranks) {
            layout::Parameter p;
            p.name = name;
            p.shape = std::move(shape);
            p.kind = layout::Parameter::Kind::Trainable;
            for (int r = 0; r < ranks; ++r) {
                layout::RankSlice s;
                s.rank = r;
                s.length = gpu::numelOf(chunk);
                s.master.push_back(
                    strides.empty()
                        ? layout::Source::chunk(rank[size_t(r)], stored, torch::DType::Float32, at(r), chunk)
                        : layout::Source::region(rank[size_t(r)], stored, torch::DType::Float32, at(r), chunk,
                                                 from(r), strides));
                p.slices.push_back(std::move(s));
            }
            t.params.push_back(std::move(p));
        };
        const auto zero = [](int) { return int64_t(0); };
        add(
            "embed.weight", {kVocab, kHidden}, "embed.weight", {v, kHidden},
            [&](int r) {
                return std::vector<int64_t>{r * v, 0};
            },
            zero, {}, int(kTp));
        for (int64_t l = 0; l < layers; ++l) {
            const int64_t qkvLayer = l * 3 * h * kHidden; // layer l's first element in the stacked qkv
            const char* parts[] = {"attn.q.weight", "attn.k.weight", "attn.v.weight"};
            for (int64_t part = 0; part < 3; ++part)
                add(
                    layer(l, parts[part]), {kHidden, kHidden}, "decoder.qkv.weight", {h, kHidden},
                    [&](int r) {
                        return std::vector<int64_t>{r * h, 0};
                    },
                    [&](int) { return qkvLayer + part * h * kHidden; }, {kHidden, 1}, int(kTp));
            add(
                layer(l, "fc1.weight"), {kFfn, kHidden}, "decoder.fc1.weight", {f, kHidden},
                [&](int r) {
                    return std::vector<int64_t>{r * f, 0};
                },
                [&](int) { return l * f * kHidden; }, {kHidden, 1}, int(kTp));
            add(
                layer(l, "fc2.weight"), {kHidden, kFfn}, "decoder.fc2.weight", {kHidden, f},
                [&](int r) {
                    return std::vector<int64_t>{0, r * f};
                },
                [&](int) { return l * kHidden * f; }, {f, 1}, int(kTp));
            add(
                layer(l, "norm.weight"), {kHidden}, "decoder.norm.weight", {kHidden},
                [](int) { return std::vector<int64_t>{0}; }, [&](int) { return l * kHidden; }, {1}, 1);
        }
        return t;
    }
};

std::vector<float> floatsOf(const safetensors::SafetensorsFile& f, const std::string& name)
{
    for (const auto& t : f.tensors())
        if (t.name == name) {
            const auto b = f.bytes(t);
            std::vector<float> v(b.size() / 4);
            std::memcpy(v.data(), b.data(), b.size());
            return v;
        }
    return {};
}

} // namespace

class TestStackedFamily : public QObject
{
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::string m_dir;

private slots:
    void initTestCase()
    {
        static const StackedFamily stacked;
        layout::registerFamily(stacked);
        m_dir = m_tmp.filePath("run").toStdString();
        writeTag(m_dir + "/iter_1", makeModel());
        writeTag(m_dir + "/iter_2", makeModel(layer(1, "attn.k.weight"), 1.0f));
        std::ofstream(m_dir + "/STACKED_CHECKPOINT") << "iter_1\niter_2\n";
    }

    // Every parameter whole, in its shape, with the values training held, from its pieces.
    void exportJoinsTheRegions()
    {
        const std::string out = m_tmp.filePath("exported").toStdString();
        const auto r =
            ops::consolidate(layout::tagOf(layout::openCheckpoint(m_dir), "iter_2"), out, {}, {}, {});
        const auto want = makeModel(layer(1, "attn.k.weight"), 1.0f);
        QCOMPARE(r.tensors, want.size());
        const auto back = safetensors::SafetensorsFile::open(out + "/model.safetensors");
        for (const auto& [name, shape] : modelShapes()) {
            QVERIFY2(floatsOf(*back, name) == want.at(name), name.c_str());
            for (const auto& t : back->tensors())
                if (t.name == name) QCOMPARE(t.shape, shape);
        }
    }

    // One parameter changed between the tags (layer 1's k rows, in the fused qkv of both ranks):
    // the diff names it alone.
    void diffFindsTheOneChangedPart()
    {
        const auto opened = layout::openCheckpoint(m_dir);
        const auto d = ops::computeDiff(layout::tagOf(opened, "iter_1"), layout::tagOf(opened, "iter_2"), {},
                                        gpu::cpuBackend(), {}, {});
        QCOMPARE(d.tensors.size(), modelShapes().size());
        for (const auto& t : d.tensors) {
            const bool bumped = t.name == layer(1, "attn.k.weight");
            QVERIFY2(t.status == (bumped ? ops::DiffStatus::Changed : ops::DiffStatus::Identical),
                     t.name.c_str());
            if (bumped) QCOMPARE(t.diff.maxAbsDiff, 1.0);
        }
    }

    // Statistics of each parameter are those of its values (min, max, mean, count).
    void statisticsAreThoseOfTheParameters()
    {
        const auto s = ops::computeStats(layout::tagOf(layout::openCheckpoint(m_dir), "iter_1"), {},
                                         gpu::cpuBackend(), {}, {});
        const Model want = makeModel();
        QCOMPARE(s.tensors.size(), want.size());
        for (const auto& t : s.tensors) {
            const auto& v = want.at(t.name);
            double sum = 0;
            for (float x : v)
                sum += x;
            QCOMPARE(t.stats.count, uint64_t(v.size()));
            QCOMPARE(t.stats.min, double(*std::min_element(v.begin(), v.end())));
            QCOMPARE(t.stats.max, double(*std::max_element(v.begin(), v.end())));
            QVERIFY2(std::abs(t.stats.mean - sum / double(v.size())) < 1e-9, t.name.c_str());
        }
    }

    // A recognizer that says a region beyond the stored tensor (metadata claiming a third layer)
    // gets an error naming the file, never another tensor's bytes.
    void aRegionOutsideItsTensorIsRefused()
    {
        QTemporaryDir tmp;
        const std::string dir = tmp.filePath("bad").toStdString();
        writeTag(dir + "/iter_1", makeModel(), kLayers + 1);
        std::ofstream(dir + "/STACKED_CHECKPOINT") << "iter_1\n";
        try {
            ops::consolidate(layout::tagOf(layout::openCheckpoint(dir), ""),
                             tmp.filePath("out").toStdString(), {}, {}, {});
            QFAIL("exported a region outside its tensor");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("lies outside it") != std::string::npos, e.what());
            QCOMPARE(e.file(), dir + "/iter_1/tp0.safetensors");
        }
        QVERIFY(!fs::exists(tmp.filePath("out").toStdString()));
    }
};

QTEST_APPLESS_MAIN(TestStackedFamily)
#include "tst_stacked_family.moc"
