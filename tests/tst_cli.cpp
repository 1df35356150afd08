// The `ckpt` executable as a user runs it: exit codes, one-line errors, JSON on stdout,
// scan's exit 3, and no output left behind by a failed export.
#include "testutil.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

struct Run
{
    int code;
    QByteArray out, err;
};

static Run ckptRun(const QStringList& args)
{
    QProcess p;
    p.start(CKPT_BINARY, args);
    p.waitForFinished(120000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

static QString data(const char* rel)
{
    return QString::fromStdString(testutil::dataDir()) + rel;
}

class TestCli : public QObject
{
    Q_OBJECT
private slots:
    void inspectJson()
    {
        const Run r = ckptRun({"inspect", "--json", data("/torch/torch-2.x/state_dict.pt")});
        QCOMPARE(r.code, 0);
        const auto doc = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(doc["format"].toString(), QString("torch-zip"));
        QCOMPARE(doc["tensors"].toArray().size(), 27);
        QVERIFY(doc["warnings"].isArray());
    }

    void inspectText()
    {
        const Run r = ckptRun({"inspect", data("/torch/torch-1.13/views_legacy.pt")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("torch-legacy"));
        QVERIFY(r.out.contains("transposed  tensor float32[6, 4]"));
    }

    void errorsAreOneLine()
    {
        const Run r = ckptRun({"inspect", data("/corrupt/short_storage.pt")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(r.err.startsWith("ckpt: error: "));
        QVERIFY(r.err.contains("short_storage.pt"));
        const Run missing = ckptRun({"inspect", "/nonexistent/file.pt"});
        QCOMPARE(missing.code, 1);
        QVERIFY(missing.err.contains("/nonexistent/file.pt: cannot open"));
    }

    void usageIsExit2()
    {
        QCOMPARE(ckptRun({"frobnicate"}).code, 2);
        QCOMPARE(ckptRun({"inspect"}).code, 2);
    }

    void scanExitCodes()
    {
        const Run bad = ckptRun({"scan", data("/torch/torch-2.x/dangerous.pt")});
        QCOMPARE(bad.code, 3);
        QVERIFY(bad.out.contains("dangerous posix.system"));
        const Run badLegacy = ckptRun({"scan", data("/torch/torch-1.13/dangerous.pt")});
        QCOMPARE(badLegacy.code, 3);
        QCOMPARE(ckptRun({"scan", data("/torch/torch-2.x/state_dict.pt")}).code, 0);
        QCOMPARE(ckptRun({"scan", data("/torch/torch-2.x/state_dict_legacy.pt")}).code, 0);
        // inspect of the dangerous file works and warns.
        const Run ins = ckptRun({"inspect", data("/torch/torch-2.x/dangerous.pt")});
        QCOMPARE(ins.code, 0);
        QVERIFY(ins.err.contains("dangerous global posix.system"));
    }

    // Issue 36 #13: a URL typed wrong is said to be one, naming what was typed and what was
    // meant, by every command (they all open through the engine), never "no such file".
    void aMistypedUrlIsSaidToBeOne()
    {
        const std::pair<const char*, const char*> cases[] = {
            {"s3:/bucket/run", "s3://bucket/run"},
            {"S3://bucket/run", "s3://bucket/run"},
            {"hf:org/repo/model.safetensors", "hf://org/repo/model.safetensors"},
            {"HTTPS://host/x.pt", "https://host/x.pt"}};
        for (const auto& [typed, meant] : cases)
            for (const char* cmd : {"inspect", "scan", "export"}) {
                QStringList args{cmd, typed};
                if (QLatin1String(cmd) == QLatin1String("export")) args << "/nonexistent-out";
                const Run r = ckptRun(args);
                QCOMPARE(r.code, 1);
                QVERIFY2(r.err.contains(QByteArray(typed) + ": not a URL as written") &&
                             r.err.contains(QByteArray("did you mean ") + meant),
                         r.err.constData());
            }
        // A local path is never taken for a URL.
        const Run local = ckptRun({"inspect", "/nonexistent/s3:/x"});
        QVERIFY2(local.err.contains("cannot open: No such file"), local.err.constData());
    }

    // Issue 36 #9: a whole checkpoint is scanned before anyone loads it: every pickle of every
    // file at any depth, and the members of its tarballs; exit 3 naming each dangerous one.
    void scanOfAFolderReadsEveryFileAndArchive()
    {
        const Run run = ckptRun({"scan", data("/composer-tar/zero2_fp32_w2"), "--json"});
        QCOMPARE(run.code, 0);
        const QJsonObject doc = QJsonDocument::fromJson(run.out).object();
        QStringList files;
        for (const auto& f : doc["files"].toArray())
            files << f.toObject()["file"].toString();
        QVERIFY2(files.size() >= 2 && std::all_of(files.begin(), files.end(),
                                                  [](const QString& f) { return f.contains(".tar!"); }),
                 qPrintable(files.join(' ')));
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkpath("sub"));
        QVERIFY(QFile::copy(data("/torch/torch-2.x/dangerous.pt"), dir.filePath("sub/dangerous.pt")));
        QVERIFY(QFile::copy(data("/torch/torch-2.x/state_dict.pt"), dir.filePath("state_dict.pt")));
        QProcess tar;
        tar.setWorkingDirectory(dir.path());
        tar.start("tar", {"czf", "bundle.tar.gz", "sub/dangerous.pt"});
        QVERIFY(tar.waitForFinished(30000) && tar.exitCode() == 0);
        const Run bad = ckptRun({"scan", dir.path()});
        QCOMPARE(bad.code, 3);
        QVERIFY2(bad.out.contains("sub/dangerous.pt") && bad.out.contains("bundle.tar.gz!sub/dangerous.pt") &&
                     bad.out.contains("dangerous posix.system") && bad.out.contains("state_dict.pt"),
                 qPrintable(bad.out));
        QVERIFY(bad.err.contains("2 file(s) with dangerous globals"));
        QCOMPARE(ckptRun({"scan", dir.filePath("bundle.tar.gz")}).code, 3);
        QCOMPARE(ckptRun({"scan", data("/deepspeed/zero2_bf16_w2")}).code, 0);
    }

    // Every tensor entry of every file, whatever the family: a Composer file lists its optimizer
    // state (not only the model's parameters), a folder's tags with --entries their rank files'.
    void inspectListsEveryTensorEntry()
    {
        const auto tensorPaths = [](const QJsonObject& tag) {
            QStringList paths;
            for (const auto& f : tag["file_listings"].toArray())
                for (const auto& t : f.toObject()["tensors"].toArray())
                    paths << t.toObject()["path"].toString();
            return paths;
        };
        const Run file = ckptRun({"inspect", "--json", data("/composer/classifier.pt")});
        QCOMPARE(file.code, 0);
        const QJsonObject tag = QJsonDocument::fromJson(file.out).object()["tags"].toArray().at(0).toObject();
        const QStringList inFile = tensorPaths(tag);
        QVERIFY2(inFile.filter(QStringLiteral("optimizers")).size() > 0, qPrintable(inFile.join(' ')));
        QVERIFY(inFile.size() > tag["parameters"].toArray().size());
        const Run plain = ckptRun({"inspect", "--json", data("/deepspeed/zero2_bf16_w2")});
        QVERIFY(!QJsonDocument::fromJson(plain.out).object()["tags"].toArray().at(0).toObject().contains(
            "file_listings"));
        const Run folder = ckptRun({"inspect", "--json", "--entries", data("/deepspeed/zero2_bf16_w2")});
        QCOMPARE(folder.code, 0);
        for (const auto& t : QJsonDocument::fromJson(folder.out).object()["tags"].toArray()) {
            QCOMPARE(t.toObject()["file_listings"].toArray().size(), t.toObject()["files"].toArray().size());
            QVERIFY(tensorPaths(t.toObject()).filter(QStringLiteral("optimizer_state_dict")).size() > 0);
        }
    }

    void deepspeedFolder()
    {
        const Run ins = ckptRun({"inspect", data("/deepspeed/zero3_bf16_w2")});
        QCOMPARE(ins.code, 0);
        QVERIFY(ins.out.contains("tag global_step4  [latest]"));
        QVERIFY2(
            ins.out.contains(
                "ZeRO stage: 3 (optimizer states, gradients and parameters partitioned), optimizer: "
                "DeepSpeed ZeRO optimizer, data-parallel ranks: 2, model-parallel ranks: 1, dtype: bf16"),
            ins.out.constData());
        const Run js =
            ckptRun({"inspect", "--json", "--tag", "global_step2", data("/deepspeed/zero3_bf16_w2")});
        QCOMPARE(js.code, 0);
        QCOMPARE(QJsonDocument::fromJson(js.out).object()["tags"].toArray().size(), 1);
        QTemporaryDir dir;
        const Run ex = ckptRun({"export", "-q", "--format", "bin", "--max-shard-size", "2KB",
                                data("/deepspeed/zero3_bf16_w2"), dir.path()});
        QCOMPARE(ex.code, 0);
        QVERIFY(QFile::exists(dir.filePath("pytorch_model.bin.index.json")));
        const Run bad =
            ckptRun({"export", "--max-shard-size", "5GiB", data("/deepspeed/zero3_bf16_w2"), dir.path()});
        QCOMPARE(bad.code, 1);
        QVERIFY(bad.err.contains("--max-shard-size"));
        const Run tag = ckptRun(
            {"export", "--tag", "global_step9", data("/deepspeed/zero3_bf16_w2"), dir.filePath("other")});
        QCOMPARE(tag.code, 1);
        QCOMPARE(tag.err.count('\n'), 1);
        QVERIFY(tag.err.contains("no tag 'global_step9'"));
    }

    // Issue 21 #3: a second export into a folder that holds the first one's shards used to leave
    // them (and their index) beside the new model.safetensors. Refused now, naming the folder;
    // --overwrite replaces what the earlier export wrote, keeps the user's files, leaves nothing
    // beside the folder, and gives the bytes a fresh export gives.
    void exportIntoAFolderThatHoldsAnExport()
    {
        const QString z2 = data("/deepspeed/zero2_bf16_w2");
        QTemporaryDir tmp;
        const QString d = tmp.filePath("d"), fresh = tmp.filePath("fresh");
        QCOMPARE(ckptRun({"export", "-q", z2, d, "--max-shard-size", "2KB"}).code, 0);
        const QStringList shards = QDir(d).entryList({"model-*-of-*.safetensors"}, QDir::Files);
        QVERIFY(shards.size() > 1);
        // the user's own files, and an odd shard name only the old index knows
        QVERIFY(QFile::copy(data("/deepspeed/zero2_bf16_w2/latest"), d + "/README.md"));
        QVERIFY(QDir(d).mkpath("notes"));
        QVERIFY(QFile::copy(data("/deepspeed/zero2_bf16_w2/latest"), d + "/notes/a.txt"));
        QFile index(d + "/model.safetensors.index.json");
        QVERIFY(index.open(QIODevice::ReadOnly));
        QByteArray text = index.readAll();
        index.close();
        text.replace(shards[0].toUtf8(), "weights-a.safetensors");
        QVERIFY(QFile::rename(d + "/" + shards[0], d + "/weights-a.safetensors"));
        QVERIFY(index.open(QIODevice::WriteOnly | QIODevice::Truncate));
        index.write(text);
        index.close();
        const QStringList before = QDir(d).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot);

        const Run refused = ckptRun({"export", "-q", z2, d});
        QCOMPARE(refused.code, 1);
        QCOMPARE(refused.err.count('\n'), 1);
        QVERIFY2(refused.err.contains(d.toUtf8() + ": the output folder is not empty"),
                 refused.err.constData());
        QVERIFY2(refused.err.contains("--overwrite"), refused.err.constData());
        QCOMPARE(QDir(d).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot), before);

        const Run replaced = ckptRun({"export", "-q", "--overwrite", z2, d});
        QCOMPARE(replaced.code, 0);
        QCOMPARE(QDir(d).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name),
                 QStringList({"README.md", "model.safetensors", "notes"}));
        QVERIFY(QFile::exists(d + "/notes/a.txt"));
        QCOMPARE(QDir(tmp.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList{"d"}); // no staging folder left beside it
        QCOMPARE(ckptRun({"export", "-q", z2, fresh}).code, 0);
        QCOMPARE(testutil::sha256File(d + "/model.safetensors"),
                 testutil::sha256File(fresh + "/model.safetensors"));

        // and back to .bin shards: model.safetensors goes, the .bin set comes
        QCOMPARE(ckptRun({"export", "-q", "--overwrite", "--format", "bin", "--max-shard-size", "2KB", z2, d})
                     .code,
                 0);
        const QStringList now = QDir(d).entryList(QDir::Files);
        QVERIFY2(!now.contains("model.safetensors") && now.contains("pytorch_model.bin.index.json") &&
                     now.contains("README.md"),
                 qPrintable(now.join(' ')));
    }

    // Issue 21 #12: broken checkpoints triaged tag by tag. A tag folder opened on its own is not
    // warned about its parent's `latest`; a broken tag says why instead of an empty listing; a
    // run whose every tag is broken names each tag's error, not only the first.
    void brokenCheckpointsAreTriagedTagByTag()
    {
        const QString z2 = data("/deepspeed/zero2_bf16_w2");
        const Run tag = ckptRun({"inspect", z2 + "/global_step2"});
        QCOMPARE(tag.code, 0);
        QVERIFY2(!tag.err.contains("latest"), tag.err.constData());
        QVERIFY(!tag.out.contains("[latest]"));
        const Run latestTag = ckptRun({"inspect", z2 + "/global_step4"});
        QVERIFY(latestTag.out.contains("tag global_step4  [latest]"));

        QTemporaryDir tmp;
        const QString b = tmp.filePath("b");
        for (const char* t : {"global_step2", "global_step4"}) {
            QVERIFY(QDir().mkpath(b + "/" + t));
            for (const QString& f : QDir(z2 + "/" + t).entryList(QDir::Files))
                QVERIFY(QFile::copy(z2 + "/" + t + "/" + f, b + "/" + t + "/" + f));
        }
        QVERIFY(QFile::copy(z2 + "/latest", b + "/latest"));
        QVERIFY(QFile::resize(b + "/global_step2/mp_rank_00_model_states.pt", 100));
        const Run one = ckptRun({"inspect", b});
        QCOMPARE(one.code, 0);
        QVERIFY2(one.out.contains("tag global_step2\n  cannot be read: " + b.toUtf8() +
                                  "/global_step2/mp_rank_00_model_states.pt: zip:"),
                 one.out.constData());
        const Run oneJson = ckptRun({"inspect", "--json", b});
        const auto tags = QJsonDocument::fromJson(oneJson.out).object()["tags"].toArray();
        QVERIFY(tags[0].toObject()["unreadable"].toString().contains("mp_rank_00_model_states.pt"));
        QVERIFY(!tags[1].toObject().contains("unreadable"));

        QVERIFY(QFile::resize(b + "/global_step4/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt", 100));
        const Run all = ckptRun({"inspect", b});
        QCOMPARE(all.code, 1);
        QCOMPARE(all.err.count('\n'), 1);
        QVERIFY2(all.err.contains("none of its 2 tags can be read (global_step2: ") &&
                     all.err.contains("global_step2/mp_rank_00_model_states.pt") &&
                     all.err.contains("; global_step4: ") &&
                     all.err.contains("global_step4/bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"),
                 all.err.constData());
    }

    // Issue 21 #14: an enum member says what it is (ZeroStageEnum(2), not "reduce") and a 0-d
    // tensor (Adam's step) shows its value.
    void enumsAndScalarsSayTheirValue()
    {
        const QString optim =
            data("/deepspeed/zero2_bf16_w2/global_step4/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt");
        const Run text = ckptRun({"inspect", optim});
        QVERIFY2(
            text.out.contains("ZeroStageEnum(2): ZeRO stage 2 (optimizer states and gradients partitioned)"),
            text.out.constData());
        const Run js = ckptRun({"inspect", "--json",
                                data("/deepspeed/zero1_fp32_w2/global_step4/"
                                     "zero_pp_rank_0_mp_rank_00_optim_states.pt")});
        QCOMPARE(js.code, 0);
        int steps = 0;
        for (const auto& t : QJsonDocument::fromJson(js.out).object()["tensors"].toArray()) {
            const auto o = t.toObject();
            if (o["path"].toString().endsWith("/step")) {
                QCOMPARE(o["value"].toString(), QString("4.0")); // global_step4
                ++steps;
            } else {
                QVERIFY(!o.contains("value")); // only 0-d tensors are read
            }
        }
        QVERIFY(steps > 0);
    }

    void exportWritesAndRefuses()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("m.safetensors");
        const Run ok = ckptRun({"export", data("/torch/torch-2.x/state_dict.pt"), out});
        QCOMPARE(ok.code, 0);
        QVERIFY(QFile::exists(out));
        const Run no = ckptRun({"export", data("/torch/torch-2.x/dtypes.pt"), dir.filePath("d.safetensors")});
        QCOMPARE(no.code, 1);
        QVERIFY(no.err.contains("complex128"));
        QVERIFY(no.err.contains("(use --skip-unsupported to leave them out)"));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden), QStringList{"m.safetensors"});
        const Run skip = ckptRun({"export", "--skip-unsupported", data("/torch/torch-2.x/dtypes.pt"),
                                  dir.filePath("d.safetensors")});
        QCOMPARE(skip.code, 0);
        QVERIFY(skip.err.contains("left out 'complex128'"));
    }

    // `ckpt export --json` says what it wrote as one document, the files being those on disk and the
    // bytes the weight files'; a single file's export names its one file and its warnings.
    void exportJsonListsWhatItWrote()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("model");
        const Run run =
            ckptRun({"export", "--json", "--max-shard-size", "2KB", data("/deepspeed/zero2_bf16_w2"), out});
        QCOMPARE(run.code, 0);
        const auto doc = nlohmann::json::parse(run.out.toStdString());
        QCOMPARE(doc["tag"].get<std::string>(), std::string("global_step4"));
        QCOMPARE(doc["output"].get<std::string>(), out.toStdString());
        QVERIFY(doc["tensors"].get<int>() > 0);
        QStringList listed;
        for (const auto& f : doc["files"])
            listed << QFileInfo(QString::fromStdString(f.get<std::string>())).fileName();
        listed.sort();
        QStringList onDisk = QDir(out).entryList(QDir::Files);
        onDisk.removeAll("config.json");
        QVERIFY2(listed.size() > 1, qPrintable(listed.join(' ')));
        QCOMPARE(listed, onDisk);
        uint64_t weights = 0;
        for (const QString& f : onDisk)
            if (f.endsWith(".safetensors")) weights += QFileInfo(out + "/" + f).size();
        QCOMPARE(doc["bytes"].get<uint64_t>(), weights);

        const Run skip = ckptRun({"export", "--json", "--skip-unsupported",
                                  data("/torch/torch-2.x/dtypes.pt"), dir.filePath("d.safetensors")});
        QCOMPARE(skip.code, 0);
        const auto one = nlohmann::json::parse(skip.out.toStdString());
        QCOMPARE(one["file"].get<std::string>(), dir.filePath("d.safetensors").toStdString());
        QVERIFY(one["tensors"].get<int>() > 0);
        QVERIFY(!one["warnings"].empty());
        QVERIFY(one["warnings"].dump().find("complex128") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestCli)
#include "tst_cli.moc"
