// "Convert to Universal..." (app/universal_dialog): the dialog converts a ZeRO tag on a worker
// into exactly what `ckpt universal` writes (every file byte for byte, latest_universal beside
// it), offers to open the result, refuses an output inside the tag with the conversion's reason
// before anything is written, and a cancel leaves nothing behind (a cancel at each point of the
// conversion itself: tst_universal and the fault harness).
#include "ops/universal.h"
#include "testutil.h"
#include "universal_dialog.h"

#include <QApplication>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>

using namespace ckpt;

namespace {

QString fixture(const char* name)
{
    return QString::fromStdString(testutil::dataDir() + "/deepspeed/" + name);
}

// Relative path -> content of every file under `dir`.
QMap<QString, QByteArray> contents(const QString& dir)
{
    QMap<QString, QByteArray> out;
    QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        QFile f(path);
        if (f.open(QIODevice::ReadOnly)) out[QDir(dir).relativeFilePath(path)] = f.readAll();
    }
    return out;
}

bool waitFinished(QSignalSpy& spy)
{
    return spy.count() > 0 || spy.wait(60000);
}

} // namespace

class TestGuiUniversal : public QObject
{
    Q_OBJECT
private slots:
    void convertsAsTheCliDoes_data()
    {
        QTest::addColumn<QString>("checkpoint");
        QTest::newRow("zero2 bf16 w2") << fixture("zero2_bf16_w2");
        QTest::newRow("zero3 fp32 sub-groups") << fixture("zero3_fp32_w2_subgroups");
    }
    void convertsAsTheCliDoes()
    {
        QFETCH(QString, checkpoint);
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        const QString ours = tmp.filePath(QStringLiteral("gui/universal"));
        const QString cli = tmp.filePath(QStringLiteral("cli/universal"));

        ops::UniversalOptions o;
        o.injectMissingState = true;
        ops::universal(checkpoint.toStdString() + "/global_step4", cli.toStdString(), o, {},
                       ops::CancelToken());

        app::UniversalDialog dlg(checkpoint, QStringLiteral("global_step4"));
        QCOMPARE(dlg.input(), checkpoint + QStringLiteral("/global_step4"));
        // Suggested: outside the checkpoint, in a folder of its own beside it, where
        // load_checkpoint(that folder) with load_universal looks (issue 36 #3: it was inside).
        QCOMPARE(dlg.outputFolder(), checkpoint + QStringLiteral("-universal/global_step4_universal"));
        dlg.setOutputFolder(ours);
        QString opened;
        dlg.setOpenResult([&opened](const QString& folder) { opened = folder; });
        QSignalSpy done(&dlg, &app::UniversalDialog::finished);
        QSignalSpy progressed(&dlg, &app::UniversalDialog::progressed);
        dlg.start();
        QVERIFY(dlg.running());
        QVERIFY(waitFinished(done));
        QVERIFY2(done.first().first().toBool(), qPrintable(dlg.outcome().message));
        QVERIFY(progressed.count() > 0);
        QCOMPARE(QString::fromStdString(dlg.outcome().result.output), ours);

        const auto a = contents(ours), b = contents(cli);
        QVERIFY(a.size() > 3);
        QCOMPARE(a.keys(), b.keys());
        for (auto it = a.begin(); it != a.end(); ++it)
            QVERIFY2(it.value() == b.value(it.key()), qPrintable(it.key() + QStringLiteral(" differs")));
        QFile latest(tmp.filePath(QStringLiteral("gui/latest_universal")));
        QVERIFY(latest.open(QIODevice::ReadOnly));
        QCOMPARE(latest.readAll(), QByteArray("universal"));

        auto* open = dlg.findChild<QPushButton*>(QStringLiteral("openResult"));
        QVERIFY(open && !open->isHidden());
        open->click();
        QCOMPARE(opened, ours);
    }

    // The suggested output, taken as it is, writes nothing into the checkpoint: the run's files
    // are as before, and the Universal folder and latest_universal lie in <run>-universal.
    void theSuggestedOutputLiesOutsideTheCheckpoint()
    {
        QTemporaryDir tmp;
        const QString run = tmp.filePath(QStringLiteral("run"));
        std::filesystem::copy(fixture("zero2_bf16_w2").toStdString(), run.toStdString(),
                              std::filesystem::copy_options::recursive);
        const QMap<QString, QByteArray> before = contents(run);
        app::UniversalDialog dlg(run, QStringLiteral("global_step4"));
        QCOMPARE(dlg.outputFolder(), tmp.filePath(QStringLiteral("run-universal/global_step4_universal")));
        QSignalSpy done(&dlg, &app::UniversalDialog::finished);
        dlg.start();
        QVERIFY(waitFinished(done));
        QVERIFY2(done.first().first().toBool(), qPrintable(dlg.outcome().message));
        QCOMPARE(contents(run), before);
        QVERIFY(QFileInfo::exists(tmp.filePath(QStringLiteral("run-universal/latest_universal"))));
    }

    void refusesOutputInsideTheTag()
    {
        QTemporaryDir tmp;
        const QString copy = tmp.filePath(QStringLiteral("ck"));
        QVERIFY(QDir().mkpath(copy + QStringLiteral("/global_step4")));
        for (const QString& f :
             QDir(fixture("zero1_fp32_w2") + QStringLiteral("/global_step4")).entryList(QDir::Files))
            QVERIFY(QFile::copy(fixture("zero1_fp32_w2") + QStringLiteral("/global_step4/") + f,
                                copy + QStringLiteral("/global_step4/") + f));
        app::UniversalDialog dlg(copy, QStringLiteral("global_step4"));
        const QString inside = copy + QStringLiteral("/global_step4/universal");
        dlg.setOutputFolder(inside);
        QSignalSpy done(&dlg, &app::UniversalDialog::finished);
        dlg.start();
        QCOMPARE(done.count(), 1); // refused at once, nothing started
        QVERIFY(!done.first().first().toBool());
        QVERIFY(!dlg.running());
        QVERIFY2(dlg.outcome().message.contains(QStringLiteral("inside")), qPrintable(dlg.outcome().message));
        QVERIFY(!QFileInfo::exists(inside));
        QVERIFY(!QFileInfo::exists(copy + QStringLiteral("/global_step4/latest_universal")));
    }

    void cancelLeavesNothing()
    {
        QTemporaryDir tmp;
        const QString out = tmp.filePath(QStringLiteral("u/universal"));
        app::UniversalDialog dlg(fixture("zero3_bf16_w4"), QStringLiteral("global_step4"));
        dlg.setOutputFolder(out);
        QSignalSpy done(&dlg, &app::UniversalDialog::finished);
        dlg.start();
        QVERIFY(dlg.running());
        dlg.cancel(); // before the worker's first file is complete: the job takes far longer
        QVERIFY(waitFinished(done));
        QVERIFY(!done.first().first().toBool());
        QVERIFY2(dlg.outcome().cancelled, qPrintable(dlg.outcome().message));
        QVERIFY2(contents(tmp.path()).isEmpty(),
                 qPrintable(contents(tmp.path()).keys().join(QLatin1Char(' '))));
        QVERIFY(!QFileInfo::exists(out));
        auto* open = dlg.findChild<QPushButton*>(QStringLiteral("openResult"));
        QVERIFY(open && open->isHidden());
    }
};

QTEST_MAIN(TestGuiUniversal)
#include "tst_gui_universal.moc"
