// The comparison window: two tags, checkpoints or files compared tensor by tensor on a worker
// (ops::computeDiff through the compute backend, a JobManager job), rows filling in as they
// arrive (the job's partial results), with progress, ETA and cancel; a sortable, filterable
// table with a one-line summary, the heatmap by layer and kind, and the selected tensor's
// histograms and statistics. Opened from the File menu, from two tags selected in the tree, and
// by `--compare A B`.
#pragma once

#include "compute_backend.h"
#include "job_manager.h"
#include "ops/analyze.h"
#include "workspace.h"

#include <QDialog>
#include <QElapsedTimer>
#include <QMainWindow>
#include <optional>

class QCheckBox;
class QComboBox;
class QLabel;
class QLayout;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTableView;
class QTimer;

namespace ckpt::app {

class CompareHeatmap;
class CompareHistograms;
class CompareModel;
class CompareProxy;

// What to compare: two paths (checkpoint folder, tag folder or file), the tag of each (empty:
// the path's own, or its latest), and whether the optimizer moments come too.
struct CompareRequest
{
    QString a, b;
    QString tagA, tagB;
    bool moments = false;
    gpu::Device device = gpu::Device::Auto; // Preferences', read on the GUI thread when it starts
};

// The tags a side's path holds, as (name, location), and the one to select (its latest); for a
// tag folder, its checkpoint's tags with that one selected (`path` is then the checkpoint).
struct SideTags
{
    QString path, selected;
    QList<std::pair<QString, QString>> tags;
};
// Reads the folder (or asks the store, for a URL): run on a worker, never on the GUI thread.
SideTags tagsOf(const QString& path, const QString& want);

// The sides of a comparison, each a path and, when it holds several, one of its tags (listed
// cheaply, from names and `latest` only, on a worker, once a typed path rests); whether to compare
// the optimizer moments too. Compare waits for a listing under way.
class CompareDialog : public QDialog
{
    Q_OBJECT
public:
    explicit CompareDialog(const CompareRequest& prefill, QWidget* parent = nullptr);
    ~CompareDialog() override;
    CompareRequest request() const;
    QLineEdit* pathEdit(int side) const { return m_path[side]; }
    QComboBox* tagBox(int side) const { return m_tag[side]; }
    QCheckBox* momentsBox() const { return m_moments; }
    // The side's chosen tag as its location (a tag folder, a URL), else its path as typed.
    QString location(int side) const;
    // No side's tags are being listed.
    bool listed() const { return m_lane.idle(); }

private:
    QLayout* sideRow(int side, const QString& path);
    void listTags(int side, const QString& want);
    void showTags(int side, const SideTags& tags);

    QLineEdit* m_path[2];
    QComboBox* m_tag[2];
    QTimer* m_typing[2];                // restarted at each key: the tags are listed once it rests
    std::optional<QString> m_listed[2]; // the path whose tags the box shows (or will)
    QList<std::pair<QString, QString>> m_locations[2];
    QCheckBox* m_moments;
    QPushButton* m_compare = nullptr;
    JobLane m_lane{nullptr}; // the dialog's own worker: it lives beside any window's
};

class CompareWindow : public QMainWindow
{
    Q_OBJECT
public:
    // `workspace`: the main window's. A side that is the checkpoint it holds when a comparison
    // starts, or one of its tags, is read from it (its files parsed once, by the window), not
    // opened again; the comparison runs on its manager. Null: the comparison window alone.
    explicit CompareWindow(QWidget* parent = nullptr, Workspace* workspace = nullptr);

    // A and B: each a checkpoint folder (its latest tag), a tag folder, or a file.
    void start(const QString& a, const QString& b);
    void start(const CompareRequest& request);
    const CompareRequest& request() const { return m_request; }
    QCheckBox* momentsBox() const { return m_momentsBox; }
    void cancel();
    bool running() const;
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
    // The last comparison's sides, device and warnings (its rows are the model's: value->tensors
    // is empty), or why it has none.
    const JobResult<ops::DiffResult>& outcome() const { return m_outcome; }

    // Asks for the two sides (prefilled with a and b). False when the user cancels. A tag
    // picked for a side comes back as that tag's location (its folder or file).
    static bool askSides(QWidget* parent, QString& a, QString& b);
    // Asks for the sides, their tags and the moments, and opens a window comparing them (a
    // top-level window owned by parent, deleted on close); nullptr when the user cancels.
    static CompareWindow* ask(QWidget* parent, const QString& a, const QString& b,
                              Workspace* workspace = nullptr);

signals:
    void progressed(int permille);
    void finished(bool ok); // computed (true), failed or cancelled (false)

private:
    QLayout* buildProgressRow(QWidget* parent);
    QLayout* buildFilterRow(QWidget* parent);
    QTableView* buildTable(QWidget* parent);
    QSplitter* buildViews(QWidget* parent);
    void buildMenu();
    void connectWidgets();
    void showStarting();
    void onProgress(const JobProgress& p);
    void addRows(std::vector<ops::TensorDiff> rows);
    void addTiedRows(const std::vector<std::pair<std::string, std::string>>& tied);
    void onFinished(JobResult<ops::DiffResult> outcome);
    void showCompared();
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
    QElapsedTimer m_clock;
    JobResult<ops::DiffResult> m_outcome;
    QString m_a, m_b;
    CompareRequest m_request;
    QPointer<Workspace> m_workspace;
    bool m_done = false;
    bool m_cancelling = false;
    bool m_userPicked = false; // a tensor was clicked: the window leaves the selection alone
    int m_largest = -1;        // the row with the largest relative change, -1 when none
    // Destroyed before the widgets (which are destroyed with the QWidget base): it cancels the
    // comparison and waits for its worker, and nothing of it reaches the window after that.
    JobLane m_jobs;
};

// `checkpoint-studio --compare A B`: the comparison window alone. With a screenshot file it
// saves the window once computed (with `select`, that tensor selected first) and exits.
int runCompareMode(const QString& a, const QString& b, const QString& screenshot, const QString& select);
// The same for a request: each side's tag, and the optimizer moments.
int runCompareMode(const CompareRequest& request, const QString& screenshot, const QString& select);

} // namespace ckpt::app
