// Export of a consolidated model: the same operation as `ckpt export`, on a worker, with
// progress (stage, bytes, GB/s, ETA), cancel that removes partial output, an error dialog
// naming the file and the reason, and a summary with "Open folder".
#pragma once

#include "ops/job.h"

#include <QDialog>
#include <QElapsedTimer>
#include <QFutureWatcher>
#include <memory>

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
    bool running() const { return m_watcher.isRunning(); }
    // Tests: cancel from the worker itself after this many progress reports (deterministic
    // "cancel midway", whatever the machine's speed). 0 disables.
    void setCancelAfterProgress(int reports) { m_cancelAfter = reports; }
    const ExportOutcome& outcome() const { return m_outcome; }

signals:
    void finished(bool ok);
    void progressed(int permille);

private:
    void onProgress(const ops::Progress& p);

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
    std::shared_ptr<ops::CancelToken> m_token;
    QFutureWatcher<ExportOutcome> m_watcher;
    ExportOutcome m_outcome;
    QStringList m_notes;
    QElapsedTimer m_clock;
    int m_cancelAfter = 0;
};

} // namespace ckpt::app
