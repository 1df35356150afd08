// The window: a start page (recent items, the bundled example), then the checkpoint tree with
// a filter box, the details pane, a warnings banner and the export dialog. Opening runs on a
// worker; the latest request wins and an older result is dropped.
#pragma once

#include "snapshot.h"

#include <QFutureWatcher>
#include <QMainWindow>
#include <memory>

class QLabel;
class QLineEdit;
class QCheckBox;
class QListWidget;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTreeView;

namespace ckpt::app {

class DetailsPane;
class ExportDialog;
class FilterProxy;
class TreeModel;

struct LoadResult
{
    std::shared_ptr<const Snapshot> snapshot;
    QString error;
};

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    void open(const QString& path);
    bool loading() const { return m_watcher.isRunning(); }
    bool select(const QString& treePath); // "global_step4/parameters/embed.weight"
    TreeModel* model() const { return m_model; }
    FilterProxy* proxy() const { return m_proxy; }
    QTreeView* tree() const { return m_tree; }
    DetailsPane* details() const { return m_details; }
    QLineEdit* filterBox() const { return m_filter; }
    QString lastError() const { return m_lastError; }
    static QString exampleCheckpoint();
    ExportDialog* openExportDialog(); // nullptr unless a DeepSpeed checkpoint is open

signals:
    void loaded(bool ok);

protected:
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    void showStartPage();
    void onLoaded();
    void addRecent(const QString& path);
    void refreshRecent();
    void exportModel();

    TreeModel* m_model;
    FilterProxy* m_proxy;
    QStackedWidget* m_stack;
    QListWidget* m_recent;
    QTreeView* m_tree;
    DetailsPane* m_details;
    QLineEdit* m_filter;
    QCheckBox* m_regex;
    QLabel* m_banner;
    QProgressBar* m_busy;
    QPushButton* m_cancelOpen;
    QAction* m_exportAction = nullptr;
    QFutureWatcher<LoadResult> m_watcher;
    int m_generation = 0;
    QString m_pending;
    QString m_lastError;
};

} // namespace ckpt::app
