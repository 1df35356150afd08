// safetensors header layout against the reference writer's own examples, and the reader's
// validation on files written by the safetensors library and damaged on purpose.
#include "safetensors/safetensors_file.h"
#include "testutil.h"

#include <QTemporaryDir>
#include <QTest>
#include <fstream>

using namespace ckpt;

class TestSafetensors : public QObject
{
    Q_OBJECT
private slots:
    void referenceHeaderExamples()
    {
        // From the reference tests: one F32 tensor "attn.0" of shape [1,2,3] gives N = 64 (no padding
        // needed).
        std::vector<safetensors::OutTensor> one(1);
        one[0].name = "attn.0";
        one[0].dtype = torch::DType::Float32;
        one[0].shape = {1, 2, 3};
        one[0].nbytes = 24;
        const std::string h = safetensors::buildHeader(one, {});
        QCOMPARE(h.size(), size_t(64));
        QCOMPARE(h,
                 std::string("{\"attn.0\":{\"dtype\":\"F32\",\"shape\":[1,2,3],\"data_offsets\":[0,24]}}"));
        std::vector<safetensors::OutTensor> none;
        QCOMPARE(safetensors::buildHeader(none, {}), std::string("{}      "));
    }

    void writerSortsLikeReference()
    {
        std::vector<safetensors::OutTensor> t(3);
        t[0] = {"b", torch::DType::BFloat16, {2}, 4, {}};
        t[1] = {"a", torch::DType::Int64, {1}, 8, {}};
        t[2] = {"c", torch::DType::Float32, {1}, 4, {}};
        safetensors::buildHeader(t, {});
        QCOMPARE(t[0].name, std::string("a")); // I64 before F32 before BF16
        QCOMPARE(t[1].name, std::string("c"));
        QCOMPARE(t[2].name, std::string("b"));
    }

    void libraryWrittenFileReads()
    {
        // The corrupt-fixture generator damaged copies of a file the safetensors library wrote;
        // rebuild the intact one from a damaged copy's neighbour: st_trailing minus its padding.
        const std::string src = testutil::dataDir() + "/corrupt/st_trailing.safetensors";
        std::ifstream in(src, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), {});
        bytes.resize(bytes.size() - 16);
        QTemporaryDir dir;
        const std::string good = dir.filePath("good.safetensors").toStdString();
        std::ofstream(good, std::ios::binary) << bytes;
        const auto f = safetensors::SafetensorsFile::open(good);
        QCOMPARE(f->tensors().size(), size_t(2));
        QCOMPARE(f->tensors()[0].name, std::string("a"));
        QCOMPARE(f->metadata().count("format"), size_t(0));
        const auto a = f->bytes(f->tensors()[0]);
        float v[4];
        std::memcpy(v, a.data(), 16);
        QCOMPARE(v[3], 3.0f);
    }
};

QTEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
