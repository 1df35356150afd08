// Our reader against every expectation real PyTorch recorded (1.13 from Debian, 2.x from PyPI):
// every field and every value, plus `inspect --json` field for field.
#include "io/output.h"
#include "io/zip_reader.h"
#include "ops/inspect.h"
#include "ops/tensor_source.h"
#include "pickle/safety.h"
#include "testutil.h"
#include "torch/torch_writer.h"

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QTest>
#include <map>
#include <set>

using namespace ckpt;

class TestTorchReader : public QObject
{
    Q_OBJECT
private slots:
    void fixtures_data()
    {
        QVERIFY2(testutil::torchExpectations().size() >= 28, "fixture expectations are missing");
        testutil::addExpectationRows();
    }

    void fixtures()
    {
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        const std::string file =
            QFileInfo(expect).dir().filePath(QString::fromStdString(exp["file"])).toStdString();
        const auto f = torch::TorchFile::open(file);

        std::map<std::string, const torch::Tensor*> byPath;
        for (const auto& t : f->tensors())
            byPath[t.path] = &t;
        QCOMPARE(f->tensors().size(), exp["tensors"].size());

        std::map<int, std::string> groupToKey;
        std::map<std::string, int> keyToGroup;
        for (const auto& et : exp["tensors"]) {
            const std::string path = et["path"];
            QVERIFY2(byPath.count(path), ("missing tensor " + path).c_str());
            const torch::Tensor& t = *byPath[path];
            QCOMPARE(std::string(torch::name(t.dtype)), et["dtype"].get<std::string>());
            QCOMPARE(t.shape, et["shape"].get<std::vector<int64_t>>());
            QCOMPARE(t.stride, et["stride"].get<std::vector<int64_t>>());
            QCOMPARE(t.storageOffset, et["storage_offset"].get<int64_t>());
            QCOMPARE(f->storages()[size_t(t.storage)].nbytes, et["storage_nbytes"].get<uint64_t>());
            QCOMPARE(t.requiresGrad, et["requires_grad"].get<bool>());
            const auto bytes = testutil::contiguousBytes(*f, t);
            QCOMPARE(testutil::sha256Hex(bytes.data(), bytes.size()), et["sha256"].get<std::string>());

            // Tensors PyTorch saw sharing memory share a storage key here, and only they do.
            const int group = et["storage_group"];
            const std::string key = f->storages()[size_t(t.storage)].key;
            if (t.nbytes() == 0) continue;
            if (groupToKey.count(group)) QCOMPARE(groupToKey[group], key);
            if (keyToGroup.count(key)) QCOMPARE(keyToGroup[key], group);
            groupToKey[group] = key;
            keyToGroup[key] = group;
        }

        // inspect --json carries the same facts.
        const auto doc = ops::toJson(ops::listFile(file));
        QCOMPARE(doc["tensors"].size(), exp["tensors"].size());
        for (size_t i = 0; i < doc["tensors"].size(); ++i) {
            const auto& j = doc["tensors"][i];
            const auto it =
                std::find_if(exp["tensors"].begin(), exp["tensors"].end(), [&](const nlohmann::json& e) {
                    return e["path"].get<std::string>() == j["path"].get<std::string>();
                });
            QVERIFY(it != exp["tensors"].end());
            for (const char* field :
                 {"dtype", "shape", "stride", "storage_offset", "storage_nbytes", "requires_grad"})
                QVERIFY2(nlohmann::json(j[field]) == (*it)[field],
                         (j["path"].get<std::string>() + " " + field).c_str());
            QVERIFY(j["storage"].is_string());
        }

        bool dangerous = false;
        for (const auto& g : f->globals())
            dangerous |= pickle::classifyGlobal(g.module, g.name) == pickle::Safety::Dangerous;
        QCOMPARE(dangerous, exp["dangerous"].get<bool>());
        if (dangerous) QVERIFY(!doc["warnings"].empty());
    }

    void formatsAreRecognised()
    {
        const std::string d = testutil::dataDir() + "/torch/torch-2.x/";
        QCOMPARE(std::string(torch::TorchFile::open(d + "views.pt")->formatName()), std::string("torch-zip"));
        QCOMPARE(std::string(torch::TorchFile::open(d + "views_legacy.pt")->formatName()),
                 std::string("torch-legacy"));
        QCOMPARE(torch::TorchFile::open(d + "nested_protocol5.pt")->protocol(), 5);
    }

    void newDtypesUseV3()
    {
        const auto f = torch::TorchFile::open(testutil::dataDir() + "/torch/torch-2.x/dtypes.pt");
        std::set<std::string> names;
        for (const auto& t : f->tensors())
            names.insert(std::string(torch::name(t.dtype)));
        for (const char* n : {"bfloat16", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64",
                              "complex32", "complex128", "bool"})
            QVERIFY2(names.count(n), n);
    }

    void objectsStayOpaque()
    {
        const auto f = torch::TorchFile::open(testutil::dataDir() + "/torch/torch-2.x/nested.pt");
        bool sawNamespace = false, sawAlias = false;
        for (const auto& e : f->entries()) {
            sawNamespace |= e.type == "argparse.Namespace";
            sawAlias |= e.kind == torch::EntryKind::Alias && e.path == "self_reference/0";
        }
        QVERIFY(sawNamespace);
        QVERIFY(sawAlias);
    }

    // Opening walks the pickle and the zip directory only. Proven with the page cache: a file
    // with a 48 MiB storage is written and evicted, opened, and the storage's pages (away from
    // the read-around of the pickle and the directory) must still be absent; reading the
    // storage then brings them in (so the probe can see a read).
    void openingReadsNoTensorBytes()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("big.pt").toStdString();
        constexpr uint64_t kBig = 48u << 20;
        {
            std::vector<torch::OutTensor> tensors;
            auto ones = [](uint64_t, uint64_t n, uint8_t* d) { std::memset(d, 1, n); };
            tensors.push_back({"small", torch::DType::Float32, {4}, 16, ones});
            tensors.push_back({"big", torch::DType::Float32, {int64_t(kBig / 4)}, kBig, ones});
            io::OutputTransaction tx({}, path, io::OutputTransaction::Shape::File);
            ops::CancelToken cancel;
            torch::writeTorchZip(tx.create(), tensors, {}, "archive", {}, cancel);
            tx.commit();
        }
        const int fd = ::open(path.c_str(), O_RDONLY);
        QVERIFY(fd >= 0);
        ::fsync(fd);
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        struct stat st
        {
        };
        ::fstat(fd, &st);
        const uint64_t size = uint64_t(st.st_size);
        void* probe = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        QVERIFY(probe != MAP_FAILED);
        // Pages of [from, to) in the page cache, counted without touching them.
        auto resident = [&](uint64_t from, uint64_t to) {
            const long page = ::sysconf(_SC_PAGESIZE);
            std::vector<unsigned char> v((size + uint64_t(page) - 1) / uint64_t(page));
            ::mincore(probe, size, v.data());
            uint64_t n = 0;
            for (uint64_t i = from / uint64_t(page); i < to / uint64_t(page); ++i)
                n += v[i] & 1;
            return n;
        };
        const uint64_t from = 8u << 20, to = size - (8u << 20); // inside the big storage
        if (resident(from, to) != 0) QSKIP("this file system keeps the file cached (tmpfs?)");

        const auto f = torch::TorchFile::open(path);
        QVERIFY(f->tensor("big") && f->tensor("small"));
        QCOMPARE(f->tensor("big")->numel(), kBig / 4);
        QCOMPARE(resident(from, to), uint64_t(0));

        const io::Blob bytes = f->storageBytes(f->tensor("big")->storage);
        uint64_t sum = 0;
        for (uint64_t i = 0; i < bytes.bytes.size(); i += 4096)
            sum += bytes.bytes[i];
        QCOMPARE(sum, (bytes.bytes.size() + 4095) / 4096);
        QVERIFY(resident(from, to) > 0);
        ::munmap(probe, size);
        ::close(fd);
    }

    void deflatedStoragesInflateOnce_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* v : {"torch-1.13", "torch-2.x"})
            QTest::newRow(v) << QString::fromStdString(testutil::dataDir() + "/torch/" + v +
                                                       "/state_dict_deflated.pt");
    }

    // Streaming a deflated storage chunk by chunk used to inflate the whole record per chunk
    // (quadratic); listing the tensors inflated every record just to learn it was not mapped.
    void deflatedStoragesInflateOnce()
    {
        QFETCH(QString, file);
        const std::string path = file.toStdString();
        const io::ZipReader zip(io::MappedFile::open(path));
        uint64_t deflated = 0;
        for (const auto& e : zip.entries())
            deflated += e.method == 8 && e.name.find("/data/") != std::string::npos;
        QVERIFY2(deflated > 0, "fixture has no deflated storage records");

        // Expected bytes and the storages that will be read, from a separate reader (own cache);
        // opening inflates the records it parses (data.pkl, byteorder), and nothing else.
        const uint64_t beforeOpen = io::ZipReader::inflations();
        const auto ref = torch::TorchFile::open(path);
        const uint64_t perOpen = io::ZipReader::inflations() - beforeOpen;
        std::map<std::string, std::vector<uint8_t>> expected;
        std::set<int> storages;
        for (const auto& t : ref->tensors())
            if (t.aliasOf < 0 && t.storage >= 0 && t.note.empty() && t.numel() && ops::scalarOf(t.dtype)) {
                expected[t.path] = testutil::contiguousBytes(*ref, t);
                storages.insert(t.storage);
            }
        QVERIFY(storages.size() > 1);

        const uint64_t before = io::ZipReader::inflations();
        const ops::TensorSet set = ops::fileTensors(path);
        QCOMPARE(io::ZipReader::inflations() - before, perOpen);
        size_t read = 0;
        for (const auto& t : set.tensors) {
            if (!t.aliasOf.empty() || !expected.count(t.tensor.name)) continue;
            QVERIFY(!t.direct);
            const uint32_t es = torch::elementSize(t.tensor.dtype);
            std::vector<uint8_t> got(t.tensor.nbytes);
            for (uint64_t off = 0; off < got.size(); off += es) // one element per read
                t.tensor.fill(off, es, got.data() + off);
            QVERIFY2(got == expected[t.tensor.name], t.tensor.name.c_str());
            ++read;
        }
        QCOMPARE(read, expected.size());
        QCOMPARE(io::ZipReader::inflations() - before, perOpen + storages.size());

        // A bounded read inflates only what it asks for.
        const io::ZipEntry* e = nullptr;
        for (const auto& x : zip.entries())
            if (x.method == 8 && x.size > 16) e = &x;
        QVERIFY(e);
        const io::Blob head = zip.read(*e, 16), whole = zip.read(*e);
        QCOMPARE(head.size(), uint64_t(16));
        QVERIFY(std::equal(head.bytes.begin(), head.bytes.end(), whole.bytes.begin()));
        QCOMPARE(zip.find(e->name), e);
        QVERIFY(!zip.find("no/such/record"));
    }

    // Composer pickles timedeltas, numpy arrays (the numpy RNG state) and TorchVersion strings:
    // they are values, shown as Python prints them, not opaque calls.
    void valuesComposerPickles()
    {
        const auto f = ckpt::torch::TorchFile::open(testutil::dataDir() + "/composer/classifier.pt");
        auto entry = [&](const std::string& path) -> const ckpt::torch::Entry* {
            for (const auto& e : f->entries())
                if (e.path == path) return &e;
            return nullptr;
        };
        const auto* wct =
            entry("state/callbacks/CheckpointSaver/all_saved_checkpoints_to_timestamp/2/1/total_wct");
        QVERIFY(wct);
        QVERIFY(wct->kind == ckpt::torch::EntryKind::Value);
        QCOMPARE(wct->summary, std::string("datetime.timedelta(microseconds=185302)"));
        const auto* version = entry("state/metadata/torch_version");
        QVERIFY(version);
        QCOMPARE(version->summary, std::string("'2.7.0+cu126'"));
        const auto* rng = entry("rng/0/numpy/1");
        QVERIFY(rng);
        QVERIFY(rng->kind == ckpt::torch::EntryKind::Value);
        QVERIFY2(rng->summary.rfind("array([", 0) == 0, rng->summary.c_str());
        QVERIFY2(rng->summary.find("shape=(624,), dtype=uint32)") != std::string::npos, rng->summary.c_str());
    }

    void legacyFileInPickleProtocol1()
    {
        // Written by Debian's torch 1.13 (tools/fixtures/make_legacy_protocol_fixtures.py).
        const auto f = torch::TorchFile::open(testutil::dataDir() + "/legacy-protocols/legacy_protocol1.pt");
        QCOMPARE(f->format(), torch::TorchFile::Format::Legacy);
        const torch::Tensor* w = f->tensor("w");
        const torch::Tensor* b = f->tensor("b");
        QVERIFY(w && b);
        QCOMPARE(w->shape, (std::vector<int64_t>{2, 3}));
        QCOMPARE(b->storage, w->storage);
        QCOMPARE(b->storageOffset, int64_t(3));
        const auto bytes = testutil::contiguousBytes(*f, *w);
        std::vector<float> v(6);
        std::memcpy(v.data(), bytes.data(), 24);
        QCOMPARE(v, (std::vector<float>{0, 1, 2, 3, 4, 5}));
    }
};

QTEST_APPLESS_MAIN(TestTorchReader)
#include "tst_torch_reader.moc"
