// An export or Universal conversion split across processes (ops/sharded.h), as users run it:
// `ckpt ... --shard I/N` then `--finalize`, under mpirun and with the launchers' environments,
// a shard killed mid-write and run again. The output must equal one process's byte for byte.
#include "ops/sharded.h"

#include "large_model.h"
#include "testutil.h"

#include <QDirIterator>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/stat.h>

namespace {

struct Run
{
    int code;
    QByteArray out, err;
};

Run ckptRun(const QStringList& args,
            const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(CKPT_BINARY, args);
    p.waitForFinished(300000);
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

QString data(const QString& rel)
{
    return QString::fromStdString(testutil::dataDir()) + "/" + rel;
}

// Every file below `dir` (relative path -> bytes); folders count by their files.
std::map<QString, QByteArray> tree(const QString& dir)
{
    std::map<QString, QByteArray> files;
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        QFile f(path);
        f.open(QIODevice::ReadOnly);
        files[QDir(dir).relativeFilePath(path)] = f.readAll();
    }
    return files;
}

// The two trees hold the same files with the same bytes; says which differ.
void compareTrees(const QString& want, const QString& got)
{
    const auto a = tree(want), b = tree(got);
    QVERIFY2(a.size() >= 2, qPrintable("the one-process output holds too few files: " + want));
    QStringList only;
    for (const auto& [k, v] : a)
        if (!b.count(k)) only << "missing " + k;
    for (const auto& [k, v] : b)
        if (!a.count(k)) only << "extra " + k;
    QVERIFY2(only.isEmpty(), qPrintable(only.join(", ")));
    for (const auto& [k, v] : a)
        QVERIFY2(b.at(k) == v, qPrintable(k + " differs from the one-process output"));
}

// The command's arguments for one operation: export with shards small enough that the tiny
// fixtures still make several files, or universal.
QStringList job(const QString& op, const QString& in, const QString& out)
{
    if (op == "export") return {"export", in, out, "--max-shard-size", "600", "-q"};
    return {"universal", in, out, "-q"};
}

} // namespace

class TestShards : public QObject
{
    Q_OBJECT
private slots:
    void dealsUnitsByBytes()
    {
        const std::vector<uint64_t> bytes{100, 5, 70, 70, 30, 30, 1, 0, 0, 64};
        for (int n : {1, 2, 3, 4, 16}) {
            const auto owner = ckpt::ops::dealUnits(bytes, n);
            QCOMPARE(owner, ckpt::ops::dealUnits(bytes, n)); // the same plan in every process
            std::vector<uint64_t> load(size_t(n), 0);
            for (size_t u = 0; u < bytes.size(); ++u) {
                QVERIFY(owner[u] >= 0 && owner[u] < n);
                load[size_t(owner[u])] += bytes[u];
            }
            // Largest first to the lightest: no shard holds more than the lightest plus one unit.
            const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
            QVERIFY2(*hi <= *lo + 100, qPrintable(QString("N=%1: loads %2..%3").arg(n).arg(*lo).arg(*hi)));
        }
        // Two equal halves are dealt out evenly.
        QCOMPARE(ckpt::ops::dealUnits({10, 10, 10, 10}, 2), (std::vector<int>{0, 1, 0, 1}));
    }

    void parsesShardAndLaunchers()
    {
        using ckpt::ops::parseShard;
        QCOMPARE(parseShard("0/4").index, 0);
        QCOMPARE(parseShard("3/4").count, 4);
        for (const char* bad : {"4/4", "-1/4", "1", "1/0", "a/b", "1/4/2", ""})
            QVERIFY_THROWS_EXCEPTION(ckpt::Error, parseShard(bad));

        auto envOf = [](std::map<std::string, std::string> vars) {
            return [vars](const char* name) -> const char* {
                const auto it = vars.find(name);
                return it == vars.end() ? nullptr : it->second.c_str();
            };
        };
        using ckpt::ops::shardFromEnvironment;
        auto s = shardFromEnvironment(0, envOf({{"OMPI_COMM_WORLD_RANK", "0"},
                                                {"OMPI_COMM_WORLD_SIZE", "3"},
                                                {"SLURM_PROCID", "7"},
                                                {"SLURM_NTASKS", "8"}}));
        QCOMPARE(s.index, 0); // mpirun inside an allocation: MPI's rank, not Slurm's
        QCOMPARE(s.count, 3);
        QVERIFY(s.finalizeWhenAllDone);
        s = shardFromEnvironment(0, envOf({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}}));
        QCOMPARE(s.index, 2);
        QVERIFY(!s.finalizeWhenAllDone); // only rank 0 finalizes
        s = shardFromEnvironment(0, envOf({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}}));
        QCOMPARE(s.index, 1);
        QCOMPARE(s.count, 4);
        s = shardFromEnvironment(0, envOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}}));
        QVERIFY(s.finalizeWhenAllDone);
        // torchrun inside an sbatch script: every rank also sees the batch step's SLURM_PROCID 0 of 1,
        // and took it, so four ranks all ran as shard 0/1. torchrun's own rank wins.
        for (const char* marker : {"TORCHELASTIC_RUN_ID", "LOCAL_RANK"}) {
            s = shardFromEnvironment(0, envOf({{"SLURM_JOB_ID", "77"},
                                               {"SLURM_PROCID", "0"},
                                               {"SLURM_NTASKS", "1"},
                                               {"RANK", "2"},
                                               {"WORLD_SIZE", "4"},
                                               {marker, "1"}}));
            QCOMPARE(s.index, 2);
            QCOMPARE(s.count, 4);
            QVERIFY(s.source.find("torchrun") != std::string::npos);
        }
        // A job array numbered from 1: task 1 is shard 0; its --finalize is a dependent job.
        s = shardFromEnvironment(4, envOf({{"SLURM_ARRAY_TASK_ID", "1"},
                                           {"SLURM_ARRAY_TASK_MIN", "1"},
                                           {"SLURM_PROCID", "0"},
                                           {"SLURM_NTASKS", "1"}}));
        QCOMPARE(s.index, 0);
        QCOMPARE(s.count, 4);
        QVERIFY(!s.finalizeWhenAllDone);
        s = shardFromEnvironment(0, envOf({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
        QCOMPARE(s.index, 3);
        QVERIFY_THROWS_EXCEPTION(ckpt::Error, shardFromEnvironment(0, envOf({})));
        QVERIFY_THROWS_EXCEPTION(ckpt::Error, shardFromEnvironment(0, envOf({{"SLURM_ARRAY_TASK_ID", "2"}})));
        QVERIFY_THROWS_EXCEPTION(ckpt::Error,
                                 shardFromEnvironment(5, envOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}})));
        QVERIFY_THROWS_EXCEPTION(ckpt::Error,
                                 shardFromEnvironment(0, envOf({{"RANK", "2"}, {"WORLD_SIZE", "2"}})));
    }

    void fourShardsEqualOneProcess_data()
    {
        QTest::addColumn<QString>("op");
        QTest::addColumn<QString>("fixture");
        for (const char* op : {"export", "universal"})
            for (const char* f : {"zero1_fp32_w2", "zero2_bf16_w4", "zero3_fp32_w2", "zero3_bf16_w4"})
                QTest::newRow(qPrintable(QString("%1 %2").arg(op, f))) << op << QString("deepspeed/") + f;
    }

    void fourShardsEqualOneProcess()
    {
        QFETCH(QString, op);
        QFETCH(QString, fixture);
        QTemporaryDir tmp;
        const QString one = tmp.filePath("one/out"), split = tmp.filePath("split/out");
        QCOMPARE(ckptRun(job(op, data(fixture), one)).code, 0);
        for (int i = 0; i < 4; ++i) {
            const Run r = ckptRun(job(op, data(fixture), split) << "--shard" << QString("%1/4").arg(i));
            QVERIFY2(r.code == 0, r.err.constData());
            QVERIFY2(r.out.contains(qPrintable(QString("shard %1/4").arg(i))), r.out.constData());
        }
        // Nothing binds the parts before finalize: no index, no latest_universal.
        QVERIFY(!QFile::exists(split + "/model.safetensors.index.json"));
        QVERIFY(!QFile::exists(tmp.filePath("split/latest_universal")));
        const Run fin = ckptRun(job(op, data(fixture), split) << "--finalize");
        QVERIFY2(fin.code == 0, fin.err.constData());
        compareTrees(tmp.filePath("one"), tmp.filePath("split"));
    }

    // Each process's progress and warnings name its shard, so the logs of N processes interleaved
    // in one Slurm output file can be told apart.
    void logLinesNameTheShard()
    {
        QTemporaryDir tmp;
        const Run r = ckptRun({"export", data("deepspeed/zero3_fp32_w2"), tmp.filePath("out"),
                               "--max-shard-size", "4000", "--shard", "1/3"});
        QVERIFY2(r.code == 0, r.err.constData());
        const QList<QByteArray> lines = r.err.trimmed().split('\n');
        QVERIFY(lines.size() >= 2);
        for (const QByteArray& line : lines)
            QVERIFY2(line.contains("[shard 1/3]"), line.constData());
    }

    void finalizeRefusesWhileAShardIsMissing()
    {
        QTemporaryDir tmp;
        const QString out = tmp.filePath("out"), in = data("deepspeed/zero3_fp32_w2");
        for (int i : {0, 2})
            QCOMPARE(ckptRun(job("export", in, out) << "--shard" << QString("%1/3").arg(i)).code, 0);
        const Run fin = ckptRun(job("export", in, out) << "--finalize");
        QCOMPARE(fin.code, 1);
        QVERIFY2(fin.err.contains("cannot finalize: shard 1 of 3 has not finished"), fin.err.constData());
        QVERIFY2(fin.err.count('\n') == 1, fin.err.constData()); // one line
        QVERIFY(!QFile::exists(out + "/model.safetensors.index.json"));
        // The same for a conversion: no latest_universal, no optimizer state.
        const QString uni = tmp.filePath("u/out");
        QCOMPARE(ckptRun(job("universal", in, uni) << "--shard"
                                                   << "1/2")
                     .code,
                 0);
        const Run ufin = ckptRun(job("universal", in, uni) << "--finalize");
        QCOMPARE(ufin.code, 1);
        QVERIFY2(ufin.err.contains("shard 0 of 2"), ufin.err.constData());
        QVERIFY(!QFile::exists(tmp.filePath("u/latest_universal")));
        QVERIFY(!QFile::exists(uni + "/zero/optimizer_state.pt"));
        // Other options are another plan: its markers are not this job's.
        for (int i : {0, 1, 2})
            QCOMPARE(
                ckptRun(job("export", in, tmp.filePath("o")) << "--shard" << QString("%1/3").arg(i)).code, 0);
        const Run other = ckptRun({"export", in, tmp.filePath("o"), "--max-shard-size", "700", "--finalize"});
        QCOMPARE(other.code, 1);
        // A folder holding someone else's file is refused before anything is written.
        QDir().mkpath(tmp.filePath("busy"));
        QFile f(tmp.filePath("busy/notes.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        const Run busy = ckptRun(job("export", in, tmp.filePath("busy")) << "--shard"
                                                                         << "0/2");
        QCOMPARE(busy.code, 1);
        QVERIFY2(busy.err.contains("notes.txt"), busy.err.constData());
        QCOMPARE(QDir(tmp.filePath("busy"))
                     .entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden)
                     .size(),
                 1);
    }

    void killedShardRerunsOnlyItsUnfinishedUnits()
    {
        // A model large enough that a shard is still writing when it is killed: 64 tensors of
        // 4 MiB, exported in files of about 40 MB, two shards.
        QTemporaryDir tmp;
        QDir().mkpath(tmp.filePath("in"));
        testutil::writeLargeModel(tmp.filePath("in"), 64);
        const QString in = tmp.filePath("in"), one = tmp.filePath("one/out"),
                      split = tmp.filePath("split/out");
        const QStringList args{"export", in, split, "--max-shard-size", "40MB", "--format", "bin", "-q"};
        QCOMPARE(ckptRun({"export", in, one, "--max-shard-size", "40MB", "--format", "bin", "-q"}).code, 0);

        QProcess victim;
        victim.start(CKPT_BINARY, QStringList(args) << "--shard"
                                                    << "0/2");
        QVERIFY(victim.waitForStarted());
        // Killed once it has committed a unit and is writing the next one.
        bool killed = false;
        for (int i = 0; i < 6000 && !killed; ++i) {
            QTest::qWait(5);
            const QStringList markers = QDir(split + "/.ckpt-shards").entryList({"unit-*"}, QDir::Files);
            const QStringList partial =
                QDir(split).entryList({"*.ckpt-partial-*"}, QDir::Files | QDir::Hidden);
            if (!markers.isEmpty() && !partial.isEmpty()) {
                ::kill(pid_t(victim.processId()), SIGKILL);
                killed = true;
            }
            if (victim.state() == QProcess::NotRunning) break;
        }
        victim.waitForFinished();
        QVERIFY2(killed, "the shard finished before it could be killed mid-write");
        QCOMPARE(victim.exitStatus(), QProcess::CrashExit);
        // What it had finished, and the inode of each file: a re-run keeps them.
        std::map<QString, ino_t> kept;
        for (const QString& m : QDir(split + "/.ckpt-shards").entryList({"unit-*"}, QDir::Files)) {
            const auto marker = testutil::readJson((split + "/.ckpt-shards/" + m).toStdString());
            for (const auto& f : marker["files"]) {
                const QString path = split + "/" + QString::fromStdString(f["name"].get<std::string>());
                struct stat st
                {
                };
                QCOMPARE(::stat(path.toLocal8Bit().constData(), &st), 0);
                kept[path] = st.st_ino;
            }
        }
        QVERIFY(!kept.empty());
        // Finalize now refuses: shard 0 did not finish.
        QCOMPARE(ckptRun(QStringList(args) << "--shard"
                                           << "1/2")
                     .code,
                 0);
        const Run early = ckptRun(QStringList(args) << "--finalize");
        QCOMPARE(early.code, 1);
        QVERIFY2(early.err.contains("shard 0 of 2"), early.err.constData());

        const Run again = ckptRun(QStringList(args) << "--shard"
                                                    << "0/2");
        QVERIFY2(again.code == 0, again.err.constData());
        for (const auto& [path, ino] : kept) {
            struct stat st
            {
            };
            QCOMPARE(::stat(path.toLocal8Bit().constData(), &st), 0);
            QVERIFY2(st.st_ino == ino, qPrintable(path + " was written again"));
        }
        const Run fin = ckptRun(QStringList(args) << "--finalize");
        QVERIFY2(fin.code == 0, fin.err.constData());
        compareTrees(tmp.filePath("one"), tmp.filePath("split")); // no partial file left either
    }

    // A file changed after its shard finished: finalize refuses, naming it, and its shard's next
    // run writes it again. Sizes and modification times catch a write; --rehash also catches
    // one that put the time back.
    void finalizeChecksTheShardsFiles()
    {
        QTemporaryDir tmp;
        const QString out = tmp.filePath("out"), in = data("deepspeed/zero2_fp32_w2");
        const auto runShards = [&] {
            for (int i : {0, 1})
                QCOMPARE(ckptRun(job("export", in, out) << "--shard" << QString("%1/2").arg(i)).code, 0);
        };
        runShards();
        const QStringList files = QDir(out).entryList({"model-*.safetensors"}, QDir::Files, QDir::Name);
        QVERIFY(files.size() >= 2);
        const std::string victim = (out + "/" + files.last()).toStdString();
        // Flips the last byte; keepTime: then puts the modification time back.
        const auto flip = [&](bool keepTime) {
            struct stat before
            {
            };
            QCOMPARE(::stat(victim.c_str(), &before), 0);
            QFile f(QString::fromStdString(victim));
            QVERIFY(f.open(QIODevice::ReadWrite));
            f.seek(f.size() - 1);
            char c = 0;
            f.getChar(&c);
            f.seek(f.size() - 1);
            f.putChar(char(c ^ 1));
            f.close();
            if (keepTime) {
                const struct timespec times[2] = {before.st_atim, before.st_mtim};
                QCOMPARE(::utimensat(AT_FDCWD, victim.c_str(), times, 0), 0);
            }
        };
        const auto refused = [&](const QStringList& extra, const char* why) {
            const Run fin = ckptRun(job("export", in, out) << "--finalize" << extra);
            QCOMPARE(fin.code, 1);
            QVERIFY2(fin.err.contains(qPrintable(files.last())) &&
                         fin.err.contains("changed since its shard wrote it") && fin.err.contains(why),
                     fin.err.constData());
            QVERIFY(!QFile::exists(out + "/model.safetensors.index.json"));
        };
        flip(false);
        refused({}, "modification time");
        runShards(); // the owner writes it again; the other keeps its files
        flip(true);
        QCOMPARE(ckptRun(job("export", in, out) << "--shard"
                                                << "0/2")
                     .code,
                 0);
        refused({"--rehash"}, "its hash");
        runShards();
        const Run fin = ckptRun(job("export", in, out) << "--finalize"
                                                       << "--rehash");
        QVERIFY2(fin.code == 0, fin.err.constData());
        QVERIFY(QFile::exists(out + "/model.safetensors.index.json"));
        QVERIFY(!QFile::exists(out + "/.ckpt-shards"));
    }

    void launcherGroupFinalizesOnRankZero_data()
    {
        QTest::addColumn<QString>("op");
        QTest::newRow("export") << "export";
        QTest::newRow("universal") << "universal";
    }

    // torchrun's and srun's environment: every rank started together, rank 0 finalizes.
    void launcherGroupFinalizesOnRankZero()
    {
        QFETCH(QString, op);
        QTemporaryDir tmp;
        const QString in = data("deepspeed/zero3_bf16_w4");
        QCOMPARE(ckptRun(job(op, in, tmp.filePath("one/out"))).code, 0);
        std::vector<std::unique_ptr<QProcess>> ranks;
        for (int r = 0; r < 3; ++r) {
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            env.insert("RANK", QString::number(r));
            env.insert("WORLD_SIZE", "3");
            ranks.push_back(std::make_unique<QProcess>());
            ranks.back()->setProcessEnvironment(env);
            ranks.back()->start(CKPT_BINARY, job(op, in, tmp.filePath("split/out")) << "--shard"
                                                                                    << "auto");
        }
        for (auto& p : ranks) {
            QVERIFY(p->waitForFinished(120000));
            QVERIFY2(p->exitCode() == 0, p->readAllStandardError().constData());
        }
        compareTrees(tmp.filePath("one"), tmp.filePath("split"));
    }

    void mpirunEqualsOneProcess()
    {
        const QString mpirun = QStandardPaths::findExecutable("mpirun");
        QVERIFY2(!mpirun.isEmpty(), "mpirun not found: tools/install-deps.sh installs Debian's openmpi-bin");
        QTemporaryDir tmp;
        const QString in = data("deepspeed/zero2_bf16_w4");
        QCOMPARE(ckptRun(job("export", in, tmp.filePath("one/out"))).code, 0);
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        // Open MPI refuses root unless told twice (CI containers run as root).
        env.insert("OMPI_ALLOW_RUN_AS_ROOT", "1");
        env.insert("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        p.setProcessEnvironment(env);
        p.start(mpirun, QStringList{"--oversubscribe", "-n", "3", CKPT_BINARY}
                            << job("export", in, tmp.filePath("split/out")) << "--shard"
                            << "auto");
        QVERIFY(p.waitForFinished(180000));
        QVERIFY2(p.exitCode() == 0, (p.readAllStandardOutput() + p.readAllStandardError()).constData());
        compareTrees(tmp.filePath("one"), tmp.filePath("split"));
    }

    void rankZeroStopsWhenAnotherShardFailed()
    {
        using namespace ckpt::ops;
        QTemporaryDir tmp;
        const std::string out = tmp.filePath("out").toStdString();
        const std::vector<WorkUnit> units{{{"a.bin"}, 10}, {{"b.bin"}, 10}};
        // Shard `spec` fails writing its unit: its marker says how, and the error reaches its caller.
        const auto failShard = [&](const ShardSpec& spec) {
            const ShardedOutput o(std::vector<std::string>{}, out, spec, 42, units, {});
            std::unique_ptr<ckpt::io::OutputTransaction> tx;
            QVERIFY_THROWS_EXCEPTION(ckpt::Error, o.writeMine(
                                                      [&]() -> ckpt::io::OutputTransaction& {
                                                          tx = o.transaction();
                                                          return *tx;
                                                      },
                                                      [&](size_t, ckpt::io::OutputTransaction&) {
                                                          throw ckpt::Error("No space left on device",
                                                                            out + "/b.bin");
                                                      }));
        };
        ShardSpec one = parseShard("1/2");
        failShard(one);
        ShardSpec zero = parseShard("0/2");
        zero.waitSeconds = 30;
        const ShardedOutput rank0({}, out, zero, 42, units, {});
        CancelToken cancel;
        try {
            rank0.waitForOtherShards({}, cancel);
            QFAIL("waited although shard 1 failed");
        } catch (const ckpt::Error& e) {
            QVERIFY2(QString(e.what()).contains("shard 1/2 failed") &&
                         QString(e.what()).contains("No space left"),
                     e.what());
        }
        // The failure was an earlier launch's (another Slurm job): this launch's rank 0 waits for
        // this launch's shard 1 instead, and gives up after --wait, naming it.
        ShardSpec relaunched = zero;
        relaunched.job = "slurm 2.0 ";
        relaunched.waitSeconds = 0.3;
        one.job = "slurm 1.0 ";
        failShard(one);
        try {
            ShardedOutput({}, out, relaunched, 42, units, {}).waitForOtherShards({}, cancel);
            QFAIL("a marker of another launch was taken");
        } catch (const ckpt::Error& e) {
            QVERIFY2(QString(e.what()).contains("waited") && QString(e.what()).contains("shard 1 of 2"),
                     e.what());
        }
        // A shard that never reports: rank 0 gives up after --wait, naming it.
        const std::string out2 = tmp.filePath("out2").toStdString();
        ShardSpec three = parseShard("0/3");
        three.waitSeconds = 0.3;
        ShardSpec two = parseShard("2/3");
        const ShardedOutput done2(std::vector<std::string>{}, out2, two, 7, units, {});
        QVERIFY(done2.mine().empty()); // two units over three shards: shard 2 has none to write
        std::unique_ptr<ckpt::io::OutputTransaction> tx2;
        done2.writeMine(
            [&]() -> ckpt::io::OutputTransaction& {
                tx2 = done2.transaction();
                return *tx2;
            },
            [](size_t, ckpt::io::OutputTransaction&) {});
        try {
            ShardedOutput({}, out2, three, 7, units, {}).waitForOtherShards({}, cancel);
            QFAIL("waited for ever");
        } catch (const ckpt::Error& e) {
            QVERIFY2(QString(e.what()).contains("shard 1 of 3"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestShards)
#include "tst_shards.moc"
