// model/io's promises, one by one: no output on, inside or around an input (by path and by
// inode: symlinks, hard links, bind mounts, `..`), outputs committed all together or removed all
// together, one writer per folder, stale temporaries of dead writers removed, and inputs read
// only when they are regular files (a FIFO would otherwise block forever).
#include "io/input_file.h"
#include "io/mapped_file.h"
#include "io/output.h"
#include "layout/family.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ckpt;
using Shape = io::OutputTransaction::Shape;

namespace {

void writeFile(const QString& path, const QByteArray& bytes)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
}

// What checkOutputOutsideInputs said: empty when the output is allowed.
QString verdict(const std::vector<std::string>& inputs, const std::string& output)
{
    try {
        io::checkOutputOutsideInputs(inputs, output);
        return {};
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

QStringList partialsIn(const QString& dir)
{
    return QDir(dir).entryList({"*.ckpt-partial-*"}, QDir::Files | QDir::Hidden);
}

// A PID that belonged to a process that has exited (the kernel may reuse it, rarely).
pid_t deadPid()
{
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    ::waitpid(pid, nullptr, 0);
    return pid;
}

std::string hostTag()
{
    const std::string name = io::partialName("x"); // ".x.ckpt-partial-HOST-PID"
    return name.substr(2, name.rfind('-') - 1);    // ".ckpt-partial-HOST-"
}

} // namespace

class TestIo : public QObject
{
    Q_OBJECT
    QTemporaryDir m_tmp;
    QString p(const QString& rel) const { return m_tmp.filePath(rel); }
    std::string s(const QString& rel) const { return p(rel).toStdString(); }

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        writeFile(p("in.pt"), "input bytes");
        writeFile(p("ck/latest"), "global_step4");
        writeFile(p("ck/global_step4/mp_rank_00_model_states.pt"), "rank file");
        QVERIFY(QFile::link(p("in.pt"), p("link.pt")));
        QVERIFY(QFile::link(p("ck"), p("ck_link")));
        QCOMPARE(::link(s("in.pt").c_str(), s("hard.pt").c_str()), 0);
        QCOMPARE(::link(s("ck/global_step4/mp_rank_00_model_states.pt").c_str(), s("hard_rank.pt").c_str()),
                 0);
        QDir().mkpath(p("elsewhere"));
    }

    void overlap_data()
    {
        QTest::addColumn<QStringList>("inputs");
        QTest::addColumn<QString>("output");
        QTest::addColumn<QString>("expected"); // a phrase of the refusal, empty when allowed
        QTest::newRow("file on itself") << QStringList{"in.pt"} << "in.pt"
                                        << "is the input";
        QTest::newRow("symlink to the input") << QStringList{"in.pt"} << "link.pt"
                                              << "is the input";
        QTest::newRow("hard link of the input") << QStringList{"in.pt"} << "hard.pt"
                                                << "is the input";
        QTest::newRow("folder on itself") << QStringList{"ck"} << "ck"
                                          << "is the input";
        QTest::newRow("tag folder inside") << QStringList{"ck"} << "ck/global_step4"
                                           << "lies inside";
        QTest::newRow("new folder inside") << QStringList{"ck"} << "ck/new/deeper"
                                           << "lies inside";
        QTest::newRow("inside through a symlink") << QStringList{"ck"} << "ck_link/out"
                                                  << "lies inside";
        QTest::newRow("dot-dot back to it") << QStringList{"ck"} << "ck/missing/../"
                                            << "is the input";
        QTest::newRow("dot-dot into it") << QStringList{"ck"} << "elsewhere/../ck/out"
                                         << "lies inside";
        QTest::newRow("output contains the tag") << QStringList{"ck/global_step4"} << "ck"
                                                 << "contains";
        QTest::newRow("output contains everything") << QStringList{"ck/global_step4"} << "."
                                                    << "contains";
        QTest::newRow("hard link of a rank file") << QStringList{"ck"} << "hard_rank.pt"
                                                  << "hard link";
        QTest::newRow("second of two inputs") << QStringList{"in.pt", "ck"} << "ck/x.safetensors"
                                              << "lies inside";
        QTest::newRow("beside the file") << QStringList{"in.pt"} << "out.safetensors"
                                         << "";
        QTest::newRow("sibling folder") << QStringList{"ck"} << "ck_out"
                                        << "";
        QTest::newRow("name with the input as prefix") << QStringList{"ck"} << "ck2/model"
                                                       << "";
        QTest::newRow("existing unrelated folder") << QStringList{"ck"} << "elsewhere"
                                                   << "";
        QTest::newRow("missing input is not an overlap") << QStringList{"nothing"} << "nothing2"
                                                         << "";
    }

    void overlap()
    {
        QFETCH(QStringList, inputs);
        QFETCH(QString, output);
        QFETCH(QString, expected);
        // Relative paths, as a user types them, resolved from the temporary folder.
        const QString cwd = QDir::currentPath();
        QDir::setCurrent(m_tmp.path());
        std::vector<std::string> in;
        for (const auto& i : inputs)
            in.push_back(i.toStdString());
        const QString v = verdict(in, output.toStdString());
        QDir::setCurrent(cwd);
        if (expected.isEmpty()) {
            QVERIFY2(v.isEmpty(), qPrintable(v));
        } else {
            QVERIFY2(v.contains(expected), qPrintable(v));
            QVERIFY2(v.startsWith(output + ": "), qPrintable(v)); // names the output ...
            QVERIFY2(v.contains(inputs.last()) || v.contains(inputs.first()),
                     qPrintable(v)); // ... and the input
            QVERIFY(!v.contains('\n'));
        }
    }

    // A bind mount gives the input folder a second, unrelated-looking path: only the inode
    // comparison can see through it. Needs a private mount namespace (root in CI).
    void overlapThroughABindMount()
    {
        if (::unshare(CLONE_NEWNS) != 0) QSKIP("no private mount namespace here (unshare -m not permitted)");
        QVERIFY(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0);
        QDir().mkpath(p("mnt"));
        if (::mount(s("ck").c_str(), s("mnt").c_str(), nullptr, MS_BIND, nullptr) != 0)
            QSKIP("bind mounts are not permitted here");
        const QString inside = verdict({s("ck")}, s("mnt/global_step4/out"));
        const QString same = verdict({s("ck")}, s("mnt"));
        const QString around = verdict({s("mnt/global_step4")}, s("ck"));
        ::umount(s("mnt").c_str());
        QVERIFY2(inside.contains("lies inside"), qPrintable(inside));
        QVERIFY2(same.contains("is the input"), qPrintable(same));
        QVERIFY2(around.contains("contains"), qPrintable(around));
    }

    void transactionCommitsEverything()
    {
        const QString out = p("tx_commit/a/b");
        {
            io::OutputTransaction tx({s("ck")}, out.toStdString(), Shape::Folder);
            tx.create("one.bin").write("1", 1);
            tx.create("two.bin").write("22", 2);
            // staged beside the folder, which stays empty until the commit swaps it in whole
            const QString staging = QString::fromStdString(tx.folder());
            QCOMPARE(QFileInfo(staging).dir().absolutePath(), QFileInfo(out).dir().absolutePath());
            QVERIFY(QFileInfo(staging).fileName().startsWith(".b.ckpt-partial-"));
            QCOMPARE(partialsIn(staging).size(), 2);
            QVERIFY(QDir(out).isEmpty(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot));
            tx.commit();
            QVERIFY(!QFileInfo::exists(staging));
        }
        QCOMPARE(QFileInfo(out + "/one.bin").size(), 1);
        QCOMPARE(QFileInfo(out + "/two.bin").size(), 2);
        QVERIFY(partialsIn(out).isEmpty());
        QCOMPARE(QDir(p("tx_commit/a")).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList{"b"});
    }

    void transactionLeavesNothingWhenNotCommitted()
    {
        QDir().mkpath(p("tx_abort"));
        const QString out = p("tx_abort/made/by/us");
        {
            io::OutputTransaction tx({s("ck")}, out.toStdString(), Shape::Folder);
            tx.create("one.bin").write("1", 1);
        }
        QVERIFY(!QFileInfo::exists(p("tx_abort/made"))); // every folder it created is gone
        QVERIFY(QFileInfo::exists(p("tx_abort")));       // the one that existed stays
        {
            io::OutputTransaction tx({}, s("tx_abort/file.safetensors"), Shape::File);
            tx.create().write("x", 1);
        }
        QVERIFY(
            QDir(p("tx_abort")).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).isEmpty());
    }

    void aFailedRenameTakesBackTheOthers()
    {
        const QString out = p("tx_rename");
        io::OutputTransaction tx({}, out.toStdString(), Shape::Folder);
        writeFile(QString::fromStdString(tx.folder()) + "/second.bin/blocker",
                  "a non-empty folder cannot be renamed over");
        tx.create("first.bin").write("1", 1);
        tx.create("second.bin").write("2", 1);
        QVERIFY_THROWS_EXCEPTION(Error, tx.commit());
        QVERIFY(!QFile::exists(out + "/first.bin"));
    }

    // A folder that holds files is refused unless replacing is asked for; nothing is touched.
    void aFolderThatHoldsFilesIsRefused()
    {
        const QString out = p("tx_refuse");
        writeFile(out + "/model-00001-of-00002.safetensors", "old shard 1");
        QDir().mkpath(out + "/empty/sub"); // empty folders hold nothing that could mix
        try {
            io::OutputTransaction tx({}, out.toStdString(), Shape::Folder);
            QFAIL("a folder holding an earlier export was written into");
        } catch (const io::OutputNotEmpty& e) {
            QVERIFY2(QString(e.what()).contains("not empty (1 file: model-00001-of-00002.safetensors)"),
                     e.what());
            QVERIFY2(QString(e.what()).startsWith(out), e.what());
        }
        QCOMPARE(QDir(out).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList({"empty", "model-00001-of-00002.safetensors"}));
        QVERIFY(QDir(p("")).entryList({".tx_refuse*"}, QDir::AllEntries | QDir::Hidden).isEmpty());
        QDir(out).removeRecursively(); // only empty folders: written in place
        QDir().mkpath(out + "/empty/sub");
        {
            io::OutputTransaction tx({}, out.toStdString(), Shape::Folder);
            QVERIFY(!tx.replacing());
            tx.create("model.safetensors").write("new", 3);
            tx.commit();
        }
        QVERIFY(QFile::exists(out + "/model.safetensors"));
    }

    // Replacing: the old output's files (named by the operation) and those the new one writes are
    // replaced, everything else is kept (hard links: no byte copied), and the folder shows the
    // old set until commit() and the new set after it, with nothing left beside it.
    void replacingSwapsTheWholeSet()
    {
        const QString out = p("tx_replace");
        writeFile(out + "/model-00001-of-00002.safetensors", "old shard 1");
        writeFile(out + "/model-00002-of-00002.safetensors", "old shard 2");
        writeFile(out + "/model.safetensors.index.json", "old index");
        writeFile(out + "/config.json", "old config");
        writeFile(out + "/README.md", "the user's");
        writeFile(out + "/notes/a.txt", "the user's too");
        QVERIFY(QFile::link("README.md", out + "/readme-link"));
        struct stat before
        {
        };
        QCOMPARE(::stat((out + "/README.md").toLocal8Bit().constData(), &before), 0);
        const auto old = [](const std::string& n) { return n.rfind("model", 0) == 0; };
        {
            io::OutputTransaction tx({}, out.toStdString(), Shape::Folder,
                                     io::OutputTransaction::Existing::Replace, old);
            QVERIFY(tx.replacing());
            tx.create("model.safetensors").write("new weights", 11);
            tx.create("config.json").write("new config", 10);
            // until commit, the folder is the old set exactly
            QCOMPARE(QDir(out).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).size(), 7);
            QVERIFY(!QFile::exists(out + "/model.safetensors"));
            tx.commit();
            QCOMPARE(tx.files(), (std::vector<std::string>{s("tx_replace/model.safetensors"),
                                                           s("tx_replace/config.json")}));
        }
        QCOMPARE(QDir(out).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot, QDir::Name),
                 QStringList({"README.md", "config.json", "model.safetensors", "notes", "readme-link"}));
        QFile config(out + "/config.json");
        QVERIFY(config.open(QIODevice::ReadOnly));
        QCOMPARE(config.readAll(), QByteArray("new config"));
        QVERIFY(QFile::exists(out + "/notes/a.txt"));
        QCOMPARE(QFile::symLinkTarget(out + "/readme-link"), out + "/README.md");
        struct stat after
        {
        };
        QCOMPARE(::stat((out + "/README.md").toLocal8Bit().constData(), &after), 0);
        QCOMPARE(after.st_ino, before.st_ino); // the same file, not a copy
        QCOMPARE(QDir(p("")).entryList({".tx_replace*"}, QDir::AllEntries | QDir::Hidden), QStringList());
    }

    void replacingNotCommittedLeavesTheOldSet()
    {
        const QString out = p("tx_replace_abort");
        writeFile(out + "/pytorch_model.bin", "old");
        {
            io::OutputTransaction tx({}, out.toStdString(), Shape::Folder,
                                     io::OutputTransaction::Existing::Replace);
            tx.create("model.safetensors").write("new", 3);
        }
        QCOMPARE(QDir(out).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
                 QStringList({"pytorch_model.bin"}));
        QCOMPARE(QDir(p("")).entryList({".tx_replace_abort*"}, QDir::AllEntries | QDir::Hidden),
                 QStringList());
    }

    // kill -9 of a replacing writer leaves its staging folder beside the output (the new set not
    // swapped in, or the old one swapped out); the next writer removes it. Where the two-rename
    // fallback was cut between its renames, the folder is missing and the old set is put back.
    void staleStagingOfDeadWritersIsRemoved()
    {
        const QString out = p("tx_stale_staging");
        const QString host = QString::fromStdString(hostTag());
        const QString staging = p(".tx_stale_staging" + host + QString::number(deadPid()));
        const QString live = p(".tx_stale_staging" + host + QString::number(::getppid()));
        writeFile(staging + "/model.safetensors", "new set, never swapped in");
        writeFile(live + "/model.safetensors", "its writer still runs");
        const QString aside = p(".tx_stale_staging.old" + host + QString::number(deadPid()));
        writeFile(aside + "/model.safetensors", "the old set, moved aside");
        {
            io::OutputTransaction tx({}, out.toStdString(), Shape::Folder,
                                     io::OutputTransaction::Existing::Replace);
            QString notes;
            for (const auto& n : tx.notes())
                notes += QString::fromStdString(n) + "\n";
            QVERIFY2(notes.contains("removed stale partial output " + staging), qPrintable(notes));
            QVERIFY2(notes.contains("restored the earlier output"), qPrintable(notes));
            QVERIFY(tx.replacing()); // the restored old set is what it replaces
            tx.create("model.safetensors").write("newer", 5);
            tx.commit();
        }
        QVERIFY(!QFileInfo::exists(staging));
        QVERIFY(!QFileInfo::exists(aside));
        QVERIFY(QFileInfo::exists(live));
        QFile f(out + "/model.safetensors");
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("newer"));
    }

    void oneWriterPerFolder()
    {
        io::OutputTransaction first({}, s("tx_lock"), Shape::Folder);
        try {
            io::OutputTransaction second({}, s("tx_lock"), Shape::Folder);
            QFAIL("a second writer into the same folder was let in");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("another ckpt job is writing into this folder"), e.what());
        }
        // Nor a single file while a folder output is being written there ...
        QVERIFY_THROWS_EXCEPTION(Error, io::OutputTransaction({}, s("tx_lock/x.safetensors"), Shape::File));
    }

    void singleFilesShareAFolder()
    {
        // ... but single files, each renamed into place whole, may be written side by side.
        io::OutputTransaction a({}, s("tx_shared/a.safetensors"), Shape::File);
        io::OutputTransaction b({}, s("tx_shared/b.safetensors"), Shape::File);
        QVERIFY_THROWS_EXCEPTION(Error, io::OutputTransaction({}, s("tx_shared"), Shape::Folder));
    }

    void staleTemporariesOfDeadWritersAreRemoved()
    {
        const QString out = p("tx_stale");
        const QString dead =
            out + "/.model.safetensors" + QString::fromStdString(hostTag()) + QString::number(deadPid());
        const QString alive =
            out + "/.other.bin" + QString::fromStdString(hostTag()) + QString::number(::getppid());
        const QString foreign = out + "/.model.bin.ckpt-partial-otherhost-1";
        const QString deadNested =
            out + "/tag/.rank.pt" + QString::fromStdString(hostTag()) + QString::number(deadPid());
        writeFile(dead, "left by kill -9");
        writeFile(deadNested, "left by kill -9 in a subfolder (slim keeps the input's tree)");
        writeFile(alive, "its writer still runs");
        writeFile(foreign, "another host's: we cannot know");
        io::OutputTransaction tx({}, out.toStdString(), Shape::Folder);
        QVERIFY(!QFile::exists(dead));
        QVERIFY(!QFile::exists(deadNested));
        QVERIFY(QFile::exists(alive));
        QVERIFY(QFile::exists(foreign));
        QCOMPARE(tx.notes().size(), size_t(2));
        const QString notes = QString::fromStdString(tx.notes()[0] + "\n" + tx.notes()[1]);
        QVERIFY(notes.contains("removed stale partial output " + dead));
        QVERIFY(notes.contains("removed stale partial output " + deadNested));
    }

    void interruptCleanupRemovesLiveTemporaries()
    {
        const QString out = p("tx_signal/new");
        io::OutputTransaction tx({}, out.toStdString(), Shape::Folder);
        tx.create("a.bin").write("a", 1);
        QCOMPARE(partialsIn(QString::fromStdString(tx.folder())).size(), 1);
        io::removeAllTemporaryOutputs(); // what the interrupt handler does on a forced exit
        QVERIFY(!QFileInfo::exists(out));
        QVERIFY(QDir(p("tx_signal")).isEmpty(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot));
    }

    void onlyRegularFilesAreRead()
    {
        QVERIFY(::mkfifo(s("fifo").c_str(), 0644) == 0);
        const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string sp = s("sock");
        QVERIFY(sp.size() < sizeof addr.sun_path);
        std::memcpy(addr.sun_path, sp.c_str(), sp.size() + 1);
        QCOMPARE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        const std::vector<std::pair<std::string, QString>> cases{{s("fifo"), "a FIFO"},
                                                                 {sp, "a UNIX socket"},
                                                                 {"/dev/null", "a character device"},
                                                                 {s("ck"), "a directory"}};
        for (const auto& [path, kind] : cases) {
            // Each would block or misbehave if opened: the refusal comes from its type alone.
            for (int which = 0; which < 3; ++which) {
                try {
                    if (which == 0) ::close(io::openRegularFile(path));
                    if (which == 1) io::MappedFile::open(path);
                    if (which == 2) io::readSmallFile(path, 100);
                    QFAIL(qPrintable("opened " + QString::fromStdString(path)));
                } catch (const Error& e) {
                    QVERIFY2(QString(e.what()).contains("is " + kind), e.what());
                    QVERIFY2(QString(e.what()).contains("not a regular file"), e.what());
                    QVERIFY(QString(e.what()).startsWith(QString::fromStdString(path)));
                }
            }
        }
        ::close(sock);
        QCOMPARE(io::readSmallFile(s("ck/latest"), 100), std::string("global_step4"));
        QVERIFY_THROWS_EXCEPTION(Error, io::readSmallFile(s("ck/latest"), 5)); // bounded
    }

    void aFolderWithNoCheckpointSaysWhatWasLookedFor()
    {
        writeFile(p("notes/README.txt"), "not a checkpoint");
        try {
            layout::familyOf(s("notes"));
            QFAIL("a folder of notes was recognised");
        } catch (const Error& e) {
            const QString m = e.what();
            QVERIFY2(m.contains("no checkpoint found in this folder"), e.what());
            // Every folder family says what it looked for.
            for (const layout::Family* f : layout::families())
                if (f->id() != "file")
                    QVERIFY2(m.contains(QString::fromStdString(std::string(f->lookedFor()))), e.what());
            QVERIFY(!m.contains("is a directory"));
        }
        QCOMPARE(std::string(layout::familyOf(s("ck")).id()), std::string("deepspeed"));
        QCOMPARE(std::string(layout::familyOf(s("in.pt")).id()), std::string("file"));
    }
};

QTEST_GUILESS_MAIN(TestIo)
#include "tst_io.moc"
