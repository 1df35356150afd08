// "Slim...": the same operation as `ckpt slim`, on a file, a tag folder or a checkpoint folder.
// It first predicts the savings (a dry run, on a worker), then writes the slimmed copy on a
// worker with progress (bytes, GB/s, ETA) and a Cancel that stops the job and leaves nothing
// behind, names the file in an error, and once done shows the sizes before and after and offers
// to open the result.
#pragma once

#include "layout/file_set.h"
#include "operation_panel.h"
#include "ops/slim.h"
#include "replace_prompt.h"

#include <QDialog>

class QLabel;
class QLineEdit;
class QTableWidget;

namespace ckpt::app {

struct SlimOutcome : OperationOutcome
{
    bool dryRun = false;
    QString file;           // the file an error names, when it names one
    ops::SlimResult result; // the run's (or prediction's) own, when it succeeded
};

class SlimDialog : public QDialog
{
    Q_OBJECT
public:
    // `workspace`: the window's: the files its opened checkpoint holds are not parsed again, and
    // the jobs run on its manager (null: a dialog of its own).
    explicit SlimDialog(const QString& input, QWidget* parent = nullptr, Workspace* workspace = nullptr);

    // A free name beside the input (in the home folder for a URL): NAME.slim.pt for a file,
    // NAME-slim for a folder.
    static QString defaultOutput(const QString& input);
    static QString defaultOutput(const QString& input, bool folder);
    // Whether the input is a folder: for a URL, what the window's open checkpoint knows of it,
    // else its server is asked.
    static bool isFolder(const QString& input, const Workspace* workspace);
    QString input() const { return m_input; } // a local path made absolute, a URL as it is
    bool folder() const { return m_folder; }
    void setOutput(const QString& path);
    QString output() const;
    void start();
    void setReplaceAnswer(ReplaceAnswer answer) { m_replaceAnswer = answer; }
    void cancel();
    // From start() until its result has been shown (not only while the worker runs).
    bool running() const { return m_running; }
    bool hasPrediction() const { return m_predicted; } // the dry run's result (or failure) is in
    const SlimOutcome& prediction() const { return m_prediction; }
    const SlimOutcome& outcome() const { return m_outcome; }

signals:
    void predicted(bool ok);
    void progressed(int permille);
    void finished(bool ok);
    void openRequested(const QString& path);

protected:
    void reject() override;

private:
    void predict();
    void onPredicted(const SlimOutcome& o);
    void onFinished(const SlimOutcome& o);
    void fillTable(const SlimOutcome& o, int column);
    QString actionText(const QString& action) const;

    QString m_input;
    std::shared_ptr<const layout::FileSet> m_files;
    bool m_folder = false;
    QLabel* m_predictionLabel;
    QLineEdit* m_output;
    QTableWidget* m_table;
    SlimOutcome m_prediction;
    SlimOutcome m_outcome;
    bool m_running = false;
    bool m_predicted = false;
    ReplaceAnswer m_replaceAnswer = ReplaceAnswer::Ask;
    OperationPanel* m_panel; // progress, status, buttons, the prediction and the run
};

} // namespace ckpt::app
