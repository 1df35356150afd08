// Hugging Face Trainer run folders (issue 27), on runs the real Trainer wrote (tests/data/trainer,
// made by tools/fixtures/make_trainer_fixtures.py): a run opens as one checkpoint whose tags are
// its checkpoints in step order, trainer_state.json is read, and an export is a folder that
// from_pretrained loads: the reference state dict's tensors bit for bit (zero_to_fp32's for
// DeepSpeed, the checkpoint's own model.safetensors otherwise), config.json naming the dtype
// written, the generation config and tokenizer files copied as they are.
#include "testutil.h"

#include "io/error.h"
#include "layout/family.h"
#include "layout/trainer_state.h"
#include "ops/analyze.h"
#include "ops/bloat.h"
#include "ops/consolidate.h"
#include "ops/export_files.h"
#include "ops/inspect.h"
#include "safetensors/safetensors_file.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <filesystem>
#include <map>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

const char* const kRuns[] = {
    "gpt2_zero2_fp32_w2", "gpt2_zero1_bf16_w2",      "llama_zero3_bf16_w3", "llama_zero3_bf16_w2_gather16",
    "gpt2_plain_w1",      "gpt2_save_only_model_w2", "llama_plain_w2"};

std::string runDir(const std::string& run)
{
    return testutil::dataDir() + "/trainer/" + run;
}

std::string expectedDir(const std::string& run)
{
    return testutil::dataDir() + "/trainer/expected/" + run;
}

// The checkpoints the fixture generator recorded for a run ("checkpoint-2", ..., "final").
std::vector<std::string> expectedTags(const std::string& run)
{
    std::vector<std::string> tags{"checkpoint-2", "checkpoint-4"};
    if (fs::exists(expectedDir(run) + "/final.json")) tags.push_back("final");
    return tags;
}

std::string fileText(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

struct Run
{
    int code;
    QByteArray out, err;
};

Run ckptRun(const QStringList& args)
{
    QProcess p;
    p.start(CKPT_BINARY, args);
    p.waitForFinished(120000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

// The tensors of a safetensors file by name: dtype, shape and bytes.
struct Tensor
{
    torch::DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
};
std::map<std::string, Tensor> tensorsOf(const std::string& path, std::map<std::string, std::string>* metadata)
{
    const auto f = safetensors::SafetensorsFile::open(path);
    std::map<std::string, Tensor> out;
    for (const auto& t : f->tensors()) {
        const auto b = f->bytes(t);
        out[t.name] = {t.dtype, t.shape, std::string(reinterpret_cast<const char*>(b.data()), b.size())};
    }
    if (metadata) *metadata = f->metadata();
    return out;
}

// Where the export of `tag` reads its files from: the checkpoint folder, or the run for "final".
std::string tagFolder(const std::string& run, const std::string& tag)
{
    return tag == "final" ? runDir(run) : runDir(run) + "/" + tag;
}

// An exported model.safetensors holds every tensor of the reference bit for bit, except that a
// tied weight (GPT-2's lm_head.weight, which zero_to_fp32 gives as a clone) is recorded once, as
// transformers' save_pretrained does: an alias in the metadata, not a second copy.
void compareWithReference(const std::string& exported, const std::string& reference,
                          const nlohmann::json& expect)
{
    std::map<std::string, std::string> metadata;
    const auto got = tensorsOf(exported, &metadata);
    const auto want = tensorsOf(reference, nullptr);
    const nlohmann::json aliases = expect.value("aliases", nlohmann::json::object());
    for (const auto& [name, t] : want) {
        const auto it = got.find(name);
        if (it == got.end()) {
            QVERIFY2(aliases.contains(name), ("missing from the export: " + name).c_str());
            const std::string target = aliases[name].get<std::string>();
            QCOMPARE(metadata[name], target);
            QVERIFY2(want.at(target).bytes == t.bytes, ("alias differs from its target: " + name).c_str());
            continue;
        }
        QVERIFY2(it->second.dtype == t.dtype, ("dtype of " + name).c_str());
        QVERIFY2(it->second.shape == t.shape, ("shape of " + name).c_str());
        QVERIFY2(it->second.bytes == t.bytes, ("bytes of " + name).c_str());
    }
    for (const auto& [name, t] : got)
        QVERIFY2(want.count(name), ("not in the reference: " + name).c_str());
}

// Files copied into the export as the run saved them (config.json is rewritten: checked apart).
void compareCopies(const std::string& out, const std::string& folder, const std::string& run)
{
    size_t copied = 0;
    for (const char* name : {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
                             "special_tokens_map.json", "vocab.json", "merges.txt", "chat_template.jinja"}) {
        std::string from = folder + "/" + name;
        if (!fs::exists(from)) from = runDir(run) + "/" + name;
        if (!fs::exists(from)) {
            QVERIFY2(!fs::exists(out + "/" + name), name);
            continue;
        }
        QVERIFY2(fs::exists(out + "/" + name), (std::string(name) + " not copied").c_str());
        QVERIFY2(fileText(out + "/" + name) == fileText(from), (std::string(name) + " differs").c_str());
        ++copied;
    }
    QVERIFY(copied >= 1); // every run saved a generation config
}

ops::ConsolidateResult exportTag(const std::string& path, const std::string& tag, const std::string& out,
                                 std::optional<torch::DType> dtype = std::nullopt)
{
    ops::ConsolidateOptions o;
    o.tag = tag;
    o.dtype = dtype;
    const ops::CancelToken never;
    return ops::consolidate(path, out, o, {}, never);
}

} // namespace

class TestTrainer : public QObject
{
    Q_OBJECT

private slots:
    void runFolderTags_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : kRuns)
            QTest::newRow(r) << QString(r);
    }
    // A run folder is one checkpoint, its checkpoints the tags in step order, the newest marked.
    void runFolderTags()
    {
        QFETCH(QString, run);
        const std::string r = run.toStdString();
        const auto opened = layout::openCheckpoint(runDir(r));
        QCOMPARE(opened->model.family, std::string("trainer"));
        std::vector<std::string> names;
        for (const auto& t : opened->model.tags) {
            names.push_back(t.name);
            QVERIFY2(t.unreadable.empty(), t.unreadable.c_str());
            QVERIFY(!t.params.empty());
            QCOMPARE(t.latest, &t == &opened->model.tags.back());
        }
        QCOMPARE(names, expectedTags(r));
        QCOMPARE(opened->chooseTag("").name, expectedTags(r).back());
    }

    void checkpointFolderIsOneTag_data() { runFolderTags_data(); }
    // A checkpoint-N folder opened on its own: that one tag, not its DeepSpeed tag folder.
    void checkpointFolderIsOneTag()
    {
        QFETCH(QString, run);
        const auto opened = layout::openCheckpoint(runDir(run.toStdString()) + "/checkpoint-2/");
        QCOMPARE(opened->model.family, std::string("trainer"));
        QCOMPARE(opened->model.tags.size(), size_t(1));
        QCOMPARE(opened->model.tags[0].name, std::string("checkpoint-2"));
        QCOMPARE(opened->chooseTag("").name, std::string("checkpoint-2"));
    }

    // Opened as "." from inside it (ckpt inspect .), the tag was called "." and the run above it
    // was looked for at "".
    void checkpointFolderOpenedAsDot()
    {
        const QString before = QDir::currentPath();
        QVERIFY(QDir::setCurrent(QString::fromStdString(runDir("gpt2_zero2_fp32_w2") + "/checkpoint-2")));
        const auto opened = layout::openCheckpoint(".");
        QDir::setCurrent(before);
        QCOMPARE(opened->model.tags.size(), size_t(1));
        QCOMPARE(opened->model.tags[0].name, std::string("checkpoint-2"));
        // config.json's architecture and sizes as badges, under GPT-2's names as the config has them
        const auto config = testutil::readJson(runDir("gpt2_zero2_fp32_w2") + "/checkpoint-2/config.json");
        const auto tag = opened->chooseTag("");
        QCOMPARE(testutil::badges(tag)["hidden_size"].get<int>(), config["n_embd"].get<int>());
        QCOMPARE(testutil::badges(tag)["layers"].get<int>(), config["n_layer"].get<int>());
        QCOMPARE(testutil::badges(tag)["vocab_size"].get<int>(), config["vocab_size"].get<int>());
        QVERIFY(testutil::badges(tag).contains("config_dtype"));
    }

    // The byte summary of a plain Trainer checkpoint: model.safetensors is the model's weights, the
    // RNG state and the Trainer's other pickles are not (rng_state.pth's "cpu" tensor counted as
    // weights, and the 88 KB of weights as "other"). The family says which file is which (file
    // roles); bloat goes by them, not by names.
    void bytesByRoleOfAPlainCheckpoint()
    {
        const std::string dir = runDir("gpt2_plain_w1") + "/checkpoint-2";
        const auto st = safetensors::SafetensorsFile::open(dir + "/model.safetensors");
        uint64_t weights = 0;
        for (const auto& t : st->tensors())
            weights += t.end - t.begin;
        const auto opened = layout::openCheckpoint(dir);
        std::map<std::string, layout::FileRole> roles;
        for (const auto& f : opened->model.tags.at(0).files)
            roles[f.name] = f.role;
        QVERIFY(roles.at("rng_state.pth") == layout::FileRole::Rng);
        QVERIFY(roles.at("scheduler.pt") == layout::FileRole::Scheduler);
        QVERIFY(roles.at("training_args.bin") == layout::FileRole::RunConfig);
        QVERIFY(roles.at("optimizer.pt") == layout::FileRole::OptimStates);
        const ops::FolderBloat b = ops::analyzeFolderBloat(dir, {}, {}, opened->files.get(), &opened->model);
        QCOMPARE(b.roleBytes[size_t(ops::ByteRole::ModelWeights)], weights);
        QVERIFY(b.roleBytes[size_t(ops::ByteRole::ExpAvg)] > 0);
        for (const auto& f : b.files)
            if (f.path.rfind("rng_state", 0) == 0 || f.path == "scheduler.pt" ||
                f.path == "training_args.bin")
                QCOMPARE(f.roleBytes[size_t(ops::ByteRole::ModelWeights)], uint64_t(0));
    }

    void trainingLog_data() { runFolderTags_data(); }
    // trainer_state.json's summary as the generator recorded it from the same file.
    void trainingLog()
    {
        QFETCH(QString, run);
        const std::string r = run.toStdString();
        const auto opened = layout::openCheckpoint(runDir(r));
        for (const auto& t : opened->model.tags) {
            const auto expect = testutil::readJson(expectedDir(r) + "/" + t.name + ".json");
            if (t.name == "final") { // save_model writes no trainer_state.json
                QVERIFY(!t.trainingLog);
                continue;
            }
            QVERIFY2(t.trainingLog, t.name.c_str());
            const auto& s = *t.trainingLog;
            const auto& e = expect["trainer_state"];
            QCOMPARE(s.globalStep, e["global_step"].get<int64_t>());
            QCOMPARE(*s.epoch, e["epoch"].get<double>());
            QCOMPARE(int64_t(s.logHistory.size()), e["log_history_len"].get<int64_t>());
            QCOMPARE(*s.maxSteps, e["max_steps"].get<int64_t>());
            if (e["best_model_checkpoint"].is_null()) {
                QVERIFY(s.bestModelCheckpoint.empty());
                QVERIFY(!s.bestMetric);
            } else {
                QCOMPARE(s.bestCheckpointName(),
                         fs::path(e["best_model_checkpoint"].get<std::string>()).filename().string());
                QCOMPARE(*s.bestMetric, e["best_metric"].get<double>());
                QCOMPARE(*s.bestGlobalStep, e["best_global_step"].get<int64_t>());
            }
            // Step-ordered training logs with what the window charts.
            int64_t lastStep = 0;
            size_t trainLogs = 0;
            for (const auto& entry : s.logHistory) {
                QVERIFY(entry.step >= lastStep);
                lastStep = entry.step;
                if (entry.loss) {
                    ++trainLogs;
                    QVERIFY(entry.learningRate);
                    QVERIFY(entry.gradNorm);
                }
            }
            QCOMPARE(int64_t(trainLogs), s.globalStep); // logging_steps=1
        }
    }

    // The eval run's file, checked against its known values (not only against the generator).
    void trainerStateValues()
    {
        const auto s =
            layout::readTrainerState(runDir("gpt2_zero2_fp32_w2") + "/checkpoint-4/trainer_state.json");
        QCOMPARE(s.globalStep, int64_t(4));
        QCOMPARE(*s.epoch, 0.5);
        QCOMPARE(s.bestCheckpointName(), std::string("checkpoint-4"));
        QCOMPARE(*s.bestMetric, 4.044996738433838);
        QCOMPARE(s.logHistory.size(), size_t(6));
        QCOMPARE(s.logHistory[1].step, int64_t(2));
        QCOMPARE(*s.logHistory[1].loss, 4.056297302246094);
        QCOMPARE(*s.logHistory[1].learningRate, 0.005);
        QCOMPARE(*s.logHistory[1].gradNorm, 1.749818205833435);
        QVERIFY(!s.logHistory[1].evalLoss);
        QCOMPARE(*s.logHistory[2].evalLoss, 4.052691459655762);
        QVERIFY(!s.logHistory[2].loss);
        bool runtime = false;
        for (const auto& [k, v] : s.logHistory[2].other)
            runtime |= k == "eval_runtime" && v == 0.0157;
        QVERIFY(runtime);
    }

    void trainerStateStrict_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("error"); // part of the message; empty: parses
        QTest::newRow("not json") << "{\"global_step\": 4,"
                                  << "not valid JSON";
        QTest::newRow("list") << "[1, 2]"
                              << "not a JSON object";
        QTest::newRow("no step") << "{\"epoch\": 1}"
                                 << "has no global_step";
        QTest::newRow("step text") << "{\"global_step\": \"4\"}"
                                   << "global_step is not an integer";
        QTest::newRow("log not list") << "{\"global_step\": 4, \"log_history\": {}}"
                                      << "log_history is not a list";
        QTest::newRow("entry not object") << "{\"global_step\": 4, \"log_history\": [3]}"
                                          << "log_history[0] is not an object";
        QTest::newRow("loss text") << "{\"global_step\": 4, \"log_history\": [{\"step\": 1}, {\"step\": 2, "
                                      "\"loss\": \"low\"}]}"
                                   << "log_history[1].loss is not a number";
        QTest::newRow("best path not text") << "{\"global_step\": 4, \"best_model_checkpoint\": 3}"
                                            << "best_model_checkpoint is not a string";
        QTest::newRow("deep") << "{\"global_step\": 4, \"x\": " + QString(100, '[') + QString(100, ']') + "}"
                              << "nested deeper";
        // Python's json writes a diverged loss bare; a string that looks like it is no number.
        QTest::newRow("NaN") << "{\"global_step\": 4, \"log_history\": [{\"step\": 1, \"loss\": NaN, "
                                "\"grad_norm\": Infinity, \"note\": \"NaN here\"}]}"
                             << "";
    }
    // Bad files are one clear error naming the file; the Trainer's own quirks parse.
    void trainerStateStrict()
    {
        QFETCH(QString, text);
        QFETCH(QString, error);
        try {
            const auto s = layout::parseTrainerState(text.toStdString(), "/runs/x/trainer_state.json");
            QVERIFY2(error.isEmpty(), "parsed");
            QVERIFY(std::isnan(*s.logHistory[0].loss));
            QVERIFY(std::isinf(*s.logHistory[0].gradNorm));
            QVERIFY(s.logHistory[0].other.empty());
        } catch (const Error& e) {
            QVERIFY2(!error.isEmpty(), e.what());
            QVERIFY2(std::string(e.what()).find(error.toStdString()) != std::string::npos, e.what());
            QCOMPARE(e.file(), std::string("/runs/x/trainer_state.json"));
        }
    }

    void exportLoadable_data()
    {
        QTest::addColumn<QString>("run");
        QTest::addColumn<QString>("tag");
        for (const char* r : kRuns)
            for (const auto& t : expectedTags(r))
                QTest::newRow((std::string(r) + "/" + t).c_str()) << QString(r) << QString::fromStdString(t);
    }
    // The export of each checkpoint, from its own folder (the run for "final") and from the run with
    // the tag named: the reference tensors, config.json saying float32, the files copied.
    void exportLoadable()
    {
        QFETCH(QString, run);
        QFETCH(QString, tag);
        const std::string r = run.toStdString(), t = tag.toStdString();
        const auto expect = testutil::readJson(expectedDir(r) + "/" + t + ".json");
        QTemporaryDir tmp;
        for (const bool fromRun : {false, true}) {
            const std::string out = tmp.path().toStdString() + (fromRun ? "/from_run" : "/from_folder");
            if (fromRun)
                exportTag(runDir(r), t, out);
            else
                exportTag(tagFolder(r, t), "", out);
            compareWithReference(out + "/model.safetensors",
                                 expectedDir(r) + "/" + t + ".state_dict.safetensors", expect);
            if (QTest::currentTestFailed()) return;
            const auto config = testutil::readJson(out + "/config.json");
            QCOMPARE(config["dtype"].get<std::string>(), std::string("float32"));
            // Everything else as the run saved it.
            auto saved = testutil::readJson(tagFolder(r, t) + "/config.json");
            saved.erase("dtype");
            auto written = config;
            written.erase("dtype");
            QVERIFY2(written == saved, written.dump().c_str());
            compareCopies(out, tagFolder(r, t), r);
        }
    }

    // --dtype bf16: the weights in bf16 and config.json saying so.
    void exportDtype()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.path().toStdString() + "/bf16";
        exportTag(runDir("gpt2_zero2_fp32_w2") + "/checkpoint-4", "", out, torch::DType::BFloat16);
        QCOMPARE(testutil::readJson(out + "/config.json")["dtype"].get<std::string>(),
                 std::string("bfloat16"));
        for (const auto& [name, t] : tensorsOf(out + "/model.safetensors", nullptr))
            QVERIFY2(t.dtype == torch::DType::BFloat16, name.c_str());
        // The tokenizer travels with it too.
        QVERIFY(fs::exists(out + "/tokenizer.json"));
    }

    void configDtype_data()
    {
        QTest::addColumn<QString>("in");
        QTest::addColumn<QString>("out"); // empty: unchanged
        QTest::newRow("transformers 5") << "{\n  \"dtype\": \"bfloat16\",\n  \"model_type\": \"gpt2\"\n}\n"
                                        << "{\n  \"dtype\": \"float32\",\n  \"model_type\": \"gpt2\"\n}\n";
        QTest::newRow("transformers 4")
            << "{\n  \"model_type\": \"gpt2\",\n  \"torch_dtype\": \"bfloat16\"\n}\n"
            << "{\n  \"model_type\": \"gpt2\",\n  \"torch_dtype\": \"float32\"\n}\n";
        QTest::newRow("neither: added in key order")
            << "{\n  \"architectures\": [\n    \"X\"\n  ],\n  \"model_type\": \"gpt2\",\n  \"rope_theta\": "
               "10000.0\n}\n"
            << "{\n  \"architectures\": [\n    \"X\"\n  ],\n  \"dtype\": \"float32\",\n  \"model_type\": "
               "\"gpt2\",\n  "
               "\"rope_theta\": 10000.0\n}\n";
        QTest::newRow("neither, not to be added") << "{\"b\": 1}"
                                                  << "";
        QTest::newRow("already so: bytes kept") << "{\"dtype\":\"float32\",  \"b\": 1}"
                                                << "";
        QTest::newRow("not json") << "{\"dtype\": "
                                  << "";
    }
    void configDtype()
    {
        QFETCH(QString, in);
        QFETCH(QString, out);
        const bool add = !QByteArray(QTest::currentDataTag()).contains("not to be added");
        const std::string got = ops::configWithDtype(in.toStdString(), torch::DType::Float32, add);
        QVERIFY2(got == (out.isEmpty() ? in : out).toStdString(), got.c_str());
    }

    // The command line: a run folder inspects (no more "no checkpoint found"), with the Trainer's
    // summary in the text and the JSON, and exports a checkpoint loadable as above.
    void commandLine()
    {
        const QString run = QString::fromStdString(runDir("gpt2_zero2_fp32_w2"));
        const Run text = ckptRun({"inspect", run});
        QVERIFY2(text.code == 0, text.err.constData());
        QVERIFY(text.out.contains("trainer, 2 tags"));
        QVERIFY(text.out.contains("tag checkpoint-4  [latest]"));
        QVERIFY(text.out.contains("best checkpoint: checkpoint-4"));
        QVERIFY(text.out.contains("trainer log: loss"));
        QVERIFY(
            text.out.contains("model type: gpt2")); // the checkpoint's config.json, beside the DeepSpeed tag
        const Run json = ckptRun({"inspect", run, "--json"});
        QVERIFY2(json.code == 0, json.err.constData());
        const auto doc = nlohmann::json::parse(json.out.toStdString());
        QCOMPARE(doc["tags"].size(), size_t(2));
        const auto& state = doc["tags"][1]["trainer_state"];
        QCOMPARE(state["global_step"].get<int>(), 4);
        QCOMPARE(state["best_checkpoint"].get<std::string>(), std::string("checkpoint-4"));
        QCOMPARE(state["log_history"].size(), size_t(6));
        QCOMPARE(state["log_history"][5]["eval_loss"].get<double>(), 4.044996738433838);

        QTemporaryDir tmp;
        const QString out = tmp.path() + "/out";
        const Run ex = ckptRun({"export", run + "/checkpoint-2", out});
        QVERIFY2(ex.code == 0, ex.err.constData());
        for (const char* f : {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json"})
            QVERIFY2(QFile::exists(out + "/" + f), f);
    }

    // Runs not seen before: steps ordered as numbers (checkpoint-10 after checkpoint-9), folders
    // only named like checkpoints left out, a checkpoint without weights or with a damaged
    // trainer_state.json kept as an unreadable tag that says why, naming the file.
    void unusualRun()
    {
        QTemporaryDir tmp;
        const fs::path run = tmp.path().toStdString() + "/run";
        const fs::path from = runDir("gpt2_plain_w1") + "/checkpoint-2";
        fs::create_directories(run);
        for (const char* name : {"checkpoint-9", "checkpoint-10", "checkpoint-11", "checkpoint-12"})
            fs::copy(from, run / name, fs::copy_options::recursive);
        fs::create_directories(run / "checkpoint-x");
        fs::copy(from / "trainer_state.json", run / "checkpoint-x" / "trainer_state.json");
        fs::remove(run / "checkpoint-11" / "model.safetensors");
        {
            std::ofstream damaged(run / "checkpoint-12" / "trainer_state.json", std::ios::trunc);
            damaged << "{\"global_step\": 12, \"log_history\": [";
        }
        const auto opened = layout::openCheckpoint(run.string() + "/");
        std::vector<std::string> names;
        for (const auto& t : opened->model.tags)
            names.push_back(t.name);
        QCOMPARE(names, (std::vector<std::string>{"checkpoint-9", "checkpoint-10", "checkpoint-11",
                                                  "checkpoint-12"}));
        QVERIFY(opened->model.tags[1].unreadable.empty());
        QVERIFY(opened->model.tags[1].trainingLog);
        QVERIFY2(opened->model.tags[2].unreadable.find("without model weights") != std::string::npos,
                 opened->model.tags[2].unreadable.c_str());
        QVERIFY2(opened->model.tags[3].unreadable.find("checkpoint-12/trainer_state.json") !=
                     std::string::npos,
                 opened->model.tags[3].unreadable.c_str());
        QVERIFY(opened->model.tags[3].latest);
        try {
            layout::openTag(run.string(), "checkpoint-12");
            QFAIL("a damaged trainer_state.json opened");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("not valid JSON") != std::string::npos, e.what());
        }
    }

    // An FSDP Trainer checkpoint keeps its sharded model in pytorch_model_fsdp_0/, a DCP folder.
    // accelerate applies FSDP only on GPU backends, so no run of the real Trainer on CPU writes one
    // (tests/data/trainer/README.md): the layout is put together from a real FSDP2 DCP save
    // (tests/data/dcp/fsdp2_fp32_w2) and a real trainer_state.json, and must read as the DCP
    // folder reads on its own, under the checkpoint's name.
    void fsdpCheckpoint()
    {
        QTemporaryDir tmp;
        const fs::path ck = tmp.path().toStdString() + "/run/checkpoint-5";
        fs::create_directories(ck);
        fs::copy(testutil::dataDir() + "/dcp/fsdp2_fp32_w2", ck / "pytorch_model_fsdp_0",
                 fs::copy_options::recursive);
        fs::copy(runDir("gpt2_plain_w1") + "/checkpoint-2/trainer_state.json", ck / "trainer_state.json");
        fs::copy(runDir("gpt2_plain_w1") + "/checkpoint-2/training_args.bin", ck / "training_args.bin");
        const auto run = layout::openCheckpoint((ck.parent_path()).string());
        QCOMPARE(run->model.tags.size(), size_t(1));
        const layout::Tag& t = run->model.tags.front();
        QCOMPARE(t.name, std::string("checkpoint-5"));
        QVERIFY2(t.unreadable.empty(), t.unreadable.c_str());
        QVERIFY(t.trainingLog);
        const auto dcp = layout::openCheckpoint(testutil::dataDir() + "/dcp/fsdp2_fp32_w2");
        const layout::Tag& d = dcp->model.tags.front();
        QVERIFY(!d.params.empty());
        QCOMPARE(t.params.size(), d.params.size());
        for (size_t i = 0; i < d.params.size(); ++i) {
            QCOMPARE(t.params[i].name, d.params[i].name);
            QCOMPARE(t.params[i].shape, d.params[i].shape);
        }
        QVERIFY(std::any_of(t.files.begin(), t.files.end(),
                            [](const layout::RankFile& f) { return f.name == "training_args.bin"; }));
        // Exported, it is its DCP folder's model, byte for byte; compared, every tensor identical.
        const std::string viaTrainer = tmp.path().toStdString() + "/out-trainer.safetensors";
        const std::string viaDcp = tmp.path().toStdString() + "/out-dcp.safetensors";
        ops::consolidate(ck.string(), viaTrainer, {}, {}, {});
        ops::consolidate(testutil::dataDir() + "/dcp/fsdp2_fp32_w2", viaDcp, {}, {}, {});
        const auto bytesOf = [](const std::string& path) {
            QFile f(QString::fromStdString(path));
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        };
        QVERIFY(!bytesOf(viaTrainer).isEmpty());
        QVERIFY(bytesOf(viaTrainer) == bytesOf(viaDcp));
        const auto cmp = ops::computeDiff(ck.string(), testutil::dataDir() + "/dcp/fsdp2_fp32_w2", {},
                                          gpu::cpuBackend(), {}, {});
        QCOMPARE(cmp.tensors.size(), t.params.size());
        for (const auto& x : cmp.tensors)
            QVERIFY2(x.status == ops::DiffStatus::Identical, x.name.c_str());
    }

    // The final model at the top of the run counts its own files' bytes, not its checkpoints'.
    void finalModelBytes()
    {
        const auto doc = ops::inspectCheckpoint(runDir("gpt2_plain_w1"), "final", false);
        QCOMPARE(doc["tags"].size(), size_t(1));
        const auto& files = doc["tags"][0]["bloat"]["files"];
        QCOMPARE(files.size(), size_t(6)); // config, generation config, model, tokenizer x2, training args
        for (const auto& f : files)
            QVERIFY2(f["path"].get<std::string>().find('/') == std::string::npos, f.dump().c_str());
        const auto whole = ops::inspectCheckpoint(runDir("gpt2_plain_w1") + "/checkpoint-2", "", false);
        QCOMPARE(whole["tags"][0]["bloat"]["files"].size(), size_t(10)); // a checkpoint: all its files
    }

    // Two checkpoints of one run compared by name.
    void diffTwoCheckpoints()
    {
        const QString run = QString::fromStdString(runDir("llama_plain_w2"));
        const Run d =
            ckptRun({"diff", run, run, "--tag-a", "checkpoint-2", "--tag-b", "checkpoint-4", "--json"});
        QVERIFY2(d.code == 0, d.err.constData());
        const auto doc = nlohmann::json::parse(d.out.toStdString());
        QCOMPARE(doc["a_tag"].get<std::string>(), std::string("checkpoint-2"));
        QCOMPARE(doc["b_tag"].get<std::string>(), std::string("checkpoint-4"));
        // Two steps of training apart: every tensor compared, none identical, none missing.
        const auto& totals = doc["totals"];
        QVERIFY(totals["compared"].get<int>() > 0);
        QCOMPARE(totals["different"].get<int>(), totals["compared"].get<int>());
        QCOMPARE(totals["only_a"].get<int>() + totals["only_b"].get<int>(), 0);
        // The same checkpoint against itself is identical throughout.
        const Run same =
            ckptRun({"diff", run, run, "--tag-a", "checkpoint-4", "--tag-b", "checkpoint-4", "--json"});
        QVERIFY2(same.code == 0, same.err.constData());
        const auto sameDoc = nlohmann::json::parse(same.out.toStdString());
        QCOMPARE(sameDoc["totals"]["identical"].get<int>(), totals["compared"].get<int>());
    }
};

QTEST_GUILESS_MAIN(TestTrainer)
#include "tst_trainer.moc"
