// The comparison window: two tags, checkpoints or files compared tensor by tensor on a worker
// (ops::computeDiff through the compute backend), rows filling in as they arrive, with progress,
// ETA and cancel; a sortable, filterable table with a one-line summary, the heatmap by layer and
// kind, and the selected tensor's histograms and statistics. Opened from the File menu, from two
// tags selected in the tree, and by `--compare A B`.
#pragma once

#include "ops/analyze.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QMainWindow>
#include <QTimer>
#include <memory>
#include <mutex>

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
    void cancel();
    bool running() const { return m_watcher.isRunning(); }
    // The last start() has finished and its outcome is in (its finished() was emitted).
    bool done() const { return m_done; }
    // The tensor's row selected in the table (the filter cleared if it hid it).
    bool selectTensor(const QString& name);

    CompareModel* model() const { return m_model; }
    CompareProxy* proxy() const { return m_proxy; }
    QTableView* table() const { return m_table; }
    CompareHeatmap* heatmap() const { return m_heatmap; }
    CompareHistograms* histograms() const { return m_histograms; }
    QLineEdit* filterBox() const { return m_filter; }
    QComboBox* statusBox() const { return m_status; }
    QString summaryText() const;
    const CompareOutcome& outcome() const { return m_outcome; }

    // Asks for the two sides (prefilled with a and b). False when the user cancels.
    static bool askSides(QWidget* parent, QString& a, QString& b);

signals:
    void progressed(int permille);
    void finished(bool ok); // computed (true), failed or cancelled (false)

private:
    void drain();
    void onFinished();
    void updateSummary();
    void showCurrent();
    void exportTable();

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
    QTimer m_poll;
    QElapsedTimer m_clock;
    std::shared_ptr<CompareFeed> m_feed;
    QFutureWatcher<CompareOutcome> m_watcher;
    CompareOutcome m_outcome;
    QString m_a, m_b;
    bool m_done = false;
    bool m_userPicked = false; // a tensor was clicked: the window leaves the selection alone
    int m_largest = -1;        // the row with the largest relative change, -1 when none
};

// `checkpoint-studio --compare A B`: the comparison window alone. With a screenshot file it
// saves the window once computed (with `select`, that tensor selected first) and exits.
int runCompareMode(const QString& a, const QString& b, const QString& screenshot, const QString& select);

} // namespace ckpt::app
