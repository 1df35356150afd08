// Bloat and slimming on files real PyTorch wrote: the bytes each storage's views reach against
// a naive element-by-element oracle, and `slim` on every fixture: same tensors (values by the
// sha256 PyTorch recorded), same aliases, overlapping views still sharing a storage, smaller
// when there was bloat, the input untouched. Python's own verdict (torch.load of the slimmed
// files, object for object) is tests/slim_check.py in ./test.sh.
#include "ops/bloat.h"
#include "ops/slim.h"
#include "testutil.h"
#include "torch/torch_file.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <set>

using namespace ckpt;

namespace {

std::string fixturePath(const QString& expect)
{
    const auto exp = testutil::readJson(expect.toStdString());
    return QFileInfo(expect).dir().filePath(QString::fromStdString(exp["file"])).toStdString();
}

QByteArray fileSha(const std::string& path)
{
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
}

// The bytes a view reaches, one element at a time: slow, obviously right.
void reachNaively(std::set<uint64_t>& bytes, uint32_t es, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& stride, int64_t offset)
{
    uint64_t n = 1;
    for (auto s : shape)
        n *= uint64_t(s);
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t rem = i, at = uint64_t(offset);
        for (size_t d = shape.size(); d-- > 0;) {
            at += (rem % uint64_t(shape[d])) * uint64_t(stride[d]);
            rem /= uint64_t(shape[d]);
        }
        for (uint32_t b = 0; b < es; ++b)
            bytes.insert(at * es + b);
    }
}

} // namespace

class TestSlim : public QObject
{
    Q_OBJECT
private slots:
    void viewRanges()
    {
        using R = std::vector<ops::ByteRange>;
        auto eq = [](const R& a, const R& b) {
            if (a.size() != b.size()) return false;
            for (size_t i = 0; i < a.size(); ++i)
                if (a[i].begin != b[i].begin || a[i].end != b[i].end) return false;
            return true;
        };
        QVERIFY(eq(ops::viewRanges(4, {2, 3}, {3, 1}, 1), R{{4, 28}}));             // rows: one run
        QVERIFY(eq(ops::viewRanges(4, {3}, {2}, 0), R{{0, 4}, {8, 12}, {16, 20}})); // every other
        QVERIFY(eq(ops::viewRanges(2, {3, 2}, {1, 3}, 0), R{{0, 12}}));             // transposed, dense
        QVERIFY(eq(ops::viewRanges(4, {5, 2}, {0, 1}, 2), R{{8, 16}}));             // expanded
        QVERIFY(eq(ops::viewRanges(4, {0, 7}, {7, 1}, 3), R{}));                    // no element
        QVERIFY(eq(ops::viewRanges(8, {}, {}, 3), R{{24, 32}}));                    // 0-d
        QVERIFY(eq(ops::viewRanges(1, {2, 2}, {1, 1}, 0), R{{0, 3}}));              // self-overlapping
        bool approx = false;
        const R big = ops::viewRanges(4, {1000, 1000}, {2000, 2}, 0, 1000, &approx); // too many runs
        QVERIFY(approx);
        QVERIFY(eq(big, R{{0, (999ull * 2000 + 999 * 2 + 1) * 4}}));
        QCOMPARE(ops::unionBytes({{0, 10}, {5, 20}, {30, 31}}), uint64_t(21));
    }

    void usedBytesMatchANaiveOracle_data() { testutil::addExpectationRows(); }

    void usedBytesMatchANaiveOracle()
    {
        QFETCH(QString, expect);
        const auto f = torch::TorchFile::open(fixturePath(expect));
        const ops::FileBloat b = ops::analyzeBloat(*f);
        QCOMPARE(b.fileBytes, f->fileSize());
        std::map<int, std::set<uint64_t>> reached;
        for (const auto& t : f->tensors()) {
            if (t.aliasOf >= 0 || t.storage < 0 || !t.note.empty()) continue;
            reachNaively(reached[t.storage], torch::elementSize(t.dtype), t.shape, t.stride, t.storageOffset);
        }
        uint64_t used = 0, total = 0;
        for (const auto& s : b.storages) {
            const auto& st = f->storages()[size_t(s.storage)];
            if (st.viewOf >= 0) continue;
            total += st.nbytes;
            used += s.usedBytes;
            if (!s.wholeUse)
                QCOMPARE(s.usedBytes, uint64_t(reached[s.storage].size()));
            else
                QCOMPARE(s.usedBytes, st.nbytes);
        }
        QCOMPARE(b.storageBytes, total);
        QCOMPARE(b.usedBytes, used);
        QCOMPARE(b.overheadBytes, b.fileBytes - total);
    }

    void slimEveryFixture_data() { testutil::addExpectationRows(); }

    void slimEveryFixture()
    {
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        const std::string in = fixturePath(expect);
        const QByteArray inSha = fileSha(in);
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("slim.pt").toStdString();
        ops::CancelToken cancel;
        ops::SlimResult r;
        try {
            r = ops::slim(in, out, {}, {}, cancel);
        } catch (const Error& e) {
            // What slimming cannot keep exact must be refused by name, never written wrong.
            QVERIFY2(QString(e.what()).startsWith(QString::fromStdString(in)), e.what());
            QVERIFY(!QFileInfo::exists(QString::fromStdString(out)));
            QSKIP(qPrintable("refused: " + QString(e.what())));
        }
        QCOMPARE(fileSha(in), inSha);
        QCOMPARE(r.files.size(), size_t(1));
        const auto before = torch::TorchFile::open(in);
        const auto after = torch::TorchFile::open(out);
        for (const auto& t : exp["tensors"]) {
            const std::string path = t["path"];
            const torch::Tensor* a = after->tensor(path);
            QVERIFY2(a, path.c_str());
            QCOMPARE(std::string(torch::name(a->dtype)), t["dtype"].get<std::string>());
            QCOMPARE(a->shape, t["shape"].get<std::vector<int64_t>>());
            if (a->storage < 0 || !a->note.empty()) continue;
            const auto bytes = testutil::contiguousBytes(*after, *a);
            QCOMPARE(testutil::sha256Hex(bytes.data(), bytes.size()), t["sha256"].get<std::string>());
        }
        const ops::FileBloat was = ops::analyzeBloat(*before);
        if (r.files[0].action == "slimmed") {
            QVERIFY(r.files[0].bytesAfter < r.files[0].bytesBefore);
            // What remains is what the views use, plus alignment and the zip's own records.
            QVERIFY(ops::analyzeBloat(*after).storageBytes <=
                    was.usedBytes + 16 * after->storages().size() + 4096);
        } else {
            QCOMPARE(fileSha(out), inSha); // not bloated: the very same bytes
        }
    }

    void slimAFolderCopiesTheRest()
    {
        QTemporaryDir tmp;
        const QString in = tmp.filePath("in");
        QVERIFY(QDir().mkpath(in + "/sub"));
        const std::string src = testutil::dataDir() + "/torch/torch-2.x/views.pt";
        QVERIFY(QFile::copy(QString::fromStdString(src), in + "/sub/views.pt"));
        QFile txt(in + "/README.txt");
        QVERIFY(txt.open(QIODevice::WriteOnly));
        txt.write("kept as is");
        txt.close();
        ops::CancelToken cancel;
        const auto r = ops::slim(in.toStdString(), tmp.filePath("out").toStdString(), {}, {}, cancel);
        QCOMPARE(r.files.size(), size_t(2));
        QCOMPARE(fileSha(tmp.filePath("out/README.txt").toStdString()),
                 fileSha((in + "/README.txt").toStdString()));
        QVERIFY(QFileInfo::exists(tmp.filePath("out/sub/views.pt")));
        const auto dry = ops::slim(in.toStdString(), tmp.filePath("dry").toStdString(), {true}, {}, cancel);
        QVERIFY(!QFileInfo::exists(tmp.filePath("dry")));
        QCOMPARE(dry.files.size(), size_t(2));
    }

    void refusesAnOutputInsideItsInput()
    {
        QTemporaryDir tmp;
        QVERIFY(QDir().mkpath(tmp.filePath("in")));
        ops::CancelToken cancel;
        QVERIFY_THROWS_EXCEPTION(Error, ops::slim(tmp.filePath("in").toStdString(),
                                                  tmp.filePath("in/out").toStdString(), {}, {}, cancel));
        QVERIFY_THROWS_EXCEPTION(Error, ops::slim(tmp.filePath("in").toStdString(),
                                                  tmp.filePath("in/out").toStdString(), {true}, {}, cancel));
        QVERIFY(!QFileInfo::exists(tmp.filePath("in/out")));
    }
};

QTEST_GUILESS_MAIN(TestSlim)
#include "tst_slim.moc"
