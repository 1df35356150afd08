// The input is sacred, checked through `ckpt` as a user runs it: every subcommand is classified
// as reading or writing (a new one fails here until it is), every writing one refuses an output
// that is, contains or lies inside its input, leaving the input byte-identical and nothing
// behind; FIFOs and other non-regular inputs are refused instead of blocking; a folder with no
// checkpoint says what was looked for; a rerun removes the temporaries of a killed run.
#include "testutil.h"

#include <QCryptographicHash>
#include <QDirIterator>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <functional>
#include <map>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Run
{
    int code;
    QByteArray err;
};

Run runCkpt(const QStringList& args, const QString& cwd)
{
    QProcess p;
    p.setWorkingDirectory(cwd);
    p.start(CKPT_BINARY, args);
    if (!p.waitForFinished(60000)) { // a blocked read would end up here
        p.kill();
        p.waitForFinished();
        return {-2, "timed out: " + p.readAllStandardError()};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardError()};
}

// Every file under `root` (hidden ones too) with its sha256: equal before and after means
// nothing was added, removed or changed.
QMap<QString, QByteArray> treeState(const QString& root)
{
    QMap<QString, QByteArray> state;
    QDirIterator it(root, QDir::Files | QDir::Dirs | QDir::Hidden | QDir::NoDotAndDotDot | QDir::System,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        QByteArray hash = "dir";
        if (it.fileInfo().isFile() && !it.fileInfo().isSymLink()) {
            QFile f(path);
            if (f.open(QIODevice::ReadOnly))
                hash = QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256);
        }
        state[QDir(root).relativeFilePath(path)] = hash;
    }
    return state;
}

void copyTree(const QString& from, const QString& to)
{
    QDirIterator it(from, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString src = it.next();
        const QString dst = to + "/" + QDir(from).relativeFilePath(src);
        QDir().mkpath(QFileInfo(dst).path());
        QVERIFY(QFile::copy(src, dst));
    }
}

enum class Access { Reads, Writes };

// Every subcommand and what it does to the paths it is given. Adding a subcommand to `ckpt`
// without adding it here fails everySubcommandIsClassified; a writing one must also appear in
// writers() below, which runs it against every overlap case.
const std::map<QString, Access>& subcommands()
{
    static const std::map<QString, Access> m{{"inspect", Access::Reads},    {"stats", Access::Reads},
                                             {"diff", Access::Reads},       {"scan", Access::Reads},
                                             {"export", Access::Writes},    {"slim", Access::Writes},
                                             {"universal", Access::Writes}, {"verify", Access::Writes}};
    return m;
}

// A writing subcommand's arguments for an input (file or checkpoint folder) and an output.
using ArgsFor = std::function<QStringList(const QString& in, const QString& out)>;
struct Writer
{
    ArgsFor file;   // empty when the command takes no single file
    ArgsFor folder; // empty when it takes no checkpoint folder
};
const std::map<QString, Writer>& writers()
{
    static const std::map<QString, Writer> m{
        {"export",
         {[](const QString& in, const QString& out) {
              return QStringList{"export", in, out, "-q"};
          },
          [](const QString& in, const QString& out) {
              return QStringList{"export", in, out, "-q"};
          }}},
        {"slim",
         {[](const QString& in, const QString& out) {
              return QStringList{"slim", in, out, "-q"};
          },
          [](const QString& in, const QString& out) {
              return QStringList{"slim", in, out, "-q"};
          }}},
        // only with --write-manifest; reading, it writes nothing
        {"verify",
         {[](const QString& in, const QString& out) {
              return QStringList{"verify", in, "--write-manifest", out, "-q"};
          },
          [](const QString& in, const QString& out) {
              return QStringList{"verify", in, "--write-manifest", out, "-q"};
          }}},
        {"universal",
         {{}, // takes no single file
          [](const QString& in, const QString& out) {
              return QStringList{"universal", in, out, "--inject-missing-state", "-q"};
          }}},
    };
    return m;
}

} // namespace

class TestInputSafety : public QObject
{
    Q_OBJECT
    QTemporaryDir m_tmp;
    QString m_dir;

private slots:
    void init()
    {
        // A fresh copy for every test: a test that damaged its input cannot hide it from the next.
        m_dir = m_tmp.filePath(
            QString::fromLatin1(QTest::currentTestFunction()) + "_" +
            QString::fromLatin1(QTest::currentDataTag()).replace(QRegularExpression("\\W"), "_"));
        QVERIFY(QDir().mkpath(m_dir));
        copyTree(QString::fromStdString(testutil::dataDir() + "/deepspeed/zero2_bf16_w2"), m_dir + "/ck");
        QVERIFY(QFile::copy(QString::fromStdString(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt"),
                            m_dir + "/model.pt"));
    }

    void everySubcommandIsClassified()
    {
        QProcess p;
        p.start(CKPT_BINARY, {"--help"});
        QVERIFY(p.waitForFinished());
        const QString help = QString::fromUtf8(p.readAllStandardOutput());
        const qsizetype at = help.indexOf("Subcommands:");
        QVERIFY(at >= 0);
        QStringList listed;
        for (const QString& line : help.mid(at).split('\n').mid(1)) {
            const auto m = QRegularExpression("^  (\\S+)\\s").match(line);
            if (m.hasMatch()) listed << m.captured(1);
        }
        QVERIFY(listed.size() >= 5);
        for (const QString& name : listed) {
            const auto it = subcommands().find(name);
            QVERIFY2(it != subcommands().end(),
                     qPrintable("new subcommand '" + name +
                                "': classify it in subcommands() and, if it writes, add it to writers()"));
            if (it->second == Access::Writes)
                QVERIFY2(writers().count(name), qPrintable("'" + name + "' writes but is not in writers()"));
        }
        for (const auto& [name, access] : subcommands())
            QVERIFY2(listed.contains(name), qPrintable("'" + name + "' is classified but no longer exists"));
    }

    void writersRefuseAnOutputOnTheirInput_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("setup"); // "symlink" or "hardlink": output made a link to the input first
        for (const auto& [name, w] : writers()) {
            const QByteArray n = name.toUtf8();
            if (w.file) {
                QTest::newRow(n + " file onto itself") << name << "model.pt"
                                                       << "model.pt"
                                                       << "";
                QTest::newRow(n + " file onto a symlink to it") << name << "model.pt"
                                                                << "link.pt"
                                                                << "symlink";
                QTest::newRow(n + " file onto a hard link of it") << name << "model.pt"
                                                                  << "hard.pt"
                                                                  << "hardlink";
                QTest::newRow(n + " file into a path through ..") << name << "model.pt"
                                                                  << "ck/../model.pt"
                                                                  << "";
            }
            if (w.folder) {
                QTest::newRow(n + " checkpoint onto itself") << name << "ck"
                                                             << "ck"
                                                             << "";
                QTest::newRow(n + " checkpoint into its tag") << name << "ck"
                                                              << "ck/global_step4"
                                                              << "";
                QTest::newRow(n + " checkpoint into a new subfolder") << name << "ck"
                                                                      << "ck/out"
                                                                      << "";
                QTest::newRow(n + " checkpoint through ..") << name << "ck"
                                                            << "ck/global_step4/../"
                                                            << "";
                QTest::newRow(n + " checkpoint through a symlink") << name << "ck"
                                                                   << "cklink/out"
                                                                   << "symlink-dir";
                QTest::newRow(n + " tag into its checkpoint") << name << "ck/global_step4"
                                                              << "ck"
                                                              << "";
            }
        }
    }

    void writersRefuseAnOutputOnTheirInput()
    {
        QFETCH(QString, command);
        QFETCH(QString, input);
        QFETCH(QString, output);
        QFETCH(QString, setup);
        if (setup == "symlink") QVERIFY(QFile::link("model.pt", m_dir + "/" + output));
        if (setup == "hardlink")
            QCOMPARE(::link((m_dir + "/model.pt").toUtf8().constData(),
                            (m_dir + "/" + output).toUtf8().constData()),
                     0);
        if (setup == "symlink-dir") QVERIFY(QFile::link("ck", m_dir + "/cklink"));
        const auto before = treeState(m_dir);
        const Writer& w = writers().at(command);
        const QStringList args =
            QFileInfo(m_dir + "/" + input).isDir() ? w.folder(input, output) : w.file(input, output);
        const Run r = runCkpt(args, m_dir);
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.startsWith("ckpt: error: " + output.toUtf8() + ": refusing to write here"),
                 r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY2(r.err.contains(" the input " + input.toUtf8()), r.err.constData());
        QCOMPARE(treeState(m_dir), before); // not one byte, not one file more
    }

    void nonRegularInputsAreRefusedNotOpened_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("path");
        QTest::newRow("inspect fifo") << QStringList{"inspect", "fifo"} << "fifo";
        QTest::newRow("inspect --json fifo") << QStringList{"inspect", "--json", "fifo"} << "fifo";
        QTest::newRow("scan fifo") << QStringList{"scan", "fifo"} << "fifo";
        QTest::newRow("stats fifo") << QStringList{"stats", "-q", "fifo"} << "fifo";
        QTest::newRow("diff fifo") << QStringList{"diff", "-q", "model.pt", "fifo"} << "fifo";
        QTest::newRow("export fifo") << QStringList{"export", "-q", "fifo", "out.safetensors"} << "fifo";
        QTest::newRow("inspect /dev/zero") << QStringList{"inspect", "/dev/zero"} << "/dev/zero";
        QTest::newRow("scan /dev/zero") << QStringList{"scan", "/dev/zero"} << "/dev/zero";
        QTest::newRow("fifo as latest") << QStringList{"inspect", "ck"} << "ck/latest";
    }

    void nonRegularInputsAreRefusedNotOpened()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, path);
        if (path.startsWith("/"))
            QVERIFY(QFileInfo::exists(path));
        else {
            QFile::remove(m_dir + "/" + path);
            QCOMPARE(::mkfifo((m_dir + "/" + path).toUtf8().constData(), 0644), 0);
        }
        const Run r = runCkpt(args, m_dir);
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY2(r.err.contains(path.toUtf8() + ": is a "), r.err.constData());
        QVERIFY2(r.err.contains("not a regular file; refusing to read it"), r.err.constData());
        QVERIFY(!QFile::exists(m_dir + "/out.safetensors"));
    }

    void aFolderWithoutACheckpointSaysWhatWasLookedFor_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::newRow("inspect") << QStringList{"inspect", "notes"};
        QTest::newRow("export") << QStringList{"export", "-q", "notes", "out"};
        QTest::newRow("stats") << QStringList{"stats", "-q", "notes"};
        QTest::newRow("diff") << QStringList{"diff", "-q", "notes", "ck"};
    }

    void aFolderWithoutACheckpointSaysWhatWasLookedFor()
    {
        QFETCH(QStringList, args);
        QDir().mkpath(m_dir + "/notes");
        QFile f(m_dir + "/notes/README.txt");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a checkpoint");
        f.close();
        const Run r = runCkpt(args, m_dir);
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY2(r.err.startsWith("ckpt: error: notes: no checkpoint found in this folder; looked for "),
                 r.err.constData());
        QVERIFY2(r.err.contains("DeepSpeed"), r.err.constData());
        QVERIFY(!r.err.contains("is a directory"));
        QVERIFY(!QFileInfo::exists(m_dir + "/out"));
    }

    void aRerunRemovesTheTemporariesOfAKilledRun_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("partial");
        QTest::newRow("file export") << "model.pt"
                                     << "out/model.safetensors"
                                     << "out/.model.safetensors";
        QTest::newRow("checkpoint export") << "ck"
                                           << "out"
                                           << "out/.model.safetensors";
    }

    void aRerunRemovesTheTemporariesOfAKilledRun()
    {
        QFETCH(QString, input);
        QFETCH(QString, output);
        QFETCH(QString, partial);
        // What a kill -9 leaves: a temporary named after a writer whose PID is gone.
        const pid_t gone = ::fork();
        if (gone == 0) ::_exit(0);
        ::waitpid(gone, nullptr, 0);
        char host[256] = {};
        ::gethostname(host, sizeof host - 1);
        QString hostName = QString::fromLatin1(host).replace(QRegularExpression("[^A-Za-z0-9._]"), "_");
        const QString stale = partial + ".ckpt-partial-" + hostName + "-" + QString::number(gone);
        QDir().mkpath(m_dir + "/out");
        QFile f(m_dir + "/" + stale);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(4096, 'x'));
        f.close();
        const Run r = runCkpt({"export", "-q", input, output}, m_dir);
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.contains("ckpt: removed stale partial output " + stale.toUtf8()), r.err.constData());
        QVERIFY(!QFile::exists(m_dir + "/" + stale));
        QVERIFY(QDir(m_dir + "/out").entryList({"*.ckpt-partial-*"}, QDir::Files | QDir::Hidden).isEmpty());
        QVERIFY(QFile::exists(m_dir + "/out/model.safetensors"));
    }

    void aFailedExportRemovesTheFolderItCreated()
    {
        // A checkpoint with a truncated rank file: the export fails after creating its folder.
        const QString rank = m_dir + "/ck/global_step4/mp_rank_00_model_states.pt";
        QVERIFY(QFile::resize(rank, QFileInfo(rank).size() / 2));
        const Run r = runCkpt({"export", "-q", "ck", "new/out"}, m_dir);
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(!QFileInfo::exists(m_dir + "/new"));
    }
};

QTEST_GUILESS_MAIN(TestInputSafety)
#include "tst_input_safety.moc"
