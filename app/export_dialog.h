// Export of a consolidated model: the same operation as `ckpt export`, on a worker, with
// progress (stage, bytes, GB/s, ETA), cancel that removes partial output, an error dialog
// naming the file and the reason, and a summary with "Open folder". Closing the dialog while it
// runs cancels the export; destroying it (the window closing) cancels it and waits.
//
// The dialog is bound to its source from the moment it opens: the path (and the tag it starts
// from) are fixed and named in its title and body, whatever the window opens afterwards. A
// checkpoint exports one of its tags into a folder; a single file exports into one safetensors
// file. An output folder that already holds files is replaced only after the user says so.
#pragma once

#include "operation_panel.h"
#include "ops/consolidate.h"
#include "replace_prompt.h"

#include "layout/family.h"

#include <QDialog>
#include <functional>
#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;

namespace ckpt::app {

struct ExportOutcome : OperationOutcome
{
    // The export's own result when it succeeded (a single file's: its one file), warnings included:
    // what went wrong without failing it (a device replaced by the CPU, a tensor left out, ...).
    ops::ConsolidateResult result;
    QString compute; // the backend the casts ran on and why ("cpu: built without CUDA")
};

class ExportDialog : public QDialog
{
    Q_OBJECT
public:
    // `tags` empty: `source` is a single file. `tag`: the tag the dialog starts from.
    // `workspace`: the window's; when it holds `source`, its opened checkpoint is exported without
    // parsing anything again (null, or another checkpoint: the export opens `source` itself).
    ExportDialog(const QString& source, const QStringList& tags, const QString& tag,
                 QWidget* parent = nullptr, Workspace* workspace = nullptr);

    QString source() const { return m_checkpoint; }
    QString tag() const; // empty for a single file
    bool singleFile() const { return m_singleFile; }
    // The window now shows another checkpoint: say that this export still reads its own.
    void noteWindowShows(const QString& path);

    // For tests and scripted use.
    void setOutputFolder(const QString& dir); // the output file, for a single file
    QString outputFolder() const;
    void setTag(const QString& tag);
    void setFormat(const QString& format); // "safetensors" or "bin"
    void setMaxShardSize(const QString& size);
    // Whether an output folder that holds files may be replaced: ask (the default, a question
    // box) or the answer given here.
    void setReplaceAnswer(ReplaceAnswer answer) { m_replaceAnswer = answer; }
    // Whether a tag the window's last verification found damaged may be exported: ask (the
    // default) or the answer given here.
    void setDamagedAnswer(ReplaceAnswer answer) { m_damagedAnswer = answer; }
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
    void onFinished(const JobResult<ExportOutcome>& r);
    void updateTitle();
    bool mayWriteInto(const QString& folder);
    bool mayExportAfterVerification();
    void startFile(const std::string& in, const std::string& out);

    QString m_checkpoint;
    std::shared_ptr<const layout::OpenedCheckpoint> m_opened; // what the window holds at m_checkpoint
    // Why the chosen tag cannot be read (the window's opened checkpoint says), or empty.
    QString unreadableReason() const;
    void noteTag();
    QLabel* m_tagNote;
    bool m_singleFile = false;
    ReplaceAnswer m_replaceAnswer = ReplaceAnswer::Ask;
    ReplaceAnswer m_damagedAnswer = ReplaceAnswer::Ask;
    Workspace* m_workspace = nullptr; // its verification of the source, where it holds the source
    QLabel* m_source;
    QLabel* m_sourceNote;
    QComboBox* m_tag;
    QComboBox* m_format;
    QComboBox* m_dtype;
    QLineEdit* m_shard;
    QCheckBox* m_excludeFrozen;
    QCheckBox* m_skipUnsupported; // a single file: leave out what safetensors cannot hold
    QLineEdit* m_output;
    ExportOutcome m_outcome;
    OperationPanel* m_panel; // progress, status, buttons and the job
};

} // namespace ckpt::app
