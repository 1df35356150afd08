// `ckpt verify` (issue 39) on fixtures the real tools made, damaged as storage and interrupted
// saves damage them: each damage is found with its file named, no clean fixture of any family is
// called damaged, and nothing is written into what is checked.
#include "testutil.h"

#include "io/mapped_file.h"
#include "io/zip_reader.h"
#include "ops/consolidate.h"
#include "ops/tensor_digest.h"
#include "ops/verify.h"
#include "torch/torch_file.h"

#include <QProcess>
#include <QTemporaryDir>
#include <filesystem>
#include <fstream>
#include <xxhash.h>

using namespace ckpt;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& rel)
{
    return testutil::dataDir() + "/" + rel;
}

ops::VerifyReport verifyIt(const std::string& path, const ops::VerifyOptions& o = {})
{
    return ops::verify(path, o, {}, {});
}

std::string copyOf(const QTemporaryDir& tmp, const std::string& rel)
{
    const fs::path to = fs::path(tmp.path().toStdString()) / fs::path(rel).filename();
    fs::copy(data(rel), to, fs::copy_options::recursive);
    return to.string();
}

void flipByte(const std::string& file, uint64_t offset)
{
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(offset));
    char c = 0;
    f.read(&c, 1);
    c = char(c ^ 0x5a);
    f.seekp(std::streamoff(offset));
    f.write(&c, 1);
}

// Every problem of the report, file and message, on one line each.
std::string problemsOf(const ops::VerifyReport& r)
{
    std::string all;
    for (const auto& p : r.problems)
        all += p + "\n";
    for (const auto& f : r.files)
        for (const auto& p : f.problems)
            all += f.path + ": " + p + "\n";
    return all;
}

const ops::FileVerdict* fileNamed(const ops::VerifyReport& r, const std::string& name)
{
    for (const auto& f : r.files)
        if (f.name == name) return &f;
    return nullptr;
}

// The bytes of a zip record's data: its local header's offset from the central directory.
uint64_t dataOffsetOf(const std::string& file, const std::string& entrySuffix)
{
    const auto zip = io::ZipReader(io::MappedFile::open(file));
    for (const auto& e : zip.entries())
        if (e.name.size() >= entrySuffix.size() &&
            e.name.compare(e.name.size() - entrySuffix.size(), entrySuffix.size(), entrySuffix) == 0)
            return e.dataOffset + e.size / 2;
    return 0;
}

// A listing of a tree with each file's size and modification time: what "nothing written" compares.
std::string treeState(const std::string& dir)
{
    std::string s;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        s += e.path().string() + " " + (e.is_regular_file() ? std::to_string(e.file_size()) : "dir") + " " +
             std::to_string(fs::last_write_time(e.path()).time_since_epoch().count()) + "\n";
    return s;
}

} // namespace

class TestVerify : public QObject
{
    Q_OBJECT

private slots:
    // No false alarm: a clean fixture of every family is whole, its files each checked by format.
    void cleanFixturesAreWhole_data()
    {
        QTest::addColumn<QString>("path");
        for (const char* p : {"deepspeed/zero2_bf16_w2", "deepspeed/zero3_bf16_w2", "dcp/fsdp2_fp32_w2",
                              "dcp/torchtitan_fp32_w2", "hf/safetensors_sharded", "hf/bin_sharded",
                              "composer-tar/zero2_fp32_w2", "composer/fsdp2_sharded",
                              "universal/zero2_fp32_w11", "trainer/gpt2_zero2_fp32_w2",
                              "torch/torch-2.x/state_dict.pt", "torch/torch-1.13/state_dict.pt"})
            QTest::newRow(p) << QString(p);
    }
    void cleanFixturesAreWhole()
    {
        QFETCH(QString, path);
        ops::VerifyOptions all;
        all.allTags = true;
        const ops::VerifyReport r = verifyIt(data(path.toStdString()), all);
        QVERIFY2(r.whole(), problemsOf(r).c_str());
        QVERIFY(!r.files.empty());
        for (const auto& f : r.files) {
            QVERIFY2(f.status == "ok" || f.status == "not covered", (f.name + " " + f.status).c_str());
            QVERIFY(f.size > 0);
        }
    }

    // A flipped byte in a stored record of a torch.save file: its CRC-32 no longer matches, which
    // torch.load never checks (the file loads with the wrong value).
    void flippedByteFailsItsCrc()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "deepspeed/zero2_bf16_w2");
        const std::string victim = ck + "/global_step4/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt";
        const uint64_t at = dataOffsetOf(victim, "/data/0");
        QVERIFY(at > 0);
        flipByte(victim, at);
        const ops::VerifyReport r = verifyIt(ck);
        QVERIFY(!r.whole());
        const ops::FileVerdict* f =
            fileNamed(r, "global_step4/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt");
        QVERIFY(f);
        QCOMPARE(f->status, std::string("damaged"));
        QVERIFY2(f->problems.size() == 1 && f->problems[0].find("CRC-32") != std::string::npos &&
                     f->problems[0].find("/data/0'") != std::string::npos,
                 problemsOf(r).c_str());
        QCOMPARE(r.damagedFiles(), size_t(1)); // the other files are fine
    }

    // A rank's optimizer file that never arrived: the family cannot read the tag whole, and says which.
    void missingRankFileIsNamed()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "deepspeed/zero2_bf16_w2");
        fs::remove(ck + "/global_step4/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt");
        const ops::VerifyReport r = verifyIt(ck);
        QVERIFY(!r.whole());
        QVERIFY2(problemsOf(r).find("global_step4") != std::string::npos, problemsOf(r).c_str());
    }

    // `latest` written before the save it names finished (the folder never came).
    void latestNamingAnAbsentTag()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "deepspeed/zero2_bf16_w2");
        std::ofstream(ck + "/latest", std::ios::trunc) << "global_step6";
        ops::VerifyOptions one;
        one.tag = "global_step4";
        const ops::VerifyReport r = verifyIt(ck, one);
        QVERIFY(!r.whole());
        QVERIFY2(problemsOf(r).find("global_step6") != std::string::npos, problemsOf(r).c_str());
    }

    // DCP: a .distcp cut short, and one the .metadata names that is gone.
    void truncatedAndMissingDistcp()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "dcp/fsdp2_fp32_w2");
        fs::resize_file(ck + "/__1_0.distcp", fs::file_size(ck + "/__1_0.distcp") / 2);
        ops::VerifyReport r = verifyIt(ck);
        QVERIFY(!r.whole());
        QVERIFY2(problemsOf(r).find("__1_0.distcp") != std::string::npos, problemsOf(r).c_str());
        fs::remove(ck + "/__1_0.distcp");
        r = verifyIt(ck);
        QVERIFY(!r.whole());
        QVERIFY2(problemsOf(r).find("__1_0.distcp") != std::string::npos, problemsOf(r).c_str());
    }

    // A tarball cut short (an upload that stalled) is read to its end and found short.
    void truncatedTarball()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "composer-tar/zero2_fp32_w2");
        const std::string victim = ck + "/ep0-ba4-rank1.pt.tar";
        fs::resize_file(victim, fs::file_size(victim) - 5000);
        const ops::VerifyReport r = verifyIt(ck);
        QVERIFY(!r.whole());
        QVERIFY2(problemsOf(r).find("ep0-ba4-rank1.pt.tar") != std::string::npos, problemsOf(r).c_str());
    }

    // Bytes no format checks (a .distcp's tensor data, a safetensors tensor) are caught through a
    // manifest written while they were good, ours or Megatron's integrity.json; without one they
    // are said to be not covered, never "ok".
    void manifestsCatchWhatNoFormatChecks()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "dcp/fsdp2_fp32_w2");
        const std::string manifest = tmp.filePath("manifest.json").toStdString();
        ops::VerifyOptions write;
        write.writeManifest = manifest;
        const ops::VerifyReport clean = verifyIt(ck, write);
        QVERIFY2(clean.whole(), problemsOf(clean).c_str());
        QCOMPARE(clean.manifestWritten, manifest);
        QCOMPARE(fileNamed(clean, "__0_0.distcp")->status, std::string("not covered"));

        const uint64_t size = fs::file_size(ck + "/__0_0.distcp");
        flipByte(ck + "/__0_0.distcp", size - 7);
        QVERIFY(verifyIt(ck).whole()); // nothing the format records says otherwise...
        ops::VerifyOptions check;
        check.manifest = manifest;
        const ops::VerifyReport caught = verifyIt(ck, check); // ...but the manifest does
        QVERIFY(!caught.whole());
        QCOMPARE(caught.damagedFiles(), size_t(1));
        QVERIFY2(fileNamed(caught, "__0_0.distcp")->problems.at(0).find("SHA-256") != std::string::npos,
                 problemsOf(caught).c_str());
        QCOMPARE(fileNamed(caught, "__1_0.distcp")->status, std::string("ok")); // covered now

        // Megatron-Core's integrity.json beside the files is checked without being asked.
        const std::string megatron = tmp.filePath("integrity.json").toStdString();
        flipByte(ck + "/__0_0.distcp", size - 7); // good again
        ops::VerifyOptions asMegatron;
        asMegatron.writeManifest = megatron;
        asMegatron.megatronManifest = true;
        QVERIFY(verifyIt(ck, asMegatron).whole());
        const auto j = testutil::readJson(megatron);
        QCOMPARE(j["algorithm"].get<std::string>(), std::string("sha256"));
        QVERIFY(j["files"]["__0_0.distcp"].is_string());
        fs::copy_file(megatron, ck + "/integrity.json");
        QVERIFY(verifyIt(ck).whole());
        flipByte(ck + "/__1_0.distcp", 100);
        const ops::VerifyReport auto_ = verifyIt(ck);
        QVERIFY(!auto_.whole());
        QCOMPARE(auto_.manifest, ck + "/integrity.json");
        QVERIFY2(problemsOf(auto_).find("__1_0.distcp") != std::string::npos, problemsOf(auto_).c_str());
        // A file the manifest names that is gone.
        fs::remove(ck + "/__1_0.distcp");
        QVERIFY(!verifyIt(ck, check).whole());
    }

    // A tensor's digest is xxh3-64 of its elements in C order, whatever view of its storage it
    // is: for every tensor of the view fixtures (transposed, sliced, a scalar of a matrix, shared
    // storages; zip and legacy), the bytes torch's own values give (their SHA-256 recorded by the
    // generator) hash to the digest the manifest records.
    void tensorDigestsAreOfTheValuesInCOrder_data()
    {
        QTest::addColumn<QString>("fixture");
        for (const char* f : {"views", "views_legacy", "shared", "state_dict_deflated", "dtypes"})
            QTest::newRow(f) << QString::fromLatin1(f);
    }
    void tensorDigestsAreOfTheValuesInCOrder()
    {
        QFETCH(QString, fixture);
        const std::string base = data("torch/torch-2.x/" + fixture.toStdString());
        const auto file = torch::TorchFile::open(base + ".pt");
        const auto digests = ops::tensorDigests(*file, {});
        std::map<std::string, uint64_t> byKey;
        for (const auto& d : digests)
            byKey[d.key] = d.xxh3;
        size_t checked = 0;
        const auto expect = testutil::readJson(base + ".expect.json");
        for (const auto& e : expect["tensors"]) {
            const torch::Tensor* t = file->tensor(e["path"].get<std::string>());
            if (!t || t->storage < 0 || !t->note.empty()) continue;
            const auto bytes = testutil::contiguousBytes(*file, *t);
            QCOMPARE(testutil::sha256Hex(bytes.data(), bytes.size()), e["sha256"].get<std::string>());
            QVERIFY2(byKey.count(t->path), t->path.c_str());
            QCOMPARE(byKey[t->path], uint64_t(XXH3_64bits(bytes.data(), bytes.size())));
            ++checked;
        }
        QVERIFY(checked >= 3);
    }

    // A file that is whole as a file but holds other values than when the manifest was written
    // (a step's file copied over another's: every CRC fine): each changed tensor named.
    void tensorDigestsNameTheTensorThatChanged()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "deepspeed/zero1_bf16_w2");
        ops::VerifyOptions write;
        write.tag = "global_step2";
        write.writeManifest = tmp.filePath("m.json").toStdString();
        QVERIFY(verifyIt(ck, write).whole());
        const auto j = testutil::readJson(write.writeManifest);
        QCOMPARE(j["version"].get<int>(), 2);
        const auto& recorded = j["files"]["global_step2/mp_rank_00_model_states.pt"]["tensors"];
        QVERIFY(recorded.contains("module/fc1.weight"));
        fs::copy_file(ck + "/global_step4/mp_rank_00_model_states.pt",
                      ck + "/global_step2/mp_rank_00_model_states.pt", fs::copy_options::overwrite_existing);
        ops::VerifyOptions noManifest;
        noManifest.tag = "global_step2";
        QVERIFY(verifyIt(ck, noManifest).whole()); // every record's CRC is right
        ops::VerifyOptions check;
        check.tag = "global_step2";
        check.manifest = write.writeManifest;
        const ops::VerifyReport r = verifyIt(ck, check);
        QVERIFY(!r.whole());
        const std::string all = problemsOf(r);
        QVERIFY2(all.find("tensor 'module/fc1.weight'") != std::string::npos &&
                     all.find("its values changed") != std::string::npos,
                 all.c_str());
        QCOMPARE(fileNamed(r, "global_step2/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt")->status,
                 std::string("ok"));
    }

    // `export --manifest-out`: the digests of what the export streamed out of the checkpoint; the
    // output verified against them is whole, and a value changed in it afterwards is named.
    void exportManifestProvesTheExport()
    {
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("out").toStdString();
        const std::string manifest = tmp.filePath("export.json").toStdString();
        ops::ConsolidateOptions o;
        o.manifestOut = manifest;
        const auto result = ops::consolidate(data("megatron/gpt_tp2pp2_fp32"), out, o, {}, {});
        QCOMPARE(result.manifest, manifest);
        const auto j = testutil::readJson(manifest);
        QCOMPARE(j["source"]["tag"].get<std::string>(), std::string("iter_0000020"));
        QCOMPARE(j["files"]["model.safetensors"]["tensors"].size(), result.tensors);
        ops::VerifyOptions check;
        check.manifest = manifest;
        const ops::VerifyReport clean = verifyIt(out, check);
        QVERIFY2(clean.whole(), problemsOf(clean).c_str());
        QCOMPARE(fileNamed(clean, "model.safetensors")->tensors.size(), result.tensors);

        const std::string weights = out + "/model.safetensors";
        flipByte(weights, fs::file_size(weights) - 3); // the last tensor's last element
        const ops::VerifyReport caught = verifyIt(out, check);
        QVERIFY(!caught.whole());
        QVERIFY2(problemsOf(caught).find("its values changed") != std::string::npos,
                 problemsOf(caught).c_str());
        QVERIFY(verifyIt(out).whole()); // safetensors records no checksum: only the manifest saw it

        // Never into the checkpoint; not for a job split across processes.
        QTemporaryDir tmp2;
        ops::ConsolidateOptions inside;
        inside.manifestOut = copyOf(tmp2, "megatron/gpt_tp1pp1_fp32") + "/m.json";
        QVERIFY_THROWS_EXCEPTION(Error, ops::consolidate(tmp2.filePath("gpt_tp1pp1_fp32").toStdString(),
                                                         tmp2.filePath("o").toStdString(), inside, {}, {}));
        QVERIFY(!fs::exists(inside.manifestOut));
        ops::ConsolidateOptions split;
        split.manifestOut = tmp.filePath("s.json").toStdString();
        split.shard = ops::parseShard("1/2");
        QVERIFY_THROWS_EXCEPTION(Error, ops::consolidate(data("megatron/gpt_tp1pp1_fp32"),
                                                         tmp.filePath("s").toStdString(), split, {}, {}));
    }

    // A safetensors file's header damaged: found by its format alone.
    void damagedSafetensorsHeader()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "hf/safetensors_sharded");
        flipByte(ck + "/model-00002-of-00004.safetensors", 10);
        const ops::VerifyReport r = verifyIt(ck);
        QVERIFY(!r.whole());
        const ops::FileVerdict* f = fileNamed(r, "model-00002-of-00004.safetensors");
        QVERIFY(f && f->status == "damaged");
    }

    // Verifying writes nothing into what it checks (a manifest only where the user names it).
    void nothingWrittenIntoTheInput()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "deepspeed/zero2_bf16_w2");
        const std::string before = treeState(ck);
        ops::VerifyOptions o;
        o.allTags = true;
        o.writeManifest = tmp.filePath("m.json").toStdString();
        QVERIFY(verifyIt(ck, o).whole());
        QCOMPARE(treeState(ck), before);
    }

    // The command's contract: 0 whole, 4 damaged (each problem a line naming the file), 1 when it
    // cannot check; --json lists every file.
    void exitCodes()
    {
        QTemporaryDir tmp;
        const std::string ck = copyOf(tmp, "deepspeed/zero2_bf16_w2");
        auto run = [](const QStringList& args) {
            QProcess p;
            p.start(CKPT_BINARY, args);
            p.waitForFinished(120000);
            return std::make_tuple(p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError());
        };
        auto [ok, okOut, okErr] = run({"verify", "-q", QString::fromStdString(ck)});
        QCOMPARE(ok, 0);
        QVERIFY(okOut.contains("whole"));
        const std::string victim = ck + "/global_step4/mp_rank_00_model_states.pt";
        flipByte(victim, dataOffsetOf(victim, "/data/0"));
        auto [bad, badOut, badErr] = run({"verify", "--json", QString::fromStdString(ck)});
        QCOMPARE(bad, 4);
        QVERIFY2(badErr.contains("mp_rank_00_model_states.pt") && badErr.contains("CRC-32"),
                 badErr.constData());
        const auto doc = nlohmann::json::parse(badOut.toStdString());
        QCOMPARE(doc["whole"].get<bool>(), false);
        QCOMPARE(doc["files"].size(), size_t(3));
        auto [none, noneOut, noneErr] = run({"verify", QString::fromStdString(ck + "/nothing-here")});
        QCOMPARE(none, 1);
        QVERIFY(noneErr.contains("nothing-here"));
    }
};

QTEST_APPLESS_MAIN(TestVerify)
#include "tst_verify.moc"
