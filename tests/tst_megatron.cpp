// Megatron-Core checkpoints (issue 38) made by megatron-core 0.16 on CPU
// (tools/fixtures/make_megatron_fixtures.py): a run folder's iterations are its tags, the tracked
// one latest; every tensor dist_checkpointing saved is there under its key with its global shape
// and dtype; the saved args are the tag's facts; the export is the Hugging Face model, from the
// legacy format's TP shards too.
#include "testutil.h"

#include "layout/families.h"
#include "layout/family.h"
#include "layout/megatron_buckets.h"
#include "ops/analyze.h"
#include "ops/bloat.h"
#include "ops/consolidate.h"
#include "ops/inspect.h"
#include "ops/tensor_digest.h"
#include "ops/tensor_source.h"
#include "safetensors/safetensors_file.h"
#include "torch/dtype.h"

#include <QTemporaryDir>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <xxhash.h>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string megatronDir()
{
    return testutil::dataDir() + "/megatron";
}

const layout::Parameter* tensorNamed(const layout::Tag& t, const std::string& key)
{
    for (const auto* list : {&t.params, &t.otherTensors})
        for (const auto& p : *list)
            if (p.name == key || p.path == key) return &p;
    return nullptr;
}

// A tag's optimizer state, placed by the family on Megatron's tensors, is what megatron-core's
// optimizer held (`truth`: an expectation's optimizer iteration; `global_state` per key where the
// generator recorded it, `per_param` per layer otherwise): xxh3 of each state's elements in C
// order; the buckets left the other tensors, and every Hugging Face tensor has the three states.
void statesAreTheOptimizers(const std::shared_ptr<const layout::OpenedCheckpoint>& opened,
                            const layout::Tag& tag, const nlohmann::json& truth)
{
    QVERIFY2(tag.unreadable.empty(), tag.unreadable.c_str());
    for (const std::string& w : tag.warnings)
        QVERIFY2(w.find("bucket layout") == std::string::npos, w.c_str());
    for (const layout::Parameter& t : tag.otherTensors)
        QVERIFY2(t.name.find("optimizer.distributed.") == std::string::npos &&
                     t.name.find("distrib_optim.pt:") == std::string::npos,
                 t.name.c_str());
    // Each (key, state): the whole tensor's digest, or per layer.
    std::map<std::pair<std::string, std::string>, std::map<int64_t, std::string>> want;
    if (truth.contains("global_state"))
        for (const auto& [key, g] : truth["global_state"].items())
            for (const auto& [state, d] : g["states"].items())
                want[{key, state}][-1] = d["xxh3_64"].get<std::string>();
    else
        for (const auto& [name, p] : truth["per_param"].items())
            for (const auto& [state, d] : p["states"].items())
                want[{p["key"].get<std::string>(), state}]
                    [p["layer"].is_null() ? -1 : p["layer"].get<int64_t>()] = d["xxh3_64"].get<std::string>();
    QVERIFY(want.size() >= 3 * 8);
    for (const auto& [which, digests] : want) {
        const layout::Parameter* p = tensorNamed(tag, which.first);
        QVERIFY2(p, which.first.c_str());
        const layout::OptimizerState* st = p->stateNamed(which.second);
        QVERIFY2(st && st->shape == p->shape && st->complete(), (which.first + "/" + which.second).c_str());
        layout::Tag one;
        one.name = tag.name, one.dir = tag.dir;
        one.params.push_back(layout::stateTensor(*p, *st, which.first));
        const ops::TensorSet set = ops::tagTensors(opened, one, {});
        QCOMPARE(set.tensors.size(), size_t(1));
        const auto& t = set.tensors[0].tensor;
        std::vector<uint8_t> bytes(t.nbytes);
        t.fill(0, t.nbytes, bytes.data());
        const size_t layers = digests.count(-1) ? 1 : size_t(p->shape.at(0));
        QCOMPARE(digests.size(), layers);
        for (const auto& [layer, digest] : digests) {
            const size_t each = bytes.size() / layers, at = layer < 0 ? 0 : size_t(layer) * each;
            QVERIFY2(ops::digestHex(XXH3_64bits(bytes.data() + at, each)) == digest,
                     (which.first + "/" + which.second + " layer " + std::to_string(layer)).c_str());
        }
    }
    QCOMPARE(testutil::badges(tag)["optimizer_state"].size(), size_t(3));
    for (const layout::Parameter& p : tag.params)
        for (const char* n : {"exp_avg", "exp_avg_sq", "param"}) {
            const layout::OptimizerState* st = p.stateNamed(n);
            QVERIFY2(st && st->shape == p.shape && st->complete(), (p.name + "/" + n).c_str());
        }
}

} // namespace

class TestMegatron : public QObject
{
    Q_OBJECT

private slots:
    void torchDistRunsOpen_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : {"gpt_tp1pp1_fp32", "gpt_tp2pp2_fp32", "gpt_tp2pp1_bf16",
                              "qwen_tp1pp1_qkvbias_fp32", "moe_tp1pp1_ep2_fp32", "gpt2_tp2pp1_fp32"})
            QTest::newRow(r) << QString(r);
    }
    void torchDistRunsOpen()
    {
        QFETCH(QString, run);
        const std::string dir = megatronDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.family, std::string("megatron"));
        const auto& iterations = expect["iterations"];
        QCOMPARE(opened->model.tags.size(), iterations.size());
        for (const layout::Tag& tag : opened->model.tags) {
            QVERIFY2(tag.unreadable.empty(), tag.unreadable.c_str());
            const std::string iteration = std::to_string(std::stoll(tag.name.substr(5)));
            QVERIFY2(iterations.contains(iteration), tag.name.c_str());
            const auto& e = iterations[iteration];
            QCOMPARE(tag.latest, iteration == expect["latest_checkpointed_iteration"].dump());
            QCOMPARE(tag.globalSteps, e["args"]["iteration"].get<int64_t>());
            // Every tensor saved, under its key, with its global shape and dtype.
            int tensors = 0;
            for (const auto& [key, k] : e["keys"].items()) {
                if (!k.contains("shape")) continue;
                ++tensors;
                const layout::Parameter* p = tensorNamed(tag, key);
                QVERIFY2(p, key.c_str());
                QCOMPARE(p->shape, k["shape"].get<std::vector<int64_t>>());
                QCOMPARE(std::string(torch::name(p->dtype)), k["dtype"].get<std::string>());
            }
            QVERIFY(tensors > 5);
            // The saved args as facts, under Megatron's names.
            const auto badges = testutil::badges(tag);
            for (const char* a :
                 {"num_layers", "hidden_size", "num_attention_heads", "num_query_groups", "ffn_hidden_size",
                  "padded_vocab_size", "tensor_model_parallel_size", "pipeline_model_parallel_size"})
                QCOMPARE(badges[a].dump(), e["args"][a].dump());
            QCOMPARE(badges["layout"].get<std::string>(), std::string("megatron"));
            QCOMPARE(tag.dtype, std::string(e["args"]["bf16"].get<bool>() ? "bf16" : "fp32"));
        }
    }

    // The export is a Hugging Face folder of the class the args describe, every tensor equal bit for
    // bit to the fixture generator's own mapping (checked there against Megatron's logits through
    // transformers), its config.json that mapping's.
    void exportIsTheHuggingFaceModel_data()
    {
        torchDistRunsOpen_data();
        // the legacy format: each TP rank's shard merged along its partition dimension
        QTest::newRow("legacy_tp2pp1_fp32") << QString("legacy_tp2pp1_fp32");
        // ... and its pipeline stages' layers at their global index, the word embeddings tied (the
        // last stage's output_layer copy of them is no part of the model)
        QTest::newRow("legacy_tp2pp2_tied_fp32") << QString("legacy_tp2pp2_tied_fp32");
        // GPT-2 in the legacy format: the biases and LayerNorm biases, the position embeddings
        QTest::newRow("legacy_gpt2_tp2pp1_fp32") << QString("legacy_gpt2_tp2pp1_fp32");
        // runs with optimizer state: the weights are the model, the state is not
        for (const char* r : {"gpt_tp1pp1_adam_fp32", "gpt_tp1pp1_dp2_distopt_fully_fp32",
                              "gpt_tp1pp1_dp2_distopt_fully_bf16", "gpt_tp1pp1_dp2_distopt_dp_fp32",
                              "gpt_tp1pp1_dp2_distopt_dp_bf16", "legacy_tp1pp1_dp2_distopt_fp32",
                              "gpt_tp2pp1_dp2_distopt_dp_fp32", "gpt_tp1pp2_dp2_distopt_dp_fp32",
                              "gpt_tp1pp1_dp2_distopt_dp_buckets_fp32", "gpt_tp2pp2_dp2_distopt_dp_tied_fp32",
                              "gpt2_tp2pp1_dp2_distopt_dp_fp32", "legacy_tp2pp1_dp2_distopt_fp32"})
            QTest::newRow(r) << QString(r);
    }
    void exportIsTheHuggingFaceModel()
    {
        QFETCH(QString, run);
        const std::string dir = megatronDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto& want = expect["iterations"][expect["latest_checkpointed_iteration"].dump()]["hf"];
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("hf").toStdString();
        const ops::ConsolidateResult r = ops::consolidate(dir, out, {}, {}, {});
        QCOMPARE(r.tensors, want.size());
        const auto st = safetensors::SafetensorsFile::open(out + "/model.safetensors");
        QCOMPARE(st->tensors().size(), want.size());
        for (const auto& t : st->tensors()) {
            QVERIFY2(want.contains(t.name), t.name.c_str());
            QCOMPARE(t.shape, want[t.name]["shape"].get<std::vector<int64_t>>());
            const auto b = st->bytes(t);
            QVERIFY2(testutil::sha256Hex(b.data(), b.size()) == want[t.name]["sha256"].get<std::string>(),
                     t.name.c_str());
        }
        const auto config = testutil::readJson(out + "/config.json");
        for (const auto& [k, v] : expect["hf_config"].items())
            QVERIFY2(config.contains(k) && config[k] == v,
                     (k + ": " + config.value(k, nlohmann::json()).dump()).c_str());
    }

    // Megatron-Bridge (run_config.yaml, no saved args) and NeMo 2 (context/model.yaml, weights/ under
    // "module.", the vocabulary from its tokenizer): every stored key under Megatron's name with its
    // global shape, the tool as a fact, and the export the Hugging Face model bit for bit (the
    // generator checked its logits against the tool's own reloaded forward).
    void bridgeAndNemoExportTheModel_data()
    {
        QTest::addColumn<QString>("run");
        QTest::addColumn<QString>("framework");
        QTest::newRow("bridge") << "bridge_llama_tp1pp1_fp32"
                                << "Megatron-Bridge";
        QTest::newRow("nemo2") << "nemo2_llama_tp1pp1_fp32"
                               << "NeMo 2";
    }
    void bridgeAndNemoExportTheModel()
    {
        QFETCH(QString, run);
        QFETCH(QString, framework);
        const std::string dir = megatronDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const bool nemo = run.startsWith("nemo2");
        const auto& at = nemo ? expect : expect["iterations"][expect["latest_checkpointed_iteration"].dump()];
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.family, std::string("megatron"));
        const layout::Tag& tag = opened->chooseTag("");
        QVERIFY2(tag.warnings.empty(), tag.warnings.empty() ? "" : tag.warnings.front().c_str());
        QCOMPARE(testutil::badges(tag)["framework"].get<std::string>(), framework.toStdString());
        QCOMPARE(testutil::badges(tag)["architecture"].get<std::string>(), std::string("LlamaForCausalLM"));
        for (const auto& [key, k] : at["keys"].items()) {
            if (!k.contains("shape")) continue;
            const std::string name = nemo ? key.substr(7) : key; // "module." is NeMo's wrapper
            const layout::Parameter* p = tensorNamed(tag, name);
            QVERIFY2(p, name.c_str());
            QCOMPARE(p->shape, k["shape"].get<std::vector<int64_t>>());
        }
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("hf").toStdString();
        ops::consolidate(dir, out, {}, {}, {});
        const auto st = safetensors::SafetensorsFile::open(out + "/model.safetensors");
        QCOMPARE(st->tensors().size(), at["hf"].size());
        for (const auto& t : st->tensors()) {
            QVERIFY2(at["hf"].contains(t.name), t.name.c_str());
            const auto b = st->bytes(t);
            QVERIFY2(testutil::sha256Hex(b.data(), b.size()) == at["hf"][t.name]["sha256"].get<std::string>(),
                     t.name.c_str());
        }
        const auto config = testutil::readJson(out + "/config.json");
        for (const auto& [k, v] : expect["hf_config"].items())
            QVERIFY2(config.contains(k) && config[k] == v,
                     (k + ": " + config.value(k, nlohmann::json()).dump()).c_str());
    }

    // --raw: the model under Megatron's own keys, each equal to the mapped model's source (the
    // GPT-2 flavour's Conv1D weights are transposed regions of them: --raw gives them untransposed),
    // no config.json (it describes the mapped class). An iteration folder of the legacy format opens
    // on its own.
    void rawExportKeepsMegatronsNames()
    {
        const std::string dir = megatronDir() + "/gpt2_tp2pp1_fp32";
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto& keys = expect["iterations"]["20"]["keys"];
        QTemporaryDir tmp;
        ops::ConsolidateOptions raw;
        raw.raw = true;
        const std::string out = tmp.filePath("raw").toStdString();
        ops::consolidate(dir, out, raw, {}, {});
        const auto st = safetensors::SafetensorsFile::open(out + "/model.safetensors");
        size_t tensors = 0;
        for (const auto& [key, k] : keys.items())
            if (k.contains("shape")) ++tensors;
        QCOMPARE(st->tensors().size(), tensors);
        for (const auto& t : st->tensors()) {
            QVERIFY2(keys.contains(t.name), t.name.c_str());
            QCOMPARE(t.shape, keys[t.name]["shape"].get<std::vector<int64_t>>());
        }
        QVERIFY(!fs::exists(out + "/config.json"));
        // c_fc is linear_fc1 of layer 1 transposed: element (i, j) of one is (j, i) of the other.
        const std::string hf = tmp.filePath("hf").toStdString();
        ops::consolidate(dir, hf, {}, {}, {});
        const auto mapped = safetensors::SafetensorsFile::open(hf + "/model.safetensors");
        const auto find = [](const auto& f, const std::string& name) {
            for (const auto& t : f->tensors())
                if (t.name == name) return f->bytes(t);
            throw std::runtime_error(name);
        };
        const auto fc1 = find(st, "decoder.layers.mlp.linear_fc1.weight");
        const auto cfc = find(mapped, "transformer.h.1.mlp.c_fc.weight");
        const auto at = [](const auto& b, size_t i) {
            float f;
            std::memcpy(&f, b.data() + 4 * i, 4);
            return f;
        };
        const size_t ffn = 128, hidden = 32;
        for (size_t i = 0; i < hidden; ++i)
            for (size_t j = 0; j < ffn; ++j)
                QCOMPARE(at(cfc, i * ffn + j), at(fc1, ffn * hidden + j * hidden + i));

        const auto legacy = layout::openCheckpoint(megatronDir() + "/legacy_tp2pp2_tied_fp32/iter_0000020");
        QCOMPARE(legacy->model.family, std::string("megatron"));
        QCOMPARE(legacy->chooseTag("").params.size(),
                 testutil::readJson(megatronDir() +
                                    "/legacy_tp2pp2_tied_fp32.expect.json")["iterations"]["20"]["hf"]
                     .size());
    }

    // Optimizer state saved per parameter (megatron-core's regular optimizer; its distributed
    // optimizer's fully_reshardable format, whose fp32 master is "param"): each saved state tensor
    // is its parameter's state, of its global shape, its values the optimizer's own (xxh3 of the
    // elements in C order, which the generator checked against megatron-core's optimizer), and no
    // longer a tensor of the model; the Hugging Face tensors carry the same states, mapped.
    void optimizerStateIsEachParametersState_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : {"gpt_tp1pp1_adam_fp32", "gpt_tp1pp1_dp2_distopt_fully_fp32",
                              "gpt_tp1pp1_dp2_distopt_fully_bf16"})
            QTest::newRow(r) << QString(r);
    }
    void optimizerStateIsEachParametersState()
    {
        QFETCH(QString, run);
        const std::string dir = megatronDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        QCOMPARE(opened->model.tags.size(), expect["iterations"].size());
        for (const layout::Tag& tag : opened->model.tags) {
            QVERIFY2(tag.unreadable.empty(), tag.unreadable.c_str());
            const std::string iteration = std::to_string(std::stoll(tag.name.substr(5)));
            const auto& saved = expect["optimizer"]["iterations"][iteration]["tensors"];
            layout::Tag states;
            states.name = tag.name;
            states.dir = tag.dir;
            std::vector<std::string> want;
            std::set<std::string> names;
            for (const auto& [key, t] : saved.items()) {
                QVERIFY2(!tensorNamed(tag, key), key.c_str());
                const layout::Parameter* p = tensorNamed(tag, t["param_key"].get<std::string>());
                QVERIFY2(p, key.c_str());
                const layout::OptimizerState* st = p->stateNamed(t["state"].get<std::string>());
                QVERIFY2(st, key.c_str());
                QCOMPARE(st->shape, t["shape"].get<std::vector<int64_t>>());
                QCOMPARE(std::string(torch::name(st->dtype)), t["dtype"].get<std::string>());
                states.params.push_back(layout::stateTensor(*p, *st, key));
                want.push_back(t["xxh3_64"].get<std::string>());
                names.insert(st->name);
            }
            QVERIFY(states.params.size() >= 2 * 8); // the moments of every tensor (and the masters)
            const ops::TensorSet set = ops::tagTensors(opened, states, {});
            QCOMPARE(set.tensors.size(), want.size());
            for (size_t i = 0; i < want.size(); ++i) {
                const auto& t = set.tensors[i].tensor;
                std::vector<uint8_t> bytes(t.nbytes);
                t.fill(0, t.nbytes, bytes.data());
                QVERIFY2(ops::digestHex(XXH3_64bits(bytes.data(), bytes.size())) == want[i], t.name.c_str());
            }
            // The Hugging Face tensors have every state too, each of the tensor's own shape.
            QVERIFY(!tag.params.empty());
            for (const layout::Parameter& p : tag.params)
                for (const std::string& n : names) {
                    const layout::OptimizerState* st = p.stateNamed(n);
                    QVERIFY2(st && st->shape == p.shape && st->complete(), (p.name + "/" + n).c_str());
                }
            QCOMPARE(testutil::badges(tag)["optimizer_state"].size(), names.size());
            // In fp32 the distributed optimizer's master ("param") is the weights after the step: each
            // Hugging Face tensor's mapped master reads the same bytes as the tensor.
            if (names.count("param") && tag.dtype == "fp32") {
                layout::Tag masters;
                masters.name = tag.name;
                masters.dir = tag.dir;
                for (const layout::Parameter& p : tag.params)
                    masters.params.push_back(layout::stateTensor(p, *p.stateNamed("param"), p.name));
                const ops::TensorSet weights = ops::tagTensors(opened, tag, {});
                const ops::TensorSet mapped = ops::tagTensors(opened, masters, {});
                QCOMPARE(mapped.tensors.size(), weights.tensors.size());
                for (size_t i = 0; i < weights.tensors.size(); ++i) {
                    const auto& w = weights.tensors[i].tensor;
                    const auto& m = mapped.tensors[i].tensor;
                    std::vector<uint8_t> a(w.nbytes), b(m.nbytes);
                    w.fill(0, w.nbytes, a.data());
                    m.fill(0, m.nbytes, b.data());
                    QVERIFY2(a == b, w.name.c_str());
                }
            }
            // Its bytes count as what they are (each DCP item by its key): weights, moments, masters.
            const ops::FolderBloat b =
                ops::analyzeFolderBloat(tag.dir, {}, {}, opened->files.get(), &opened->model);
            for (ops::ByteRole r :
                 {ops::ByteRole::ModelWeights, ops::ByteRole::ExpAvg, ops::ByteRole::ExpAvgSq})
                QVERIFY2(b.roleBytes[size_t(r)] > 0, ops::roleName(r));
            QCOMPARE(b.roleBytes[size_t(ops::ByteRole::Fp32Master)] > 0, names.count("param") > 0);
        }
    }

    // The distributed optimizer's dp_reshardable state (one tensor per buffer, bucket and state, in
    // DDP's bucket layout) and the legacy format's distrib_optim.pt become each parameter's state:
    // every state of every Megatron tensor, in its global stacked and tensor-parallel-merged shape,
    // has the values megatron-core's own optimizer held (xxh3 of the elements in C order, which
    // the generator gathered from each rank's optimizer: `global_state` per key where TP, PP or
    // several buckets make the layout, `per_param` per layer otherwise). Pieces straddle the
    // data-parallel split and bucket ends there; the buckets leave the other tensors, and the
    // Hugging Face tensors carry the states mapped.
    void bucketLayoutStateIsEachParametersState_data()
    {
        QTest::addColumn<QString>("run");
        for (const char* r : {"gpt_tp1pp1_dp2_distopt_dp_fp32", "gpt_tp1pp1_dp2_distopt_dp_bf16",
                              "legacy_tp1pp1_dp2_distopt_fp32", "gpt_tp2pp1_dp2_distopt_dp_fp32",
                              "gpt_tp1pp2_dp2_distopt_dp_fp32", "gpt_tp1pp1_dp2_distopt_dp_buckets_fp32",
                              "gpt_tp2pp2_dp2_distopt_dp_tied_fp32", "gpt2_tp2pp1_dp2_distopt_dp_fp32",
                              "legacy_tp2pp1_dp2_distopt_fp32"})
            QTest::newRow(r) << QString(r);
    }
    void bucketLayoutStateIsEachParametersState()
    {
        QFETCH(QString, run);
        const std::string dir = megatronDir() + "/" + run.toStdString();
        const auto expect = testutil::readJson(dir + ".expect.json");
        const auto opened = layout::openCheckpoint(dir);
        for (const layout::Tag& tag : opened->model.tags) {
            statesAreTheOptimizers(
                opened, tag,
                expect["optimizer"]["iterations"][std::to_string(std::stoll(tag.name.substr(5)))]);
            if (QTest::currentTestFailed()) return;
        }
        // `ckpt inspect --json` lists each tensor's states with their shapes.
        const auto doc = ops::inspectCheckpoint(dir, "", false);
        for (const auto& t : doc["tags"])
            for (const auto& p : t["parameters"]) {
                QVERIFY2(p.contains("optimizer_state") && p["optimizer_state"].size() == 3, p.dump().c_str());
                for (const auto& st : p["optimizer_state"])
                    QVERIFY2(st["shape"] == p["shape"] && st["dtype"] == "float32", st.dump().c_str());
            }
    }

    // A tool's config in place of Megatron-LM's args (Megatron-Bridge's run_config.yaml: no world
    // size) still places the buckets: the data-parallel size is the ranks' .distcp files over TP x PP,
    // and the spec's order is the one the saved chunks agree with. Here the several-bucket run, whose
    // parameters straddle the data-parallel split, with its common.pt swapped for such a config.
    void aConfigWithoutTheWorldSizeStillPlacesTheBuckets()
    {
        QTemporaryDir tmp;
        const std::string run = "gpt_tp1pp1_dp2_distopt_dp_buckets_fp32";
        const fs::path it = fs::path(tmp.path().toStdString()) / "iter_0000002";
        fs::copy(megatronDir() + "/" + run + "/iter_0000002", it, fs::copy_options::recursive);
        fs::remove(it / "common.pt");
        std::ofstream(it / "run_config.yaml")
            << "model:\n  num_layers: 2\n  hidden_size: 32\n"
               "  num_attention_heads: 4\n  num_query_groups: 2\n"
               "  kv_channels: 8\n  ffn_hidden_size: 64\n"
               "  tensor_model_parallel_size: 1\n  pipeline_model_parallel_size: 1\n"
               "  normalization: RMSNorm\n  gated_linear_unit: true\n"
               "  activation_func:\n    _target_: torch.nn.functional.silu\n"
               "  share_embeddings_and_output_weights: false\n"
               "  vocab_size: 100\n  max_position_embeddings: 64\n";
        const auto opened = layout::openCheckpoint(it.string());
        const layout::Tag& tag = opened->chooseTag("");
        QCOMPARE(testutil::badges(tag)["framework"].get<std::string>(), std::string("Megatron-Bridge"));
        const auto expect = testutil::readJson(megatronDir() + "/" + run + ".expect.json");
        statesAreTheOptimizers(opened, tag, expect["optimizer"]["iterations"]["2"]);
    }

    // A bucket layout is accepted only where it accounts for every bucket's length and every saved
    // chunk's boundary: told the run as it was, the buckets of the several-bucket run (parameters
    // straddling the data-parallel split) are placed; told one wrong thing, they are refused whole
    // and the reason names what disagreed, nothing attached.
    void aBucketLayoutIsAcceptedOnlyWhereEverythingAgrees_data()
    {
        QTest::addColumn<int>("layers");
        QTest::addColumn<int>("dataParallel");
        QTest::addColumn<int>("spec");
        QTest::addColumn<QString>("why"); // empty: placed
        const int local = int(layout::BucketRun::Spec::Local),
                  te = int(layout::BucketRun::Spec::TransformerEngine);
        QTest::newRow("as it was") << 2 << 2 << local << "";
        QTest::newRow("either spec") << 2 << 2 << int(layout::BucketRun::Spec::Unknown) << "";
        QTest::newRow("three layers") << 3 << 2 << local << "stacks 2 layers where the args say 3";
        QTest::newRow("one layer") << 1 << 2 << local << "stacks 2 layers where the args say 1";
        QTest::newRow("DP 3") << 2 << 3 << local << "no data-parallel split";
        QTest::newRow("DP unknown") << 2 << 0 << local
                                    << "no data-parallel split"; // (the family counts ranks)
        QTest::newRow("Transformer Engine") << 2 << 2 << te << "gbuf_idx_0";
    }
    void aBucketLayoutIsAcceptedOnlyWhereEverythingAgrees()
    {
        QFETCH(int, layers);
        QFETCH(int, dataParallel);
        QFETCH(int, spec);
        QFETCH(QString, why);
        const std::string dir = megatronDir() + "/gpt_tp1pp1_dp2_distopt_dp_buckets_fp32/iter_0000002";
        layout::TagList list;
        list.root = dir;
        list.tags.push_back({"iter_0000002", dir});
        layout::FileSet files;
        layout::Tag tag = layout::dcpFamily().openTag(list, 0, files);
        layout::BucketRun run;
        run.tp = run.pp = 1;
        run.layers = layers;
        run.dataParallel = dataParallel;
        run.spec = layout::BucketRun::Spec(spec);
        const layout::BucketOutcome o = layout::attachBucketState(tag, run);
        QVERIFY(o.found);
        const size_t buckets =
            size_t(std::count_if(tag.otherTensors.begin(), tag.otherTensors.end(),
                                 [](const auto& t) { return t.name.find("optimizer.distributed.") == 0; }));
        size_t states = 0;
        for (const layout::Parameter& p : tag.params)
            states += p.state.size();
        if (why.isEmpty()) {
            QVERIFY2(o.unplaced.empty(), o.unplaced.c_str());
            QCOMPARE(buckets, size_t(0));
            QCOMPARE(states, 3 * tag.params.size());
        } else {
            QVERIFY2(o.unplaced.find(why.toStdString()) != std::string::npos, o.unplaced.c_str());
            QCOMPARE(buckets, size_t(4 * 3)); // 4 buckets x param, exp_avg, exp_avg_sq
            QCOMPARE(states, size_t(0));
        }
    }

    // An iteration compared with itself is identical tensor for tensor (every byte read).
    void anIterationEqualsItself()
    {
        const std::string dir = megatronDir() + "/gpt_tp2pp2_fp32";
        ops::DiffOptions o;
        o.a.tag = o.b.tag = "iter_0000010";
        const ops::DiffResult r = ops::computeDiff(dir, dir, o, gpu::cpuBackend(), {}, {});
        QVERIFY(!r.tensors.empty());
        for (const auto& t : r.tensors)
            QVERIFY2(t.status == ops::DiffStatus::Identical, t.name.c_str());
    }

    // A legacy iteration whose TP rank folder never arrived: one error naming the iteration.
    void aLegacyIterationMissingARankIsOneError()
    {
        QTemporaryDir tmp;
        const fs::path run = fs::path(tmp.path().toStdString()) / "run";
        fs::copy(megatronDir() + "/legacy_tp2pp1_fp32", run, fs::copy_options::recursive);
        fs::remove_all(run / "iter_0000020" / "mp_rank_01"); // the last: only the args say it is missing
        const auto opened = layout::openCheckpoint(run.string());
        const layout::Tag* t = opened->model.find("iter_0000020");
        QVERIFY(t);
        QVERIFY2(!t->unreadable.empty() && t->unreadable.find("iter_0000020") != std::string::npos,
                 t->unreadable.c_str());
        QVERIFY(opened->model.find("iter_0000010")->unreadable.empty());
    }

    // latest_checkpointed_iteration.txt naming something that is not an iteration.
    void aBadTrackerIsOneError()
    {
        QTemporaryDir tmp;
        const fs::path run = fs::path(tmp.path().toStdString()) / "run";
        fs::copy(megatronDir() + "/gpt_tp1pp1_fp32", run, fs::copy_options::recursive);
        std::ofstream(run / "latest_checkpointed_iteration.txt", std::ios::trunc) << "ten";
        const QString why = testutil::errorOf([&] { layout::openCheckpoint(run.string()); });
        QVERIFY2(why.contains("latest_checkpointed_iteration.txt") && why.contains("ten"), qPrintable(why));
        // verl's tracker beside global_step_N folders is not Megatron's.
        QCOMPARE(layout::openCheckpoint(testutil::dataDir() + "/verl/fsdp2_w2")->model.family,
                 std::string("verl"));
    }
};

QTEST_APPLESS_MAIN(TestMegatron)
#include "tst_megatron.moc"
