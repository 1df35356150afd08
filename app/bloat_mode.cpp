#include "bloat_mode.h"

#include "bloat_view.h"
#include "main_window.h"
#include "slim_dialog.h"
#include "tree_model.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTextDocumentFragment>
#include <QTimer>
#include <cstdio>
#include <functional>
#include <memory>

namespace ckpt::app {

namespace {

void fail(const QString& why)
{
    std::fprintf(stderr, "checkpoint-studio: %s\n", qPrintable(why));
    QApplication::exit(1);
}

void save(QWidget* w, const QString& file, const std::function<void()>& then)
{
    // A moment for the last layout and paint before the grab.
    QTimer::singleShot(300, w, [w, file, then] {
        if (!w->grab().save(file)) return fail(QStringLiteral("cannot write %1").arg(file));
        then();
    });
}

// The Slim dialog on PATH, run to the end into a temporary folder, then saved.
void slimShot(MainWindow& window, const QString& path, const QString& file)
{
    auto tmp = std::make_shared<QTemporaryDir>();
    SlimDialog* d = window.openSlimDialog(path);
    d->setOutput(QDir(tmp->path()).filePath(QFileInfo(SlimDialog::defaultOutput(path)).fileName()));
    QObject::connect(d, &SlimDialog::finished, d, [d, file, tmp](bool ok) {
        if (!ok) return fail(d->outcome().message);
        save(d, file, [] { QApplication::exit(0); });
    });
    // Started once the prediction is in, so the dialog shows both.
    auto go = [d] { QTimer::singleShot(0, d, [d] { d->start(); }); };
    if (d->hasPrediction())
        go();
    else
        QObject::connect(d, &SlimDialog::predicted, d, go, Qt::SingleShotConnection);
}

} // namespace

int runBloatMode(MainWindow& window, const QString& path, const QString& windowShot,
                 const QString& slimShotFile, const QString& treePath)
{
    const QString target = absoluteLocation(path);
    window.showBloat(target);
    // The tree shows PATH too when it can: a folder it cannot open (Hugging Face shards) is fine
    // here, the Bloat view does not need the tree.
    auto loadDone = std::make_shared<bool>(false);
    QObject::connect(&window, &MainWindow::loaded, &window, [&window, target, treePath, loadDone](bool ok) {
        *loadDone = true;
        if (!ok) {
            if (!treePath.isEmpty()) return fail(window.lastError());
            window.statusBar()->clearMessage();
            return;
        }
        // Select the node the view shows, so the tree says what it is.
        const Snapshot* s = window.model()->snapshot();
        std::vector<const Node*> stack{s->root.get()};
        while (!stack.empty()) {
            const Node* n = stack.back();
            stack.pop_back();
            const bool container =
                n == s->root.get() || n->kind == NodeKind::Tag || n->kind == NodeKind::RankFile;
            if (container && window.diskPathOf(n) == target) {
                window.select(QString::fromStdString(n->path));
                break;
            }
            if (n->kind != NodeKind::RankFile)
                for (const auto& c : n->children)
                    stack.push_back(c.get());
        }
        window.bloatView()->setTarget(target); // whatever opening and selecting did to it
    });
    window.open(treePath.isEmpty() ? target : treePath);
    if (windowShot.isEmpty() && slimShotFile.isEmpty()) return QApplication::exec();

    // Wait until the tree is loaded and the view has settled on PATH, then take the pictures.
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    auto* poll = new QTimer(&window);
    poll->setInterval(100);
    QObject::connect(poll, &QTimer::timeout, &window, [=, &window] {
        BloatView* v = window.bloatView();
        if (clock->elapsed() > 120000) {
            poll->stop();
            return fail(QStringLiteral("the Bloat view of %1 took too long").arg(target));
        }
        if (!*loadDone || v->busy() || v->target() != target) return;
        poll->stop();
        if (!v->hasResult()) return fail(QTextDocumentFragment::fromHtml(v->summaryText()).toPlainText());
        auto slim = [&window, target, slimShotFile] {
            if (slimShotFile.isEmpty()) return QApplication::exit(0);
            slimShot(window, target, slimShotFile);
        };
        if (windowShot.isEmpty()) return slim();
        save(&window, windowShot, slim);
    });
    poll->start();
    return QApplication::exec();
}

} // namespace ckpt::app
