// Every damaged file ends in one clear Error naming the file and the problem, quickly and in
// bounded memory; hostile-but-valid pickles (billion laughs, cycles) open with aliases.
#include "ops/export.h"
#include "ops/inspect.h"
#include "ops/scan.h"
#include "testutil.h"

#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>

using namespace ckpt;

// Scanning a damaged file's pickles ends as expect.json's "scan" says (the generator says why for
// each): one Error naming the file, a report that names the pickle it could not read to its end,
// or a whole read where the damage is outside the pickles. Never a crash, never a clean report of
// a pickle that broke.
void checkScan(const std::string& path, const std::string& name, const QString& expected)
{
    if (expected == "error") {
        try {
            const ops::ScanReport r = ops::scanFile(path);
            QFAIL(("scan read a file whose pickles cannot be read: " + name).c_str());
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(name) != std::string::npos, e.what());
        }
        return;
    }
    const ops::ScanReport r = ops::scanFile(path);
    QVERIFY2(r.file.find(name) != std::string::npos, r.file.c_str());
    if (expected == "unfinished") {
        QVERIFY2(!r.errors.empty(), "a pickle that broke part-way was reported as read to its end");
        QVERIFY2(r.errors.front().find("truncated") != std::string::npos, r.errors.front().c_str());
    } else {
        QCOMPARE(expected, QStringLiteral("read"));
        QVERIFY2(r.errors.empty(), r.errors.empty() ? "" : r.errors.front().c_str());
    }
}

class TestBadInput : public QObject
{
    Q_OBJECT
private slots:
    void corrupt_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("error");
        QTest::addColumn<QString>("scan");
        const auto exp = testutil::readJson(testutil::dataDir() + "/corrupt/expect.json");
        QVERIFY(exp.size() >= 30);
        for (auto it = exp.begin(); it != exp.end(); ++it)
            QTest::newRow(it.key().c_str())
                << QString::fromStdString(it.key()) << it.value()["exit"].get<int>()
                << QString::fromStdString(it.value().value("error", ""))
                << QString::fromStdString(it.value().at("scan").get<std::string>());
    }

    void corrupt()
    {
        QFETCH(QString, name);
        QFETCH(int, exitCode);
        QFETCH(QString, error);
        QFETCH(QString, scan);
        const std::string path = testutil::dataDir() + "/corrupt/" + name.toStdString();
        checkScan(path, name.toStdString(), scan);
        if (exitCode == 0) {
            const ops::FileListing listing = ops::listFile(path);
            QVERIFY2(listing.entries.size() < 10000, "a shared object was expanded, not listed as an alias");
            QVERIFY2(std::any_of(listing.entries.begin(), listing.entries.end(),
                                 [](const torch::Entry& e) { return e.kind == torch::EntryKind::Alias; }),
                     "no entry of a file that shares objects is an alias");
            return;
        }
        try {
            ops::listFile(path);
            QFAIL("inspect accepted a damaged file");
        } catch (const Error& e) {
            const std::string what = e.what();
            QVERIFY2(what.find(error.toStdString()) != std::string::npos, what.c_str());
            QVERIFY2(what.find(name.toStdString()) != std::string::npos,
                     ("message must name the file: " + what).c_str());
            QVERIFY(what.find('\n') == std::string::npos);
        }
        // export refuses too and leaves nothing behind; scan never crashes.
        QTemporaryDir dir;
        ops::CancelToken cancel;
        QVERIFY_THROWS_EXCEPTION(
            Error,
            ops::exportFileToSafetensors(path, dir.filePath("x.safetensors").toStdString(), {}, {}, cancel));
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 0);
    }

    void truncatedAtEveryPoint()
    {
        // Every prefix of two real files (zip and legacy) fails cleanly or, at full length, opens.
        QTemporaryDir dir;
        for (const char* src : {"/torch/torch-2.x/views.pt", "/torch/torch-1.13/views_legacy.pt"}) {
            QFile f(QString::fromStdString(testutil::dataDir() + src));
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray all = f.readAll();
            const std::string cut = dir.filePath("cut.pt").toStdString();
            for (qsizetype n = 0; n < all.size(); n += 7) {
                QFile out(QString::fromStdString(cut));
                QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
                out.write(all.left(n));
                out.close();
                QVERIFY_THROWS_EXCEPTION(Error, ops::listFile(cut));
            }
        }
    }

    void flippedBytesNeverCrash()
    {
        // Deterministic single-byte corruptions of a real file: each either opens or throws Error.
        QFile f(QString::fromStdString(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt"));
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray all = f.readAll();
        QTemporaryDir dir;
        const std::string path = dir.filePath("flip.pt").toStdString();
        int opened = 0, refused = 0;
        for (qsizetype i = 0; i < all.size(); i += 3) {
            QByteArray b = all;
            b[i] = char(b[i] ^ 0x5A);
            QFile out(QString::fromStdString(path));
            QVERIFY(out.open(QIODevice::WriteOnly | QIODevice::Truncate));
            out.write(b);
            out.close();
            try {
                ops::listFile(path);
                ++opened;
            } catch (const Error&) {
                ++refused;
            }
        }
        QVERIFY(opened > 0 && refused > 0);
    }

    // Content no sniffer recognises is tried as a legacy file last; when that fails too, its
    // reason used to be replaced by a generic message.
    void lastResortParseErrorIsKept()
    {
        const std::string path = testutil::dataDir() + "/corrupt/random.bin";
        try {
            ops::listFile(path);
            QFAIL("random bytes were accepted");
        } catch (const Error& e) {
            const std::string what = e.what();
            QCOMPARE(e.file(), path);
            QVERIFY2(what.find("not a PyTorch checkpoint") != std::string::npos, what.c_str());
            QVERIFY2(what.find("unknown opcode") != std::string::npos, what.c_str());
        }
    }
};

QTEST_APPLESS_MAIN(TestBadInput)
#include "tst_bad_input.moc"
