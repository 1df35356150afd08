// The family registry: every checkpoint family is reached through layout::familyOf /
// openCheckpoint, operations read any family's tensors from its layout, and each file is parsed
// once per job. Hugging Face folders are checked against what transformers' save_pretrained wrote
// (tests/data/hf, made by tools/fixtures/make_hf_fixtures.py).
#include "testutil.h"

#include "io/error.h"
#include "io/parse_count.h"
#include "layout/deepspeed.h"
#include "layout/family.h"
#include "layout/file_set.h"
#include "ops/analyze.h"
#include "ops/bloat.h"
#include "ops/consolidate.h"
#include "ops/inspect.h"
#include "ops/tensor_source.h"
#include "ops/universal.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <QTemporaryDir>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string hashOf(const ops::SourceTensor& t)
{
    std::vector<uint8_t> bytes(t.tensor.nbytes);
    if (!bytes.empty()) t.tensor.fill(0, bytes.size(), bytes.data());
    return testutil::sha256Hex(bytes.data(), bytes.size());
}

bool anyContains(const std::vector<std::string>& lines, const std::string& what)
{
    for (const auto& l : lines)
        if (l.find(what) != std::string::npos) return true;
    return false;
}

size_t filesIn(const std::string& dir)
{
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        n += e.is_regular_file() && e.path().extension() == ".pt";
    return n;
}

} // namespace

class TestFamilies : public QObject
{
    Q_OBJECT

private slots:
    void hfFolders_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* n : {"safetensors", "safetensors_sharded", "bin", "bin_sharded", "damaged_index"})
            QTest::newRow(n) << QString(n);
    }

    // Each save_pretrained layout is one tag whose tensors span the shards, with the values
    // transformers wrote; the config is shown; tied weights are aliases, not copies.
    void hfFolders()
    {
        QFETCH(QString, name);
        const std::string dir = testutil::dataDir() + "/hf/" + name.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        QCOMPARE(std::string(layout::familyOf(dir).id()), std::string("hf"));
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.tags.size(), size_t(1));
        const layout::Tag& tag = opened->model.tags.front();
        QCOMPARE(tag.config["model_type"].get<std::string>(), std::string("llama"));
        QCOMPARE(testutil::badges(tag)["model_type"].get<std::string>(), std::string("llama"));
        // Every file the family lists is a weights shard: the byte summary and the tree say so.
        QVERIFY(!tag.files.empty());
        for (const auto& f : tag.files)
            QVERIFY2(f.role == layout::FileRole::ModelStates, f.name.c_str());

        std::map<std::string, const layout::Parameter*> params;
        for (const auto& p : tag.params)
            params[p.name] = &p;
        const ops::TensorSet set = ops::tagTensors(opened, tag, {});
        std::map<std::string, const ops::SourceTensor*> tensors;
        for (const auto& t : set.tensors)
            tensors[t.tensor.name] = &t;
        const nlohmann::json none = {{"in_index_not_in_shards", nlohmann::json::array()},
                                     {"in_shards_not_in_index", nlohmann::json::array()}};
        const auto& problems = expect["index_problems"].is_null() ? none : expect["index_problems"];
        std::set<std::string> unindexed;
        for (const auto& x : problems["in_shards_not_in_index"])
            unindexed.insert(x.get<std::string>());
        size_t checked = 0;
        for (const auto& t : expect["tensors"]) {
            const std::string n = t["name"];
            if (unindexed.count(n)) continue; // left out, with a warning (below)
            QVERIFY2(params.count(n), n.c_str());
            const layout::Parameter& p = *params[n];
            QCOMPARE(p.shape, t["shape"].get<std::vector<int64_t>>());
            if (t.contains("shares_storage_with") && !p.tiedTo.empty()) {
                QVERIFY(params.count(p.tiedTo)); // an alias of a tensor that is there
                continue;
            }
            QVERIFY2(tensors.count(n), n.c_str());
            QCOMPARE(hashOf(*tensors[n]), t["sha256"].get<std::string>());
            ++checked;
        }
        QVERIFY(checked >= 20);
        for (const auto& missing : problems["in_index_not_in_shards"])
            QVERIFY2(anyContains(tag.warnings, missing.get<std::string>()),
                     missing.get<std::string>().c_str());
        for (const auto& extra : problems["in_shards_not_in_index"]) {
            QVERIFY2(anyContains(tag.warnings, extra.get<std::string>()), extra.get<std::string>().c_str());
            QVERIFY(!params.count(extra.get<std::string>()));
        }
        if (problems["in_index_not_in_shards"].empty() && problems["in_shards_not_in_index"].empty())
            QVERIFY2(tag.warnings.empty(), tag.warnings.empty() ? "" : tag.warnings.front().c_str());
    }

    // `ckpt export` of a model folder reshards it: same tensors, same values, config alongside.
    void hfFolderExports()
    {
        QTemporaryDir tmp;
        const std::string in = testutil::dataDir() + "/hf/bin_sharded";
        const std::string out = tmp.filePath("out").toStdString();
        const auto r = ops::consolidate(in, out, {}, {}, {});
        QVERIFY(fs::exists(out + "/model.safetensors"));
        QVERIFY(fs::exists(out + "/config.json"));
        const auto expect = testutil::readJson(in + ".expect.json");
        const auto st = safetensors::SafetensorsFile::open(out + "/model.safetensors");
        std::map<std::string, std::string> got;
        for (const auto& t : st->tensors())
            got[t.name] = testutil::sha256Hex(st->bytes(t).data(), st->bytes(t).size());
        for (const auto& t : expect["tensors"]) {
            const std::string n = t["name"];
            if (t.contains("shares_storage_with") && !got.count(n)) continue; // tied: one copy
            QVERIFY2(got.count(n), n.c_str());
            QCOMPARE(got[n], t["sha256"].get<std::string>());
        }
    }

    // An output named *.safetensors is one file with every tensor, whatever the family.
    void exportToOneSafetensorsFile()
    {
        QTemporaryDir tmp;
        const std::string ck = testutil::dataDir() + "/deepspeed/zero3_bf16_w2";
        const std::string out = tmp.filePath("model.safetensors").toStdString();
        ops::ConsolidateOptions o;
        o.maxShardSize = 2000; // would be several shards in a folder
        const auto r = ops::consolidate(ck, out, o, {}, {});
        QCOMPARE(r.files.size(), size_t(1));
        QVERIFY(fs::is_regular_file(out));
        const auto st = safetensors::SafetensorsFile::open(out);
        const ops::TensorSet a = ops::anyTensors(ck, {});
        size_t n = 0;
        for (const auto& t : a.tensors)
            n += t.aliasOf.empty();
        QCOMPARE(st->tensors().size(), n);
    }

    // Each rank file is parsed once per job, whatever the job reads from it (layout, tensors,
    // byte roles): the opened checkpoint is shared, not reopened by path.
    void eachFileIsParsedOncePerJob()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        const size_t rankFiles = filesIn(ck + "/global_step4");
        QCOMPARE(rankFiles, size_t(3));

        uint64_t before = torch::TorchFile::parses();
        QTemporaryDir tmp;
        ops::consolidate(ck, tmp.filePath("out").toStdString(), {}, {}, {});
        QCOMPARE(torch::TorchFile::parses() - before, uint64_t(rankFiles));

        before = torch::TorchFile::parses();
        const ops::TensorSet set = ops::anyTensors(ck, {});
        for (const auto& t : set.tensors)
            if (t.aliasOf.empty()) hashOf(t);
        QCOMPARE(torch::TorchFile::parses() - before, uint64_t(rankFiles));

        // inspect reads every tag's layout and its byte roles: still once per file
        before = torch::TorchFile::parses();
        ops::inspectCheckpoint(ck);
        QCOMPARE(torch::TorchFile::parses() - before, uint64_t(rankFiles + filesIn(ck + "/global_step2")));

        // Universal from a path: its checks before the opening parse into the opening's set.
        // Parses of the checkpoint's own files (the operations' re-reads of what they wrote are
        // verification, not parsing the input again).
        const auto inputParses = [&ck] { return io::ParseCount::under(ck + "/"); };
        before = inputParses();
        ops::UniversalOptions uo;
        uo.injectMissingState = true;
        ops::universal(ck, tmp.filePath("uni").toStdString(), uo, {}, {});
        QCOMPARE(inputParses() - before, uint64_t(rankFiles));

        // A diff of two tags: each side's files once.
        before = inputParses();
        ops::DiffOptions d;
        d.a.tag = "global_step2";
        d.moments = true;
        ops::computeDiff(ck, ck, d, gpu::cpuBackend(), {}, {});
        QCOMPARE(inputParses() - before, uint64_t(rankFiles + filesIn(ck + "/global_step2")));

        before = inputParses();
        ops::computeStats(ck, {}, gpu::cpuBackend(), {}, {});
        QCOMPARE(inputParses() - before, uint64_t(rankFiles));
    }

    // The window opens a checkpoint once; every operation it then runs on it (export, stats,
    // diff of two of its tags, Universal conversion, the byte roles) parses nothing again.
    void operationsOnAnOpenedCheckpointParseNothing()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        const auto opened = layout::openCheckpoint(ck);
        const layout::OpenedTag step4 = layout::tagOf(opened, "global_step4");
        const layout::OpenedTag step2 = layout::tagOf(opened, "global_step2");
        const auto inputParses = [&ck] { return io::ParseCount::under(ck + "/"); };
        const uint64_t before = inputParses();
        QTemporaryDir tmp;
        const auto exported = ops::consolidate(step4, tmp.filePath("out").toStdString(), {}, {}, {});
        QVERIFY(!exported.files.empty());
        const auto stats = ops::computeStats(step4, {}, gpu::cpuBackend(), {}, {});
        QVERIFY(!stats.tensors.empty());
        ops::DiffOptions d;
        d.moments = true;
        const auto diff = ops::computeDiff(step2, step4, d, gpu::cpuBackend(), {}, {});
        QCOMPARE(diff.a.tag, std::string("global_step2"));
        QCOMPARE(diff.b.tag, std::string("global_step4"));
        QVERIFY(std::any_of(diff.tensors.begin(), diff.tensors.end(),
                            [](const ops::TensorDiff& t) { return t.status == ops::DiffStatus::Changed; }));
        ops::UniversalOptions uo;
        uo.injectMissingState = true;
        const auto uni = ops::universal(step4, tmp.filePath("uni").toStdString(), uo, {}, {});
        QCOMPARE(uni.tag, std::string("global_step4"));
        const auto bloat = ops::analyzeFolderBloat(step4->dir, {}, {}, opened->files.get());
        QCOMPARE(bloat.files.size(), filesIn(step4->dir));
        QCOMPARE(inputParses() - before, uint64_t(0));
    }

    // The same tensors through the registry as through the family's own reader, whatever the
    // family: a DeepSpeed tag and the folder exported from it diff as equal.
    void aConsolidatedFolderOpensAsAModelFolder()
    {
        QTemporaryDir tmp;
        const std::string ck = testutil::dataDir() + "/deepspeed/zero3_bf16_w2";
        const std::string out = tmp.filePath("m").toStdString();
        ops::ConsolidateOptions o;
        o.maxShardSize = 2000; // several shards and an index
        ops::consolidate(ck, out, o, {}, {});
        QVERIFY(fs::exists(out + "/model.safetensors.index.json"));
        QCOMPARE(std::string(layout::familyOf(out).id()), std::string("hf"));
        const ops::TensorSet a = ops::anyTensors(ck, {}), b = ops::anyTensors(out, {});
        std::map<std::string, std::string> hb;
        for (const auto& t : b.tensors)
            if (t.aliasOf.empty()) hb[t.tensor.name] = hashOf(t);
        size_t n = 0;
        for (const auto& t : a.tensors) {
            if (!t.aliasOf.empty()) continue;
            QVERIFY2(hb.count(t.tensor.name), t.tensor.name.c_str());
            QCOMPARE(hb[t.tensor.name], hashOf(t));
            ++n;
        }
        QCOMPARE(n, hb.size());
    }

    // Whether a path is one object tree (exported to one file, inspected whole) is the family's
    // trait, not a test of its id in the commands.
    void singleFileIsAFamilyTrait()
    {
        const std::string file = testutil::dataDir() + "/torch/torch-2.x/state_dict.pt";
        const std::string folder = testutil::dataDir() + "/deepspeed/zero2_fp32_w1";
        QVERIFY(layout::familyOf(file).singleFile());
        QVERIFY(!layout::familyOf(folder).singleFile());
        QVERIFY(layout::openCheckpoint(file)->model.singleFile);
        QVERIFY(!layout::openCheckpoint(folder)->model.singleFile);
        for (const layout::Family* f : layout::families())
            QCOMPARE(f->singleFile(), f == &layout::familyOf(file));
    }

    // Opening reports each file as it is parsed, against the bytes of all the tags' files, and
    // stops between two files when asked (it used to parse every file before anyone could stop it).
    void openingReportsProgressAndStops()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero3_bf16_w4";
        std::vector<std::pair<uint64_t, uint64_t>> reports;
        layout::OpenObserver watch;
        watch.progress = [&](uint64_t done, uint64_t total, const std::string&) {
            reports.push_back({done, total});
        };
        const auto opened = layout::openCheckpoint(ck, watch);
        size_t files = 0;
        for (const auto& t : opened->model.tags)
            files += t.files.size();
        QVERIFY(files >= 16);
        QVERIFY(reports.size() >= files - 2); // every rank file's pickle (the tags' extra files may be left)
        for (size_t i = 1; i < reports.size(); ++i)
            QVERIFY(reports[i].first > reports[i - 1].first);
        QVERIFY(reports.back().first <= reports.back().second);
        QVERIFY(reports.back().first * 10 >= reports.back().second * 9);

        int parsed = 0;
        watch.progress = [&](uint64_t, uint64_t, const std::string&) { ++parsed; };
        watch.cancelled = [&] { return parsed >= 3; };
        QVERIFY_THROWS_EXCEPTION(Cancelled, layout::openCheckpoint(ck, watch));
        QCOMPARE(parsed, 3);
    }

    // One tag (what ckpt export / stats / diff open) reports against that tag's bytes alone, and
    // a job shows it as its first phase and stops in it when cancelled.
    void openingOneTagReportsProgressAndStops()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero3_bf16_w4";
        uint64_t last = 0, total = 0;
        int reports = 0;
        layout::OpenObserver watch;
        watch.progress = [&](uint64_t done, uint64_t all, const std::string&) {
            QVERIFY(done > last);
            last = done, total = all, ++reports;
        };
        const auto opened = layout::openCheckpointTag(ck, "", watch);
        const layout::Tag& tag = opened->model.tags.front();
        QVERIFY(reports >= int(tag.files.size()) - 1);
        uint64_t tagBytes = 0;
        for (const auto& e : fs::recursive_directory_iterator(tag.dir))
            if (e.is_regular_file()) tagBytes += e.file_size();
        QCOMPARE(total, tagBytes); // this tag's files, not every tag's
        QVERIFY(last * 10 >= total * 9);

        std::vector<ops::Progress> seen;
        ops::CancelToken cancel;
        const auto sink = [&](const ops::Progress& p) {
            seen.push_back(p);
            if (seen.size() == 2) cancel.cancel();
        };
        QTemporaryDir tmp;
        QVERIFY_THROWS_EXCEPTION(Cancelled,
                                 ops::consolidate(ck, tmp.filePath("out").toStdString(), {}, sink, cancel));
        QVERIFY(seen.size() >= 2);
        QVERIFY2(seen.back().stage.rfind("reading the checkpoint: ", 0) == 0, seen.back().stage.c_str());
        QVERIFY(!fs::exists(tmp.filePath("out").toStdString()));
    }

    // Parsed files are kept within the set's budget: past it the least recently used file is
    // let go (whoever holds it keeps it alive) and parsed again when asked for; adopted files,
    // whose ids need not be paths, stay. The file just asked for is never the one let go.
    void fileSetKeepsParsedFilesWithinItsBudget()
    {
        const std::string dir = testutil::dataDir() + "/deepspeed/zero3_bf16_w2/global_step4/";
        const std::string a = dir + "zero_pp_rank_0_mp_rank_00_model_states.pt",
                          b = dir + "zero_pp_rank_1_mp_rank_00_model_states.pt",
                          c = dir + "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt";
        layout::FileSet files;
        files.setBudget(1);
        uint64_t before = torch::TorchFile::parses();
        const auto heldA = files.get(a);
        QVERIFY(files.find(a));
        QVERIFY(heldA->footprint() > 0);
        files.get(b);
        QVERIFY(!files.find(a));
        QVERIFY(files.find(b));
        QCOMPARE(files.size(), size_t(1));
        QVERIFY(heldA->torch()->value("param_shapes")); // still usable
        files.remember(a, heldA); // put back as the most recently used, without a parse: b goes
        QVERIFY(files.find(a) == heldA);
        QVERIFY(!files.find(b));
        QCOMPARE(torch::TorchFile::parses() - before, uint64_t(2));
        files.get(b);
        files.get(a); // let go by b: parsed again
        QCOMPARE(torch::TorchFile::parses() - before, uint64_t(4));
        files.adopt("archive.tar!member", torch::TorchFile::open(c));
        files.get(b);
        QVERIFY(files.find("archive.tar!member"));
        QVERIFY(!files.find(a));

        // A file let go and changed on disk since is refused, not read against the old layout.
        QTemporaryDir tmp;
        const std::string copy = tmp.filePath("m.pt").toStdString();
        fs::copy_file(b, copy);
        files.get(copy);
        files.get(a); // lets the copy go
        QVERIFY(!files.find(copy));
        fs::copy_file(a, copy, fs::copy_options::overwrite_existing); // another file, same name
        try {
            files.get(copy);
            QFAIL("a changed file was parsed again");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("changed on disk since the checkpoint was opened") !=
                         std::string::npos,
                     e.what());
        }

        // Within the default budget nothing is parsed twice.
        layout::FileSet roomy;
        before = torch::TorchFile::parses();
        for (int i = 0; i < 3; ++i)
            for (const auto& f : {a, b, c})
                roomy.get(f);
        QCOMPARE(torch::TorchFile::parses() - before, uint64_t(3));
        QCOMPARE(roomy.size(), size_t(3));
    }

    // A ZeRO-3 tag opened while the set keeps almost nothing (model files of ranks > 0 are
    // parsed, digested and let go) is the same model: frozen fragments, partitions, sources.
    void deepSpeedTagIsTheSameWithinATinyBudget()
    {
        const std::string dir = testutil::dataDir() + "/deepspeed/zero3_bf16_w2/global_step4";
        layout::FileSet roomy, tiny;
        tiny.setBudget(1);
        const layout::Tag x = layout::openDeepSpeedTag(dir, "global_step4", true, &roomy);
        const layout::Tag y = layout::openDeepSpeedTag(dir, "global_step4", true, &tiny);
        QVERIFY(tiny.size() < roomy.size());
        QCOMPARE(y.params.size(), x.params.size());
        int frozenSlices = 0;
        for (size_t i = 0; i < x.params.size(); ++i) {
            const auto &p = x.params[i], &q = y.params[i];
            QCOMPARE(q.name, p.name);
            QCOMPARE(q.shape, p.shape);
            QVERIFY(q.kind == p.kind && q.dtype == p.dtype);
            QCOMPARE(q.slices.size(), p.slices.size());
            for (size_t s = 0; s < p.slices.size(); ++s) {
                const auto &u = p.slices[s], &v = q.slices[s];
                QVERIFY(u.rank == v.rank && u.paramOffset == v.paramOffset && u.length == v.length);
                QCOMPARE(v.master.size(), u.master.size());
                for (size_t m = 0; m < u.master.size(); ++m)
                    QVERIFY(v.master[m].file == u.master[m].file &&
                            v.master[m].tensorPath == u.master[m].tensorPath &&
                            v.master[m].offset == u.master[m].offset &&
                            v.master[m].count == u.master[m].count);
                if (p.kind == layout::Parameter::Kind::Frozen) ++frozenSlices;
            }
        }
        QCOMPARE(frozenSlices, 4); // frozen.weight and frozen.bias, a fragment on each of 2 ranks
    }

    // Reading a tag's tensors asks the FileSet once per distinct file: past the budget, a get()
    // per source parsed the ZeRO-3 model files again for every frozen fragment (18 parses for
    // this 4-file tag) and kept every copy.
    void tensorsOfATagParseEachFileOnceWhateverTheBudget()
    {
        const auto opened = layout::openCheckpoint(testutil::dataDir() + "/deepspeed/zero3_bf16_w2");
        opened->files->setBudget(1);
        const layout::Tag& tag = *opened->model.latest();
        size_t files = 0;
        for (const auto& f : tag.files)
            files += f.role == layout::FileRole::ModelStates || f.role == layout::FileRole::OptimStates;
        const uint64_t before = torch::TorchFile::parses();
        const ops::TensorSet set = ops::tagTensors(opened, tag, {});
        QVERIFY(torch::TorchFile::parses() - before <= files);
        for (const auto& t : set.tensors)
            if (t.aliasOf.empty()) hashOf(t); // and they read
    }

    // `ckpt inspect --json` writes the document parameter by parameter: the same text as the
    // whole document dumped at once, for every family's folder (several tags, no parameters).
    void streamedListingIsTheWholeDocument_data()
    {
        QTest::addColumn<QString>("folder");
        for (const char* f : {"deepspeed/zero3_bf16_w2", "deepspeed/zero1_bf16_w4", "dcp/composer_bf16_w2",
                              "universal/bf16_optimizer_w3", "hf/bin"})
            QTest::newRow(f) << QString::fromLatin1(f);
    }
    void streamedListingIsTheWholeDocument()
    {
        QFETCH(QString, folder);
        const std::string path = testutil::dataDir() + "/" + folder.toStdString();
        const std::string whole = ops::inspectCheckpoint(path).dump(2);
        std::ostringstream streamed;
        ops::writeCheckpointJson(ops::listCheckpoint(path), streamed);
        QCOMPARE(streamed.str(), whole);
    }

    // The model's latest() and the tag every command reads agree: `latest` names it, else the
    // only tag, else none (it once fell back to the last tag where the commands refused).
    void latestIsTheTagCommandsRead()
    {
        QTemporaryDir tmp;
        const fs::path ck = tmp.filePath("ck").toStdString();
        fs::copy(testutil::dataDir() + "/deepspeed/zero2_fp32_w1", ck, fs::copy_options::recursive);
        auto opened = layout::openCheckpoint(ck.string());
        QVERIFY(opened->model.latest());
        QCOMPARE(opened->model.latest()->name, std::string("global_step4"));
        QCOMPARE(&opened->chooseTag(""), opened->model.latest());
        fs::remove(ck / "latest");
        opened = layout::openCheckpoint(ck.string());
        QVERIFY(!opened->model.latest());
        try {
            opened->chooseTag("");
            QFAIL("no tag chosen, none named by latest, two tags: chooseTag picked one");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("global_step2, global_step4") != std::string::npos, e.what());
        }
        fs::remove_all(ck / "global_step2");
        opened = layout::openCheckpoint(ck.string());
        QVERIFY(opened->model.latest());
        QCOMPARE(&opened->chooseTag(""), opened->model.latest());
    }

    // A checkpoint none of whose tags can be read is an error naming the file, not an empty tree;
    // one bad tag among good ones is a warning.
    void nothingReadableIsAnError()
    {
        QTemporaryDir tmp;
        const fs::path ck = tmp.filePath("ck").toStdString();
        fs::copy(testutil::dataDir() + "/deepspeed/zero2_fp32_w1", ck, fs::copy_options::recursive);
        const fs::path model = ck / "global_step2" / "mp_rank_00_model_states.pt";
        fs::resize_file(model, fs::file_size(model) / 2);
        const auto opened = layout::openCheckpoint(ck.string());
        QVERIFY(anyContains(opened->model.warnings, "global_step2"));
        fs::remove_all(ck / "global_step4");
        try {
            layout::openCheckpoint(ck.string());
            QFAIL("a checkpoint with nothing readable opened");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("mp_rank_00_model_states.pt") != std::string::npos, e.what());
        }
    }

    // A folder named like a model folder but holding no weights, or an index that points out
    // of its folder, is refused with the file named.
    void badModelFolders()
    {
        QTemporaryDir tmp;
        const fs::path dir = tmp.filePath("m").toStdString();
        fs::create_directories(dir);
        fs::copy(testutil::dataDir() + "/hf/safetensors_sharded", dir, fs::copy_options::recursive);
        {
            auto idx = testutil::readJson((dir / "model.safetensors.index.json").string());
            idx["weight_map"]["model.norm.weight"] = "../../etc/passwd";
            std::ofstream(dir / "model.safetensors.index.json") << idx.dump();
        }
        try {
            layout::openCheckpointTag(dir.string(), {});
            QFAIL("an index naming a path outside its folder was followed");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("not a file of this folder") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("model.safetensors.index.json") != std::string::npos,
                     e.what());
        }
        {
            // A NUL would make the system open the file named before it.
            auto idx = testutil::readJson(testutil::dataDir() +
                                          "/hf/safetensors_sharded/model.safetensors.index.json");
            idx["weight_map"]["model.norm.weight"] = std::string("model-00001-of-00004.safetensors\0x", 34);
            std::ofstream(dir / "model.safetensors.index.json") << idx.dump();
        }
        try {
            layout::openCheckpointTag(dir.string(), {});
            QFAIL("an index naming a shard with a NUL was followed");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("not a file of this folder") != std::string::npos, e.what());
        }
        {
            // A name longer than the system takes (fuzz_hf_index: std::filesystem threw past the
            // reader and ended the process).
            auto idx = testutil::readJson(testutil::dataDir() +
                                          "/hf/safetensors_sharded/model.safetensors.index.json");
            idx["weight_map"]["model.norm.weight"] = std::string(300, 'Z') + ".safetensors";
            std::ofstream(dir / "model.safetensors.index.json") << idx.dump();
        }
        try {
            layout::openCheckpointTag(dir.string(), {});
            QFAIL("an index naming a shard too long to look for was opened");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("cannot be looked for") != std::string::npos, e.what());
        }
        fs::remove(dir / "model.safetensors.index.json");
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".safetensors") fs::remove(e.path());
        QVERIFY_THROWS_EXCEPTION(Error, layout::familyOf(dir.string())); // nothing left to recognise
    }
};

QTEST_GUILESS_MAIN(TestFamilies)
#include "tst_families.moc"
