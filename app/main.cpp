// checkpoint-studio: the desktop application. Thin: translations, desktop integration (icon,
// desktop file name, palette), the window, and the --screenshot mode used by tests, docs and the
// README.
#include "bloat_mode.h"
#include "compare_window.h"
#include "export_dialog.h"
#include "io/interrupt.h"
#include "main_window.h"
#include "preferences.h"
#include "preferences_dialog.h"
#include "theme.h"
#include "tree_model.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QLibraryInfo>
#include <QLocale>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QTemporaryDir>
#include <QTimer>
#include <QTranslator>
#include <cstdio>

namespace {

QIcon applicationIcon()
{
    QIcon icon;
    for (int size : {16, 32, 48, 64, 128, 256})
        icon.addFile(QStringLiteral(":/icons/app/checkpoint-studio-%1.png").arg(size), QSize(size, size));
    return icon;
}

// The options of the window's command line (besides --help, --version and PATH).
struct Options
{
    QCommandLineOption shot, select, shotExport, palette, bloat, compare, tagA, tagB, moments,
        shotPreferences;
};

Options addOptions(QCommandLineParser& cli)
{
    const QCommandLineOption shot(
        QStringLiteral("screenshot"),
        QApplication::translate("main", "Save a screenshot of the window once PATH is open, then exit."),
        QStringLiteral("OUT.png"));
    const QCommandLineOption select(QStringLiteral("select"),
                                    QApplication::translate("main", "Select this item of the tree first."),
                                    QStringLiteral("PATH_IN_TREE"));
    const QCommandLineOption shotExport(
        QStringLiteral("screenshot-export"),
        QApplication::translate("main", "Save a screenshot of the export dialog while it runs, then exit."),
        QStringLiteral("OUT.png"));
    const QCommandLineOption palette(
        QStringLiteral("palette"),
        QApplication::translate("main", "Colours: system (follow the desktop), light or dark. The default "
                                        "is the \"palette\" setting, else system."),
        QStringLiteral("system|light|dark"));
    const QCommandLineOption bloat(
        QStringLiteral("bloat"),
        QApplication::translate("main",
                                "Show where the bytes of this file or folder go (the Bloat view). With "
                                "--screenshot, save the window once that is computed; with "
                                "--screenshot-export, the Slim dialog once it has slimmed it into a "
                                "temporary folder."),
        QStringLiteral("PATH"));
    const QCommandLineOption compare(
        QStringLiteral("compare"),
        QApplication::translate(
            "main", "Compare A with the checkpoint, tag folder or file B given as the path (the "
                    "comparison window). With --screenshot, save it once computed; with --select, "
                    "that tensor selected."),
        QStringLiteral("A"));
    const QCommandLineOption tagA(
        QStringLiteral("tag-a"),
        QApplication::translate("main", "With --compare: the tag of A (default: its latest)."),
        QStringLiteral("TAG"));
    const QCommandLineOption tagB(
        QStringLiteral("tag-b"),
        QApplication::translate("main", "With --compare: the tag of B (default: its latest)."),
        QStringLiteral("TAG"));
    const QCommandLineOption moments(
        QStringLiteral("moments"),
        QApplication::translate("main", "With --compare: the optimizer moments (exp_avg, exp_avg_sq) too."));
    const QCommandLineOption shotPreferences(
        QStringLiteral("screenshot-preferences"),
        QApplication::translate("main", "Save a screenshot of the Preferences dialog, then exit."),
        QStringLiteral("OUT.png"));
    cli.addOptions({palette, shot, shotExport, select, bloat, compare, tagA, tagB, moments, shotPreferences});
    return {shot, select, shotExport, palette, bloat, compare, tagA, tagB, moments, shotPreferences};
}

// Names, icon, language and the bundled example's place: what every window of the process uses.
void setUpApplication(QTranslator& translator)
{
    QApplication::setOrganizationName(QStringLiteral("CheckpointStudio"));
    QApplication::setApplicationName(QStringLiteral("checkpoint-studio"));
    QApplication::setApplicationVersion(QStringLiteral(CKPT_VERSION));
    QGuiApplication::setDesktopFileName(QStringLiteral("checkpoint-studio"));
    QApplication::setWindowIcon(applicationIcon()); // every window and dialog

    // Language: the settings override ("language" = "zh_CN", "en"), else the system locale.
    QString lang = QSettings().value(QStringLiteral("language"), QLocale::system().name()).toString();
    if (qEnvironmentVariableIsSet("CKPT_LANG")) lang = qEnvironmentVariable("CKPT_LANG");
    if (translator.load(QLocale(lang), QStringLiteral("checkpoint-studio"), QStringLiteral("_"),
                        QStringLiteral(":/i18n")))
        QApplication::installTranslator(&translator);
    QGuiApplication::setApplicationDisplayName(QApplication::translate("main", "Checkpoint Studio"));

    // Installed (bin/ beside share/), the bundled example is the packaged copy; in a build tree,
    // the source tree's (MainWindow::exampleCheckpoint). CKPT_EXAMPLE still overrides both.
    const QString installedExample =
        QDir::cleanPath(QCoreApplication::applicationDirPath() +
                        QStringLiteral("/../share/checkpoint-studio/examples/deepspeed-zero2-bf16-w2"));
    if (!qEnvironmentVariableIsSet("CKPT_EXAMPLE") && QFileInfo(installedExample).isDir())
        qputenv("CKPT_EXAMPLE", QFile::encodeName(installedExample));
}

// --palette, else the "palette" setting, else the desktop's. False for a value we do not know.
bool choosePalette(const QCommandLineParser& cli, const Options& o)
{
    if (cli.isSet(o.palette)) {
        if (!ckpt::app::applyPalette(cli.value(o.palette))) {
            std::fprintf(stderr, "checkpoint-studio: --palette takes system, light or dark, not '%s'\n",
                         qPrintable(cli.value(o.palette)));
            return false;
        }
    } else if (!ckpt::app::applyPalette(QSettings().value(QStringLiteral("palette")).toString())) {
        ckpt::app::applyPalette(QStringLiteral("system")); // no setting, or one we do not know
    }

    return true;
}

// --screenshot: the start page at once, or the window once PATH is open (and --select done).
void screenshotWhenReady(ckpt::app::MainWindow& window, const QCommandLineParser& cli, const Options& o)
{
    const QStringList args = cli.positionalArguments();
    if (cli.isSet(o.shot) && args.isEmpty()) { // the start page
        QTimer::singleShot(300, &window, [&window, &cli, &o] {
            QApplication::exit(window.grab().save(cli.value(o.shot)) ? 0 : 1);
        });
    } else if (cli.isSet(o.shot)) {
        QObject::connect(&window, &ckpt::app::MainWindow::loaded, &window, [&window, &cli, &o](bool ok) {
            if (!ok) {
                std::fprintf(stderr, "checkpoint-studio: %s\n", qPrintable(window.lastError()));
                QApplication::exit(1);
                return;
            }
            if (cli.isSet(o.select) && !window.select(cli.value(o.select))) {
                std::fprintf(stderr, "checkpoint-studio: no item '%s' in the tree\n",
                             qPrintable(cli.value(o.select)));
                QApplication::exit(1);
                return;
            }
            QTimer::singleShot(300, &window, [&window, &cli, &o] {
                const bool saved = window.grab().save(cli.value(o.shot));
                if (!saved)
                    std::fprintf(stderr, "checkpoint-studio: cannot write %s\n",
                                 qPrintable(cli.value(o.shot)));
                QApplication::exit(saved ? 0 : 1);
            });
        });
    }
}

// --screenshot-export: the export dialog of PATH once its bytes flow, into `exportDir`.
void screenshotExportDialog(ckpt::app::MainWindow& window, const QString& shot,
                            const QTemporaryDir& exportDir)
{
    // `window` and `exportDir` live in main() until the event loop ends; the path is copied.
    QObject::connect(&window, &ckpt::app::MainWindow::loaded, &window, [&window, &exportDir, shot](bool ok) {
        if (!ok) return QApplication::exit(1);
        auto* d = window.openExportDialog();
        if (!d) return QApplication::exit(1);
        d->setOutputFolder(exportDir.path());
        d->setMaxShardSize(QStringLiteral("1KB"));
        QObject::connect(d, &ckpt::app::ExportDialog::progressed, d, [d, shot](int permille) {
            if (permille < 200) return;
            static bool saved = false;
            if (saved) return;
            saved = true;
            d->grab().save(shot);
            d->cancel();
            QTimer::singleShot(500, qApp, [] { QApplication::exit(0); });
        });
        d->start();
    });
}

} // namespace

int main(int argc, char** argv)
{
    // SIGINT/SIGTERM/SIGHUP quit the window; if a job does not wind down within the grace
    // period, the handler removes its temporary outputs and exits (model/io/interrupt.h).
    // Installed before Qt starts any thread, so that every thread leaves the signals to it.
    ckpt::io::InterruptHandler interrupts("checkpoint-studio", [] {
        if (QCoreApplication* a = QCoreApplication::instance())
            QMetaObject::invokeMethod(a, &QCoreApplication::quit, Qt::QueuedConnection);
    });
    QApplication app(argc, argv);
    QTranslator translator;
    setUpApplication(translator);
    ckpt::app::Preferences::load().applyRemote(); // the environment still wins where it is set
    QCommandLineParser cli;
    cli.setApplicationDescription(
        QApplication::translate("main", "Inspect, consolidate and convert training checkpoints"));
    cli.addHelpOption();
    cli.addVersionOption();
    const Options o = addOptions(cli);
    cli.addPositionalArgument(QStringLiteral("path"),
                              QApplication::translate("main", "Checkpoint folder or file to open."));
    cli.process(app);
    if (!choosePalette(cli, o)) return 2;
    auto exitCode = [&interrupts](int rc) {
        return interrupts.signal() ? ckpt::io::InterruptHandler::exitCode(interrupts.signal()) : rc;
    };
    if (cli.isSet(o.compare)) { // the comparison window alone
        if (cli.positionalArguments().size() != 1) {
            std::fprintf(stderr, "checkpoint-studio: --compare A B takes exactly one more path, B\n");
            return 2;
        }
        const ckpt::app::CompareRequest request{cli.value(o.compare), cli.positionalArguments().first(),
                                                cli.value(o.tagA), cli.value(o.tagB), cli.isSet(o.moments)};
        return exitCode(ckpt::app::runCompareMode(request, cli.value(o.shot), cli.value(o.select)));
    }
    ckpt::app::MainWindow window;
    window.show();
    if (cli.isSet(o.bloat)) // its own event loop: the Bloat view, and its screenshots
        return exitCode(ckpt::app::runBloatMode(window, cli.value(o.bloat), cli.value(o.shot),
                                                cli.value(o.shotExport), cli.positionalArguments().value(0)));
    const QStringList args = cli.positionalArguments();
    if (cli.isSet(o.shotPreferences)) {
        QDialog* d = window.openPreferences();
        QTimer::singleShot(300, d, [d, out = cli.value(o.shotPreferences)] {
            QApplication::exit(d->grab().save(out) ? 0 : 1);
        });
        return exitCode(QApplication::exec());
    }
    screenshotWhenReady(window, cli, o);
    QTemporaryDir exportDir;
    if (cli.isSet(o.shotExport) && !args.isEmpty())
        screenshotExportDialog(window, cli.value(o.shotExport), exportDir);
    if (!args.isEmpty()) window.open(args.first());
    return exitCode(QApplication::exec());
}
