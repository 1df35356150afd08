#include "universal_dialog.h"

#include "preferences.h"
#include "workspace.h"

#include "io/location.h"
#include "io/output.h"
#include "ops/inspect.h"
#include "ops/universal.h"
#include "replace_prompt.h"

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt::app {

namespace {

QString bytesText(uint64_t n)
{
    return QString::fromStdString(ops::humanBytes(n));
}

} // namespace

UniversalDialog::UniversalDialog(const QString& checkpoint, const QString& tag, QWidget* parent,
                                 Workspace* workspace)
    : QDialog(parent), m_tag(tag)
{
    // The tag folder is what is converted (as ds_to_universal's --input_folder). The Universal
    // folder is suggested outside the checkpoint (never written into: issue 36), in a folder of
    // its own beside it, where DeepSpeed's load_checkpoint(that folder) with load_universal finds
    // it through latest_universal.
    m_input = tagFolder(checkpoint, tag);

    setWindowTitle(tr("Convert to Universal checkpoint"));
    auto* form = new QFormLayout;
    auto* from = new QLabel(m_input, this);
    from->setObjectName(QStringLiteral("input"));
    from->setTextFormat(Qt::PlainText);
    from->setTextInteractionFlags(Qt::TextSelectableByMouse);
    from->setWordWrap(true);
    m_output = new QLineEdit(defaultOutput(m_input), this);
    m_output->setObjectName(QStringLiteral("output"));
    auto* browse = new QPushButton(tr("Browse..."), this);
    auto* outRow = new QHBoxLayout;
    outRow->addWidget(m_output, 1);
    outRow->addWidget(browse);
    m_inject = new QCheckBox(tr("Data parallelism only: convert without universal_checkpoint_info "
                                "(DeepSpeed's --inject_missing_state)"),
                             this);
    m_inject->setChecked(true);
    m_inject->setToolTip(tr("Models trained without Megatron-style tensor parallelism (Hugging Face, plain "
                            "DeepSpeed) save no universal_checkpoint_info; DeepSpeed's ds_to_universal then "
                            "needs --inject_missing_state, which this does."));
    form->addRow(tr("Tag"), from);
    form->addRow(tr("Universal folder"), outRow);
    form->addRow(QString(), m_inject);
    if (io::isRemotePath(m_input.toStdString())) {
        // Said before anything runs: the suggested folder is not beside the tag.
        auto* local = new QLabel(
            tr("The tag is read from its URL; the Universal folder is written on this computer."), this);
        local->setWordWrap(true);
        form->addRow(QString(), local);
    }
    auto* hint = new QLabel(tr("latest_universal is written beside the Universal folder: resume with "
                               "\"checkpoint\": {\"load_universal\": true} and load_checkpoint(its parent)."),
                            this);
    hint->setWordWrap(true);
    m_panel = new OperationPanel(tr("Convert"), tr("Open result"), tr("Conversion failed"),
                                 workspace ? &workspace->jobs() : nullptr, this);
    m_panel->resultButton()->setObjectName(QStringLiteral("openResult"));
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(hint);
    layout->addWidget(m_panel);
    resize(640, sizeHint().height());

    connect(browse, &QPushButton::clicked, this, [this] {
        // A new folder's name: chosen like a file to save (an existing folder must be empty).
        const QString d = QFileDialog::getSaveFileName(this, tr("Universal folder"), m_output->text());
        if (!d.isEmpty()) m_output->setText(d);
    });
    connect(m_panel, &OperationPanel::startClicked, this, &UniversalDialog::start);
    connect(m_panel, &OperationPanel::closeClicked, this, &QDialog::reject);
    connect(m_panel, &OperationPanel::resultClicked, this, &UniversalDialog::openResult);
    connect(m_panel, &OperationPanel::progressed, this, &UniversalDialog::progressed);
}

QString UniversalDialog::tagFolder(const QString& checkpoint, const QString& tag)
{
    const std::string at = checkpoint.toStdString();
    if (io::isRemotePath(at)) {
        // A URL stays whole (QDir would make "s3://b/k" a local "s3:/b/k"). Its server is not
        // asked: a folder named as the tag is the tag folder, else the tag is a folder in it.
        if (tag.isEmpty() || locationName(checkpoint) == tag) return checkpoint;
        return QString::fromStdString(io::childPath(at, tag.toStdString()));
    }
    const QDir root(checkpoint);
    const bool isRoot = !tag.isEmpty() && QFileInfo(root.filePath(tag)).isDir();
    return isRoot ? QDir::cleanPath(root.filePath(tag)) : QDir::cleanPath(checkpoint);
}

QString UniversalDialog::defaultOutput(const QString& tagFolder)
{
    const QString name = locationName(tagFolder) + QStringLiteral("_universal");
    const std::string at = tagFolder.toStdString();
    const QString chosen = Preferences::load().outputFolder; // Preferences' output folder, if any
    if (!io::isRemotePath(at)) {
        // ~/runs/ckpt/global_step2 -> ~/runs/ckpt-universal/global_step2_universal: beside the
        // checkpoint, not in it (ds_to_universal's default, <checkpoint>/<tag>_universal, writes
        // into the input, and the folder then opened as a bogus tag of the run).
        const QFileInfo run(QFileInfo(tagFolder).absolutePath());
        return QDir(chosen.isEmpty() ? run.absolutePath() : chosen)
            .filePath(run.fileName() + QStringLiteral("-universal/") + name);
    }
    // Outputs are written on this computer: beside a local folder named as the checkpoint's
    // (~/run/global_step2_universal), so latest_universal lands in that folder, not in the
    // home folder, and load_checkpoint(~/run) finds it as it would in the remote one.
    const QString parent = QString::fromStdString(io::fileName(io::parentPath(at)));
    const QDir home(chosen.isEmpty() ? QDir::homePath() : chosen);
    return parent.isEmpty() || parent == locationName(tagFolder)
               ? home.filePath(name)
               : home.filePath(parent + QLatin1Char('/') + name);
}

void UniversalDialog::setOpenResult(std::function<void(const QString&)> open)
{
    m_openResult = std::move(open);
}

void UniversalDialog::setOutputFolder(const QString& dir)
{
    m_output->setText(dir);
}

QString UniversalDialog::outputFolder() const
{
    return m_output->text();
}

void UniversalDialog::setInjectMissingState(bool inject)
{
    m_inject->setChecked(inject);
}

bool UniversalDialog::running() const
{
    return m_panel->running();
}

void UniversalDialog::cancel()
{
    m_panel->cancel();
}

void UniversalDialog::reject()
{
    // The dialog stays to say that nothing was left behind; closed again, it closes.
    if (!m_panel->cancelIfRunning()) QDialog::reject();
}

void UniversalDialog::openResult()
{
    if (!m_outcome.ok) return;
    if (m_openResult) m_openResult(QString::fromStdString(m_outcome.result.output));
    accept();
}

void UniversalDialog::start()
{
    if (running()) return;
    const QString out = m_output->text().trimmed();
    if (out.isEmpty()) {
        m_panel->say(tr("Choose the Universal folder first."));
        return;
    }
    // The operation's own check, before anything runs (an output on, inside or around the input).
    if (m_panel->refused({m_input.toStdString()}, out, m_outcome)) {
        emit finished(false);
        return;
    }
    if (!mayReplace(this, out, m_replaceAnswer)) {
        m_panel->say(tr("Nothing written: %1 holds files. Choose an empty folder, or replace the "
                        "conversion in it.")
                         .arg(QDir::toNativeSeparators(out)));
        return;
    }
    ops::UniversalOptions opt;
    opt.injectMissingState = m_inject->isChecked();
    opt.overwrite = true; // asked, or nothing is there to mix with
    m_outcome = {};
    m_output->setEnabled(false);
    m_inject->setEnabled(false);
    const std::string in = m_input.toStdString(), outPath = out.toStdString();
    // The worker gets plain values (and the window's immutable opened tag) and returns plain
    // values; the GUI thread updates widgets.
    m_panel->run<ops::UniversalResult>(
        [in, opened = m_in, outPath, opt](const ops::ProgressSink& progress, const ops::CancelToken& cancel) {
            return opened.tag ? ops::universal(opened, outPath, opt, progress, cancel)
                              : ops::universal(in, outPath, opt, progress, cancel);
        },
        [this](const JobResult<ops::UniversalResult>& r) { onFinished(r); });
}

void UniversalDialog::onFinished(const JobResult<ops::UniversalResult>& r)
{
    m_outcome = {};
    m_outcome.cancelled = r.cancelled;
    m_outcome.message = r.error;
    m_output->setEnabled(true);
    m_inject->setEnabled(true);
    if (r.value) {
        m_outcome.ok = true;
        m_outcome.result = *r.value;
        const ops::UniversalResult& res = m_outcome.result;
        const double secs = double(m_panel->elapsedMs()) / 1000.0;
        // The folder is no longer empty: a second run would be refused.
        m_panel->succeeded(tr("Wrote %1: ZeRO stage %2 of %3 ranks, %4 parameters, %5 files, %6 in %7 s "
                              "(%8 GB/s). latest_universal is in %9.")
                               .arg(QString::fromStdString(res.output))
                               .arg(res.zeroStage)
                               .arg(res.worldSize)
                               .arg(qulonglong(res.parameters))
                               .arg(qulonglong(res.files))
                               .arg(bytesText(res.bytesWritten))
                               .arg(secs, 0, 'f', 1)
                               .arg(secs > 0 ? double(res.bytesWritten) / secs / 1e9 : 0.0, 0, 'f', 2)
                               .arg(QFileInfo(QString::fromStdString(res.latestFile)).absolutePath()),
                           false);
    }
    emit finished(m_outcome.ok);
}

UniversalDialog::UniversalDialog(const layout::OpenedTag& in, Workspace& workspace, QWidget* parent)
    : UniversalDialog(QString::fromStdString(in->dir), QString::fromStdString(in->name), parent, &workspace)
{
    m_in = in;
}

void showConvertToUniversal(QWidget* parent, Workspace& workspace, const layout::OpenedTag& in,
                            std::function<void(const QString&)> openResult)
{
    auto* dialog = new UniversalDialog(in, workspace, parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setOpenResult(std::move(openResult));
    dialog->open();
}

} // namespace ckpt::app
