// screenshots OUT_DIR PALETTE SUFFIX: the window's scenes after a user's steps, each saved as
// OUT_DIR/<scene>SUFFIX.png, for docs/screenshots and for looking at (tools/screenshots/take.sh
// runs it in light and dark, English and Chinese). The language comes from CKPT_LANG.
#include "cast.h"
#include "compare_window.h"
#include "details_pane.h"
#include "export_dialog.h"
#include "io/mapped_file.h"
#include "io/zip_reader.h"
#include "main_window.h"
#include "open_url_dialog.h"
#include "ops/universal.h"
#include "slim_dialog.h"
#include "theme.h"
#include "universal_dialog.h"
#include "verify_dialog.h"

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QMenuBar>
#include <QTemporaryDir>
#include <QTimer>
#include <QTranslator>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

using namespace ckpt;

namespace {

QString data(const char* rel)
{
    return QStringLiteral(CKPT_TEST_DATA) + QLatin1Char('/') + QLatin1String(rel);
}

// Runs the event loop until `signal` of `sender` fires (or `ms` pass); then lets the window paint.
template <typename Signal>
bool waitFor(const typename QtPrivate::FunctionPointer<Signal>::Object* sender, Signal signal, int ms = 60000)
{
    QEventLoop loop;
    bool fired = false;
    QObject::connect(sender, signal, &loop, [&] {
        fired = true;
        loop.quit();
    });
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
    return fired;
}

void settle(int ms = 300)
{
    QEventLoop loop;
    QTimer::singleShot(ms, &loop, &QEventLoop::quit);
    loop.exec();
}

bool openAndWait(app::MainWindow& w, const QString& path)
{
    w.open(path);
    return waitFor(&w, &app::MainWindow::loaded);
}

// A safetensors file of layers.N.mlp/attn weights, float32 or bf16 (rounded as torch's .to()).
void writeSafetensors(const QString& path, const QStringList& names, qint64 n, bool bf16)
{
    const int es = bf16 ? 2 : 4;
    QJsonObject header;
    for (int i = 0; i < names.size(); ++i)
        header.insert(names[i], QJsonObject{{QStringLiteral("dtype"),
                                             bf16 ? QStringLiteral("BF16") : QStringLiteral("F32")},
                                            {QStringLiteral("shape"), QJsonArray{double(n)}},
                                            {QStringLiteral("data_offsets"),
                                             QJsonArray{double(i * n * es), double((i + 1) * n * es)}}});
    QByteArray h = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (h.size() % 8)
        h += ' ';
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return;
    const quint64 len = quint64(h.size());
    f.write(reinterpret_cast<const char*>(&len), 8);
    f.write(h);
    for (int i = 0; i < names.size(); ++i)
        for (qint64 j = 0; j < n; ++j) {
            const float v = std::sin(float(j) * 0.01f + float(i + 1)) * float(1 + i % 3);
            if (bf16) {
                const uint16_t b = gpu::floatToBFloat16(v);
                f.write(reinterpret_cast<const char*>(&b), 2);
            } else {
                f.write(reinterpret_cast<const char*>(&v), 4);
            }
        }
}

bool copyTree(const QString& from, const QString& to)
{
    QDir().mkpath(to);
    for (const QString& e : QDir(from).entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
        const QString s = from + QLatin1Char('/') + e, d = to + QLatin1Char('/') + e;
        if (QFileInfo(s).isDir() ? !copyTree(s, d) : !QFile::copy(s, d)) return false;
    }
    return true;
}

class Shooter
{
public:
    Shooter(QString dir, QString suffix) : m_dir(std::move(dir)), m_suffix(std::move(suffix)) {}

    void save(QWidget* w, const char* scene)
    {
        settle();
        const QString path =
            m_dir + QLatin1Char('/') + QLatin1String(scene) + m_suffix + QStringLiteral(".png");
        if (!w->grab().save(path)) {
            std::fprintf(stderr, "screenshots: cannot write %s\n", qPrintable(path));
            m_failed = true;
        } else {
            std::printf("%s\n", qPrintable(path));
        }
    }
    bool failed() const { return m_failed; }

private:
    QString m_dir, m_suffix;
    bool m_failed = false;
};

app::MainWindow* window()
{
    auto* w = new app::MainWindow;
    w->resize(1280, 800);
    w->show();
    return w;
}

// Export starts from the tag chosen in the tree and keeps to its checkpoint when the window
// opens another (issue 21, items 1 and 2).
void exportSelectedTag(Shooter& s)
{
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, data("deepspeed/zero2_bf16_w2"));
    w->select(QStringLiteral("global_step2"));
    app::ExportDialog* d = w->openExportDialog();
    d->setOutputFolder(QDir::tempPath() + QStringLiteral("/export"));
    openAndWait(*w, data("deepspeed/zero3_fp32_w2"));
    d->resize(640, d->sizeHint().height());
    s.save(d, "export-selected-tag");
}

// One torch.save file exports in the window (item 7).
void exportFile(Shooter& s)
{
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, data("torch/torch-2.x/state_dict.pt"));
    app::ExportDialog* d = w->openExportDialog();
    d->resize(640, d->sizeHint().height());
    s.save(d, "export-file");
}

// A failed opening over an open file: its tree and its warning stay, the failure says so (item 5).
void openFailed(Shooter& s)
{
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, data("torch/torch-2.x/dangerous.pt"));
    openAndWait(*w, data("corrupt/short_storage.pt"));
    s.save(w.get(), "open-failed");
}

// A moment of a parameter with its values, statistics and partition table (item 4).
void optimizerState(Shooter& s)
{
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, data("deepspeed/zero2_bf16_w4"));
    w->select(QStringLiteral("global_step4/parameters/embed.weight/exp_avg"));
    w->details()->computeStatistics();
    waitFor(w->details(), &app::DetailsPane::statisticsReady);
    s.save(w.get(), "optimizer-state");
}

// A tag overview in plain words (item 14), and a broken tag that says why (item 12).
void overviews(Shooter& s, const QString& tmp)
{
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, data("deepspeed/zero2_bf16_w2"));
    w->select(QStringLiteral("global_step4"));
    s.save(w.get(), "overview-zero2");
    const QString broken = tmp + QStringLiteral("/broken");
    copyTree(data("deepspeed/zero2_bf16_w2"), broken);
    QFile::resize(broken + QStringLiteral("/global_step2/mp_rank_00_model_states.pt"), 100);
    openAndWait(*w, broken);
    w->select(QStringLiteral("global_step2"));
    s.save(w.get(), "broken-tag");
}

// A Hugging Face Trainer run folder: its checkpoints as tags, the training chart of its
// trainer_state.json log with the checkpoints marked (issue 27).
void trainingRun(Shooter& s)
{
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, data("trainer/gpt2_zero2_fp32_w2"));
    w->select(QStringLiteral("checkpoint-2"));
    s.save(w.get(), "training-run");
}

// A Universal folder: the tied weight an alias, each lane of the map named by its parameter
// (item 13).
void universal(Shooter& s, const QString& tmp)
{
    const std::string out = (tmp + QStringLiteral("/uni/global_step4_universal")).toStdString();
    ops::UniversalOptions o;
    o.injectMissingState = true;
    ops::universal(data("deepspeed/zero2_bf16_w2").toStdString(), out, o, {}, {});
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, QString::fromStdString(out));
    w->select(QStringLiteral("global_step4_universal"));
    s.save(w.get(), "universal");
}

// Verify... on a run whose rank file had a byte flipped on disk: the table marks that file
// damaged, naming the record whose CRC-32 no longer matches (issue 39).
void verifyDamaged(Shooter& s, const QString& tmp)
{
    const QString ck = tmp + QStringLiteral("/verify/zero2_bf16_w2");
    copyTree(data("deepspeed/zero2_bf16_w2"), ck);
    const QString victim =
        ck + QStringLiteral("/global_step4/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt");
    // A byte of its largest record (the fp32 partition): the tag still opens, only its CRC tells.
    const io::ZipReader zip(io::MappedFile::open(victim.toStdString()));
    const io::ZipEntry* largest = nullptr;
    for (const auto& e : zip.entries())
        if (!largest || e.size > largest->size) largest = &e;
    QFile f(victim);
    if (!largest || !f.open(QIODevice::ReadWrite)) return;
    f.seek(qint64(largest->dataOffset + largest->size / 2));
    char c = 0;
    f.getChar(&c);
    f.seek(qint64(largest->dataOffset + largest->size / 2));
    f.putChar(char(c ^ 0x5a));
    f.close();
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, ck);
    app::VerifyDialog* d = w->openVerifyDialog(true);
    d->start();
    waitFor(d, &app::VerifyDialog::finished);
    s.save(d, "verify-damaged");
    d->close();
    // The window marks the damaged file in its tree, the problem as its tooltip.
    w->select(QStringLiteral("global_step4/rank files/bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"));
    s.save(w.get(), "verify-damaged-tree");
}

// Long names elided in the middle, every column in view at 1280 px (item 11).
void longNames(Shooter& s, const QString& tmp)
{
    const QString f = tmp + QStringLiteral("/long-names.safetensors");
    writeSafetensors(
        f,
        {QStringLiteral("model.layers.0.self_attention.query_key_value_projection_with_a_very_long_"
                        "descriptive_name.weight"),
         QStringLiteral("model.layers.0.mlp.dense_h_to_4h.weight"), QStringLiteral("lm_head.weight")},
        4096, false);
    std::unique_ptr<app::MainWindow> w(window());
    openAndWait(*w, f);
    w->select(QStringLiteral("model.layers.0.mlp.dense_h_to_4h.weight"));
    s.save(w.get(), "long-names");
}

// An fp32 checkpoint against its bf16 copy: compared, "dtype changed" beside the numbers, the
// heatmap coloured and marked (item 9); histogram ticks (item 15).
void compareDtype(Shooter& s, const QString& tmp)
{
    QStringList names;
    for (int l = 0; l < 6; ++l)
        for (const char* m : {"attn.weight", "mlp.weight", "norm.weight"})
            names << QStringLiteral("layers.%1.%2").arg(l).arg(QLatin1String(m));
    names << QStringLiteral("embed.weight");
    const QString a = tmp + QStringLiteral("/fp32.safetensors"),
                  b = tmp + QStringLiteral("/bf16.safetensors");
    writeSafetensors(a, names, 2000, false);
    writeSafetensors(b, names, 2000, true);
    app::CompareWindow w;
    w.resize(1280, 800);
    w.show();
    w.start(a, b);
    if (!w.done()) waitFor(&w, &app::CompareWindow::finished);
    w.selectTensor(QStringLiteral("layers.2.mlp.weight"));
    s.save(&w, "compare-dtype");
}

// A DeepSpeed run in an S3 bucket (moto, started by take.sh, which names it in
// CKPT_SCREENSHOT_S3): the Open URL dialog as typed, then the window open on it (issue 26).
void openUrlS3(Shooter& s)
{
    const QString url = qEnvironmentVariable("CKPT_SCREENSHOT_S3");
    if (url.isEmpty()) return;
    std::unique_ptr<app::MainWindow> w(window());
    app::OpenUrlDialog* d = w->openUrlDialog();
    d->resize(620, d->sizeHint().height());
    d->setUrl(QStringLiteral("hf://zero2-bf16")); // refused, in the engine's words
    s.save(d, "open-url-refused");
    d->setUrl(url);
    s.save(d, "open-url-dialog");
    d->accept();
    if (!waitFor(w.get(), &app::MainWindow::loaded))
        std::fprintf(stderr, "screenshots: %s did not open\n", qPrintable(url));
    w->select(QStringLiteral("global_step4/parameters/embed.weight"));
    s.save(w.get(), "open-url-s3");

    // Slim and Convert to Universal on it: the URL is the input, the output a local folder.
    app::SlimDialog* slim = w->openSlimDialog(url);
    if (!slim->hasPrediction()) waitFor(slim, &app::SlimDialog::predicted);
    s.save(slim, "slim-url");
    slim->close();
    w->select(QStringLiteral("global_step4"));
    for (QAction* a : w->menuBar()->findChildren<QAction*>())
        if (a->text() == app::MainWindow::tr("Convert to &Universal...")) a->trigger();
    if (auto* u = w->findChild<app::UniversalDialog*>()) {
        s.save(u, "universal-url");
        u->close();
    } else {
        std::fprintf(stderr, "screenshots: no Convert to Universal for %s\n", qPrintable(url));
    }
}

} // namespace

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(
        QStringLiteral("CheckpointStudioScreenshots")); // not the user's recent list
    if (argc != 4 || !app::applyPalette(QString::fromLocal8Bit(argv[2]))) {
        std::fprintf(stderr, "usage: screenshots OUT_DIR light|dark SUFFIX\n");
        return 2;
    }
    QTranslator translator;
    const QString lang = qEnvironmentVariable("CKPT_LANG", QStringLiteral("en"));
    if (translator.load(QLocale(lang), QStringLiteral("checkpoint-studio"), QStringLiteral("_"),
                        QStringLiteral(":/i18n")))
        QApplication::installTranslator(&translator);
    QTemporaryDir tmp;
    Shooter s(QString::fromLocal8Bit(argv[1]), QString::fromLocal8Bit(argv[3]));
    // CKPT_SCENES="a,b": only the scenes whose functions are named (all when unset).
    const QStringList only = qEnvironmentVariable("CKPT_SCENES").split(QLatin1Char(','), Qt::SkipEmptyParts);
    const auto run = [&](const char* name, const std::function<void()>& scene) {
        if (only.isEmpty() || only.contains(QLatin1String(name))) scene();
    };
    run("exportSelectedTag", [&] { exportSelectedTag(s); });
    run("exportFile", [&] { exportFile(s); });
    run("openFailed", [&] { openFailed(s); });
    run("optimizerState", [&] { optimizerState(s); });
    run("overviews", [&] { overviews(s, tmp.path()); });
    run("universal", [&] { universal(s, tmp.path()); });
    run("longNames", [&] { longNames(s, tmp.path()); });
    run("compareDtype", [&] { compareDtype(s, tmp.path()); });
    run("openUrlS3", [&] { openUrlS3(s); });
    run("trainingRun", [&] { trainingRun(s); });
    run("verifyDamaged", [&] { verifyDamaged(s, tmp.path()); });
    return s.failed() ? 1 : 0;
}
