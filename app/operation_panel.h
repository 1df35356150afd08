// What every operation dialog (Export, Slim, Convert to Universal) shares below its options
// form: a progress bar, a status line whose tooltip keeps the job's notes, the result / Cancel
// (Close once done) / Start buttons, and the job itself on a worker, with the standard texts of a
// cancelled or failed run. A dialog is its options form, one panel and its summary of a success:
// a new operation costs one form.
#pragma once

#include "job_manager.h"

#include <QElapsedTimer>
#include <QStringList>
#include <QWidget>
#include <functional>

class QLabel;
class QProgressBar;
class QPushButton;

namespace ckpt::app {

class Workspace;

// What every operation dialog keeps of its last run; each adds its result's summary.
struct OperationOutcome
{
    bool ok = false;
    bool cancelled = false;
    QString message; // why it failed or was refused
};

class OperationPanel : public QWidget
{
    Q_OBJECT
public:
    // `startText`: "Export", "Convert", ...; `resultText`: the button offered after a success
    // ("Open folder"); `failureTitle`: the title of the box that reports a failure. `jobs`: the
    // window's JobManager (null: a dialog shown alone runs its jobs on a manager of its own).
    OperationPanel(const QString& startText, const QString& resultText, const QString& failureTitle,
                   JobManager* jobs, QWidget* parent);

    // Runs work(progress, cancel) on a worker. Progress and notes are shown here; when it ends
    // the panel shows a cancel or a failure (a message box naming the file, while visible), then
    // `finished` gets the job's result on the GUI thread. On success the dialog calls succeeded().
    template <typename T>
    void run(std::function<T(const ops::ProgressSink&, const ops::CancelToken&)> work,
             std::function<void(const JobResult<T>&)> finished)
    {
        began();
        m_jobs.run(
            kChannel, std::move(work),
            [this, finished = std::move(finished)](const JobResult<T>& r) {
                m_fetched = fetchedText(r.fetchedBytes, r.fetchSeconds);
                ended(r.cancelled, r.error, r.errorFile);
                finished(r);
            },
            [this](const JobProgress& p) { onProgress(p); });
    }
    // The run succeeded: the bar full, `summary` in the status line, the result button offered.
    // `again`: Start stays usable (false where a second run would only find its output taken).
    void succeeded(const QString& summary, bool again);

    bool running() const;
    void cancel();
    // For a dialog's reject(): cancels a running job (true: the dialog stays to say so).
    bool cancelIfRunning();
    // The operation's own check before anything runs: an output on, inside or around an input is
    // refused here with its reason (shown, and kept in `outcome`), not by a worker that started.
    bool refused(const std::vector<std::string>& inputs, const QString& output, OperationOutcome& outcome);
    // A line for the user before or instead of a run (a refusal, "Choose an output folder first.").
    void say(const QString& text);
    QString status() const;
    void addNote(const QString& note);
    qint64 elapsedMs() const { return m_clock.elapsed(); }
    // Other jobs of the dialog (Slim's prediction) run here too, and stop with the dialog.
    JobLane& jobs() { return m_jobs; }
    QPushButton* startButton() const { return m_start; }
    QPushButton* resultButton() const { return m_result; }

signals:
    void startClicked();
    void resultClicked();
    void closeClicked(); // Cancel or Close while nothing runs
    void progressed(int permille);

private:
    static inline const QString kChannel = QStringLiteral("operation");
    void began();
    void ended(bool cancelled, const QString& error, const QString& errorFile);
    void onProgress(const JobProgress& p);

    QString m_failureTitle;
    QProgressBar* m_progress;
    QLabel* m_status;
    QPushButton* m_result;
    QPushButton* m_cancel;
    QPushButton* m_start;
    QStringList m_notes;
    QString m_fetched; // what the last run fetched from the network, said after its summary
    QElapsedTimer m_clock;
    JobLane m_jobs; // last: its destructor cancels the job and waits for it
};

} // namespace ckpt::app
