// The window: a start page (recent items, the bundled example), then the checkpoint tree with
// a filter box, the details pane, a warnings banner and the export dialog; the Bloat view in a
// dock (it follows the tree's selection), the Slim dialog and the comparison window. Opening runs on a
// worker with progress and Cancel; the latest request wins and an older result is dropped.
#pragma once

#include "job_manager.h"
#include "snapshot.h"
#include "workspace.h"

#include <QMainWindow>
#include <memory>

class QLabel;
class QMenu;
class QToolBar;
class QLineEdit;
class QCheckBox;
class QDockWidget;
class QListWidget;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTreeView;

namespace ckpt::app {

class BloatView;
class CompareWindow;
class DetailsPane;
class ExportDialog;
class OpenUrlDialog;
class PreferencesDialog;
struct Preferences;
class SlimDialog;
class VerifyDialog;
class FilterProxy;
class TreeModel;

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    // A local path (made absolute) or a URL (s3://, http(s)://, kept as typed).
    void open(const QString& path);
    // File > Open URL...: the dialog, shown; what it accepts is opened. For tests and
    // screenshots it is returned (it deletes itself when closed).
    OpenUrlDialog* openUrlDialog();
    // File > Preferences...: the dialog, shown (it deletes itself when closed); what it accepts is
    // saved and applied by applyPreferences. Returned for tests and screenshots.
    PreferencesDialog* openPreferences();
    // Saves `p` and applies what applies at once: the palette and the remote settings (to the
    // URLs opened after). The language applies when the app starts next.
    void applyPreferences(const Preferences& p);
    // Stops the opening: loaded(false) follows, the tree keeps what it showed.
    void cancelOpen();
    bool loading() const;
    bool select(const QString& treePath); // "global_step4/parameters/embed.weight"
    TreeModel* model() const { return m_model; }
    // What is open, the window's one JobManager, and what is computed once per opened checkpoint.
    Workspace& workspace() { return m_workspace; }
    FilterProxy* proxy() const { return m_proxy; }
    QTreeView* tree() const { return m_tree; }
    DetailsPane* details() const { return m_details; }
    QLineEdit* filterBox() const { return m_filter; }
    QString lastError() const { return m_lastError; }
    // The failed opening's message as the window shows it (banner or start page); empty if none.
    QString shownError() const;
    // Back to the start page with nothing open (File > Close, Ctrl+W).
    void closeCheckpoint();
    static QString exampleCheckpoint();
    // For the tag selected in the tree (or the latest), or the single file open: nullptr when
    // nothing is open.
    ExportDialog* openExportDialog();

    // Bloat and slim. The Bloat view shows PATH (a file or any folder) whether or not
    // it is open in the tree; while visible it follows the tree's selection.
    BloatView* bloatView() const { return m_bloat; }
    QDockWidget* bloatDock() const { return m_bloatDock; }
    void showBloat(const QString& path);
    SlimDialog* openSlimDialog(const QString& path);
    // Verify... on the open checkpoint: the selected tag (every tag when `allTags`).
    VerifyDialog* openVerifyDialog(bool allTags = false);
    // Selects a tensor of a file in the tree: the file open on its own, or a rank file of the
    // open checkpoint. False when the file is not in the tree.
    bool selectTensor(const QString& file, const QString& tensorPath);
    // The file, tag folder or checkpoint a node belongs to, on disk.
    QString diskPathOf(const Node* node) const;

    // The comparison window for two checkpoints, tag folders or files, computing.
    CompareWindow* openCompare(const QString& a, const QString& b);
    // The two tags selected in the tree (older first), else empty: what "Compare" compares.
    QStringList selectedTagPaths() const;
    // Writes the tree's parameter, optimizer moment or other tensor at `treePath` into `out`
    // (safetensors, or a torch.save zip for .pt/.bin); a parameter `withMoments` takes its
    // optimizer moments along ("<param>/exp_avg", ...). tensorsExported() tells the outcome.
    void exportTensors(const QString& treePath, const QString& out, bool withMoments);

    // Help > About's text: what the program is, its licence and those of what it links.
    QString aboutText() const;
    // The README Help > Documentation opens: the installed one (/usr/share/doc/...), else the
    // source tree's; empty when neither is there.
    static QString documentation();

signals:
    void loaded(bool ok);
    void tensorsExported(bool ok, const QString& message);
    void openProgressed(int permille, const QString& stage);

protected:
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;
    bool eventFilter(QObject* watched, QEvent* e) override;

private:
    void showStartPage();
    void fitNameColumn();
    void buildFileMenu();
    void buildBloatDock();
    QWidget* buildStartPage();
    QWidget* buildBrowser();
    void connectTree();
    void buildStatusBar();
    void buildHelpMenu();
    void fillRecentMenu();
    QString shortcutsText() const;
    void onLoaded(const JobResult<std::shared_ptr<const Snapshot>>& r);
    void addRecent(const QString& path);
    void refreshRecent();
    void exportModel();
    void followSelection(const Node* node);
    void updateSlimAction();
    // The ZeRO tag the current node belongs to, when ds_to_universal's conversion applies to it.
    const layout::Tag* universalTag() const;
    void convertToUniversal();
    void fitBloatDock();
    void openSlimResult(const QString& input, const QString& output);
    void askCompare();
    void treeMenu(const QPoint& pos);
    void askExportTensors(const Node* node, bool withMoments);

    TreeModel* m_model;
    FilterProxy* m_proxy;
    QStackedWidget* m_stack;
    QListWidget* m_recent;
    QTreeView* m_tree;
    DetailsPane* m_details;
    QLineEdit* m_filter;
    QCheckBox* m_regex;
    QLabel* m_banner;
    QLabel* m_error;      // a failed opening, over what the tree still shows
    QLabel* m_startError; // a failed opening with nothing open
    QToolBar* m_toolbar = nullptr;
    QMenu* m_recentMenu = nullptr;
    QAction* m_reloadAction = nullptr;
    QAction* m_closeAction = nullptr;
    QString m_compute; // the compute device and why, as the status bar says
    QProgressBar* m_busy;
    QPushButton* m_cancelOpen;
    QAction* m_exportAction = nullptr;
    QAction* m_slimAction = nullptr;
    QAction* m_verifyAction = nullptr;
    QAction* m_universalAction = nullptr;
    QAction* m_compareTags = nullptr;
    QDockWidget* m_bloatDock = nullptr;
    BloatView* m_bloat = nullptr;
    QString m_pending;
    bool m_openCancelled = false; // Cancel was pressed while m_pending was opening
    QString m_lastError;
    // What is open, the one JobManager of the window (its opening, its tensor exports, and the
    // lanes of every view and dialog) and what is computed once per tag. Destroyed first: every
    // job still running stops and is waited for before any widget goes.
    Workspace m_workspace;
};

} // namespace ckpt::app
