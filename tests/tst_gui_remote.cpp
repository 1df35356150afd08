// The window on remote checkpoints (issue 26), offscreen, against nginx started here on 127.0.0.1
// (tools/servers/nginx.sh): File > Open URL... opens a URL through the dialog and shows the same
// tree as the local copy it serves, the URL kept whole (title, tree root, recent lists); the
// dialog refuses what the engine cannot open in the engine's words; a recent URL reopens as a URL;
// the opening says what it fetches, and Cancel stops it while its answers are still on their way
// (tools/servers/fault_proxy.py holds them back, and its log says when they went out).
#include "bloat_view.h"
#include "compare_window.h"
#include "export_dialog.h"
#include "io/output.h"
#include "main_window.h"
#include "open_url_dialog.h"
#include "test_servers.h"
#include "torch/torch_writer.h"
#include "tree_model.h"

#include <QAction>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QJsonObject>
#include <QMenu>
#include <QMenuBar>
#include <QPointer>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>

using namespace ckpt;

namespace {

const QString kSource = QStringLiteral(CKPT_SOURCE_DIR);
const QString kData = QStringLiteral(CKPT_TEST_DATA);

bool copyTree(const QString& from, const QString& to)
{
    QDir().mkpath(to);
    for (const QString& e : QDir(from).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString s = from + '/' + e, d = to + '/' + e;
        if (QFileInfo(s).isDir() ? !copyTree(s, d) : !QFile::copy(s, d)) return false;
    }
    return true;
}

// Every row under `parent`, depth first, as its columns' texts: what the user reads.
void rows(const QAbstractItemModel& m, const QModelIndex& parent, QStringList& out, int depth = 0)
{
    for (int r = 0; r < m.rowCount(parent); ++r) {
        QStringList cells;
        for (int c = 0; c < m.columnCount(parent); ++c)
            cells << m.index(r, c, parent).data().toString();
        out << QString(depth, ' ') + cells.join(" | ");
        rows(m, m.index(r, 0, parent), out, depth + 1);
    }
}

// A torch.save file whose tensor bytes lie beyond what opening it fetches (its head and tail
// windows): two float32 tensors of 1 MiB, written by our own verified writer.
void writeBigTorchFile(const QString& path)
{
    std::vector<torch::OutTensor> tensors;
    for (const char* name : {"a.weight", "b.weight"})
        tensors.push_back(
            {name, torch::DType::Float32, {512, 512}, 1u << 20, [](uint64_t at, uint64_t n, uint8_t* d) {
                 for (uint64_t i = 0; i < n; ++i)
                     d[i] = uint8_t((at + i) * 7);
             }});
    io::OutputTransaction tx({}, path.toStdString(), io::OutputTransaction::Shape::File);
    io::CancelToken cancel;
    torch::writeTorchZip(tx.create(), tensors, {}, "archive", {}, cancel);
    tx.commit();
}

QStringList treeBelowRoot(const app::MainWindow& w)
{
    QStringList out;
    rows(*w.model(), w.model()->index(0, 0), out);
    return out;
}

} // namespace

class TestGuiRemote : public QObject
{
    Q_OBJECT

    QTemporaryDir m_tmp;
    QString m_www;
    int m_port = 0, m_proxyPort = 0;
    std::unique_ptr<QProcess> m_nginx, m_proxy;
    QString m_skip;

    QString url(const QString& rel, int port = 0) const
    {
        return QString("http://127.0.0.1:%1/%2").arg(port ? port : m_port).arg(rel);
    }
    QList<QJsonObject> proxied(bool held) const
    {
        QList<QJsonObject> log = testservers::proxyLog(m_tmp.filePath("proxy.log"));
        log.removeIf([held](const QJsonObject& o) {
            return o["path"].toString().startsWith("/__fault__") || o["held"].toBool() != held;
        });
        return log;
    }
    void requireNginx()
    {
        if (!m_skip.isEmpty()) QSKIP(qPrintable(m_skip));
    }
    // Through the dialog, as a user does: typed, then Open.
    bool openThroughDialog(app::MainWindow& w, const QString& u)
    {
        app::OpenUrlDialog* d = w.openUrlDialog();
        d->setUrl(u);
        QPushButton* open = d->buttons()->button(QDialogButtonBox::Open);
        if (!open->isEnabled()) return false;
        QSignalSpy loaded(&w, &app::MainWindow::loaded);
        QTest::mouseClick(open, Qt::LeftButton);
        return loaded.wait(60000) && loaded.first().first().toBool();
    }

private slots:
    void initTestCase();
    void cleanupTestCase()
    {
        testservers::stop(m_proxy);
        testservers::stop(m_nginx);
        // The pool's threads fetched through libcurl (OpenSSL underneath): they end here, not
        // after OpenSSL's exit-time cleanup, which would leave their per-thread error state
        // behind (a LeakSanitizer report in the ASan run, depending on the exit order).
        QThreadPool::globalInstance()->waitForDone();
    }
    void openUrlShowsTheLocalTree_data();
    void openUrlShowsTheLocalTree();
    void theDialogRefusesWhatCannotBeOpened();
    void recentUrlsReopenAsUrls();
    void cancelStopsAUrlOpeningInFlight();
    void bloatAndCompareTakeUrls();
    void cancelStopsAnExportInFlight();
};

void TestGuiRemote::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true); // the user's recent lists stay alone
    QVERIFY(m_tmp.isValid());
    qputenv("NO_PROXY", "127.0.0.1,localhost");
    qputenv("no_proxy", "127.0.0.1,localhost");
    m_www = m_tmp.filePath("www");
    QVERIFY(copyTree(kData + "/deepspeed/zero2_fp32_w1", m_www + "/ds"));
    QDir().mkpath(m_www + "/torch");
    QVERIFY(QFile::copy(kData + "/torch/torch-2.x/nested.pt", m_www + "/torch/nested.pt"));
    writeBigTorchFile(m_www + "/torch/big.pt");
    m_nginx = testservers::startNginx(kSource, m_tmp.filePath("nginx"), m_www, m_port, m_skip);
    if (!m_nginx && qEnvironmentVariable("CI") == "true")
        QFAIL("nginx is not installed (tools/install-deps.sh)");
    if (!m_nginx) return;
    QVERIFY2(m_skip.isEmpty(), qPrintable(m_skip));
    m_proxy =
        testservers::startFaultProxy(kSource, url({}).chopped(1), m_tmp.filePath("proxy.log"), m_proxyPort);
    QVERIFY2(m_proxy, "the fault proxy did not start");
}

void TestGuiRemote::openUrlShowsTheLocalTree_data()
{
    QTest::addColumn<QString>("rel");
    QTest::newRow("DeepSpeed tag folder") << "ds/global_step2/";
    QTest::newRow("torch.save file") << "torch/nested.pt";
}

// Every row below the root, every column, as the local open shows it; the root and the title
// name the URL.
void TestGuiRemote::openUrlShowsTheLocalTree()
{
    requireNginx();
    QFETCH(QString, rel);
    app::MainWindow remote;
    remote.show();
    QVERIFY(openThroughDialog(remote, url(rel)));
    QCOMPARE(remote.model()->index(0, 0).data().toString(), url(rel));
    QVERIFY2(remote.windowTitle().contains(url(rel)), qPrintable(remote.windowTitle()));

    app::MainWindow local;
    QSignalSpy loaded(&local, &app::MainWindow::loaded);
    local.open(m_www + '/' + (rel.endsWith('/') ? rel.chopped(1) : rel));
    QVERIFY(loaded.wait(60000) && loaded.first().first().toBool());
    const QStringList want = treeBelowRoot(local);
    QVERIFY(want.size() > 3);
    QCOMPARE(treeBelowRoot(remote), want);
}

void TestGuiRemote::theDialogRefusesWhatCannotBeOpened()
{
    app::OpenUrlDialog d({});
    QPushButton* open = d.buttons()->button(QDialogButtonBox::Open);
    QVERIFY(!open->isEnabled()); // nothing typed
    d.setUrl("hf://justorg");
    QVERIFY(!open->isEnabled());
    // The engine's own message, naming the URL.
    QVERIFY2(d.problem().contains("hf://ORG/REPO[@REV]/PATH") && d.problem().contains("hf://justorg"),
             qPrintable(d.problem()));
    // gs:// and hf:// are served now (issue 26): accepted as they are typed.
    for (const char* served : {"gs://bucket/run", "hf://org/repo@main/model.safetensors"}) {
        d.setUrl(served);
        QVERIFY2(d.problem().isEmpty() && open->isEnabled(), served);
    }
    d.setUrl("/data/run");
    QVERIFY2(d.problem().contains("/data/run is not a URL"), qPrintable(d.problem()));
    d.setUrl("http://");
    QVERIFY2(d.problem().contains("names no host"), qPrintable(d.problem()));
    QVERIFY(!open->isEnabled());
    d.accept(); // refused, not closed
    QCOMPARE(d.result(), int(QDialog::Rejected));
    d.setUrl("  s3://bucket/run/global_step2 ");
    QVERIFY(open->isEnabled());
    QCOMPARE(d.url(), QString("s3://bucket/run/global_step2"));
}

// A URL opened is first in the dialog's list and in File > Open Recent, from where it opens as
// the URL, not as a local path made of it.
void TestGuiRemote::recentUrlsReopenAsUrls()
{
    requireNginx();
    const QString u = url("torch/nested.pt?v=1&w=2"); // nginx serves the file; '&' must show as itself
    app::MainWindow w;
    QVERIFY(openThroughDialog(w, url("ds/global_step2/")));
    QVERIFY(openThroughDialog(w, u));
    QCOMPARE(app::OpenUrlDialog::recentUrls().mid(0, 2), QStringList({u, url("ds/global_step2/")}));
    app::OpenUrlDialog* d = w.openUrlDialog();
    QCOMPARE(d->field()->itemText(0), u);
    d->reject();

    w.closeCheckpoint();
    QMenu* recent = nullptr;
    for (QMenu* m : w.menuBar()->findChildren<QMenu*>())
        if (m->title() == app::MainWindow::tr("Open &Recent")) recent = m;
    QVERIFY(recent);
    emit recent->aboutToShow(); // the list is made when the menu opens
    QAction* item = nullptr;
    for (QAction* a : recent->actions())
        if (a->text().endsWith(' ' + QString(u).replace("&", "&&"))) item = a;
    QVERIFY(item);
    QSignalSpy loaded(&w, &app::MainWindow::loaded);
    item->trigger();
    QVERIFY(loaded.wait(60000) && loaded.first().first().toBool());
    QCOMPARE(w.model()->index(0, 0).data().toString(), u);
}

// The opening's first requests are held by the proxy: the status bar says what is fetched, and
// Cancel ends the opening before any answer went out; what the window showed stays, and the
// same URL opens once the server answers again.
void TestGuiRemote::cancelStopsAUrlOpeningInFlight()
{
    requireNginx();
    app::MainWindow w;
    QVERIFY(openThroughDialog(w, url("torch/nested.pt")));
    const QString u = url("ds/global_step2/", m_proxyPort);
    QFile::resize(m_tmp.filePath("proxy.log"), 0);
    QVERIFY(testservers::setFaults(m_proxyPort, "delay_ms=6000"));
    QSignalSpy progressed(&w, &app::MainWindow::openProgressed);
    QSignalSpy loaded(&w, &app::MainWindow::loaded);
    w.open(u);
    QTRY_VERIFY_WITH_TIMEOUT(!proxied(true).isEmpty(), 60000); // the server has the request
    QTRY_VERIFY_WITH_TIMEOUT(!progressed.isEmpty(), 60000);
    QVERIFY2(progressed.last().at(1).toString().startsWith("fetching"),
             qPrintable(progressed.last().at(1).toString()));
    w.cancelOpen();
    QVERIFY(loaded.wait(60000));
    QCOMPARE(loaded.first().first().toBool(), false);
    QCOMPARE(w.lastError(), app::MainWindow::tr("Opening cancelled"));
    QVERIFY2(proxied(false).isEmpty(), "the opening waited for its answers");
    QCOMPARE(w.model()->index(0, 0).data().toString(), url("torch/nested.pt")); // still shown
    QVERIFY(testservers::setFaults(m_proxyPort, ""));
    QTRY_VERIFY_WITH_TIMEOUT(proxied(false).size() >= proxied(true).size(), 30000); // held ones went out
    loaded.clear();
    w.open(u);
    QVERIFY(loaded.wait(60000) && loaded.first().first().toBool());
    QCOMPARE(w.model()->index(0, 0).data().toString(), u);
}

// What the window does with what it shows works on a URL as on the local copy: the Bloat view of
// a remote file (the URL kept, not made a local path) and a comparison of two remote tags.
void TestGuiRemote::bloatAndCompareTakeUrls()
{
    requireNginx();
    app::MainWindow w;
    const auto bloatOf = [&](const QString& path) {
        QSignalSpy analysed(w.bloatView(), &app::BloatView::analysed);
        w.showBloat(path);
        const bool ok = analysed.wait(60000) && analysed.last().first().toBool();
        return std::make_pair(ok, w.bloatView()->result());
    };
    const auto [remoteOk, remote] = bloatOf(url("torch/nested.pt"));
    QVERIFY(remoteOk);
    QCOMPARE(w.bloatView()->target(), url("torch/nested.pt"));
    const auto [localOk, local] = bloatOf(m_www + "/torch/nested.pt");
    QVERIFY(localOk);
    QVERIFY(local.storageBytes > 0);
    QCOMPARE(remote.storageBytes, local.storageBytes);
    QCOMPARE(remote.usedBytes, local.usedBytes);
    QCOMPARE(remote.roleBytes, local.roleBytes);

    const auto compare = [&](const QString& a, const QString& b) {
        app::CompareWindow* c = w.openCompare(a, b);
        if (!c->done()) QSignalSpy(c, &app::CompareWindow::finished).wait(60000);
        const QByteArray table = c->shownTable(true);
        c->close();
        return std::make_pair(c->outcome().ok(), table);
    };
    const auto [urlsOk, urlsTable] = compare(url("ds/global_step2/"), url("ds/global_step4/"));
    QVERIFY(urlsOk);
    const auto [pathsOk, pathsTable] = compare(m_www + "/ds/global_step2", m_www + "/ds/global_step4");
    QVERIFY(pathsOk);
    QVERIFY(pathsTable.size() > 100);
    QCOMPARE(urlsTable, pathsTable);
}

// The export of a remote file, cancelled while the proxy holds its tensor bytes: the dialog says
// cancelled, no answer had gone out when it did, and nothing is written. Its suggested output
// is local (outputs never go to a URL).
void TestGuiRemote::cancelStopsAnExportInFlight()
{
    requireNginx();
    app::MainWindow w;
    QVERIFY(openThroughDialog(w, url("torch/big.pt", m_proxyPort)));
    QPointer<app::ExportDialog> d = w.openExportDialog();
    QVERIFY(d && d->singleFile());
    QCOMPARE(d->outputFolder(), QDir::home().filePath("big.safetensors"));
    QTemporaryDir out;
    d->setOutputFolder(out.filePath("big.safetensors"));
    QFile::resize(m_tmp.filePath("proxy.log"), 0);
    QVERIFY(testservers::setFaults(m_proxyPort, "delay_ms=6000"));
    QSignalSpy done(d.data(), &app::ExportDialog::finished);
    d->start();
    QTRY_VERIFY_WITH_TIMEOUT(!proxied(true).isEmpty(), 60000); // tensor bytes asked for, held
    d->cancel();
    QVERIFY(done.wait(60000));
    QVERIFY2(d->outcome().cancelled, qPrintable(d->outcome().message));
    QVERIFY2(proxied(false).isEmpty(), "the export waited for its answers");
    QCOMPARE(QDir(out.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
             QStringList());
    QVERIFY(testservers::setFaults(m_proxyPort, ""));
    QTRY_VERIFY_WITH_TIMEOUT(proxied(false).size() >= proxied(true).size(), 30000); // held ones went out
}

QTEST_MAIN(TestGuiRemote)
#include "tst_gui_remote.moc"
