// PyTorch DCP folders saved by torch itself (tests/data/dcp) and Composer's real sharded run
// folder: the domain model through the registry (shapes, dtypes, chunks), tensor values and
// `ckpt export` (model and --all) against what torch's dcp_to_torch_save produced, each item
// parsed once, and damaged copies giving one clear error naming the damaged file.
#include "layout/family.h"
#include "ops/consolidate.h"
#include "ops/inspect.h"
#include "ops/tensor_source.h"
#include "safetensors/safetensors_file.h"
#include "testutil.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

struct Expected
{
    std::string dtype;
    std::vector<int64_t> shape;
    std::string sha256;
};

// Fixture folder -> its expectation file, for every DCP fixture.
std::vector<std::pair<std::string, std::string>> fixtures()
{
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : fs::directory_iterator(testutil::dataDir() + "/dcp")) {
        const std::string p = e.path().string();
        if (p.ends_with(".expect.json")) out.push_back({p.substr(0, p.size() - 12), p});
    }
    std::sort(out.begin(), out.end());
    out.push_back({testutil::dataDir() + "/composer/fsdp2_sharded",
                   testutil::dataDir() + "/composer/fsdp2_sharded.expect.json"});
    return out;
}

void addFixtureRows()
{
    QTest::addColumn<QString>("dir");
    QTest::addColumn<QString>("expect");
    for (const auto& [dir, expect] : fixtures())
        QTest::newRow(dir.substr(testutil::dataDir().size() + 1).c_str())
            << QString::fromStdString(dir) << QString::fromStdString(expect);
}

std::map<std::string, Expected> expected(const nlohmann::json& list, const char* nameKey)
{
    std::map<std::string, Expected> out;
    for (const auto& t : list)
        out[t[nameKey].get<std::string>()] = {t["dtype"], t["shape"].get<std::vector<int64_t>>(),
                                              t["sha256"]};
    return out;
}

std::map<std::string, Expected> hashed(const ops::TensorSet& set)
{
    std::map<std::string, Expected> out;
    for (const auto& s : set.tensors) {
        std::vector<uint8_t> b(s.tensor.nbytes);
        if (!b.empty()) s.tensor.fill(0, b.size(), b.data());
        out[s.tensor.name] = {std::string(torch::name(s.tensor.dtype)), s.tensor.shape,
                              testutil::sha256Hex(b.data(), b.size())};
    }
    return out;
}

std::map<std::string, Expected> readSafetensors(const std::string& dir)
{
    std::map<std::string, Expected> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".safetensors") {
            const auto f = safetensors::SafetensorsFile::open(e.path().string());
            for (const auto& t : f->tensors()) {
                const auto b = f->bytes(t);
                out[t.name] = {std::string(torch::name(t.dtype)), t.shape,
                               testutil::sha256Hex(b.data(), b.size())};
            }
        }
    return out;
}

void compare(const std::map<std::string, Expected>& got, const std::map<std::string, Expected>& want)
{
    QCOMPARE(got.size(), want.size());
    for (const auto& [name, w] : want) {
        const auto it = got.find(name);
        QVERIFY2(it != got.end(), ("missing " + name).c_str());
        QCOMPARE(it->second.dtype, w.dtype);
        QCOMPARE(it->second.shape, w.shape);
        QVERIFY2(it->second.sha256 == w.sha256, ("values of " + name).c_str());
    }
}

// A copy of a fixture folder to damage.
std::string copyFixture(const QTemporaryDir& tmp, const std::string& dir)
{
    const fs::path dst = fs::path(tmp.path().toStdString()) / fs::path(dir).filename();
    fs::copy(dir, dst, fs::copy_options::recursive);
    return dst.string();
}

// Overwrites bytes of a file in place.
void overwrite(const std::string& path, uint64_t offset, const std::string& bytes)
{
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    f.write(bytes.data(), std::streamsize(bytes.size()));
}

// The one error opening `dir` for export gives.
std::string exportError(const std::string& dir)
{
    try {
        ops::anyTensors(dir, {});
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

} // namespace

class TestDcp : public QObject
{
    Q_OBJECT
private slots:
    void inspect_data() { addFixtureRows(); }
    void inspect()
    {
        QFETCH(QString, dir);
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        QCOMPARE(std::string(layout::familyOf(dir.toStdString()).id()), std::string("dcp"));
        const auto opened = layout::openCheckpoint(dir.toStdString());
        QCOMPARE(opened->model.family, std::string("dcp"));
        QCOMPARE(opened->model.tags.size(), size_t(1));
        const layout::Tag& tag = opened->chooseTag("");
        QVERIFY2(tag.warnings.empty(), tag.warnings.empty() ? "" : tag.warnings.front().c_str());
        QVERIFY(tag.latest);

        // Every tensor entry, as the model (prefix removed) or as another tensor (`/` path).
        std::map<std::string, const layout::Parameter*> byPath;
        for (const auto* list : {&tag.params, &tag.otherTensors})
            for (const auto& p : *list)
                byPath[p.path] = &p;
        size_t tensors = 0;
        for (const auto& e : exp["entries"]) {
            if (e["kind"] != "tensor") continue;
            ++tensors;
            std::string path;
            for (const auto& k : e["key_path"])
                path += (path.empty() ? "" : "/") +
                        (k.is_string() ? k.get<std::string>() : std::to_string(k.get<int>()));
            const auto it = byPath.find(path);
            QVERIFY2(it != byPath.end(), ("no tensor " + path).c_str());
            const layout::Parameter& p = *it->second;
            QCOMPARE(std::string(torch::name(p.dtype)), e["dtype"].get<std::string>());
            QCOMPARE(p.shape, e["shape"].get<std::vector<int64_t>>());
            QCOMPARE(p.slices.size(), e["chunks"].size());
            for (size_t i = 0; i < p.slices.size(); ++i) {
                const auto& c = e["chunks"][i];
                const auto& src = p.slices[i].master.at(0);
                QVERIFY(src.file.ends_with(c["file"].get<std::string>() + "@" +
                                           std::to_string(c["offset"].get<uint64_t>())));
                if (p.slices.size() > 1) {
                    QCOMPARE(src.chunkOffsets, c["offsets"].get<std::vector<int64_t>>());
                    QCOMPARE(src.chunkShape, c["sizes"].get<std::vector<int64_t>>());
                }
            }
        }
        QCOMPARE(byPath.size(), tensors);
        std::vector<std::string> modelNames, wantNames;
        for (const auto& p : tag.params)
            modelNames.push_back(p.name);
        for (const auto& t : exp["export"]["tensors"])
            wantNames.push_back(t["name"]);
        QCOMPARE(modelNames, wantNames); // metadata order, as dcp_to_torch_save's dict
    }

    void fileListingsListEveryItem_data() { addFixtureRows(); }
    // `ckpt inspect --json --entries` lists each .distcp file as the items .metadata stores in
    // it: every tensor chunk under its key path (and "@offsets" where it is a block of the
    // tensor), with the chunk's dtype and shape, checked against the fixture's record of
    // .metadata; before, a .distcp read as a torch zip listed one stray tensor or an error.
    void fileListingsListEveryItem()
    {
        QFETCH(QString, dir);
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        std::map<std::string, std::map<std::string, std::pair<std::string, nlohmann::json>>>
            want; // file: label
        for (const auto& e : exp["entries"]) {
            if (e["kind"] != "tensor") continue;
            std::string path;
            for (const auto& k : e["key_path"]) // list indices recorded as numbers
                path += (path.empty() ? "" : "/") + (k.is_string() ? k.get<std::string>() : k.dump());
            for (const auto& c : e["chunks"]) {
                std::string label = path;
                if (c["sizes"] != e["shape"]) {
                    std::string offsets;
                    for (const auto& o : c["offsets"])
                        offsets += (offsets.empty() ? "" : ",") + std::to_string(o.get<int64_t>());
                    label += "@" + offsets;
                }
                want[c["file"].get<std::string>()][label] = {e["dtype"].get<std::string>(), c["sizes"]};
            }
        }
        std::ostringstream text;
        ops::writeCheckpointJson(ops::listCheckpoint(dir.toStdString(), {}, false, true), text);
        const auto doc = nlohmann::json::parse(text.str());
        size_t files = 0;
        for (const auto& l : doc["tags"][0]["file_listings"]) {
            const std::string name = fs::path(l["file"].get<std::string>()).filename().string();
            if (!name.ends_with(".distcp")) continue;
            ++files;
            QVERIFY2(!l.contains("error"), l.dump().c_str());
            QCOMPARE(l["format"].get<std::string>(), std::string("dcp"));
            auto mine = want[name];
            for (const auto& t : l["tensors"]) {
                const auto it = mine.find(t["path"].get<std::string>());
                if (it == mine.end()) continue; // a tensor inside a pickled value
                QCOMPARE(t["dtype"].get<std::string>(), it->second.first);
                QCOMPARE(t["shape"].dump(), it->second.second.dump());
                mine.erase(it);
            }
            const std::string missing = mine.empty() ? "" : name + ": not listed: " + mine.begin()->first;
            QVERIFY2(mine.empty(), missing.c_str());
        }
        QCOMPARE(files, want.size());
    }

    void values_data() { addFixtureRows(); }
    void values()
    {
        QFETCH(QString, dir);
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        const uint64_t before = torch::TorchFile::parses();
        compare(hashed(ops::anyTensors(dir.toStdString(), {})), expected(exp["export"]["tensors"], "name"));
        // Each item of each data file parsed once: tensor chunks and values, nothing more.
        uint64_t items = 0;
        for (const auto& e : exp["entries"])
            items += e["kind"] == "tensor" ? e["chunks"].size() : 1;
        QCOMPARE(torch::TorchFile::parses() - before, items);

        ops::SourceOptions all;
        all.all = true;
        // --all names the model tensors by FQN too; the reference names them by their `/` path.
        auto want = expected(exp["dcp_to_torch_save"]["tensors"], "path");
        for (const auto& t : exp["export"]["tensors"])
            for (auto it = want.begin(); it != want.end(); ++it)
                if (it->second.sha256 == t["sha256"] &&
                    it->first.ends_with("/" + t["name"].get<std::string>())) {
                    want.emplace(t["name"].get<std::string>(), it->second);
                    want.erase(it);
                    break;
                }
        compare(hashed(ops::anyTensors(dir.toStdString(), all)), want);
    }

    // The optimizer's state keyed by parameter name (FSDP, torchtitan, Composer) is the state
    // of that parameter, under the optimizer's names; its moments read the reference's values.
    // Torch's own id-keyed state (dtensor_mixed_w3) ties to no name and is listed by path.
    void optimizerStateBelongsToItsParameter_data() { addFixtureRows(); }
    void optimizerStateBelongsToItsParameter()
    {
        QFETCH(QString, dir);
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        const auto in = layout::openTag(dir.toStdString(), "", {});
        const layout::Tag& tag = *in;
        layout::Tag moments;
        moments.params = layout::momentTensors(tag);
        const auto got = hashed(ops::tagTensors(in.checkpoint, moments, {}));
        size_t keyed = 0, unowned = 0;
        for (const auto& t : exp["dcp_to_torch_save"]["tensors"]) {
            const std::string path = t["path"];
            std::string owner, leaf;
            if (const size_t flat = path.find("/state."); flat != std::string::npos) { // torchtitan
                const size_t dot = path.rfind('.');
                owner = path.substr(flat + 7, dot - flat - 7), leaf = path.substr(dot + 1);
            } else {
                const size_t cut = path.rfind('/'), up = path.rfind('/', cut - 1);
                const size_t stateAt = path.rfind("state/", up);
                if (cut == std::string::npos || up == std::string::npos || stateAt == std::string::npos ||
                    stateAt + 5 != up)
                    continue;
                owner = path.substr(up + 1, cut - up - 1), leaf = path.substr(cut + 1);
            }
            const auto p = std::find_if(tag.params.begin(), tag.params.end(),
                                        [&](const auto& q) { return q.name == owner; });
            const bool moment = leaf == "exp_avg" || leaf == "exp_avg_sq";
            std::string name = path;
            if (p != tag.params.end()) {
                const layout::OptimizerState* st = p->stateNamed(leaf);
                QVERIFY2(st, (owner + " lacks its " + leaf).c_str());
                QCOMPARE(st->shape, t["shape"].get<std::vector<int64_t>>());
                name = owner + "/" + leaf;
                ++keyed;
            } else if (moment) {
                ++unowned;
            }
            if (!moment) continue;
            QVERIFY2(got.count(name), ("no moment " + name).c_str());
            QVERIFY2(got.at(name).sha256 == t["sha256"].get<std::string>(), ("values of " + name).c_str());
        }
        QVERIFY(keyed + unowned > 0);
        QCOMPARE(tag.unownedMoments.size(), unowned);
    }

    void exportMatchesDcpToTorchSave_data() { addFixtureRows(); }
    void exportMatchesDcpToTorchSave()
    {
        QFETCH(QString, dir);
        QFETCH(QString, expect);
        const auto exp = testutil::readJson(expect.toStdString());
        QTemporaryDir out;
        ops::ConsolidateOptions opt;
        opt.maxShardSize = 100; // bytes: sharded, with an index
        ops::CancelToken cancel;
        ops::consolidate(dir.toStdString(), out.path().toStdString(), opt, {}, cancel);
        compare(readSafetensors(out.path().toStdString()), expected(exp["export"]["tensors"], "name"));
        QVERIFY(fs::exists(out.path().toStdString() + "/model.safetensors.index.json"));

        // The command line, --all: the optimizer state too.
        QTemporaryDir out2;
        QProcess p;
        p.start(CKPT_BINARY, {"export", dir, out2.path() + "/all", "--all"});
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const auto got = readSafetensors(out2.path().toStdString() + "/all");
        for (const auto& t : exp["dcp_to_torch_save"]["tensors"]) {
            const std::string path = t["path"];
            if (path.find("/exp_avg") == std::string::npos) continue;
            QVERIFY2(got.count(path), ("--all lacks " + path).c_str());
            QCOMPARE(got.at(path).sha256, t["sha256"].get<std::string>());
        }
    }

    // A real torchtitan dump folder (CheckpointManager's checkpoint/step-N, issue 40): opened
    // from the dump folder, its steps as tags, the highest `latest` (torchtitan resumes from it),
    // labelled by its TrainState, every saved tensor listed, each moment under its parameter, and
    // the model exported as dcp_to_torch_save gives it.
    void torchtitanRun()
    {
        const std::string run = testutil::dataDir() + "/torchtitan/llama3_fsdp2_w2";
        const auto exp = testutil::readJson(run + ".expect.json");
        const auto opened = layout::openCheckpoint(run);
        QCOMPARE(opened->model.tags.size(), size_t(2));
        const layout::Tag& tag = opened->chooseTag("");
        QCOMPARE(tag.name, std::string("step-4"));
        const auto badges = testutil::badges(tag);
        QCOMPARE(badges["layout"].get<std::string>(), std::string("torchtitan"));
        QCOMPARE(badges["step"].get<int>(), 4);
        QCOMPARE(tag.globalSteps, int64_t(4));
        std::set<std::string> listed;
        for (const auto* list : {&tag.params, &tag.otherTensors})
            for (const auto& p : *list)
                listed.insert(p.path);
        const auto& step = exp["steps"]["step-4"];
        size_t tensors = 0;
        for (const auto& [fqn, k] : step["saved_keys"].items()) {
            if (k["kind"] != "tensor") continue;
            std::string path;
            for (const auto& part : k["key_path"])
                path += (path.empty() ? "" : "/") + part.get<std::string>();
            QVERIFY2(listed.count(path), ("not listed: " + path).c_str());
            ++tensors;
        }
        QVERIFY(tensors > 40);
        const auto norm = std::find_if(tag.params.begin(), tag.params.end(),
                                       [](const layout::Parameter& p) { return p.name == "norm.weight"; });
        QVERIFY(norm != tag.params.end());
        std::set<std::string> states;
        for (const auto& st : norm->state)
            states.insert(st.name);
        QVERIFY(states.count("exp_avg") && states.count("exp_avg_sq"));

        QTemporaryDir out;
        ops::consolidate(run, out.path().toStdString(), {}, {}, {});
        std::map<std::string, Expected> want;
        for (const auto& [name, t] : step["reference"].items())
            want[name] = {t["dtype"], t["shape"].get<std::vector<int64_t>>(), t["sha256"]};
        compare(readSafetensors(out.path().toStdString()), want);

        // A DCP folder whose keys name no writer is said to be one, plainly: never "torchtitan".
        const auto plain = layout::openCheckpoint(testutil::dataDir() + "/dcp/dtensor_mixed_w3");
        QVERIFY(testutil::badges(plain->model.tags.front())["layout"] != "torchtitan");
    }

    // DCP over safetensors (HuggingFaceStorageWriter, issue 40): the shard files' chunks placed by
    // their DCP_SHARDING_INFO; every saved tensor with its whole shape and dtype (FP8 too), and the
    // export equal to the state dict saved: 0-d scales included, which torch's own consolidation
    // writes as zeros. A shard file gone is a gap, said.
    void dcpOverSafetensors_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* c : {"fp32_w2", "bf16_w2", "fp8_w2"})
            QTest::newRow(c) << QString(c);
    }
    void dcpOverSafetensors()
    {
        QFETCH(QString, run);
        const std::string base = testutil::dataDir() + "/dcp-safetensors/" + run.toStdString();
        const auto exp = testutil::readJson(base + ".expect.json");
        const auto opened = layout::openCheckpoint(base + "/sharded");
        QCOMPARE(opened->model.family, std::string("dcp-safetensors"));
        const layout::Tag& tag = opened->model.tags.front();
        for (const auto& [key, k] : exp["saved_keys"].items()) {
            const std::string fqn = key; // (clang captures no structured binding)
            const auto p = std::find_if(tag.params.begin(), tag.params.end(),
                                        [&](const layout::Parameter& x) { return x.name == fqn; });
            QVERIFY2(p != tag.params.end(), fqn.c_str());
            QCOMPARE(p->shape, k["global_shape"].get<std::vector<int64_t>>());
            QCOMPARE(std::string(torch::name(p->dtype)), k["dtype"].get<std::string>());
        }
        QCOMPARE(tag.params.size(), exp["saved_keys"].size());
        QTemporaryDir out;
        ops::consolidate(base + "/sharded", out.path().toStdString(), {}, {}, {});
        const auto got = readSafetensors(out.path().toStdString());
        size_t consolidationWrong = 0;
        for (const auto& [fqn, t] : exp["saved_truth"].items()) {
            QVERIFY2(got.count(fqn), fqn.c_str());
            QCOMPARE(got.at(fqn).sha256, t["sha256"].get<std::string>());
            consolidationWrong += exp["reference"][fqn]["equal_to_saved"] == false;
        }
        QCOMPARE(consolidationWrong > 0, run == "fp8_w2"); // the 0-d scales torch zeroes

        // Without .metadata a lost file only makes tensors look smaller: the consolidated model
        // beside says their shapes; alone, a model file from one rank of several is said.
        QTemporaryDir tmp;
        const std::string copy = copyFixture(tmp, base);
        fs::remove(copy + "/sharded/shard-00002-model-00001-of-00002.safetensors");
        const QString why = testutil::errorOf([&] { layout::openTag(copy + "/sharded", {}); });
        QVERIFY2(why.contains("a shard file is missing") && why.contains("sharded"), qPrintable(why));
        fs::remove(copy + "/model.safetensors.index.json");
        const auto alone = layout::openCheckpoint(copy + "/sharded");
        QVERIFY(!alone->model.tags.front().warnings.empty());
    }

    void runFolderLatestFromSymlink()
    {
        const auto opened = layout::openCheckpoint(testutil::dataDir() + "/composer/fsdp2_sharded");
        QCOMPARE(opened->model.tags.size(), size_t(1));
        QCOMPARE(opened->model.tags[0].name, std::string("ep0-ba2"));
        QVERIFY(opened->model.tags[0].latest);
        QCOMPARE(testutil::badges(opened->model.tags[0])["layout"].get<std::string>(),
                 std::string("composer"));
        const auto& values = opened->model.tags[0].clientState;
        QCOMPARE(values["state"]["run_name"].get<std::string>(), std::string("fixture-fsdp2"));
        QCOMPARE(values["state"]["timestamp"]["Timestamp"]["batch"].get<int>(), 2);
        QCOMPARE(values["state"]["optimizers"]["Adam"]["param_groups"]["0"]["lr"].get<double>(), 0.01);
        auto badges = testutil::badges(opened->model.tags[0]);
        QCOMPARE(badges["composer_version"].get<std::string>(), std::string("0.32.1"));
        QCOMPARE(badges["world_size"].get<int>(), 2);
        QCOMPARE(opened->model.tags[0].globalSteps, int64_t(2));
        // A DCP folder given with a trailing slash is still named by its folder.
        QCOMPARE(layout::openCheckpoint(testutil::dataDir() + "/dcp/fsdp2_fp32_w2/")->model.tags.at(0).name,
                 std::string("fsdp2_fp32_w2"));
    }

    void truncatedDataFile()
    {
        QTemporaryDir tmp;
        const std::string dir = copyFixture(tmp, testutil::dataDir() + "/dcp/fsdp2_bf16_w3");
        const std::string victim = dir + "/__1_0.distcp";
        fs::resize_file(victim, fs::file_size(victim) - 100);
        const std::string err = exportError(dir);
        QVERIFY2(err.starts_with(victim + ": "), err.c_str());
        QVERIFY2(err.find("beyond the end") != std::string::npos, err.c_str());
    }

    void missingDataFile()
    {
        QTemporaryDir tmp;
        const std::string dir = copyFixture(tmp, testutil::dataDir() + "/dcp/fsdp2_fp32_w2");
        fs::remove(dir + "/__1_0.distcp");
        const std::string err = exportError(dir);
        QVERIFY2(err.starts_with(dir + "/__1_0.distcp: "), err.c_str());
    }

    void damagedItem()
    {
        // Bytes inside one chunk's little zip (its pickle) overwritten.
        QTemporaryDir tmp;
        const std::string dir = copyFixture(tmp, testutil::dataDir() + "/dcp/dtensor_mixed_w3");
        const std::string victim = dir + "/__0_0.distcp";
        overwrite(victim, 1577 + 60, std::string(8, '\xff')); // the second item's data.pkl
        const std::string err = exportError(dir);
        QVERIFY2(err.starts_with(victim + ": the item of 'model.p.w_cols' at bytes 1577"), err.c_str());
    }

    void damagedMetadata()
    {
        QTemporaryDir tmp;
        const std::string dir = copyFixture(tmp, testutil::dataDir() + "/dcp/torchtitan_fp32_w2");
        const std::string victim = dir + "/.metadata";
        overwrite(victim, fs::file_size(victim) / 2, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c");
        const std::string err = exportError(dir);
        QVERIFY2(err.starts_with(victim + ": "), err.c_str());

        fs::resize_file(victim, fs::file_size(victim) / 3);
        const std::string err2 = exportError(dir);
        QVERIFY2(err2.starts_with(victim + ": "), err2.c_str());
    }

    // A .metadata whose 400 entries share one key path of 3,000 references to one 8 KB string
    // (tests/fuzz/regressions/dcp_metadata: 50 KB that would expand to 10 GB) is refused at
    // once, as is an item whose data file name holds a NUL (it would open another file).
    void amplifiedMetadata()
    {
        QTemporaryDir tmp;
        const std::string dir = copyFixture(tmp, testutil::dataDir() + "/dcp/fsdp2_fp32_w2");
        const std::string victim = dir + "/.metadata";
        std::ifstream in(testutil::dataDir() + "/../fuzz/regressions/dcp_metadata/keypath-shared-memo",
                         std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        QVERIFY(bytes.size() > 1);
        std::ofstream(victim, std::ios::binary | std::ios::trunc) << bytes.substr(1); // after the selector
        const std::string err = exportError(dir);
        QVERIFY2(err.starts_with(victim + ": "), err.c_str());
        QVERIFY2(err.find("over and over") != std::string::npos, err.c_str());

        // The fixture's own metadata, one data file's name given a NUL and a tail of the same length.
        fs::copy_file(testutil::dataDir() + "/dcp/fsdp2_fp32_w2/.metadata", victim,
                      fs::copy_options::overwrite_existing);
        std::ifstream orig(victim, std::ios::binary);
        const std::string md((std::istreambuf_iterator<char>(orig)), {});
        const size_t at = md.find("__0_0.distcp");
        QVERIFY(at != std::string::npos);
        overwrite(victim, at + 5, std::string("\0", 1)); // "__0_0\0distcp"
        const std::string err2 = exportError(dir);
        QVERIFY2(err2.starts_with(victim + ": "), err2.c_str());
        QVERIFY2(err2.find("not a file of this folder") != std::string::npos, err2.c_str());
    }

    void itemOfAnotherDtype()
    {
        // A chunk whose little torch.save claims int16 where .metadata says float32.
        QTemporaryDir tmp;
        const std::string dir = copyFixture(tmp, testutil::dataDir() + "/dcp/fsdp2_fp32_w2");
        const std::string victim = dir + "/__0_0.distcp";
        std::ifstream in(victim, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        const size_t at = bytes.find("FloatStorage");
        QVERIFY(at != std::string::npos);
        overwrite(victim, at, "ShortStorage"); // same length: the zip stays well formed
        const std::string err = exportError(dir);
        QVERIFY2(err.starts_with(victim + ": the item of "), err.c_str());
    }
};

QTEST_MAIN(TestDcp)
#include "tst_dcp.moc"
