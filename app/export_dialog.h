// Export of a consolidated model: the same operation as `ckpt export`, on a worker, with
// progress (stage, bytes, GB/s, ETA), cancel that removes partial output, an error dialog
// naming the file and the reason, and a summary with "Open folder". Closing the dialog while it
// runs cancels the export; destroying it (the window closing) cancels it and waits.
#pragma once

#include "job_manager.h"

#include <QDialog>
#include <QElapsedTimer>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace ckpt::app {

struct ExportOutcome
{
    bool ok = false;
    bool cancelled = false;
    QString message;
    QStringList files;
    QString compute;      // the backend the casts ran on and why ("cpu: built without CUDA")
    QStringList warnings; // what went wrong without failing it (a device replaced by the CPU, ...)
};

class ExportDialog : public QDialog
{
    Q_OBJECT
public:
    ExportDialog(const QString& checkpoint, const QStringList& tags, const QString& latest,
                 QWidget* parent = nullptr);

    // For tests and scripted use.
    void setOutputFolder(const QString& dir);
    void setFormat(const QString& format); // "safetensors" or "bin"
    void setMaxShardSize(const QString& size);
    void start();
    void cancel();
    bool running() const;
    const ExportOutcome& outcome() const { return m_outcome; }

signals:
    void finished(bool ok);
    void progressed(int permille);

protected:
    void reject() override; // Escape or closing the window while it runs: cancel first

private:
    void onProgress(const JobProgress& p);
    void onFinished(const ExportOutcome& outcome);

    QString m_checkpoint;
    QComboBox* m_tag;
    QComboBox* m_format;
    QComboBox* m_dtype;
    QLineEdit* m_shard;
    QCheckBox* m_excludeFrozen;
    QLineEdit* m_output;
    QProgressBar* m_progress;
    QLabel* m_status;
    QPushButton* m_start;
    QPushButton* m_cancel;
    QPushButton* m_openFolder;
    ExportOutcome m_outcome;
    QStringList m_notes;
    QElapsedTimer m_clock;
    JobManager m_jobs;
};

} // namespace ckpt::app
