// Composer checkpoints (tests/data/composer, made with mosaicml-composer 0.32.1; composer-tar,
// Composer <= 0.27's DeepSpeed tarballs packed from the DeepSpeed fixtures): each wrapper and run
// folder opens through the registry with the tensors, badges and training order the fixture
// generator recorded, exports like Composer's own HF export, and hostile archives
// (tests/data/composer-hostile, tools/fixtures/make_hostile_archives.py) are refused clearly.
#include "testutil.h"

#include "io/archive.h"
#include "io/error.h"
#include "layout/family.h"
#include "ops/consolidate.h"
#include "ops/tensor_source.h"

#include <QProcess>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>
#include <map>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string composerDir()
{
    return testutil::dataDir() + "/composer";
}

std::string hashOf(const ops::SourceTensor& t)
{
    std::vector<uint8_t> bytes(t.tensor.nbytes);
    if (!bytes.empty()) t.tensor.fill(0, bytes.size(), bytes.data());
    return testutil::sha256Hex(bytes.data(), bytes.size());
}

std::map<std::string, const ops::SourceTensor*> byName(const ops::TensorSet& set)
{
    std::map<std::string, const ops::SourceTensor*> m;
    for (const auto& t : set.tensors)
        m[t.tensor.name] = &t;
    return m;
}

// The tensors of a set against an expectation list [{name, dtype, shape, sha256}], in order.
void compareTensors(const ops::TensorSet& set, const nlohmann::json& expected)
{
    QCOMPARE(set.tensors.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        const auto& e = expected[i];
        const ops::SourceTensor& t = set.tensors[i];
        QCOMPARE(t.tensor.name, e["name"].get<std::string>());
        QCOMPARE(std::string(torch::name(t.tensor.dtype)), e["dtype"].get<std::string>());
        QCOMPARE(t.tensor.shape, e["shape"].get<std::vector<int64_t>>());
        QCOMPARE(hashOf(t), e["sha256"].get<std::string>());
    }
}

// One Composer checkpoint's tag against its expectation object (single-file schema).
void compareCheckpoint(std::shared_ptr<const layout::OpenedCheckpoint> opened, const layout::Tag& tag,
                       const nlohmann::json& e)
{
    QCOMPARE(tag.params.size(), e["model_tensors"].size());
    for (size_t i = 0; i < tag.params.size(); ++i) {
        QCOMPARE(tag.params[i].path, e["model_tensors"][i]["path"].get<std::string>());
        QCOMPARE(std::string(torch::name(tag.params[i].dtype)),
                 e["model_tensors"][i]["dtype"].get<std::string>());
    }
    for (const auto& [k, v] : e["badges"].items())
        if (!v.is_null()) QCOMPARE(testutil::badges(tag).value(k, nlohmann::ordered_json()).dump(), v.dump());
    if (e["composer_version"].is_null()) QVERIFY(!testutil::badges(tag).contains("composer_version"));
    QCOMPARE(testutil::badges(tag)["weights_only"].get<bool>(), e["weights_only"].get<bool>());
    for (const char* k : {"epoch", "batch"})
        if (e["timestamp"].contains(k))
            QCOMPARE(testutil::badges(tag)[k].get<int64_t>(), e["timestamp"][k]["value"].get<int64_t>());
    compareTensors(ops::tagTensors(opened, tag, {}), e["export"]["tensors"]);

    // Everything else is kept by its `/` path: --all reads the optimizer state and the RNG too.
    if (!e["paths"].is_array()) return;
    ops::SourceOptions all;
    all.all = true;
    const auto set = ops::tagTensors(opened, tag, all);
    const auto tensors = byName(set);
    size_t others = 0;
    for (const auto& p : e["paths"]) {
        const std::string path = p["path"];
        if (p["type"] != "tensor" || path.starts_with("state/model/")) continue;
        ++others;
        const auto it = tensors.find(path);
        QVERIFY2(it != tensors.end(), path.c_str());
        QCOMPARE(it->second->tensor.shape, p["shape"].get<std::vector<int64_t>>());
        QCOMPARE(hashOf(*it->second), p["sha256"].get<std::string>());
    }
    QCOMPARE(tag.otherTensors.size(), others);
}

void expectRefused(const std::string& path, const std::vector<std::string>& mentions)
{
    try {
        const auto opened = layout::openCheckpointTag(path, "");
        ops::tagTensors(opened, opened->model.tags.front(), {});
        QFAIL(("opened: " + path).c_str());
    } catch (const Error& e) {
        const std::string what = e.what();
        QVERIFY2(what.find(path) != std::string::npos, what.c_str());
        for (const auto& m : mentions)
            QVERIFY2(what.find(m) != std::string::npos, (what + " (expected '" + m + "')").c_str());
    }
}

} // namespace

class TestComposer : public QObject
{
    Q_OBJECT

private slots:
    void singleFiles_data()
    {
        QTest::addColumn<QString>("name");
        for (const auto& e : fs::directory_iterator(composerDir())) {
            const std::string n = e.path().filename().string();
            if (n.starts_with("classifier.pt") && n.ends_with(".expect.json") &&
                n != "classifier.pt.lzo.expect.json")
                QTest::newRow(n.c_str()) << QString::fromStdString(n.substr(0, n.size() - 12));
        }
    }

    // Every wrapper Composer writes (tar, tar.gz/tgz/bz2/xz-as-lzma, raw gz/bz2/xz/lzma/lz4/zst)
    // opens as the same checkpoint: model tensors by their state-dict key, badges, timestamp.
    void singleFiles()
    {
        QFETCH(QString, name);
        const std::string path = composerDir() + "/" + name.toStdString();
        auto e = testutil::readJson(path + ".expect.json");
        if (!e["paths"].is_array())
            e["paths"] = testutil::readJson(composerDir() + "/classifier.pt.expect.json")["paths"];
        QCOMPARE(std::string(layout::familyOf(path).id()), std::string("composer"));
        const auto opened = layout::openCheckpoint(path);
        QCOMPARE(opened->model.tags.size(), size_t(1));
        const layout::Tag& tag = opened->model.tags.front();
        QVERIFY(tag.latest);
        compareCheckpoint(opened, tag, e);
    }

    // Members of an uncompressed tar are slices of the file: at the offsets tar put them.
    void tarMembersInPlace()
    {
        const std::string path = composerDir() + "/classifier.pt.tar";
        const auto e = testutil::readJson(path + ".expect.json");
        const io::Unwrapped u = io::unwrap(path);
        QVERIFY(u.tar && u.inPlace);
        const auto& members = e["wrapper"]["tar"]["members"];
        QCOMPARE(u.members.size(), size_t(1)); // the root entry "/" is not a member
        QCOMPARE(u.members[0].name, members[1]["name"].get<std::string>());
        QCOMPARE(u.members[0].offset, members[1]["offset_data"].get<uint64_t>());
        QCOMPARE(u.members[0].data->path(), path + "!composer_states.pt");
    }

    // Pickles whose memo references stand for far more than their bytes
    // (tests/fuzz/regressions/composer_archive, made by tests/fuzz/unfixed/craft_inputs.py):
    // an embedded config.json of 2^60 values and a vocabulary of 3,000 references to one 20 KB
    // line are left out with a warning instead of being written out; a timedelta of 2^62 days is
    // shown as pickled instead of overflowing into hours.
    void sharedValuesAreBounded_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("warning");
        QTest::newRow("config.json") << "embedded-config-shared-memo"
                                     << "embedded config.json refers to the same values over and over";
        QTest::newRow("vocabulary") << "tokenizer-lines-shared-memo"
                                    << "embedded tokenizer file 'vocab.txt' refers to the same values";
        QTest::newRow("timedelta") << "timedelta-days-overflow"
                                   << "";
    }

    void sharedValuesAreBounded()
    {
        QFETCH(QString, input);
        QFETCH(QString, warning);
        std::ifstream in(testutil::dataDir() + "/../fuzz/regressions/composer_archive/" + input.toStdString(),
                         std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        QVERIFY(bytes.size() > 1);
        QTemporaryDir tmp;
        const std::string path = tmp.filePath("ep0-ba1-rank0.pt").toStdString();
        std::ofstream(path, std::ios::binary) << bytes.substr(1); // after the fuzzer's selector byte
        const auto opened = layout::openCheckpointTag(path, "");
        QCOMPARE(opened->model.family, std::string("composer"));
        const layout::Tag& tag = opened->model.tags.front();
        if (!warning.isEmpty())
            QVERIFY(std::any_of(tag.warnings.begin(), tag.warnings.end(), [&](const std::string& w) {
                return w.find(warning.toStdString()) != std::string::npos;
            }));
        QVERIFY(std::none_of(tag.exportFiles.begin(), tag.exportFiles.end(),
                             [](const auto& f) { return f.second.size() > (1u << 20); }));
        if (input == "timedelta-days-overflow")
            QVERIFY2(testutil::badges(tag)["total_wct"].get<std::string>().find("timedelta") !=
                         std::string::npos,
                     testutil::badges(tag)["total_wct"].dump().c_str());
    }

    // lzop is read by libarchive only through the external program, which ckpt never runs.
    void lzopIsRefusedClearly() { expectRefused(composerDir() + "/classifier.pt.lzo", {"lzop"}); }

    void runFolders_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* n : {"run", "run_targz", "run_weights_only", "hf_run"})
            QTest::newRow(n) << QString(n);
    }

    // A run folder: one tag per save in training order, latest from latest-rank0.pt.
    void runFolders()
    {
        QFETCH(QString, name);
        const std::string dir = composerDir() + "/" + name.toStdString();
        const auto e = testutil::readJson(dir + ".expect.json");
        QCOMPARE(std::string(layout::familyOf(dir).id()), std::string("composer"));
        const auto opened = layout::openCheckpoint(dir);
        const auto& order = e["checkpoints_in_training_order"];
        QCOMPARE(opened->model.tags.size(), order.size());
        for (size_t i = 0; i < order.size(); ++i) {
            const layout::Tag& tag = opened->model.tags[i];
            QCOMPARE(tag.name, order[i].get<std::string>());
            QCOMPARE(tag.latest, tag.name == e["latest"].get<std::string>());
            QVERIFY2(tag.warnings.empty(), tag.warnings.empty() ? "" : tag.warnings.front().c_str());
            compareCheckpoint(opened, tag, e["checkpoints"][i]);
        }
        QCOMPARE(opened->chooseTag("").name, e["latest"].get<std::string>());
    }

    // Issue 21 #8: files beside the saves whose names start like one (an expectation, a checksum)
    // are no tags: only what sniffs as a checkpoint is; the others are listed as other files.
    void siblingsNamedLikeCheckpointsAreNoTags()
    {
        QTemporaryDir tmp;
        const QString run = tmp.path() + "/run";
        QVERIFY(QDir().mkpath(run));
        for (const char* f : {"ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt", "ep0-ba3-rank0.pt"})
            QVERIFY(QFile::copy(QString::fromStdString(composerDir() + "/run/") + f, run + "/" + f));
        for (const char* f : {"ep0-ba1-rank0.pt.expect.json", "ep0-ba4-rank0.pt.sha256"}) {
            QFile side(run + "/" + f);
            QVERIFY(side.open(QIODevice::WriteOnly));
            side.write("{\"not\": \"a checkpoint\"}\n");
        }
        const auto opened = layout::openCheckpoint(run.toStdString());
        std::vector<std::string> tags;
        for (const auto& t : opened->model.tags)
            tags.push_back(t.name);
        QCOMPARE(tags,
                 (std::vector<std::string>{"ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt", "ep0-ba3-rank0.pt"}));
        QCOMPARE(opened->model.otherFiles,
                 (std::vector<std::string>{"ep0-ba1-rank0.pt.expect.json", "ep0-ba4-rank0.pt.sha256"}));
        QVERIFY(opened->model.warnings.empty());
        QProcess p;
        p.start(CKPT_BINARY, {"inspect", run});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        const QByteArray out = p.readAllStandardOutput();
        QVERIFY2(out.contains("(composer, 3 tags)"), out.constData());
        QVERIFY2(out.contains("other files (named like checkpoints, but not):  ep0-ba1-rank0.pt.expect.json  "
                              "ep0-ba4-rank0.pt.sha256"),
                 out.constData());
    }

    // `ckpt export hf_run OUT` gives what Composer's write_huggingface_pretrained_from_composer_
    // checkpoint gave: the same tensors under the same names, config.json byte for byte, and the
    // tokenizer files.
    void hfExportMatchesComposers()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.path().toStdString() + "/export";
        const auto ref = testutil::readJson(composerDir() + "/hf_export.expect.json");
        ops::ConsolidateOptions opt;
        ops::consolidate(composerDir() + "/hf_run", out, opt, {}, {});
        for (const auto& [file, facts] : ref["files"].items()) {
            if (file == "pytorch_model.bin") continue;
            QVERIFY2(fs::exists(out + "/" + file), file.c_str());
        }
        std::ifstream in(out + "/config.json", std::ios::binary);
        const std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QCOMPARE(testutil::sha256Hex(reinterpret_cast<const uint8_t*>(config.data()), config.size()),
                 ref["files"]["config.json"]["sha256"].get<std::string>());
        for (const char* f : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
            QVERIFY(testutil::readJson(out + "/" + f).is_object());
        // tokenizer_config.json byte for byte: its model_max_length is int(1e30), which a float
        // conversion wrote as 1e+30 (issue 36, item 6), and the tokenizer then got a float.
        std::ifstream tin(out + "/tokenizer_config.json", std::ios::binary);
        const std::string tok((std::istreambuf_iterator<char>(tin)), std::istreambuf_iterator<char>());
        QVERIFY2(tok.find("\"model_max_length\": 1000000000000000019884624838656,\n") != std::string::npos,
                 tok.c_str());
        QCOMPARE(testutil::sha256Hex(reinterpret_cast<const uint8_t*>(tok.data()), tok.size()),
                 ref["files"]["tokenizer_config.json"]["sha256"].get<std::string>());

        const auto written = ops::anyTensors(out, {});
        auto expected = ref["tensors"];
        for (auto& t : expected)
            t.erase("file"), t.erase("shares_storage_with");
        std::map<std::string, nlohmann::json> want;
        for (const auto& t : expected)
            want[t["name"]] = t;
        QCOMPARE(written.tensors.size(), want.size());
        for (const auto& t : written.tensors) {
            QVERIFY2(want.count(t.tensor.name), t.tensor.name.c_str());
            const auto& w = want[t.tensor.name];
            QCOMPARE(std::string(torch::name(t.tensor.dtype)), w["dtype"].get<std::string>());
            QCOMPARE(t.tensor.shape, w["shape"].get<std::vector<int64_t>>());
            if (t.aliasOf.empty()) QCOMPARE(hashOf(t), w["sha256"].get<std::string>());
        }
    }

    // `ckpt export` of one Composer file (not the run folder) is an HF-style folder too, and a
    // hostile archive makes it exit 1 naming the archive and the member.
    void cliExport()
    {
        QTemporaryDir tmp;
        const QString out = tmp.path() + "/hf";
        QProcess p;
        p.start(CKPT_BINARY,
                {"export", QString::fromStdString(composerDir() + "/hf_run/ep0-ba2-rank0.pt"), out});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        for (const char* f : {"model.safetensors", "config.json", "tokenizer.json"})
            QVERIFY2(QFile::exists(out + "/" + f), f);
        const std::string evil = testutil::dataDir() + "/composer-hostile/dotdot.tar";
        p.start(CKPT_BINARY, {"export", QString::fromStdString(evil), tmp.path() + "/evil"});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 1);
        const std::string err = p.readAllStandardError().toStdString();
        QVERIFY2(err.find(evil) != std::string::npos && err.find("../evil") != std::string::npos,
                 err.c_str());
        QVERIFY(!QFile::exists(tmp.path() + "/evil"));
    }

    // --ignore takes Composer's ignore_keys globs over `/` paths.
    void ignoreGlobs()
    {
        ops::SourceOptions o;
        o.ignore = {"state/model/module.2*"};
        const auto set = ops::anyTensors(composerDir() + "/classifier.pt.tar.gz", o);
        QCOMPARE(set.tensors.size(), size_t(2));
        QCOMPARE(set.tensors[0].tensor.name, std::string("module.0.weight"));
    }

    // A torch.save that is not Composer's stays a single file.
    void otherTorchFilesAreNotComposer()
    {
        const std::string pt =
            testutil::dataDir() + "/deepspeed/zero2_fp32_w2/global_step4/mp_rank_00_model_states.pt";
        QCOMPARE(std::string(layout::familyOf(pt).id()), std::string("file"));
    }

    void deepspeedTarballs_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* n : {"zero2_fp32_w2", "zero3_bf16_w2"})
            QTest::newRow(n) << QString(n);
    }

    // Composer <= 0.27's per-rank tarballs open as one DeepSpeed tag and export exactly as the
    // unpacked DeepSpeed folder does (zero_to_fp32's tensors).
    void deepspeedTarballs()
    {
        QFETCH(QString, name);
        const std::string dir = testutil::dataDir() + "/composer-tar/" + name.toStdString();
        const auto e = testutil::readJson(dir + ".expect.json");
        QCOMPARE(std::string(layout::familyOf(dir).id()), std::string("composer"));
        const auto opened = layout::openCheckpointTag(dir, "");
        const layout::Tag& tag = opened->model.tags.front();
        QCOMPARE(tag.name, e["rank_files"][0].get<std::string>());
        QCOMPARE(testutil::badges(tag)["deepspeed_tag"].get<std::string>(), e["tag"].get<std::string>());
        QVERIFY(tag.deepspeed->zeroStage >= 1);
        QVERIFY(!tag.convertsToUniversal); // archive members: the conversion reads rank files on disk
        QCOMPARE(testutil::badges(tag)["batch"].get<int64_t>(), int64_t(4));
        auto expected = e["deepspeed"]["tags"]["deepspeed"]["bin"]["tensors"];
        const auto set = ops::tagTensors(opened, tag, {});
        const auto tensors = byName(set);
        QCOMPARE(set.tensors.size(), expected.size());
        for (const auto& t : expected) {
            const auto it = tensors.find(t["name"]);
            QVERIFY2(it != tensors.end(), t["name"].get<std::string>().c_str());
            QCOMPARE(std::string(torch::name(it->second->tensor.dtype)), t["dtype"].get<std::string>());
            QCOMPARE(it->second->tensor.shape, t["shape"].get<std::vector<int64_t>>());
            if (it->second->aliasOf.empty()) QCOMPARE(hashOf(*it->second), t["sha256"].get<std::string>());
        }
        // One rank's tarball alone names its siblings.
        const auto one = layout::openCheckpointTag(dir + "/" + e["rank_files"][0].get<std::string>(), "");
        QCOMPARE(one->model.tags.front().params.size(), tag.params.size());
    }

    void hostile_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("dotdot") << "dotdot.tar"
                                << "../evil";
        QTest::newRow("absolute") << "absolute.tar"
                                  << "/etc/x|absolute";
        QTest::newRow("symlink") << "symlink.tar"
                                 << "composer_states.pt|symbolic link";
        QTest::newRow("hardlink") << "hardlink.tar"
                                  << "composer_states.pt|hard link";
        QTest::newRow("device") << "device.tar"
                                << "composer_states.pt|device";
        QTest::newRow("declared bomb") << "bomb_declared.tar.gz"
                                       << "composer_states.pt|MiB";
        QTest::newRow("tar bomb") << "bomb.tar.bz2"
                                  << "composer_states.pt|bomb";
        QTest::newRow("stream bomb") << "bomb.pt.bz2"
                                     << "bomb";
        QTest::newRow("truncated tar") << "truncated.pt.tar"
                                       << "composer_states.pt|truncated";
        QTest::newRow("truncated tar.gz") << "truncated.pt.tar.gz"
                                          << "";
    }

    // One clear Error naming the archive and the member; nothing extracted, nothing inflated
    // beyond the limit.
    void hostile()
    {
        QFETCH(QString, file);
        QFETCH(QString, mentions);
        const std::string path = testutil::dataDir() + "/composer-hostile/" + file.toStdString();
        QCOMPARE(std::string(layout::familyOf(path).id()), std::string("composer"));
        std::vector<std::string> m;
        for (const auto& s : mentions.split('|', Qt::SkipEmptyParts))
            m.push_back(s.toStdString());
        expectRefused(path, m);
    }
};

QTEST_GUILESS_MAIN(TestComposer)
#include "tst_composer.moc"
