// "Convert to Universal...": the same conversion as `ckpt universal`, from a ZeRO tag, on a worker
// with progress (bytes, GB/s, ETA) and a Cancel that stops it and leaves nothing behind. An
// output folder on or inside the tag is refused before anything runs, with the reason the
// conversion itself gives; an error names the file. Once done it shows what was written and
// offers to open the result. Closing the dialog while it runs cancels; destroying it (the window
// closing) cancels and waits.
#pragma once

#include "operation_panel.h"
#include "replace_prompt.h"

#include "layout/family.h"
#include "ops/universal.h"

#include <QDialog>
#include <functional>

class QCheckBox;
class QLabel;
class QLineEdit;

namespace ckpt::app {

struct UniversalOutcome : OperationOutcome
{
    ops::UniversalResult result; // the conversion's own, when it succeeded
};

class UniversalDialog : public QDialog
{
    Q_OBJECT
public:
    // `checkpoint` a checkpoint folder holding `tag`, or the tag folder itself.
    // `workspace`: the window's, whose manager runs the job (null: a dialog of its own).
    UniversalDialog(const QString& checkpoint, const QString& tag, QWidget* parent = nullptr,
                    Workspace* workspace = nullptr);
    // A tag of the checkpoint the window holds: converted without parsing its files again.
    UniversalDialog(const layout::OpenedTag& in, Workspace& workspace, QWidget* parent = nullptr);

    // What "Open result" does with the Universal folder (the window opens it as a checkpoint).
    void setOpenResult(std::function<void(const QString&)> open);

    // The tag folder converted: `tag` in `checkpoint` when that holds it, else `checkpoint`. A
    // URL stays one, and no server is asked.
    static QString tagFolder(const QString& checkpoint, const QString& tag);
    // Where the Universal folder goes by default: TAG_universal beside the tag folder; for a URL,
    // in a local folder named as its parent, in the home folder (outputs stay local).
    static QString defaultOutput(const QString& tagFolder);

    // For tests and scripted use.
    QString input() const { return m_input; } // the tag folder converted
    void setOutputFolder(const QString& dir);
    QString outputFolder() const;
    void setInjectMissingState(bool inject);
    void start();
    void setReplaceAnswer(ReplaceAnswer answer) { m_replaceAnswer = answer; }
    void cancel();
    bool running() const;
    const UniversalOutcome& outcome() const { return m_outcome; }
    void openResult();

signals:
    void finished(bool ok);
    void progressed(int permille);

protected:
    void reject() override; // Escape or closing the window while it runs: cancel first

private:
    void onFinished(const JobResult<ops::UniversalResult>& r);

    QString m_input, m_tag;
    layout::OpenedTag m_in; // set: the window's opened tag, read instead of m_input
    QLineEdit* m_output;
    QCheckBox* m_inject;
    std::function<void(const QString&)> m_openResult;
    UniversalOutcome m_outcome;
    ReplaceAnswer m_replaceAnswer = ReplaceAnswer::Ask;
    OperationPanel* m_panel; // progress, status, buttons and the job
};

// The window's entry point: opens the dialog for a tag of the checkpoint the window holds
// (deleted when closed); "Open result" calls `openResult` with the Universal folder.
void showConvertToUniversal(QWidget* parent, Workspace& workspace, const layout::OpenedTag& in,
                            std::function<void(const QString&)> openResult);

} // namespace ckpt::app
