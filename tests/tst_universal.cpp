// `ckpt universal` against DeepSpeed's own ds_to_universal: for every case recorded by
// tools/fixtures/make_universal_fixtures.py, the same files, and in every .pt file the same
// object (keys, order, value types, scalars, tensor dtype/shape/sha256), rebuilt here from our
// pickle the way the recorder rendered DeepSpeed's loaded objects. Then the refusals: no
// universal_checkpoint_info, missing and truncated rank files, a non-empty or overlapping output,
// a cancel — each with nothing left behind.
#include "io/output.h"
#include "layout/family.h"
#include "ops/tensor_source.h"
#include "ops/universal.h"
#include "testutil.h"

#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

using namespace ckpt;
using nlohmann::json;
using pickle::Kind;
using pickle::Value;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> universalExpectations()
{
    std::vector<std::string> out;
    // universal-tp: tensor-parallel (TP=2) tags made by tools/fixtures/make_tp_fixture.py
    for (const char* dir : {"/universal", "/universal-tp"})
        for (const auto& e : fs::directory_iterator(testutil::dataDir() + dir))
            if (e.path().string().size() > 12 && e.path().string().ends_with(".expect.json"))
                out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// The expectation's floats are float.hex() strings; compared as the doubles they spell.
json normalized(const json& j)
{
    if (j.is_object() && j.size() == 1 && j.contains("float") && j["float"].is_string())
        return json{{"float", std::strtod(j["float"].get<std::string>().c_str(), nullptr)}};
    if (j.is_array() || j.is_object()) {
        json out = j;
        for (auto it = out.begin(); it != out.end(); ++it)
            *it = normalized(*it);
        return out;
    }
    return j;
}

// The recorder's summary() of what torch.load would build from this pickle node.
class Summarizer
{
public:
    explicit Summarizer(const torch::TorchFile& f) : m_file(f) {}

    json operator()(const Value* v) const
    {
        if (!v) return "<null node>";
        switch (v->kind) {
        case Kind::None:
            return nullptr;
        case Kind::Bool:
            return v->boolean;
        case Kind::Int:
            return v->integer;
        case Kind::Float:
            return json{{"float", v->real}};
        case Kind::Str:
            return v->text;
        case Kind::List:
            return json{{"list", items(v)}};
        case Kind::Tuple:
            return json{{"tuple", items(v)}};
        case Kind::Dict:
            return json{{"dict", entries(v)}};
        case Kind::Global:
            if (v->text == "torch" && torch::fromName(v->name)) return json{{"dtype", "torch." + v->name}};
            return json{{"global", v->text + "." + v->name}};
        case Kind::Call:
            return call(v);
        default:
            return json{{"unhandled", torch::pyRepr(v)}};
        }
    }

private:
    json items(const Value* v) const
    {
        json a = json::array();
        for (const Value* x : v->items)
            a.push_back((*this)(x));
        return a;
    }
    json entries(const Value* v) const
    {
        json a = json::array();
        for (const auto& [k, x] : v->entries)
            a.push_back(json::array({(*this)(k), (*this)(x)}));
        return a;
    }
    json tensor(const Value* args) const
    {
        const Value* pid = args->items.at(0);
        const torch::Storage& s = m_file.storages().at(size_t(pid->integer));
        torch::Tensor t;
        t.dtype = s.dtype;
        t.storage = int(pid->integer);
        t.storageOffset = *torch::asInt(args->items.at(1));
        t.shape = *torch::asInts(args->items.at(2));
        t.stride = *torch::asInts(args->items.at(3));
        const auto bytes = testutil::contiguousBytes(m_file, t);
        return json{{"dtype", torch::name(t.dtype)},
                    {"shape", t.shape},
                    {"sha256", testutil::sha256Hex(bytes.data(), bytes.size())}};
    }
    json call(const Value* v) const
    {
        const Value* c = v->callable;
        const std::string name = c && c->kind == Kind::Global ? c->text + "." + c->name : "?";
        if (name == "collections.OrderedDict") return json{{"OrderedDict", entries(v)}};
        if (name == "torch.Size") return json{{"Size", *torch::asInts(v->args->items.at(0))}};
        if (name == "torch._utils._rebuild_tensor_v2") return json{{"tensor", tensor(v->args)}};
        if (name == "torch._tensor._rebuild_from_type_v2") {
            json t = tensor(v->args->items.at(2));
            const Value* state = v->args->items.size() > 3 ? v->args->items[3] : nullptr;
            if (state && state->kind == Kind::Tuple && !state->items.empty()) state = state->items[0];
            if (state && state->kind == Kind::Dict && !state->entries.empty()) t["attrs"] = (*this)(state);
            return json{{"tensor", t}};
        }
        if ((name == "__builtin__.getattr" || name == "builtins.getattr") && v->args->items.size() == 2) {
            const Value* cls = v->args->items[0];
            return json{{"enum", cls->text + "." + cls->name}, {"name", v->args->items[1]->text}};
        }
        // An IntEnum pickled by value (protocol 2): the member's name, as the recorder wrote it.
        if (name == "deepspeed.runtime.zero.config.ZeroStageEnum" && !v->isNew &&
            v->args->items.size() == 1) {
            static const char* names[] = {"disabled", "optimizer_states", "gradients", "weights"};
            const auto i = torch::asInt(v->args->items[0]);
            if (i && *i >= 0 && *i < 4) return json{{"enum", name}, {"name", names[*i]}};
        }
        if (v->isNew && c && c->kind == Kind::Global)
            return json{{"object", name},
                        {"state", v->state ? (*this)(v->state) : json{{"dict", json::array()}}}};
        return json{{"unhandled", torch::pyRepr(v)}};
    }

    const torch::TorchFile& m_file;
};

std::string sha256OfFile(const std::string& path)
{
    QFile f(QString::fromStdString(path));
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QByteArray b = f.readAll();
    return testutil::sha256Hex(reinterpret_cast<const uint8_t*>(b.constData()), size_t(b.size()));
}

std::vector<std::string> filesUnder(const std::string& dir)
{
    std::vector<std::string> out;
    std::error_code ec;
    if (!fs::exists(dir, ec)) return out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        if (e.is_regular_file()) out.push_back(fs::relative(e.path(), dir).generic_string());
    std::sort(out.begin(), out.end());
    return out;
}

std::string inputOf(const json& exp)
{
    return testutil::dataDir() + "/" + exp["input"].get<std::string>();
}

// A copy of a fixture's tag folder that a test may damage.
std::string copyTag(const QTemporaryDir& tmp, const std::string& fixtureTag)
{
    const std::string dst = tmp.filePath("ck/global_step4").toStdString();
    fs::create_directories(dst);
    for (const auto& e : fs::directory_iterator(testutil::dataDir() + "/" + fixtureTag))
        fs::copy_file(e.path(), dst + "/" + e.path().filename().string());
    return dst;
}

ops::UniversalOptions injected()
{
    ops::UniversalOptions o;
    o.injectMissingState = true;
    return o;
}

} // namespace

class TestUniversal : public QObject
{
    Q_OBJECT

private slots:
    void sameAsDsToUniversal_data()
    {
        QTest::addColumn<QString>("expect");
        const auto all = universalExpectations();
        QVERIFY(all.size() >= 10);
        for (const auto& e : all)
            QTest::newRow(fs::path(e).filename().string().c_str()) << QString::fromStdString(e);
    }

    void sameAsDsToUniversal()
    {
        QFETCH(QString, expect);
        const json exp = testutil::readJson(expect.toStdString());
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        const auto r = ops::universal(inputOf(exp), out, injected(), {}, cancel);
        QCOMPARE(r.tag, exp["tag"].get<std::string>());

        std::vector<std::string> want;
        for (const auto& f : exp["files"])
            want.push_back(f["path"].get<std::string>());
        const auto got = filesUnder(out);
        QCOMPARE(got, want);
        QCOMPARE(r.files, want.size() + 1);
        for (const auto& f : exp["files"]) {
            const std::string path = out + "/" + f["path"].get<std::string>();
            if (f.value("copy_of_input", false)) {
                QCOMPARE(sha256OfFile(path), f["sha256"].get<std::string>());
                continue;
            }
            const auto file = torch::TorchFile::open(path);
            const json ours = Summarizer(*file)(file->root());
            const json theirs = normalized(f["summary"]);
            if (ours != theirs)
                QFAIL(qPrintable(QString::fromStdString(f["path"].get<std::string>() +
                                                        "\n ours:   " + ours.dump().substr(0, 1500) +
                                                        "\n theirs: " + theirs.dump().substr(0, 1500))));
        }
        std::ifstream latest(tmp.filePath("latest_universal").toStdString());
        const std::string named((std::istreambuf_iterator<char>(latest)), std::istreambuf_iterator<char>());
        QCOMPARE(named, std::string("uni"));
    }

    // Without --inject-missing-state: where ds_to_universal asserts ("Required
    // universal_checkpoint_info state is missing"), a checkpoint of one tensor-parallel rank is
    // converted as --inject_missing_state converts it, with one warning saying so; the files are
    // those of the injected conversion. ZeRO-3 never reads the information: no warning.
    void missingUniversalInfo_data() { sameAsDsToUniversal_data(); }

    void missingUniversalInfo()
    {
        QFETCH(QString, expect);
        const json exp = testutil::readJson(expect.toStdString());
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("plain/uni").toStdString(),
                          injectedOut = tmp.filePath("injected/uni").toStdString();
        ops::CancelToken cancel;
        const std::string theirs = exp["without_inject"];
        const auto r = ops::universal(inputOf(exp), out, {}, {}, cancel);
        ops::universal(inputOf(exp), injectedOut, injected(), {}, cancel);
        const bool refusedByDeepSpeed =
            theirs.find("Required universal_checkpoint_info state is missing") != std::string::npos;
        QVERIFY2(refusedByDeepSpeed || theirs == "converted", theirs.c_str());
        const bool warned = std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
            return w.find("--inject_missing_state") != std::string::npos;
        });
        QCOMPARE(warned, refusedByDeepSpeed);
        size_t files = 0;
        for (const auto& e : fs::recursive_directory_iterator(out)) {
            if (!e.is_regular_file()) continue;
            const fs::path twin = fs::path(injectedOut) / fs::relative(e.path(), out);
            QVERIFY2(fs::exists(twin), twin.c_str());
            QVERIFY2(testutil::sha256File(QString::fromStdString(e.path().string())) ==
                         testutil::sha256File(QString::fromStdString(twin.string())),
                     twin.c_str());
            ++files;
        }
        QVERIFY(files >= 4);
    }

    void familyStatesTensorParallelMerge_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("zero1 fp32") << "universal-tp/tp2_zero1_fp32_w2";
        QTest::newRow("zero2 bf16") << "universal-tp/tp2_zero2_bf16_w2";
        QTest::newRow("zero3 fp32") << "universal-tp/tp2_zero3_fp32_w2";
    }

    // The DeepSpeed family states each trainable parameter's tensor-parallel parts and how they
    // merge (what the conversion reads instead of re-opening ranks): checked here against how
    // make_tp_fixture.py split each tensor (vocabulary rows, row parallelism along dim 1,
    // replicated, averaged, two sub-parameters, q/k/v sub-parameters, column by default).
    void familyStatesTensorParallelMerge()
    {
        QFETCH(QString, fixture);
        using TP = layout::TensorParallel;
        const auto in = layout::openTag(testutil::dataDir() + "/" + fixture.toStdString(), "");
        QVERIFY(in->deepspeed && in->deepspeed->tensorParallel);
        const layout::TensorParallelSave& save = *in->deepspeed->tensorParallel;
        QCOMPARE(save.degree, 2);
        QVERIFY(save.rulesSaved);
        QVERIFY(!save.error);
        QCOMPARE(save.patterns.size(), size_t(9)); // make_tp_fixture.py's UC_INFO
        size_t trainable = 0;
        for (const layout::Parameter& p : in->params) {
            if (p.kind != layout::Parameter::Kind::Trainable || !p.tiedTo.empty()) continue;
            ++trainable;
            QVERIFY2(p.tensorParallel, p.name.c_str());
            const TP& tp = *p.tensorParallel;
            QVERIFY2(!tp.unmergeable, p.name.c_str());
            QCOMPARE(tp.parts.size(), size_t(1));
            const layout::Parameter& other = tp.parts.front();
            QCOMPARE(other.name, p.name);
            QVERIFY(!other.slices.empty());
            const auto has = [&](const char* part) { return p.name.find(part) != std::string::npos; };
            const int64_t whole = int64_t(p.numel() + other.numel());
            if (has("input_layernorm") || has("self_attention.dense.bias")) {
                QCOMPARE(int(tp.mode), int(TP::Mode::Replicated));
                QCOMPARE(tp.shape, p.shape);
            } else if (has("final_layernorm") || has("dense_4h_to_h.bias")) {
                QCOMPARE(int(tp.mode), int(TP::Mode::Average));
                QCOMPARE(tp.shape, p.shape);
            } else if (has("word_embeddings")) {
                QVERIFY(tp.keys.vocab);
                QCOMPARE(tp.dim, size_t(0));
                QCOMPARE(tp.shape.front(), int64_t(37)); // the padded 40 rows cut to the vocabulary
            } else if (has("self_attention.dense.weight") || has("dense_4h_to_h.weight")) {
                QCOMPARE(tp.dim, size_t(1));
                QCOMPARE(tp.keys.catDim, int64_t(1));
                QCOMPARE(tp.shape[1], p.shape[1] + other.shape[1]);
            } else if (has("dense_h_to_4h.weight")) {
                QCOMPARE(tp.keys.subParams, int64_t(2));
                QCOMPARE(tp.blocks.size(), size_t(4)); // each rank's first half, then each rank's second
                QCOMPARE(tp.blocks[1].rank, size_t(1));
                QCOMPARE(tp.blocks[2].start, p.shape[0] / 2);
            } else if (has("query_key_value.weight")) {
                QCOMPARE(tp.keys.subParamEntry, 0);
                QCOMPARE(tp.keys.subParamSizes.size(), size_t(3)); // the saved count 3 made sizes
                QCOMPARE(tp.blocks.size(), size_t(6));             // q, k, v: rank 0's, then rank 1's
            } else {
                QCOMPARE(int(tp.mode), int(TP::Mode::Gather));
                QCOMPARE(tp.keys.catDim, int64_t(0));
            }
            if (tp.mode == TP::Mode::Gather && !tp.keys.vocab) {
                int64_t n = 1;
                for (int64_t d : tp.shape)
                    n *= d;
                QCOMPARE(n, whole);
            }
        }
        QVERIFY(trainable > 10);
    }

    // A tensor-parallel rank whose files are damaged leaves rank 0 readable: the family says why
    // the parts cannot be read, and only the conversion (which needs them) refuses.
    void brokenTensorParallelRankLeavesRankZeroReadable()
    {
        QTemporaryDir tmp;
        const std::string tag = copyTag(tmp, "universal-tp/tp2_zero1_fp32_w2/global_step3");
        fs::remove(tag + "/mp_rank_01_model_states.pt");
        const auto in = layout::openTag(tag, "");
        QVERIFY(in->unreadable.empty());
        QVERIFY(!in->params.empty());
        QVERIFY(in->deepspeed->tensorParallel && in->deepspeed->tensorParallel->error);
        const Error& why = *in->deepspeed->tensorParallel->error;
        QVERIFY2(std::string(why.what()).find("tensor-parallel rank 1") != std::string::npos, why.what());
        for (const layout::Parameter& p : in->params)
            QVERIFY(!p.tensorParallel);
    }

    // A tensor-parallel checkpoint whose model files lack universal_checkpoint_info (made by
    // make_tp_fixture.py --no-info): how its slices merge is unknown, so it is refused as
    // ds_to_universal refuses it, and nothing is written.
    void tensorParallelWithoutInfoIsRefused()
    {
        const json refusal = testutil::readJson(testutil::dataDir() + "/universal-tp/no-info/refusal.json");
        QVERIFY(refusal["ds_to_universal"].get<std::string>().find("Required universal_checkpoint_info") !=
                std::string::npos);
        QTemporaryDir tmp;
        const std::string tag = copyTag(tmp, "universal-tp/tp2_zero1_fp32_w2/global_step3");
        for (const auto& f : refusal["files"])
            fs::copy_file(testutil::dataDir() + "/universal-tp/no-info/" + f.get<std::string>(),
                          tag + "/" + f.get<std::string>(), fs::copy_options::overwrite_existing);
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        try {
            ops::universal(tag, out, {}, {}, cancel);
            QFAIL("converted a tensor-parallel checkpoint without universal_checkpoint_info");
        } catch (const Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("no universal_checkpoint_info") != std::string::npos, e.what());
            QVERIFY2(m.find("tensor-parallel (2 mp ranks)") != std::string::npos, e.what());
            QVERIFY2(e.file().ends_with("mp_rank_00_model_states.pt"), e.what());
        }
        QVERIFY(!fs::exists(out));
        QVERIFY(!fs::exists(tmp.filePath("latest_universal").toStdString()));
    }

    void missingRankFileIsNamed_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("remove");
        QTest::newRow("zero2 last rank") << "deepspeed/zero2_fp32_w4/global_step4"
                                         << "zero_pp_rank_3_mp_rank_00_optim_states.pt";
        QTest::newRow("zero2 middle rank") << "deepspeed/zero2_fp32_w4/global_step4"
                                           << "zero_pp_rank_1_mp_rank_00_optim_states.pt";
        QTest::newRow("zero3 optim") << "deepspeed/zero3_bf16_w4/global_step4"
                                     << "bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt";
        QTest::newRow("zero3 model") << "deepspeed/zero3_bf16_w4/global_step4"
                                     << "zero_pp_rank_3_mp_rank_00_model_states.pt";
        QTest::newRow("11 ranks, rank 10") << "universal/zero2_fp32_w11/global_step4"
                                           << "zero_pp_rank_10_mp_rank_00_optim_states.pt";
        QTest::newRow("BF16_Optimizer") << "universal/bf16_optimizer_w3/global_step4"
                                        << "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt";
        QTest::newRow("TP=2, model of mp rank 1") << "universal-tp/tp2_zero1_fp32_w2/global_step3"
                                                  << "mp_rank_01_model_states.pt";
        QTest::newRow("TP=2, optim of mp rank 1") << "universal-tp/tp2_zero2_bf16_w2/global_step3"
                                                  << "bf16_zero_pp_rank_1_mp_rank_01_optim_states.pt";
        QTest::newRow("TP=2, optim of mp rank 0") << "universal-tp/tp2_zero1_fp32_w2/global_step3"
                                                  << "zero_pp_rank_1_mp_rank_00_optim_states.pt";
    }

    // Every file of tensor-parallel rank 1 gone: the model file says tp_degree 2, so the tag is
    // not taken for a save with one tensor-parallel rank; the first missing file is named.
    void missingTensorParallelRankIsNamed()
    {
        QTemporaryDir tmp;
        const std::string tag = copyTag(tmp, "universal-tp/tp2_zero1_fp32_w2/global_step3");
        for (const char* f : {"mp_rank_01_model_states.pt", "zero_pp_rank_0_mp_rank_01_optim_states.pt",
                              "zero_pp_rank_1_mp_rank_01_optim_states.pt"})
            QVERIFY(fs::remove(tag + "/" + f));
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        try {
            ops::universal(tag, out, {}, {}, cancel);
            QFAIL("converted a tensor-parallel tag without its mp rank 1 files");
        } catch (const Error& e) {
            QCOMPARE(e.file(), tag + "/mp_rank_01_model_states.pt");
            QVERIFY2(std::string(e.what()).find("missing") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("tensor-parallel rank 1 of 2") != std::string::npos,
                     e.what());
        }
        QVERIFY(!fs::exists(out));
    }

    void missingRankFileIsNamed()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, remove);
        QTemporaryDir tmp;
        const std::string tag = copyTag(tmp, fixture.toStdString());
        const std::string gone = tag + "/" + remove.toStdString();
        QVERIFY(fs::remove(gone));
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        try {
            ops::universal(tag, out, injected(), {}, cancel);
            QFAIL("converted a tag with a missing rank file");
        } catch (const Error& e) {
            QCOMPARE(e.file(), gone);
            QVERIFY2(std::string(e.what()).find("missing") != std::string::npos, e.what());
        }
        QVERIFY(!fs::exists(out));
    }

    // A TP-replicated parameter whose replicas differ (one fp32 element of mp rank 1's copy of
    // layers.0.input_layernorm.weight, made by make_tp_fixture.py --bad-replica): ds_to_universal
    // asserts they are equal; ckpt refuses, naming the parameter, and leaves nothing behind.
    void differingReplicaIsRefused()
    {
        const json refusal =
            testutil::readJson(testutil::dataDir() + "/universal-tp/bad-replica/refusal.json");
        QVERIFY(refusal["ds_to_universal"].get<std::string>().find("AssertionError") == 0);
        QTemporaryDir tmp;
        const std::string tag = copyTag(tmp, "universal-tp/tp2_zero1_fp32_w2/global_step3");
        const std::string bad = refusal["file"];
        fs::copy_file(testutil::dataDir() + "/universal-tp/bad-replica/" + bad, tag + "/" + bad,
                      fs::copy_options::overwrite_existing);
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        try {
            ops::universal(tag, out, {}, {}, cancel);
            QFAIL("converted differing tensor-parallel replicas");
        } catch (const Error& e) {
            const std::string m = e.what();
            QVERIFY2(m.find("layers.0.input_layernorm.weight") != std::string::npos, e.what());
            QVERIFY2(m.find("'fp32' differs between mp rank 0 and mp rank 1") != std::string::npos, e.what());
        }
        QVERIFY(!fs::exists(out));
        QVERIFY(!fs::exists(tmp.filePath("latest_universal").toStdString()));
    }

    void truncatedRankFileIsNamed_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("file");
        QTest::newRow("zero1 optim") << "deepspeed/zero1_bf16_w4/global_step4"
                                     << "bf16_zero_pp_rank_2_mp_rank_00_optim_states.pt";
        QTest::newRow("zero3 optim") << "deepspeed/zero3_fp32_w2/global_step4"
                                     << "zero_pp_rank_1_mp_rank_00_optim_states.pt";
        QTest::newRow("model") << "deepspeed/zero2_bf16_w2/global_step4"
                               << "mp_rank_00_model_states.pt";
    }

    void truncatedRankFileIsNamed()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, file);
        for (const uint64_t keep :
             {uint64_t(100), uint64_t(0)}) { // inside the data; only the zip directory lost
            QTemporaryDir tmp;
            const std::string tag = copyTag(tmp, fixture.toStdString());
            const std::string damaged = tag + "/" + file.toStdString();
            const uint64_t size = fs::file_size(damaged);
            fs::resize_file(damaged, keep ? keep : size - 30);
            const std::string out = tmp.filePath("uni").toStdString();
            ops::CancelToken cancel;
            try {
                ops::universal(tag, out, injected(), {}, cancel);
                QFAIL("converted a truncated rank file");
            } catch (const Error& e) {
                QVERIFY2(e.file() == damaged, e.what());
            }
            QVERIFY(!fs::exists(out));
            QVERIFY(!fs::exists(tmp.filePath("latest_universal").toStdString()));
        }
    }

    void refusesNonEmptyOrOverlappingOutput()
    {
        QTemporaryDir tmp;
        const std::string tag = copyTag(tmp, "deepspeed/zero2_bf16_w2/global_step4");
        ops::CancelToken cancel;
        const std::string out = tmp.filePath("uni").toStdString();
        fs::create_directories(out);
        std::ofstream(out + "/old.txt") << "from before";
        QVERIFY_THROWS_EXCEPTION(Error, ops::universal(tag, out, injected(), {}, cancel));
        QCOMPARE(filesUnder(out), std::vector<std::string>{"old.txt"});
        // Inside the tag it reads; around the tag (the checkpoint root itself).
        QVERIFY_THROWS_EXCEPTION(Error, ops::universal(tag, tag + "/uni", injected(), {}, cancel));
        QVERIFY(!fs::exists(tag + "/uni"));
        QVERIFY_THROWS_EXCEPTION(
            Error, ops::universal(tag, tmp.filePath("ck").toStdString(), injected(), {}, cancel));
        // Given the root, nothing may go inside it; given the tag (as ds_to_universal's
        // --input_folder), beside it in the root is where load_checkpoint(root) looks.
        QVERIFY_THROWS_EXCEPTION(Error, ops::universal(tmp.filePath("ck").toStdString(),
                                                       tmp.filePath("ck/uni").toStdString(), injected(), {},
                                                       cancel));
        QVERIFY(!fs::exists(tmp.filePath("ck/uni").toStdString()));
        const auto r = ops::universal(tag, tmp.filePath("ck/global_step4_universal").toStdString(),
                                      injected(), {}, cancel);
        QCOMPARE(r.tag, std::string("global_step4"));
        std::ifstream latest(tmp.filePath("ck/latest_universal").toStdString());
        std::string named;
        std::getline(latest, named);
        QCOMPARE(named, std::string("global_step4_universal"));
    }

    // --overwrite: a second conversion into the folder of a first (another tag, another world
    // size) replaces its zero/ tree and model files as a set, keeps the user's files, and gives
    // what a fresh conversion gives, file for file.
    void overwriteReplacesAnEarlierConversion()
    {
        QTemporaryDir tmp;
        const std::string first = testutil::dataDir() + "/deepspeed/zero3_bf16_w2/global_step4";
        const std::string second = testutil::dataDir() + "/deepspeed/zero2_bf16_w2/global_step2";
        const std::string out = tmp.filePath("uni").toStdString(),
                          fresh = tmp.filePath("fresh/uni").toStdString();
        ops::CancelToken cancel;
        ops::universal(first, out, injected(), {}, cancel);
        std::ofstream(out + "/NOTES.md") << "the user's";
        const auto before = filesUnder(out);
        try {
            ops::universal(second, out, injected(), {}, cancel);
            QFAIL("a folder holding a conversion was written into");
        } catch (const io::OutputNotEmpty& e) {
            QVERIFY2(std::string(e.what()).find("not empty") != std::string::npos, e.what());
        }
        QCOMPARE(filesUnder(out), before);
        ops::UniversalOptions o = injected();
        o.overwrite = true;
        ops::universal(second, out, o, {}, cancel);
        ops::universal(second, fresh, injected(), {}, cancel);
        auto want = filesUnder(fresh);
        want.push_back("NOTES.md");
        std::sort(want.begin(), want.end());
        QCOMPARE(filesUnder(out), want);
        for (const auto& f : filesUnder(fresh)) {
            std::ifstream a(out + "/" + f, std::ios::binary), b(fresh + "/" + f, std::ios::binary);
            const std::string x((std::istreambuf_iterator<char>(a)), {}),
                y((std::istreambuf_iterator<char>(b)), {});
            QVERIFY2(x == y, f.c_str());
        }
    }

    void cancelLeavesNothing()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("a/uni").toStdString();
        ops::CancelToken cancel;
        int calls = 0;
        const ops::ProgressSink progress = [&](const ops::Progress& p) {
            if (p.doneBytes > 0 && ++calls == 3) cancel.cancel();
        };
        QVERIFY_THROWS_EXCEPTION(Cancelled, ops::universal(testutil::dataDir() + "/deepspeed/zero3_bf16_w4",
                                                           out, injected(), progress, cancel));
        QVERIFY(!fs::exists(tmp.filePath("a").toStdString()));
    }

    // A model file whose param_shapes list one group of 1,000 names 10,000 times
    // (tests/fuzz/regressions/universal: 42 KB naming ten million parameters) is refused at once.
    void repeatedNamesAreRefused()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        ops::universal(testutil::dataDir() + "/deepspeed/zero2_fp32_w1/global_step2", out, injected(), {},
                       cancel);
        std::ifstream in(testutil::dataDir() + "/../fuzz/regressions/universal/param-shapes-shared-memo",
                         std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        QVERIFY(bytes.size() > 1);
        const std::string victim = out + "/mp_rank_00_model_states.pt";
        QVERIFY(fs::exists(victim));
        std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes.substr(1); // after the selector
        try {
            layout::openCheckpointTag(out, "");
            QFAIL("opened");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).starts_with(victim + ": "), e.what());
            QVERIFY2(std::string(e.what()).find("over and over") != std::string::npos, e.what());
        }
    }

    // The output opens as a checkpoint of its own (the Universal family, before DeepSpeed's, whose
    // model files it holds): every zero/<name> folder a parameter, and each parameter's values
    // those of the ZeRO tag it came from.
    void universalFolderOpens_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("zero2 bf16") << "deepspeed/zero2_bf16_w2";
        QTest::newRow("zero1 fp32") << "deepspeed/zero1_fp32_w2";
        QTest::newRow("zero3 sub-groups") << "deepspeed/zero3_fp32_w2_subgroups";
        QTest::newRow("zero3 11 ranks") << "universal/zero3_bf16_w11";
        QTest::newRow("BF16_Optimizer") << "universal/bf16_optimizer_w3";
    }

    void universalFolderOpens()
    {
        QFETCH(QString, fixture);
        const std::string in = testutil::dataDir() + "/" + fixture.toStdString();
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        QVERIFY(layout::openCheckpointTag(in, "")->model.tags.front().convertsToUniversal);
        const auto r = ops::universal(in, out, injected(), {}, cancel);
        for (const std::string& path : {out, tmp.path().toStdString()}) { // the folder, and its root
            const auto c = layout::openCheckpointTag(path, "");
            QCOMPARE(c->model.family, std::string("universal"));
            const layout::Tag& t = c->model.tags.front();
            QVERIFY(!t.convertsToUniversal); // already Universal: the window offers no conversion
            QCOMPARE(t.name, std::string("uni"));
            QVERIFY(t.latest);
            // The fixtures' two buffers (scale, counter) have no folder in a ZeRO-3 conversion:
            // they are read from the model file, as DeepSpeed restores them.
            QCOMPARE(t.params.size(), r.parameters + (t.deepspeed->zeroStage == 3 ? 2u : 0u));
            size_t tied = 0;
            for (const auto& p : t.params) {
                if (p.kind == layout::Parameter::Kind::Trainable && p.tiedTo.empty())
                    QVERIFY(p.stateNamed("exp_avg") && p.stateNamed("exp_avg_sq"));
                if (p.name == "head.weight") { // the fixtures' tied head: an alias, as in the ZeRO tag
                    QCOMPARE(p.tiedTo, std::string("embed.weight"));
                    QVERIFY(p.kind == layout::Parameter::Kind::Trainable); // not "frozen"
                    ++tied;
                }
            }
            // At stage 3 the model file holds no module weights: ds_to_universal writes no folder
            // for the alias, and DeepSpeed ties it again when the model is built.
            QCOMPARE(tied, size_t(t.deepspeed->zeroStage == 3 ? 0 : 1));
        }
        const ops::TensorSet ours = ops::anyTensors(out, {});
        const ops::TensorSet zero = ops::anyTensors(in, {});
        std::map<std::string, const ops::SourceTensor*> byName;
        for (const auto& t : zero.tensors)
            byName[t.tensor.name] = &t;
        size_t compared = 0;
        auto bytesOf = [](const ops::SourceTensor& t) {
            std::vector<uint8_t> b(t.tensor.nbytes);
            if (!b.empty()) t.tensor.fill(0, b.size(), b.data());
            return b;
        };
        for (const auto& t : ours.tensors) {
            const auto it = byName.find(t.tensor.name);
            // Tied aliases have their own copy here, from the model weights. Integer buffers are
            // compared too: ds_to_universal writes them as floats, the export reads the model
            // file's original (issue 36 item 7).
            if (it == byName.end() || !it->second->aliasOf.empty()) continue;
            QVERIFY2(t.tensor.dtype == it->second->tensor.dtype, t.tensor.name.c_str());
            QCOMPARE(t.tensor.shape, it->second->tensor.shape);
            QVERIFY2(bytesOf(t) == bytesOf(*it->second), t.tensor.name.c_str());
            ++compared;
        }
        QVERIFY(compared >= 8);
    }

    // Issue 36 item 7: position_ids, a step counter: an int64 buffer stays int64, with the model
    // file's values, although the Universal folder's fp32.pt holds it as float32.
    void integerBuffersAreNeverCast()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        ops::universal(testutil::dataDir() + "/deepspeed/zero2_fp32_w2", out, injected(), {}, cancel);
        const auto fp32 = torch::TorchFile::open(out + "/zero/counter/fp32.pt");
        QVERIFY(fp32->tensor("param")->dtype == torch::DType::Float32); // as ds_to_universal writes it
        for (const auto dtype : {std::optional<torch::DType>{}, std::optional(torch::DType::BFloat16)}) {
            ops::SourceOptions o;
            o.dtype = dtype; // --dtype bf16 casts the floats, never the integers
            const ops::TensorSet set = ops::anyTensors(out, o);
            const auto counter = std::find_if(set.tensors.begin(), set.tensors.end(),
                                              [](const auto& t) { return t.tensor.name == "counter"; });
            QVERIFY(counter != set.tensors.end());
            QVERIFY(counter->tensor.dtype == torch::DType::Int64);
            std::vector<int64_t> v(5);
            QCOMPARE(counter->tensor.nbytes, uint64_t(v.size() * sizeof(int64_t)));
            counter->tensor.fill(0, counter->tensor.nbytes, reinterpret_cast<uint8_t*>(v.data()));
            QVERIFY(v == (std::vector<int64_t>{0, 1, 2, 3, 4})); // torch.arange(5), as the fixture made it
        }
    }

    // Issue 36 item 3: a Universal folder converted into the run (`<run>/<tag>_universal`, as
    // DeepSpeed's examples place it) is a Universal tag of that run, never a ZeRO-0 tag of the
    // copied model file's weights: same tensors as the tag it came from, a diff of 0 differences.
    void universalFolderInsideARun_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("zero2 fp32") << "deepspeed/zero2_fp32_w2";
        QTest::newRow("zero3 bf16") << "deepspeed/zero3_bf16_w2";
        QTest::newRow("zero1 bf16 4 ranks") << "deepspeed/zero1_bf16_w4";
    }

    void universalFolderInsideARun()
    {
        QFETCH(QString, fixture);
        QTemporaryDir tmp;
        const std::string run = tmp.filePath("run").toStdString();
        fs::copy(testutil::dataDir() + "/" + fixture.toStdString(), run, fs::copy_options::recursive);
        ops::CancelToken cancel;
        const std::string staged = tmp.filePath("staged/global_step4_universal").toStdString();
        ops::universal(run, staged, injected(), {}, cancel);
        fs::rename(staged, run + "/global_step4_universal");
        fs::rename(tmp.filePath("staged/latest_universal").toStdString(), run + "/latest_universal");
        const auto c = layout::openCheckpoint(run);
        QCOMPARE(c->model.family, std::string("deepspeed")); // the run's `latest` names its training tags
        const layout::Tag* uni = c->model.find("global_step4_universal");
        QVERIFY(uni);
        QVERIFY2(uni->unreadable.empty(), uni->unreadable.c_str());
        QCOMPARE(uni->deepspeed->optimizer, std::string("universal"));
        QVERIFY(!uni->convertsToUniversal);
        QCOMPARE(c->model.latest()->name, std::string("global_step4"));
        // Every tensor the conversion holds (ZeRO-3's has no frozen parameters: ds_to_universal
        // writes folders for the optimizer's parameters only), buffers from the model file too.
        std::set<std::string> names;
        for (const auto& p : uni->params)
            names.insert(p.name);
        for (const char* buffer : {"scale", "counter"})
            QVERIFY2(names.count(buffer), buffer);
        QVERIFY(names.size() >= 9);
        ops::SourceOptions a, b;
        a.tag = "global_step4";
        b.tag = "global_step4_universal";
        const ops::TensorSet from = ops::anyTensors(run, a), to = ops::anyTensors(run, b);
        std::map<std::string, const ops::SourceTensor*> byName;
        for (const auto& t : from.tensors)
            byName[t.tensor.name] = &t;
        size_t same = 0;
        for (const auto& t : to.tensors) {
            const auto it = byName.find(t.tensor.name);
            QVERIFY2(it != byName.end(), t.tensor.name.c_str());
            if (!it->second->aliasOf.empty() || !t.aliasOf.empty()) continue;
            QVERIFY2(t.tensor.dtype == it->second->tensor.dtype, t.tensor.name.c_str());
            QCOMPARE(t.tensor.shape, it->second->tensor.shape);
            QVERIFY(t.tensor.nbytes > 0);
            std::vector<uint8_t> x(t.tensor.nbytes), y(t.tensor.nbytes);
            t.tensor.fill(0, x.size(), x.data());
            it->second->tensor.fill(0, y.size(), y.data());
            QVERIFY2(x == y, t.tensor.name.c_str());
            ++same;
        }
        const auto aliases = std::count_if(uni->params.begin(), uni->params.end(),
                                           [](const auto& p) { return !p.tiedTo.empty(); });
        QCOMPARE(same + size_t(aliases), names.size()); // all but tied aliases (their targets are compared)
        // Through the CLI: diff of the two tags finds nothing different.
        QProcess p;
        p.start(CKPT_BINARY, {"diff", QString::fromStdString(run + "/global_step4"),
                              QString::fromStdString(run + "/global_step4_universal"), "--json", "-q"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const json d = json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(d["totals"]["different"].get<int>(), 0);
        QCOMPARE(d["totals"]["changed"].get<int>(), 0);
        QVERIFY(d["totals"]["identical"] == d["totals"]["compared"]);
    }

    void damagedUniversalFolderIsNamed()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("uni").toStdString();
        ops::CancelToken cancel;
        ops::universal(testutil::dataDir() + "/deepspeed/zero2_fp32_w2", out, injected(), {}, cancel);
        // A moment of another parameter's size in place of its own.
        const std::string wrong = out + "/zero/fc1.bias/exp_avg.pt";
        fs::copy_file(wrong, tmp.filePath("saved.pt").toStdString());
        fs::copy_file(out + "/zero/embed.weight/exp_avg.pt", wrong, fs::copy_options::overwrite_existing);
        try {
            layout::openCheckpointTag(out, "");
            QFAIL("opened a Universal folder with a mismatched moment");
        } catch (const Error& e) {
            QCOMPARE(e.file(), wrong);
        }
        fs::copy_file(tmp.filePath("saved.pt").toStdString(), wrong, fs::copy_options::overwrite_existing);
        const std::string gone = out + "/zero/fc2.weight/fp32.pt";
        fs::remove(gone);
        try {
            layout::openCheckpointTag(out, "");
            QFAIL("opened a Universal folder with a missing parameter file");
        } catch (const Error& e) {
            QCOMPARE(e.file(), gone);
        }
        fs::remove_all(out + "/zero/fc2.weight"); // the whole folder gone: still named
        try {
            layout::openCheckpointTag(out, "");
            QFAIL("opened a Universal folder with a missing parameter file");
        } catch (const Error& e) {
            QCOMPARE(e.file(), gone);
        }
    }

    void cli()
    {
        QTemporaryDir tmp;
        QProcess p;
        p.start(CKPT_BINARY,
                {"universal", QString::fromStdString(testutil::dataDir() + "/deepspeed/zero2_bf16_w2"),
                 tmp.filePath("uni"), "--inject-missing-state", "--json"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const json doc = json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(doc["tag"].get<std::string>(), std::string("global_step4"));
        QCOMPARE(doc["zero_stage"].get<int>(), 2);

        // No ceremony: without the flag, a data-parallel checkpoint converts all the same and
        // one warning line says how.
        p.start(CKPT_BINARY,
                {"universal", QString::fromStdString(testutil::dataDir() + "/deepspeed/zero2_bf16_w2"),
                 tmp.filePath("uni2"), "-q"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QString err = QString::fromUtf8(p.readAllStandardError()).trimmed();
        QVERIFY2(!err.contains('\n'), qPrintable(err));
        QVERIFY2(err.startsWith("ckpt: warning: ") && err.contains("--inject_missing_state"),
                 qPrintable(err));
        QVERIFY(QFileInfo::exists(tmp.filePath("uni2/zero/optimizer_state.pt")));
    }
};

QTEST_GUILESS_MAIN(TestUniversal)
#include "tst_universal.moc"
