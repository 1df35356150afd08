// A family the library has never heard of, registered by the test: a folder with a
// FAKE_CHECKPOINT file naming its tags, each tag a folder of two "rank" safetensors files that
// each hold a flat share of every parameter (its shape in the metadata). Nothing in app/, cli/ or
// model/ops knows it, yet the registry opens it, export and diff read it, and the window's tree,
// overview and sharding map show it: adding a family is its recognizer and nothing else. Written
// only against io::Folder, it opens the same from a local folder, S3 (moto, checking signatures)
// and a plain HTTP server that lists nothing (nginx), started here.
#include "test_servers.h"
#include "testutil.h"

#include "io/folder.h"
#include "io/output.h"
#include "layout/family.h"
#include "layout/sharding.h"
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/writers.h"
#include "safetensors/safetensors_file.h"
#include "sharding_map.h"
#include "snapshot.h"
#include "tag_overview.h"
#include "workspace.h"

#include <QApplication>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

constexpr int kRanks = 2;

std::vector<int64_t> shapeOf(const std::string& text)
{
    std::vector<int64_t> shape;
    std::stringstream in(text);
    for (std::string d; std::getline(in, d, ',');)
        shape.push_back(std::stoll(d));
    return shape;
}

class FakeFamily final : public testutil::MarkerFamily
{
public:
    FakeFamily() : MarkerFamily("FAKE_CHECKPOINT") {}
    std::string_view id() const override { return "fake"; }
    std::string_view displayName() const override { return "Fake checkpoint"; }
    layout::Tag openTag(const layout::TagList& list, size_t index, layout::FileSet& files) const override
    {
        layout::Tag t = listedTag(list, index);
        t.worldSize = kRanks;
        t.sharding = layout::Sharding::ParameterPartitions;
        t.facts = {{"fake format", "1"}, {"ranks", std::to_string(kRanks)}};
        std::vector<std::shared_ptr<const layout::TensorFile>> ranks;
        const io::Folder dir(t.dir);
        for (int r = 0; r < kRanks; ++r) {
            layout::RankFile f;
            f.name = "rank" + std::to_string(r) + ".safetensors";
            f.path = dir.file(f.name);
            f.dpRank = r;
            const auto size = dir.sizeOf(f.name);
            if (!size) throw Error("missing: FAKE_CHECKPOINT names this tag", f.path);
            f.size = *size;
            ranks.push_back(files.get(f.path));
            t.files.push_back(f);
        }
        uint64_t groupOffset = 0;
        for (const auto& info : ranks[0]->safetensors()->tensors()) {
            layout::Parameter p;
            p.name = info.name;
            p.shape = shapeOf(ranks[0]->safetensors()->metadata().at("shape:" + info.name));
            p.group = 0;
            p.groupOffset = groupOffset;
            uint64_t at = 0;
            for (int r = 0; r < kRanks; ++r) {
                const auto* mine = ranks[size_t(r)]->stFind(info.name);
                layout::RankSlice s;
                s.rank = r;
                s.paramOffset = at;
                s.length = mine->numel();
                s.master.push_back(
                    layout::Source::flat(t.files[size_t(r)].path, info.name, 0, s.length, info.dtype));
                at += s.length;
                p.slices.push_back(std::move(s));
            }
            groupOffset += at;
            t.params.push_back(std::move(p));
        }
        return t;
    }
};

// Writes one tag: each parameter's values split flat over the ranks.
void writeTag(const std::string& dir, const std::vector<std::pair<std::string, std::vector<float>>>& params,
              const std::map<std::string, std::string>& shapes)
{
    for (int r = 0; r < kRanks; ++r) {
        io::OutputTransaction tx({}, dir, io::OutputTransaction::Shape::Folder,
                                 io::OutputTransaction::Existing::Replace);
        std::vector<torch::OutTensor> tensors;
        for (const auto& [name, values] : params) {
            const size_t half = (values.size() + 1) / 2, from = r ? half : 0, to = r ? values.size() : half;
            auto mine =
                std::make_shared<std::vector<float>>(values.begin() + long(from), values.begin() + long(to));
            torch::OutTensor o;
            o.name = name;
            o.shape = {int64_t(mine->size())};
            o.nbytes = mine->size() * 4;
            o.fill = [mine](uint64_t off, uint64_t n, uint8_t* dst) {
                std::memcpy(dst, reinterpret_cast<const uint8_t*>(mine->data()) + off, n);
            };
            tensors.push_back(std::move(o));
        }
        std::map<std::string, std::string> metadata;
        for (const auto& [name, shape] : shapes)
            metadata["shape:" + name] = shape;
        const ops::CancelToken cancel;
        ops::VerifiedWriter writer(tx, cancel);
        writer.safetensors("rank" + std::to_string(r) + ".safetensors", tensors, metadata);
        writer.verified();
        tx.commit();
    }
}

const safetensors::TensorInfo* findIn(const safetensors::SafetensorsFile& f, const std::string& name)
{
    for (const auto& t : f.tensors())
        if (t.name == name) return &t;
    return nullptr;
}

std::vector<float> ramp(size_t n, float start)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = start + 0.25f * float(i);
    return v;
}

} // namespace

class TestFakeFamily : public QObject
{
    Q_OBJECT

    QTemporaryDir m_tmp;
    std::string m_dir;
    QString m_www; // what nginx serves and moto holds: the checkpoint's folder
    int m_nginxPort = 0, m_motoPort = 0;
    std::unique_ptr<QProcess> m_nginx, m_moto;
    QString m_nginxSkip, m_motoSkip;

    static constexpr const char* kBucket = "fake-bucket";
    const QString kSource = QStringLiteral(CKPT_SOURCE_DIR);

    // The checkpoint where `where` says: a local folder, s3:// or http:// (a folder's URL ends in
    // '/' there, since nothing lists it).
    std::string location(const QString& where)
    {
        if (where == "s3") {
            if (!m_motoSkip.isEmpty()) QTest::qSkip(qPrintable(m_motoSkip), __FILE__, __LINE__);
            return std::string("s3://") + kBucket + "/fake";
        }
        if (where == "http") {
            if (!m_nginxSkip.isEmpty()) QTest::qSkip(qPrintable(m_nginxSkip), __FILE__, __LINE__);
            return QString("http://127.0.0.1:%1/fake/").arg(m_nginxPort).toStdString();
        }
        return m_dir;
    }
    void rows()
    {
        QTest::addColumn<QString>("where");
        for (const char* w : {"local", "s3", "http"})
            QTest::newRow(w) << QString(w);
    }
    // Outside CI a machine without the servers skips their rows; CI installs them.
    void unavailable(QString& skip, const QString& why)
    {
        if (qEnvironmentVariable("CI") == "true") QFAIL(qPrintable(why));
        skip = why;
    }
    void startServers()
    {
        QString why;
        m_nginx = testservers::startNginx(kSource, m_tmp.filePath("nginx"), m_www, m_nginxPort, why);
        if (!m_nginx || !why.isEmpty()) unavailable(m_nginxSkip, why);
        const QString venv = testservers::serversVenv(kSource, why);
        if (venv.isEmpty()) return unavailable(m_motoSkip, why);
        QStringList files{"fake/FAKE_CHECKPOINT"};
        for (const char* tag : {"step1", "step2"})
            for (int r = 0; r < kRanks; ++r)
                files << QString("fake/%1/rank%2.safetensors").arg(tag).arg(r);
        QStringList keys;
        m_moto = testservers::startMoto(kSource, venv, kBucket, m_www, files,
                                        QProcessEnvironment::systemEnvironment(), m_motoPort, keys, why);
        if (!m_moto) return unavailable(m_motoSkip, why);
        qputenv("AWS_ACCESS_KEY_ID", keys[0].toUtf8());
        qputenv("AWS_SECRET_ACCESS_KEY", keys[1].toUtf8());
        qputenv("AWS_ENDPOINT_URL", QString("http://127.0.0.1:%1").arg(m_motoPort).toUtf8());
    }

private slots:
    void initTestCase()
    {
        static const FakeFamily fake;
        layout::registerFamily(fake);
        m_www = m_tmp.filePath("www");
        m_dir = (m_www + "/fake").toStdString();
        const std::map<std::string, std::string> shapes{{"layers.0.weight", "4,6"}, {"layers.1.bias", "5"}};
        writeTag(m_dir + "/step1", {{"layers.0.weight", ramp(24, 0)}, {"layers.1.bias", ramp(5, 1)}}, shapes);
        writeTag(m_dir + "/step2", {{"layers.0.weight", ramp(24, 0)}, {"layers.1.bias", ramp(5, 10)}},
                 shapes);
        std::ofstream(m_dir + "/FAKE_CHECKPOINT") << "step1\nstep2\n";
        // Servers on 127.0.0.1: a proxy the machine may name must not stand between.
        qputenv("NO_PROXY", "127.0.0.1,localhost");
        qputenv("AWS_REGION", "us-east-1");
        qputenv("CKPT_REMOTE_ATTEMPTS", "2");
        startServers();
    }
    void cleanupTestCase()
    {
        testservers::stop(m_nginx);
        testservers::stop(m_moto);
    }

    void theRegistryOpensIt_data() { rows(); }
    void theRegistryOpensIt()
    {
        QFETCH(QString, where);
        const std::string at = location(where);
        QCOMPARE(std::string(layout::familyOf(at).id()), std::string("fake"));
        const auto opened = layout::openCheckpoint(at);
        QCOMPARE(opened->model.tags.size(), size_t(2));
        QCOMPARE(opened->model.latest()->name, std::string("step2"));
        QCOMPARE(opened->model.tags[0].params.size(), size_t(2));
        QCOMPARE(opened->model.tags[0].params[0].numel(), uint64_t(24));
        // The sizes the folder gave, wherever it is.
        QCOMPARE(opened->model.tags[1].files[1].size,
                 uint64_t(fs::file_size(m_dir + "/step2/rank1.safetensors")));
    }

    // Export writes each parameter whole, in its shape, with the values of both ranks.
    void exportReadsItsShares_data() { rows(); }
    void exportReadsItsShares()
    {
        QFETCH(QString, where);
        const auto opened = layout::openCheckpoint(location(where));
        const std::string out = m_tmp.filePath("exported-" + where).toStdString();
        const auto r = ops::consolidate(layout::tagOf(opened, "step2"), out, {}, {}, {});
        QCOMPARE(r.tensors, size_t(2));
        const auto back = safetensors::SafetensorsFile::open(out + "/model.safetensors");
        for (const auto& [name, want] : std::vector<std::pair<std::string, std::vector<float>>>{
                 {"layers.0.weight", ramp(24, 0)}, {"layers.1.bias", ramp(5, 10)}}) {
            const auto* t = findIn(*back, name);
            QVERIFY2(t, name.c_str());
            QCOMPARE(t->numel(), uint64_t(want.size()));
            const auto bytes = back->bytes(*t);
            QVERIFY(std::memcmp(bytes.data(), want.data(), want.size() * 4) == 0);
        }
        QCOMPARE(findIn(*back, "layers.0.weight")->shape, (std::vector<int64_t>{4, 6}));
    }

    void diffComparesTwoTags_data() { rows(); }
    void diffComparesTwoTags()
    {
        QFETCH(QString, where);
        const auto opened = layout::openCheckpoint(location(where));
        const auto d = ops::computeDiff(layout::tagOf(opened, "step1"), layout::tagOf(opened, "step2"), {},
                                        gpu::cpuBackend(), {}, {});
        QCOMPARE(d.tensors.size(), size_t(2));
        QCOMPARE(d.tensors[0].status, ops::DiffStatus::Identical);
        QCOMPARE(d.tensors[1].status, ops::DiffStatus::Changed);
        QCOMPARE(d.tensors[1].diff.maxAbsDiff, 9.0);
    }

    // The window: the tree has its tags and parameters, the overview its facts, the map a
    // parameters x ranks grid from the sharding the family stated.
    void theWindowShowsIt()
    {
        const auto s = app::loadSnapshot(m_dir);
        QCOMPARE(QString::fromStdString(s->root->kindText), QStringLiteral("Fake checkpoint"));
        QCOMPARE(s->root->children.size(), size_t(2));
        const app::Node* tag = s->root->children[1].get();
        QCOMPARE(tag->name, std::string("step2"));
        const auto params = std::find_if(tag->children.begin(), tag->children.end(),
                                         [](const auto& c) { return c->name == "parameters"; });
        QVERIFY(params != tag->children.end());
        QCOMPARE((*params)->children.size(), size_t(2));
        app::Workspace workspace;
        app::TagOverview o(workspace);
        o.setTag(s->tags()[1]);
        QVERIFY2(o.text().contains(QRegularExpression(QStringLiteral("Fake format\\s+1"))),
                 qPrintable(o.text()));
        const layout::ShardingLayout l = layout::shardingLayout(s->tags()[1]);
        QCOMPARE(l.mode, layout::ShardingLayout::Mode::Grid);
        QCOMPARE(l.ranks, kRanks);
        QCOMPARE(l.gridParams.size(), size_t(2));
        QCOMPARE(l.perRank, (std::vector<uint64_t>{12, 3}));
        QCOMPARE(o.map()->sharding().mode, layout::ShardingLayout::Mode::Grid);
        QVERIFY(o.map()->timePaint(QSize(600, 200)) >= 0);
    }
};

QTEST_MAIN(TestFakeFamily)
#include "tst_fake_family.moc"
