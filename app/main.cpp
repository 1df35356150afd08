// checkpoint-studio: the desktop application. Thin: translations, the window, and the
// --screenshot mode used by tests, docs and the README.
#include "export_dialog.h"
#include "main_window.h"
#include "tree_model.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QLibraryInfo>
#include <QLocale>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <QTranslator>
#include <cstdio>

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("CheckpointStudio"));
    QApplication::setApplicationName(QStringLiteral("checkpoint-studio"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

    // Language: the settings override ("language" = "zh_CN", "en"), else the system locale.
    QString lang = QSettings().value(QStringLiteral("language"), QLocale::system().name()).toString();
    if (qEnvironmentVariableIsSet("CKPT_LANG")) lang = qEnvironmentVariable("CKPT_LANG");
    QTranslator translator;
    if (translator.load(QLocale(lang), QStringLiteral("checkpoint-studio"), QStringLiteral("_"),
                        QStringLiteral(":/i18n")))
        QApplication::installTranslator(&translator);

    QCommandLineParser cli;
    cli.setApplicationDescription(
        QApplication::translate("main", "Inspect, consolidate and convert training checkpoints"));
    cli.addHelpOption();
    cli.addVersionOption();
    QCommandLineOption shot(
        QStringLiteral("screenshot"),
        QApplication::translate("main", "Save a screenshot of the window once PATH is open, then exit."),
        QStringLiteral("OUT.png"));
    QCommandLineOption select(QStringLiteral("select"),
                              QApplication::translate("main", "Select this item of the tree first."),
                              QStringLiteral("PATH_IN_TREE"));
    QCommandLineOption shotExport(
        QStringLiteral("screenshot-export"),
        QApplication::translate("main", "Save a screenshot of the export dialog while it runs, then exit."),
        QStringLiteral("OUT.png"));
    cli.addOption(shot);
    cli.addOption(shotExport);
    cli.addOption(select);
    cli.addPositionalArgument(QStringLiteral("path"),
                              QApplication::translate("main", "Checkpoint folder or file to open."));
    cli.process(app);

    ckpt::app::MainWindow window;
    window.show();
    const QStringList args = cli.positionalArguments();
    if (cli.isSet(shot) && args.isEmpty()) { // the start page
        QTimer::singleShot(300, &window,
                           [&] { QApplication::exit(window.grab().save(cli.value(shot)) ? 0 : 1); });
    } else if (cli.isSet(shot)) {
        QObject::connect(&window, &ckpt::app::MainWindow::loaded, &window, [&](bool ok) {
            if (!ok) {
                std::fprintf(stderr, "checkpoint-studio: %s\n", qPrintable(window.lastError()));
                QApplication::exit(1);
                return;
            }
            if (cli.isSet(select) && !window.select(cli.value(select))) {
                std::fprintf(stderr, "checkpoint-studio: no item '%s' in the tree\n",
                             qPrintable(cli.value(select)));
                QApplication::exit(1);
                return;
            }
            QTimer::singleShot(300, &window, [&] {
                const bool saved = window.grab().save(cli.value(shot));
                if (!saved)
                    std::fprintf(stderr, "checkpoint-studio: cannot write %s\n", qPrintable(cli.value(shot)));
                QApplication::exit(saved ? 0 : 1);
            });
        });
    }
    QTemporaryDir exportDir;
    if (cli.isSet(shotExport) && !args.isEmpty()) {
        QObject::connect(&window, &ckpt::app::MainWindow::loaded, &window, [&](bool ok) {
            if (!ok) return QApplication::exit(1);
            auto* d = window.openExportDialog();
            if (!d) return QApplication::exit(1);
            d->setOutputFolder(exportDir.path());
            d->setMaxShardSize(QStringLiteral("1KB"));
            QObject::connect(d, &ckpt::app::ExportDialog::progressed, d, [&, d](int permille) {
                if (permille < 200) return;
                static bool saved = false;
                if (saved) return;
                saved = true;
                d->grab().save(cli.value(shotExport));
                d->cancel();
                QTimer::singleShot(500, qApp, [] { QApplication::exit(0); });
            });
            d->start();
        });
    }
    if (!args.isEmpty()) window.open(args.first());
    return QApplication::exec();
}
