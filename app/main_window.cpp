#include "main_window.h"

#include "name_delegate.h"

#include "bloat_view.h"
#include "compare_window.h"
#include "compute_backend.h"
#include "details_pane.h"
#include "export_dialog.h"
#include "io/location.h"
#include "layout/deepspeed.h"
#include "open_url_dialog.h"
#include "ops/export.h"
#include "preferences_dialog.h"
#include "slim_dialog.h"
#include "theme.h"
#include "tree_model.h"
#include "universal_dialog.h"
#include "verify_dialog.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDir>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolBar>
#include <QTreeView>
#include <QUrl>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace ckpt::app {

namespace {

const QString kOpen = QStringLiteral("open");

// Where a failed opening says so: in the window, red, selectable, never only in the status bar.
QLabel* errorLabel(QWidget* parent)
{
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setStyleSheet(QStringLiteral("QLabel { background: #f8d7da; color: #58151c; padding: 6px; }"));
    l->hide();
    return l;
}

// A path as the user reads it: local ones with the platform's separators, URLs untouched.
QString shown(const QString& path)
{
    return io::isRemotePath(path.toStdString()) ? path : QDir::toNativeSeparators(path);
}

} // namespace

QString MainWindow::documentation()
{
    const QString installed =
        QCoreApplication::applicationDirPath() + QStringLiteral("/../share/doc/checkpoint-studio/README.md");
    for (const QString& p : {installed, QStringLiteral(CKPT_SOURCE_DOCS "/README.md")})
        if (QFileInfo(p).isFile()) return QFileInfo(p).canonicalFilePath();
    return {};
}

QString MainWindow::exampleCheckpoint()
{
    // Installed next to the binary's source tree in a build; override with CKPT_EXAMPLE.
    const QString env = qEnvironmentVariable("CKPT_EXAMPLE");
    if (!env.isEmpty()) return env;
    return QStringLiteral(CKPT_EXAMPLE_DIR);
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Checkpoint Studio"));
    setGuiThread(thread());
    setAcceptDrops(true);
    resize(1280, 800);
    m_model = new TreeModel(this);
    connect(&m_workspace, &Workspace::verificationChanged, m_model,
            [this] { m_model->setDamaged(m_workspace.damagedFiles()); });
    m_proxy = new FilterProxy(this);
    m_proxy->setSourceModel(m_model);
    buildFileMenu();
    buildBloatDock();
    buildHelpMenu();
    m_stack = new QStackedWidget(this);
    m_stack->addWidget(buildStartPage());
    m_stack->addWidget(buildBrowser());
    setCentralWidget(m_stack);
    connectTree();
    buildStatusBar();
    refreshRecent();
    showStartPage();
}

void MainWindow::buildBloatDock()
{
    // The Bloat view: a dock below the tree and the details, wide enough for its bars and its
    // storage table side by side. Hidden until asked for (View menu, toolbar, Ctrl+B): it parses
    // every pickle of what it shows, which is work nobody should pay for unasked.
    m_bloat = new BloatView(m_workspace, this);
    m_bloatDock = new QDockWidget(tr("Bloat"), this);
    m_bloatDock->setObjectName(QStringLiteral("bloat"));
    m_bloatDock->setWidget(m_bloat);
    addDockWidget(Qt::BottomDockWidgetArea, m_bloatDock);
    m_bloatDock->hide();
    QAction* bloatToggle = m_bloatDock->toggleViewAction();
    bloatToggle->setText(tr("&Bloat"));
    bloatToggle->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_B));
    bloatToggle->setToolTip(
        tr("Where the bytes of the selected file, tag or checkpoint go, and how many are wasted"));
    auto* viewMenu = menuBar()->addMenu(tr("&View"));
    viewMenu->addAction(bloatToggle);
    m_toolbar->addAction(bloatToggle);
    m_toolbar->addAction(m_slimAction);
    connect(m_bloatDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (!visible || !m_bloat->target().isEmpty()) return;
        const Node* n = TreeModel::node(m_proxy->mapToSource(m_tree->currentIndex()));
        if (!n && m_model->snapshot()) n = m_model->snapshot()->root.get();
        if (n) m_bloat->setTarget(diskPathOf(n));
    });
    connect(m_bloat, &BloatView::slimRequested, this, [this](const QString& p) { openSlimDialog(p); });
    connect(m_bloat, &BloatView::analysed, this, &MainWindow::updateSlimAction);
    connect(m_bloat, &BloatView::tensorActivated, this, [this](const QString& file, const QString& tensor) {
        if (!selectTensor(file, tensor))
            statusBar()->showMessage(tr("%1 is not open in the tree").arg(QFileInfo(file).fileName()), 5000);
    });
}

QWidget* MainWindow::buildStartPage()
{
    auto* start = new QWidget(this);
    auto* sl = new QVBoxLayout(start);
    // What can be opened, said once, where a new user starts.
    auto* title = new QLabel(
        tr("<h2>Checkpoint Studio</h2><p>Open, or drop here:</p><ul>"
           "<li><b>a run folder</b>: DeepSpeed (with <code>latest</code>), a Hugging Face Trainer output "
           "folder, Composer, PyTorch DCP, a Universal checkpoint (File &gt; Open Folder, Ctrl+Shift+O)</li>"
           "<li><b>one tag</b>: <code>global_step1000/</code>, <code>checkpoint-500/</code></li>"
           "<li><b>a file</b>: <code>.pt</code>, <code>.bin</code>, <code>.safetensors</code>, a Composer "
           "<code>.pt.tar</code> (File &gt; Open File, Ctrl+O)</li>"
           "<li><b>a URL</b>: <code>s3://</code>, <code>gs://</code>, <code>hf://</code>, "
           "<code>https://</code> (File &gt; Open URL, Ctrl+L)</li></ul>"
           "<p>Nothing is ever written into what you open. Recent items:</p>"),
        start);
    title->setWordWrap(true);
    m_recent = new QListWidget(start);
    auto* example = new QPushButton(
        tr("Open the bundled example (a real DeepSpeed run: ZeRO-2, bf16, 2 ranks, 2 tags)"), start);
    m_startError = errorLabel(start);
    sl->addWidget(title);
    sl->addWidget(m_startError);
    sl->addWidget(m_recent, 1);
    sl->addWidget(example);
    connect(example, &QPushButton::clicked, this, [this] { open(exampleCheckpoint()); });
    connect(m_recent, &QListWidget::itemActivated, this, [this](QListWidgetItem* i) { open(i->text()); });
    return start;
}

QWidget* MainWindow::buildBrowser()
{
    auto* browser = new QWidget(this);
    auto* bl = new QVBoxLayout(browser);
    m_banner = new QLabel(browser);
    m_banner->setWordWrap(true);
    m_banner->setStyleSheet(QStringLiteral("QLabel { background: #fff3cd; color: #664d03; padding: 6px; }"));
    m_banner->hide();
    m_error = errorLabel(browser);
    auto* filterRow = new QHBoxLayout;
    m_filter = new QLineEdit(browser);
    m_filter->setPlaceholderText(tr("Filter by name (wildcards, or a regular expression)"));
    m_regex = new QCheckBox(tr("Regular expression"), browser);
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_regex);
    m_tree = new QTreeView(browser);
    m_tree->setModel(m_proxy);
    m_tree->setSortingEnabled(true);
    m_tree->sortByColumn(-1, Qt::AscendingOrder);
    m_tree->setUniformRowHeights(true);
    m_tree->header()->setStretchLastSection(false);
    // A long tensor name keeps what tells it apart (its layer, its projection, its last words),
    // and the other columns stay in view.
    m_tree->setTextElideMode(Qt::ElideMiddle);
    m_tree->setItemDelegateForColumn(0, new NameDelegate(m_tree));
    m_tree->viewport()->installEventFilter(this); // the name column follows the tree's width
    // Two tags selected together are what "Compare" compares.
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_tree, &QWidget::customContextMenuRequested, this, &MainWindow::treeMenu);
    m_details = new DetailsPane(m_workspace, browser);
    connect(m_details, &DetailsPane::parameterClicked, this, [this](const QString& tag, const QString& name) {
        // The tree's name for it (snapshot.cpp): TAG/parameters/NAME.
        const QString path = tag + QStringLiteral("/parameters/") + name;
        if (!m_proxy->mapFromSource(m_model->indexOfPath(path)).isValid()) m_filter->clear();
        select(path);
    });
    auto* split = new QSplitter(browser);
    auto* left = new QWidget(split);
    auto* ll = new QVBoxLayout(left);
    ll->setContentsMargins(0, 0, 0, 0);
    ll->addLayout(filterRow);
    ll->addWidget(m_tree);
    split->addWidget(left);
    split->addWidget(m_details);
    // The tree gets two thirds: its names (model.layers.17.self_attn.q_proj.weight) need the room.
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 1);
    bl->addWidget(m_error);
    bl->addWidget(m_banner);
    bl->addWidget(split, 1);
    return browser;
}

void MainWindow::connectTree()
{
    // An invalid regular expression keeps the previous filter and says why, in red, where the
    // user is typing (it used to be ignored without a word).
    auto applyFilter = [this] {
        const QString error = m_proxy->setPattern(m_filter->text(), m_regex->isChecked());
        m_filter->setToolTip(error);
        m_filter->setStyleSheet(error.isEmpty() ? QString()
                                                : QStringLiteral("QLineEdit { color: #c62828; }"));
        if (!error.isEmpty()) statusBar()->showMessage(error, 8000);
        if (!m_filter->text().isEmpty()) m_tree->expandAll();
    };
    connect(m_filter, &QLineEdit::textChanged, this, applyFilter);
    connect(m_regex, &QCheckBox::toggled, this, applyFilter);
    connect(m_tree->selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this](const QModelIndex& cur) {
                m_details->show(m_model->snapshot(), TreeModel::node(m_proxy->mapToSource(cur)));
                followSelection(TreeModel::node(m_proxy->mapToSource(cur)));
                m_universalAction->setEnabled(universalTag() != nullptr);
            });
    connect(m_tree->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { m_compareTags->setEnabled(selectedTagPaths().size() == 2); });
}

void MainWindow::buildStatusBar()
{
    m_busy = new QProgressBar(this);
    m_busy->setRange(0, 1000);
    m_busy->setMaximumWidth(220);
    m_busy->hide();
    m_cancelOpen = new QPushButton(tr("Cancel"), this);
    m_cancelOpen->hide();
    connect(m_cancelOpen, &QPushButton::clicked, this, &MainWindow::cancelOpen);
    statusBar()->addPermanentWidget(m_busy);
    statusBar()->addPermanentWidget(m_cancelOpen);
    // The device in a word or two, the reason in the tooltip: the whole reason took half the
    // status bar and ran into the messages beside it. Asking the driver may take a while (it loads
    // and initialises), so it is asked on a worker and the label filled in when it answers.
    auto* compute = new QLabel(tr("Compute: ..."), this);
    compute->setContentsMargins(12, 0, 4, 0);
    auto* probe = new QFutureWatcher<QString>(this);
    connect(probe, &QFutureWatcher<QString>::finished, this, [this, compute, probe] {
        m_compute = probe->result();
        compute->setText(tr("Compute: %1").arg(m_compute.section(QStringLiteral(" ("), 0, 0)));
        compute->setToolTip(m_compute);
        probe->deleteLater();
    });
    probe->setFuture(QtConcurrent::run([] { return QString::fromStdString(gpu::autoChoice()); }));
    statusBar()->addPermanentWidget(compute);
}

void MainWindow::buildFileMenu()
{
    // Shortcuts as in every Qt application: the standard key where Qt has one.
    auto* fileMenu = menuBar()->addMenu(tr("&File"));
    auto* openFile = fileMenu->addAction(tr("&Open File..."), this, [this] {
        const QString f = QFileDialog::getOpenFileName(
            this, tr("Open checkpoint file"), QString(),
            tr("Checkpoints (*.pt *.pth *.bin *.ckpt *.safetensors);;All files (*)"));
        if (!f.isEmpty()) open(f);
    });
    openFile->setShortcuts(QKeySequence::Open);
    auto* openFolder = fileMenu->addAction(tr("Open &Folder..."), this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Open checkpoint folder"));
        if (!d.isEmpty()) open(d);
    });
    openFolder->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    auto* openUrl = fileMenu->addAction(tr("Open &URL..."), this, &MainWindow::openUrlDialog);
    openUrl->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L)); // "open location", as browsers say
    openUrl->setToolTip(tr("Open a checkpoint on S3 or an HTTP(S) server, reading only what is shown"));
    m_recentMenu = fileMenu->addMenu(tr("Open &Recent"));
    connect(m_recentMenu, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
    fillRecentMenu();
    m_reloadAction = fileMenu->addAction(tr("Re&load"), this, [this] {
        if (const Snapshot* s = m_model->snapshot()) open(QString::fromStdString(s->path));
    });
    m_reloadAction->setShortcuts(QKeySequence::Refresh);
    m_reloadAction->setToolTip(tr("Read the open checkpoint again from disk (new tags, changed files)"));
    m_reloadAction->setEnabled(false);
    fileMenu->addSeparator();
    m_exportAction = fileMenu->addAction(tr("&Export Model..."), this, &MainWindow::exportModel);
    m_exportAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
    m_exportAction->setEnabled(false);
    m_slimAction = fileMenu->addAction(tr("&Slim..."), this, [this] {
        // The Bloat view's file or folder when it is shown, else the selection's.
        QString path = m_bloatDock->isVisible() ? m_bloat->target() : QString();
        if (path.isEmpty()) path = diskPathOf(TreeModel::node(m_proxy->mapToSource(m_tree->currentIndex())));
        if (path.isEmpty() && m_model->snapshot()) path = QString::fromStdString(m_model->snapshot()->path);
        if (!path.isEmpty()) openSlimDialog(path);
    });
    m_slimAction->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    m_slimAction->setToolTip(tr("Write a copy whose storages keep only the bytes their tensors view"));
    m_slimAction->setEnabled(false);
    m_verifyAction = fileMenu->addAction(tr("&Verify..."), this, [this] { openVerifyDialog(); });
    m_verifyAction->setToolTip(
        tr("Prove the checkpoint whole: every file there, every record's checksum, a manifest's hashes"));
    m_verifyAction->setEnabled(false);
    m_universalAction =
        fileMenu->addAction(tr("Convert to &Universal..."), this, &MainWindow::convertToUniversal);
    m_universalAction->setToolTip(tr(
        "Write the selected ZeRO tag as a DeepSpeed Universal checkpoint, to resume on another GPU count"));
    m_universalAction->setEnabled(false);
    fileMenu->addAction(tr("&Bloat of a Folder..."), this, [this] {
        // Any folder, a checkpoint or not: a Hugging Face folder of bloated .bin shards is the
        // usual case, and the tree cannot open that.
        const QString d = QFileDialog::getExistingDirectory(this, tr("Folder to analyse"));
        if (!d.isEmpty()) showBloat(d);
    });
    fileMenu->addAction(tr("&Compare..."), this, &MainWindow::askCompare)
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_D)); // "diff", as `ckpt diff`
    m_compareTags = fileMenu->addAction(tr("Compare Selected &Tags"), this, [this] {
        const QStringList tags = selectedTagPaths();
        if (tags.size() == 2) openCompare(tags[0], tags[1]);
    });
    m_compareTags->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_D));
    m_compareTags->setToolTip(
        tr("Select two tags in the tree (Ctrl+click) to compare them tensor by tensor"));
    m_compareTags->setEnabled(false);
    fileMenu->addSeparator();
    auto* find = fileMenu->addAction(tr("&Find..."), this, [this] {
        m_stack->setCurrentIndex(m_model->snapshot() ? 1 : 0);
        m_filter->setFocus(Qt::ShortcutFocusReason);
        m_filter->selectAll();
    });
    find->setShortcuts(QKeySequence::Find);
    find->setToolTip(tr("Filter the tree by name"));
    m_closeAction = fileMenu->addAction(tr("&Close Checkpoint"), this, &MainWindow::closeCheckpoint);
    // Ctrl+W on every desktop, whatever the platform theme lists (some list Ctrl+F4 alone).
    QList<QKeySequence> closeKeys = QKeySequence::keyBindings(QKeySequence::Close);
    if (!closeKeys.contains(QKeySequence(Qt::CTRL | Qt::Key_W)))
        closeKeys.prepend(QKeySequence(Qt::CTRL | Qt::Key_W));
    m_closeAction->setShortcuts(closeKeys);
    m_closeAction->setEnabled(false);
    fileMenu->addAction(tr("Start &Page"), this, &MainWindow::showStartPage);
    fileMenu->addSeparator();
    auto* preferences = fileMenu->addAction(tr("&Preferences..."), this, &MainWindow::openPreferences);
    preferences->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Comma));
    preferences->setMenuRole(QAction::PreferencesRole);
    auto* quit = fileMenu->addAction(tr("&Quit"), qApp, &QApplication::quit);
    quit->setShortcuts(QKeySequence::Quit);
    m_toolbar = addToolBar(tr("Main"));
    m_toolbar->addAction(openFolder);
    m_toolbar->addAction(openFile);
    m_toolbar->addAction(openUrl);
    m_toolbar->addAction(m_exportAction);
}

void MainWindow::fillRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recent")).toStringList();
    for (int i = 0; i < recent.size(); ++i) {
        // &1..&9 as in every recent list; the path as it was opened, its own '&' (a URL's query)
        // shown, not taken for a mnemonic.
        const QString text = QString(recent[i]).replace(QLatin1Char('&'), QStringLiteral("&&"));
        const QString label = i < 9 ? QStringLiteral("&%1 %2").arg(i + 1).arg(text) : text;
        m_recentMenu->addAction(label, this, [this, p = recent[i]] { open(p); });
    }
    if (recent.isEmpty()) m_recentMenu->addAction(tr("No recent checkpoints"))->setEnabled(false);
    m_recentMenu->addSeparator();
    m_recentMenu
        ->addAction(tr("Clear the List"), this,
                    [this] {
                        QSettings().remove(QStringLiteral("recent"));
                        refreshRecent();
                    })
        ->setEnabled(!recent.isEmpty());
}

void MainWindow::buildHelpMenu()
{
    auto* help = menuBar()->addMenu(tr("&Help"));
    auto* keys = help->addAction(tr("&Keyboard Shortcuts"), this, [this] {
        QMessageBox::information(this, tr("Keyboard Shortcuts"), shortcutsText());
    });
    keys->setShortcuts(QKeySequence::HelpContents);
    help->addAction(tr("&Documentation"), this, [this] {
        const QString readme = documentation();
        if (readme.isEmpty() || !QDesktopServices::openUrl(QUrl::fromLocalFile(readme)))
            QMessageBox::information(this, tr("Documentation"),
                                     tr("The documentation is the README and the docs/ folder of the source, "
                                        "installed in /usr/share/doc/checkpoint-studio."));
    });
    help->addAction(tr("&About Checkpoint Studio"), this,
                    [this] { QMessageBox::about(this, tr("About Checkpoint Studio"), aboutText()); });
    help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
}

QString MainWindow::shortcutsText() const
{
    // Made from the actions themselves, so that it cannot disagree with them.
    QString html = QStringLiteral("<table>");
    for (QMenu* menu : menuBar()->findChildren<QMenu*>())
        for (QAction* a : menu->actions())
            if (!a->shortcut().isEmpty())
                html += QStringLiteral("<tr><td><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>")
                            .arg(a->shortcut().toString(QKeySequence::NativeText).toHtmlEscaped(),
                                 a->text().remove(QLatin1Char('&')).toHtmlEscaped());
    return html + QStringLiteral("</table>");
}

QString MainWindow::aboutText() const
{
    // What a company's legal review asks first: our licence, and those of what the binary links.
    return tr("<h3>Checkpoint Studio %1</h3><p>Inspect, export, convert and compare DeepSpeed, Composer, "
              "PyTorch DCP and Hugging Face checkpoints without Python. No pickled code is ever run, and "
              "nothing is written into a checkpoint.</p><p>Compute: %2<br>Qt %3</p>"
              "<p>Licensed under the Apache License 2.0. Uses Qt (LGPL-3.0, linked dynamically), "
              "libarchive (BSD-2-Clause), libcurl (curl licence), OpenSSL (Apache-2.0), zlib (Zlib), xxHash "
              "(BSD-2-Clause), expat (MIT), nlohmann/json (MIT) and CLI11 (BSD-3-Clause). The licence texts "
              "are in the package's copyright file.</p>")
        .arg(QStringLiteral(CKPT_VERSION), m_compute.toHtmlEscaped(), QString::fromLatin1(qVersion()));
}

void MainWindow::closeCheckpoint()
{
    m_workspace.jobs().cancel(kOpen);
    m_workspace.setSnapshot(nullptr);
    m_model->setSnapshot(nullptr);
    m_details->show(nullptr, nullptr);
    m_banner->hide();
    m_error->hide();
    m_bloat->clear();
    for (QAction* a :
         {m_exportAction, m_verifyAction, m_reloadAction, m_closeAction, m_universalAction, m_compareTags})
        a->setEnabled(false);
    updateSlimAction();
    setWindowTitle(tr("Checkpoint Studio"));
    showStartPage();
}

void MainWindow::fitNameColumn()
{
    // The name takes the room the other columns leave, and no less than a readable width (then
    // the tree scrolls sideways): elided in the middle, whole in its tooltip, a 200-character
    // parameter name no longer pushes Bytes and Ranks off screen.
    int others = 0;
    for (int c = 1; c < TreeModel::ColumnCount; ++c)
        others += m_tree->columnWidth(c);
    m_tree->setColumnWidth(0, std::max(200, m_tree->viewport()->width() - others - 2));
}

bool MainWindow::eventFilter(QObject* watched, QEvent* e)
{
    if (watched == m_tree->viewport() && e->type() == QEvent::Resize && m_model->snapshot()) fitNameColumn();
    return QMainWindow::eventFilter(watched, e);
}

void MainWindow::showStartPage()
{
    refreshRecent();
    m_stack->setCurrentIndex(0);
}

namespace {

// A dialog of the window's shown without blocking it: `accepted` gets it when OK is pressed, and it
// deletes itself once closed.
template <typename Dialog, typename F> Dialog* shown(Dialog* d, QObject* context, F accepted)
{
    d->setAttribute(Qt::WA_DeleteOnClose);
    QObject::connect(d, &QDialog::accepted, context, [d, accepted] { accepted(*d); });
    d->open();
    return d;
}

} // namespace

PreferencesDialog* MainWindow::openPreferences()
{
    return shown(new PreferencesDialog(Preferences::load(), this), this,
                 [this](const PreferencesDialog& d) { applyPreferences(d.chosen()); });
}

void MainWindow::applyPreferences(const Preferences& p)
{
    p.save();
    p.applyRemote();
    applyPalette(p.palette);
}

OpenUrlDialog* MainWindow::openUrlDialog()
{
    return shown(new OpenUrlDialog(OpenUrlDialog::recentUrls(), this), this,
                 [this](const OpenUrlDialog& d) { open(d.url()); });
}

void MainWindow::open(const QString& path)
{
    m_pending = absoluteLocation(path);
    m_openCancelled = false;
    m_busy->setValue(0);
    m_busy->setFormat(tr("Reading the layout"));
    m_busy->show();
    m_cancelOpen->show();
    statusBar()->showMessage(tr("Opening %1...").arg(m_pending));
    // Reading pickles and zip directories happens on a worker, never on the GUI thread; an
    // opening still running is cancelled and its result dropped: the latest wins.
    m_workspace.jobs().run(
        kOpen,
        [p = m_pending.toStdString()](const ops::ProgressSink& progress, const ops::CancelToken& cancel) {
            return loadSnapshot(p, progress, &cancel);
        },
        [this](const JobResult<std::shared_ptr<const Snapshot>>& r) { onLoaded(r); },
        [this](const JobProgress& p) {
            m_busy->setValue(p.permille);
            m_busy->setFormat(QStringLiteral("%p%  ") + p.stage);
            emit openProgressed(p.permille, p.stage);
        });
}

void MainWindow::cancelOpen()
{
    // The worker stops at its next file; onLoaded says so. An opening that finished but is not
    // shown yet is dropped too: the user said Cancel, and the tree keeps what it showed.
    m_openCancelled = loading();
    m_workspace.jobs().cancel(kOpen);
    statusBar()->showMessage(tr("Cancelling..."));
}

bool MainWindow::loading() const
{
    return m_workspace.jobs().running(kOpen);
}

void MainWindow::onLoaded(const JobResult<std::shared_ptr<const Snapshot>>& r)
{
    m_busy->hide();
    m_cancelOpen->hide();
    if (r.cancelled || m_openCancelled) { // what the tree showed stays
        m_lastError = tr("Opening cancelled");
        statusBar()->showMessage(m_lastError, 4000);
        emit loaded(false);
        return;
    }
    if (!r.ok() || !*r.value) {
        // The one-line error where the user is looking. What the tree showed stays, with its own
        // warnings, under a banner saying that the new checkpoint failed; with nothing open,
        // the start page says it.
        m_lastError = r.error;
        statusBar()->showMessage(tr("Cannot open: %1").arg(r.error), 8000);
        // The error names the file itself when the path opened is the file at fault: once is enough.
        QString why = r.error;
        if (why.startsWith(m_pending + QStringLiteral(": "))) why = why.mid(m_pending.size() + 2);
        if (const Snapshot* s = m_model->snapshot(); s && m_stack->currentIndex() == 1) {
            m_error->setText(tr("Could not open %1: %2\nStill showing %3.")
                                 .arg(shown(m_pending), why, shown(QString::fromStdString(s->path))));
            m_error->show();
        } else {
            m_startError->setText(tr("Could not open %1: %2").arg(shown(m_pending), r.error));
            m_startError->show();
            showStartPage();
        }
        emit loaded(false);
        return;
    }
    const std::shared_ptr<const Snapshot> snapshot = *r.value;
    m_lastError.clear();
    m_error->hide();
    m_startError->hide();
    const bool wasStartPage = m_stack->currentIndex() == 0;
    m_workspace.setSnapshot(snapshot); // what every view and job of the window now reads
    m_model->setSnapshot(snapshot);
    m_tree->expandToDepth(1);
    for (int c = 1; c < TreeModel::ColumnCount; ++c)
        m_tree->resizeColumnToContents(c);
    // Values can be long reprs (a config string): the column shows their start, the tooltip all.
    m_tree->setColumnWidth(TreeModel::Value, std::min(m_tree->columnWidth(TreeModel::Value), 180));
    m_tree->setColumnWidth(TreeModel::Kind, std::min(m_tree->columnWidth(TreeModel::Kind), 150));
    fitNameColumn();
    m_details->show(snapshot.get(), nullptr);
    if (snapshot->warnings.empty()) {
        m_banner->hide();
    } else {
        QStringList lines;
        for (const auto& w : snapshot->warnings)
            lines << QString::fromStdString(w).toHtmlEscaped();
        m_banner->setText(tr("<b>%n warning(s)</b><br>", nullptr, int(lines.size())) +
                          lines.join(QLatin1String("<br>")));
        m_banner->show();
    }
    // Any checkpoint family exports its model (ops::consolidate reads it from the layout); a
    // single file exports its tensors into one safetensors file.
    m_exportAction->setEnabled(true);
    m_verifyAction->setEnabled(true);
    m_reloadAction->setEnabled(true);
    m_closeAction->setEnabled(true);
    // An export dialog still open reads what it was opened on: it says so.
    for (ExportDialog* d : findChildren<ExportDialog*>())
        d->noteWindowShows(QString::fromStdString(snapshot->path));
    // The Bloat view shows what was opened (from the workspace's parsed files); hidden, it
    // forgets its old target and takes the selection when it is next shown.
    if (m_bloatDock->isVisible())
        m_bloat->setTarget(QString::fromStdString(snapshot->path));
    else
        m_bloat->clear();
    updateSlimAction();
    setWindowTitle(tr("%1 - Checkpoint Studio").arg(QString::fromStdString(snapshot->path)));
    statusBar()->showMessage(tr("Opened %1").arg(QString::fromStdString(snapshot->path)), 5000);
    addRecent(QString::fromStdString(snapshot->path));
    if (io::isRemotePath(snapshot->path)) OpenUrlDialog::addRecentUrl(QString::fromStdString(snapshot->path));
    m_stack->setCurrentIndex(1);
    if (wasStartPage && m_bloatDock->isVisible()) fitBloatDock();
    emit loaded(true);
}

bool MainWindow::select(const QString& treePath)
{
    const QModelIndex src = m_model->indexOfPath(treePath);
    if (!src.isValid()) return false;
    const QModelIndex idx = m_proxy->mapFromSource(src);
    m_tree->expand(idx.parent());
    m_tree->scrollTo(idx);
    m_tree->setCurrentIndex(idx);
    return true;
}

void MainWindow::addRecent(const QString& path)
{
    rememberRecent(QStringLiteral("recent"), path, 10); // URLs too: the list reopens them as URLs
}

void MainWindow::refreshRecent()
{
    m_recent->clear();
    m_recent->addItems(QSettings().value(QStringLiteral("recent")).toStringList());
}

void MainWindow::exportModel()
{
    openExportDialog();
}

ExportDialog* MainWindow::openExportDialog()
{
    const Snapshot* s = m_model->snapshot();
    if (!s) return nullptr;
    if (s->singleFile()) { // every tensor into one safetensors file
        auto* d = new ExportDialog(QString::fromStdString(s->path), {}, {}, this, &m_workspace);
        d->setAttribute(Qt::WA_DeleteOnClose);
        d->show();
        return d;
    }
    // The tag the user chose in the tree (a tag, or anything inside one); else the latest, when it
    // can be read; else the newest that can (an unreadable tag has no model: issue 36).
    QStringList tags;
    QString chosen, newestReadable;
    for (const auto& t : s->tags()) {
        tags << QString::fromStdString(t.name);
        if (t.latest && t.unreadable.empty()) chosen = QString::fromStdString(t.name);
        if (t.unreadable.empty()) newestReadable = QString::fromStdString(t.name);
    }
    if (chosen.isEmpty()) chosen = newestReadable;
    const Node* n = TreeModel::node(m_proxy->mapToSource(m_tree->currentIndex()));
    while (n && n->kind != NodeKind::Tag)
        n = n->parent;
    if (n && n->tag >= 0 && size_t(n->tag) < s->tags().size())
        chosen = QString::fromStdString(s->tags()[size_t(n->tag)].name);
    if (chosen.isEmpty() && !tags.isEmpty()) chosen = tags.back();
    auto* d = new ExportDialog(QString::fromStdString(s->path), tags, chosen, this, &m_workspace);
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->show();
    return d;
}

QString MainWindow::shownError() const
{
    if (!m_error->isHidden()) return m_error->text();
    if (!m_startError->isHidden()) return m_startError->text();
    return {};
}

QString MainWindow::diskPathOf(const Node* n) const
{
    const Snapshot* s = m_model->snapshot();
    if (!s) return {};
    for (; n; n = n->parent) {
        if (n->kind == NodeKind::RankFile && !n->file.empty())
            return absoluteLocation(QString::fromStdString(n->file));
        if (n->kind == NodeKind::Tag && n->tag >= 0 && size_t(n->tag) < s->tags().size())
            return absoluteLocation(QString::fromStdString(s->tags()[size_t(n->tag)].dir));
        if (!n->parent) return QString::fromStdString(s->path);
    }
    return {};
}

void MainWindow::followSelection(const Node* n)
{
    if (!n || !m_bloatDock->isVisible()) return; // hidden, it computes nothing
    const QString path = diskPathOf(n);
    const QString target = m_bloat->target();
    // A file, tag or checkpoint picked in the tree is what the user wants to see; anything
    // inside what is already shown (a parameter, a tensor) keeps the view and, for a tensor,
    // selects its storage.
    const bool container = n->kind == NodeKind::Checkpoint || n->kind == NodeKind::Tag ||
                           n->kind == NodeKind::RankFile || !n->parent;
    const bool inside = !target.isEmpty() && (path == target || path.startsWith(target + QLatin1Char('/')));
    if (container || !inside) m_bloat->setTarget(path);
    if (n->kind == NodeKind::Tensor && n->tensor)
        m_bloat->showTensor(path, QString::fromStdString(n->tensor->tensor.path));
}

void MainWindow::showBloat(const QString& path)
{
    m_bloat->setTarget(path);
    if (!m_bloatDock->isVisible()) {
        m_bloatDock->show();
        fitBloatDock();
    }
    m_bloatDock->raise();
}

void MainWindow::fitBloatDock()
{
    // Below the tree it shares the height; over the start page (a folder the tree cannot open,
    // Hugging Face shards) it is all there is to see.
    resizeDocks({m_bloatDock}, {height() * (m_stack->currentIndex() == 0 ? 7 : 5) / 10}, Qt::Vertical);
}

void MainWindow::updateSlimAction()
{
    m_slimAction->setEnabled(m_model->snapshot() || !m_bloat->target().isEmpty());
}

SlimDialog* MainWindow::openSlimDialog(const QString& path)
{
    // The files the window parsed are not parsed again (a slim of what is open).
    auto* d = new SlimDialog(path, this, &m_workspace);
    d->setAttribute(Qt::WA_DeleteOnClose);
    connect(d, &SlimDialog::openRequested, this,
            [this, input = d->input()](const QString& out) { openSlimResult(input, out); });
    d->show();
    return d;
}

VerifyDialog* MainWindow::openVerifyDialog(bool allTags)
{
    const Snapshot* s = m_model->snapshot();
    if (!s) return nullptr;
    // The tag chosen in the tree (a tag, or anything inside one); else the one `latest` names.
    QString tag;
    const Node* n = TreeModel::node(m_proxy->mapToSource(m_tree->currentIndex()));
    while (n && n->kind != NodeKind::Tag)
        n = n->parent;
    if (!s->singleFile() && n && n->tag >= 0 && size_t(n->tag) < s->tags().size())
        tag = QString::fromStdString(s->tags()[size_t(n->tag)].name);
    auto* d = new VerifyDialog(QString::fromStdString(s->path), tag, this, &m_workspace);
    d->setAttribute(Qt::WA_DeleteOnClose);
    d->setAllTags(allTags);
    // What it finds marks the tree and guards an export of the tag.
    connect(d, &VerifyDialog::finished, this, [this, d] {
        if (d->report()) m_workspace.recordVerification(*d->report());
    });
    d->show();
    return d;
}

void MainWindow::openSlimResult(const QString& input, const QString& output)
{
    // What the tree could open (the checkpoint, a tag of it, a file) opens there, the Bloat view
    // following; a folder the tree cannot open (Hugging Face shards) is shown in the Bloat view.
    const Snapshot* s = m_model->snapshot();
    const QString open = s ? QString::fromStdString(s->path) : QString();
    if (!open.isEmpty() && (input == open || input.startsWith(open + QLatin1Char('/')))) {
        m_bloat->setTarget(output);
        if (!m_bloatDock->isVisible()) showBloat(output);
        this->open(output);
    } else {
        showBloat(output);
    }
}

bool MainWindow::selectTensor(const QString& file, const QString& tensorPath)
{
    const Snapshot* s = m_model->snapshot();
    if (!s) return false;
    const QString want = canonicalLocation(file);
    auto same = [&](const std::string& p) {
        return !want.isEmpty() && canonicalLocation(QString::fromStdString(p)) == want;
    };
    QString treePath;
    if (s->singleFile()) {
        if (same(s->path)) treePath = tensorPath; // a file on its own: its tensors are the tree
    } else {
        // A checkpoint: the tensor lives below the rank-file node of its file (named by snapshot.cpp
        // "TAG/rank files/FILE"), found by walking the tree rather than rebuilding that name.
        std::vector<const Node*> stack{s->root.get()};
        while (!stack.empty() && treePath.isEmpty()) {
            const Node* n = stack.back();
            stack.pop_back();
            if (n->kind == NodeKind::RankFile) {
                if (!n->file.empty() && same(n->file))
                    treePath = QString::fromStdString(n->path) + QLatin1Char('/') + tensorPath;
                continue;
            }
            for (const auto& c : n->children)
                stack.push_back(c.get());
        }
    }
    if (treePath.isEmpty()) return false;
    const QModelIndex src = m_model->indexOfPath(treePath);
    if (!src.isValid()) return false;
    if (!m_proxy->mapFromSource(src).isValid()) m_filter->clear(); // filtered out: show it
    m_stack->setCurrentIndex(1);
    return select(treePath);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e)
{
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e)
{
    const auto urls = e->mimeData()->urls();
    if (urls.isEmpty()) return;
    const QUrl& u = urls.first();
    if (u.isLocalFile())
        open(u.toLocalFile());
    else if (io::isRemotePath(u.toString().toStdString())) // a link dragged from a browser
        open(u.toString());
}

QStringList MainWindow::selectedTagPaths() const
{
    std::vector<const Node*> tags;
    for (const QModelIndex& i : m_tree->selectionModel()->selectedRows()) {
        const Node* n = TreeModel::node(m_proxy->mapToSource(i));
        if (n && n->kind == NodeKind::Tag) tags.push_back(n);
    }
    if (tags.size() != 2) return {};
    // The tree's order is the save order: the earlier tag is A, what changed is B - A.
    if (tags[0]->tag > tags[1]->tag) std::swap(tags[0], tags[1]);
    return {diskPathOf(tags[0]), diskPathOf(tags[1])};
}

CompareWindow* MainWindow::openCompare(const QString& a, const QString& b)
{
    auto* w = new CompareWindow(this, &m_workspace); // the open checkpoint's tags: parsed already
    w->setWindowFlag(Qt::Window);                    // its own top-level window, closed with this one
    w->setAttribute(Qt::WA_DeleteOnClose);
    w->show();
    w->start(a, b);
    return w;
}

void MainWindow::askCompare()
{
    // Prefilled with the selected tags, else the open checkpoint's last two tags.
    QStringList sides = selectedTagPaths();
    const Snapshot* s = m_model->snapshot();
    if (sides.isEmpty() && s && s->tags().size() >= 2)
        sides = {QString::fromStdString(s->tags()[s->tags().size() - 2].dir),
                 QString::fromStdString(s->tags().back().dir)};
    else if (sides.isEmpty() && s)
        sides = {QString::fromStdString(s->path), QString()};
    QString a = sides.value(0), b = sides.value(1);
    // Each side's tag and the moments go through as one request; the open checkpoint's tags are
    // read from it.
    CompareWindow::ask(this, a, b, &m_workspace);
}

void MainWindow::exportTensors(const QString& treePath, const QString& out, bool withMoments)
{
    const Snapshot* s = m_model->snapshot();
    const QModelIndex src = m_model->indexOfPath(treePath);
    const Node* n = TreeModel::node(src);
    if (!s || !n || !heldParameter(*s, *n)) return;
    layout::Tag what = oneParameterTag(*s, *n);
    if (withMoments && n->held == Node::Held::Parameter && size_t(n->tag) < s->moments.size())
        for (const auto& m : s->moments[size_t(n->tag)])
            if (m.name.rfind(n->name + "/", 0) == 0) what.params.push_back(m);
    if (withMoments) what.exportDtype.reset(); // as stored, the master and its moments alike
    statusBar()->showMessage(tr("Writing %1...").arg(out));
    m_workspace.jobs().run(
        QStringLiteral("tensors"),
        [opened = s->opened, what, o = out.toStdString()](const ops::ProgressSink& progress,
                                                          const ops::CancelToken& cancel) {
            const ops::ExportResult r = ops::exportTagTensors(opened, what, o, progress, cancel);
            return tr("Wrote %n tensor(s), %1, to %2", nullptr, int(r.tensors))
                .arg(humanBytes(r.bytes), QString::fromStdString(r.path));
        },
        [this](const JobResult<QString>& r) {
            const QString message = r.ok() ? *r.value : r.cancelled ? tr("Cancelled") : r.error;
            statusBar()->showMessage(message, 8000);
            emit tensorsExported(r.ok(), message);
        });
}

void MainWindow::askExportTensors(const Node* n, bool withMoments)
{
    const QString suggested = QString::fromStdString(n->path).replace(QLatin1Char('/'), QLatin1Char('_')) +
                              QStringLiteral(".safetensors");
    const QString out = QFileDialog::getSaveFileName(this, tr("Export tensor"), suggested,
                                                     tr("safetensors (*.safetensors);;PyTorch (*.pt)"));
    if (!out.isEmpty()) exportTensors(QString::fromStdString(n->path), out, withMoments);
}

void MainWindow::treeMenu(const QPoint& pos)
{
    QMenu menu(this);
    // A parameter, optimizer moment or other tensor of a tag: its values, and a file of its own.
    const Node* n = TreeModel::node(m_proxy->mapToSource(m_tree->indexAt(pos)));
    const Snapshot* s = m_model->snapshot();
    if (const layout::Parameter* p = n && s ? heldParameter(*s, *n) : nullptr; p && p->tiedTo.empty()) {
        select(QString::fromStdString(n->path));
        menu.addAction(tr("Show Values and Statistics"), m_details, &DetailsPane::computeStatistics);
        menu.addAction(tr("Export Tensor..."), this, [this, n] { askExportTensors(n, false); });
        if (n->held == Node::Held::Parameter && !n->children.empty())
            menu.addAction(tr("Export with Optimizer State..."), this,
                           [this, n] { askExportTensors(n, true); });
        menu.addSeparator();
    }
    const QStringList tags = selectedTagPaths();
    QAction* compare = menu.addAction(tr("Compare"), this, [this, tags] { openCompare(tags[0], tags[1]); });
    compare->setEnabled(tags.size() == 2);
    if (tags.size() != 2) compare->setText(tr("Compare (select two tags)"));
    menu.addAction(m_exportAction);
    menu.addAction(m_slimAction);
    if (universalTag()) menu.addAction(m_universalAction);
    menu.exec(m_tree->viewport()->mapToGlobal(pos));
}

const layout::Tag* MainWindow::universalTag() const
{
    const Snapshot* snap = m_model->snapshot();
    const Node* n = TreeModel::node(m_proxy->mapToSource(m_tree->currentIndex()));
    while (n && n->kind != NodeKind::Tag)
        n = n->parent;
    if (!snap || !n || n->tag < 0 || size_t(n->tag) >= snap->tags().size()) return nullptr;
    const layout::Tag& t = snap->tags()[size_t(n->tag)];
    return t.convertsToUniversal ? &t : nullptr;
}

void MainWindow::convertToUniversal()
{
    const layout::Tag* t = universalTag();
    if (!t) return;
    // The tag folder itself: the dialog suggests <root>/<tag>_universal and latest_universal.
    showConvertToUniversal(this, m_workspace, layout::tagOf(m_model->snapshot()->opened, t->name),
                           [this](const QString& out) { open(out); });
}

} // namespace ckpt::app
