// The comparison window: two tags, checkpoints or files compared tensor by tensor on a worker
// (ops::computeDiff through the compute backend), rows filling in as they arrive, with progress,
// ETA and cancel; a sortable, filterable table with a one-line summary, the heatmap by layer and
// kind, and the selected tensor's histograms and statistics. Opened from the File menu, from two
// tags selected in the tree, and by `--compare A B`.
#pragma once

#include "ops/analyze.h"

#include <QDialog>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMainWindow>
#include <QTimer>
#include <memory>
#include <mutex>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace ckpt::app {

class CompareHeatmap;
class CompareHistograms;
class CompareModel;
class CompareProxy;

// What the worker hands the window while it runs: rows and progress, taken by the window's
// timer under the lock; the token stops the worker.
struct CompareFeed
{
    std::mutex lock;
    std::vector<ops::TensorDiff> rows;
    ops::Progress progress;
    ops::CancelToken cancel;
};

// What to compare: two paths (checkpoint folder, tag folder or file), the tag of each (empty:
// the path's own, or its latest), and whether the optimizer moments come too.
struct CompareRequest
{
    QString a, b;
    QString tagA, tagB;
    bool moments = false;
};

// The sides of a comparison, each a path and, when it holds several, one of its tags (listed
// cheaply, from names and `latest` only); whether to compare the optimizer moments too.
class CompareDialog : public QDialog
{
    Q_OBJECT
public:
    explicit CompareDialog(const CompareRequest& prefill, QWidget* parent = nullptr);
    CompareRequest request() const;
    QLineEdit* pathEdit(int side) const { return m_path[side]; }
    QComboBox* tagBox(int side) const { return m_tag[side]; }
    QCheckBox* momentsBox() const { return m_moments; }
    // The tags `path` holds, as (name, location), latest first selected; a tag folder is shown
    // with its checkpoint's tags (`path` becomes the checkpoint, `selected` the tag).
    static QList<std::pair<QString, QString>> tagsOf(QString& path, QString& selected);

private:
    void listTags(int side, const QString& want);

    QLineEdit* m_path[2];
    QComboBox* m_tag[2];
    QCheckBox* m_moments;
};

struct CompareOutcome
{
    ops::DiffSide a, b;
    std::string device;
    std::vector<std::string> warnings;
    QString error;
    bool cancelled = false;
};

class CompareWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit CompareWindow(QWidget* parent = nullptr);
    ~CompareWindow() override;

    // A and B: each a checkpoint folder (its latest tag), a tag folder, or a file.
    void start(const QString& a, const QString& b);
    void start(const CompareRequest& request);
    const CompareRequest& request() const { return m_request; }
    QCheckBox* momentsBox() const { return m_momentsBox; }
    void cancel();
    bool running() const { return m_watcher.isRunning(); }
    // The last start() has finished and its outcome is in (its finished() was emitted).
    bool done() const { return m_done; }
    // The tensor's row selected in the table (the filter cleared if it hid it).
    bool selectTensor(const QString& name);

    CompareModel* model() const { return m_model; }
    // The table as exported (CSV or JSON): the rows shown, in the order shown.
    QByteArray shownTable(bool json) const;
    CompareProxy* proxy() const { return m_proxy; }
    QTableView* table() const { return m_table; }
    CompareHeatmap* heatmap() const { return m_heatmap; }
    CompareHistograms* histograms() const { return m_histograms; }
    QLineEdit* filterBox() const { return m_filter; }
    QComboBox* statusBox() const { return m_status; }
    QString summaryText() const;
    const CompareOutcome& outcome() const { return m_outcome; }

    // Asks for the two sides (prefilled with a and b). False when the user cancels. A tag
    // picked for a side comes back as that tag's location (its folder or file).
    static bool askSides(QWidget* parent, QString& a, QString& b);
    // Asks for the sides, their tags and the moments, and opens a window comparing them (a
    // top-level window owned by parent, deleted on close); nullptr when the user cancels.
    static CompareWindow* ask(QWidget* parent, const QString& a, const QString& b);

signals:
    void progressed(int permille);
    void finished(bool ok); // computed (true), failed or cancelled (false)

private:
    void drain();
    void onFinished();
    void updateSummary();
    void showCurrent();
    void exportTable();
    void askOtherSides();

    CompareModel* m_model;
    CompareProxy* m_proxy;
    QTableView* m_table;
    CompareHeatmap* m_heatmap;
    CompareHistograms* m_histograms;
    QLabel* m_sides;
    QLabel* m_summary;
    QProgressBar* m_progress;
    QLabel* m_eta;
    QPushButton* m_cancel;
    QPushButton* m_export;
    QLineEdit* m_filter;
    QComboBox* m_status;
    QCheckBox* m_momentsBox;
    QTimer m_poll;
    QElapsedTimer m_clock;
    std::shared_ptr<CompareFeed> m_feed;
    QFutureWatcher<CompareOutcome> m_watcher;
    CompareOutcome m_outcome;
    QString m_a, m_b;
    CompareRequest m_request;
    bool m_done = false;
    bool m_userPicked = false; // a tensor was clicked: the window leaves the selection alone
    int m_largest = -1;        // the row with the largest relative change, -1 when none
};

// `checkpoint-studio --compare A B`: the comparison window alone. With a screenshot file it
// saves the window once computed (with `select`, that tensor selected first) and exits.
int runCompareMode(const QString& a, const QString& b, const QString& screenshot, const QString& select);
// The same for a request: each side's tag, and the optimizer moments.
int runCompareMode(const CompareRequest& request, const QString& screenshot, const QString& select);

} // namespace ckpt::app
