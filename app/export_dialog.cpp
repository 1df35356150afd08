#include "export_dialog.h"

#include "preferences.h"
#include "workspace.h"

#include "compute_backend.h"
#include "io/location.h"
#include "io/output.h"
#include "ops/consolidate.h"
#include "ops/export.h"
#include "replace_prompt.h"
#include "tree_model.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QUrl>
#include <QVBoxLayout>

namespace ckpt::app {

ExportDialog::ExportDialog(const QString& source, const QStringList& tags, const QString& tag,
                           QWidget* parent, Workspace* workspace)
    : QDialog(parent), m_checkpoint(source), m_singleFile(tags.isEmpty())
{
    auto* form = new QFormLayout;
    // The source, as the title says it too: which checkpoint this dialog writes never changes.
    m_source = new QLabel(QDir::toNativeSeparators(source), this);
    m_source->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_source->setWordWrap(true);
    m_sourceNote = new QLabel(this);
    m_sourceNote->setWordWrap(true);
    m_sourceNote->setStyleSheet(QStringLiteral("QLabel { color: #b45309; }"));
    m_sourceNote->hide();
    m_tag = new QComboBox(this);
    m_tag->addItems(tags);
    m_tag->setCurrentText(tag);
    m_tagNote = new QLabel(this);
    m_tagNote->setWordWrap(true);
    m_tagNote->setStyleSheet(QStringLiteral("QLabel { color: #b45309; }"));
    m_tagNote->hide();
    m_format = new QComboBox(this);
    m_format->addItems({QStringLiteral("safetensors"), QStringLiteral("bin")});
    m_dtype = new QComboBox(this);
    // First: what the family exports when nobody says (fp32 for DeepSpeed, as zero_to_fp32;
    // as stored for a Hugging Face model, or for a ZeRO-0 tag whose masters cannot be placed):
    // forcing fp32 here would widen a bf16 model the CLI keeps bf16.
    m_dtype->addItem(tr("as the checkpoint exports"), QString());
    for (const char* d : {"fp32", "bf16", "fp16"})
        m_dtype->addItem(QString::fromLatin1(d), QString::fromLatin1(d));
    m_dtype->setToolTip(
        tr("Floating tensors' type in the export. \"As the checkpoint exports\": fp32 for "
           "DeepSpeed (as zero_to_fp32 writes), as stored otherwise. Integer tensors are never "
           "converted."));
    m_shard = new QLineEdit(QStringLiteral("5GB"), this);
    m_excludeFrozen = new QCheckBox(tr("Leave out frozen parameters"), this);
    m_skipUnsupported =
        new QCheckBox(tr("Leave out tensors safetensors cannot hold (complex, quantized)"), this);
    m_output = new QLineEdit(this);
    auto* browse = new QPushButton(tr("Browse..."), this);
    auto* outRow = new QHBoxLayout;
    outRow->addWidget(m_output, 1);
    outRow->addWidget(browse);
    form->addRow(m_singleFile ? tr("File") : tr("Checkpoint"), m_source);
    form->addRow(QString(), m_sourceNote);
    if (m_singleFile) {
        // One file becomes one safetensors file, every tensor in it, as `ckpt export FILE OUT`.
        for (QWidget* w :
             {static_cast<QWidget*>(m_tag), static_cast<QWidget*>(m_format), static_cast<QWidget*>(m_dtype),
              static_cast<QWidget*>(m_shard), static_cast<QWidget*>(m_excludeFrozen)})
            w->hide();
        // Beside the file (or in Preferences' output folder); outputs stay local, so a URL's goes
        // to the home folder.
        const QFileInfo fi(source);
        m_output->setText(QDir(defaultOutputFolder(source))
                              .filePath(fi.completeBaseName() + QStringLiteral(".safetensors")));
        form->addRow(tr("Output file"), outRow);
        form->addRow(QString(), m_skipUnsupported);
    } else {
        form->addRow(tr("Tag"), m_tag);
        form->addRow(QString(), m_tagNote);
        form->addRow(tr("Format"), m_format);
        form->addRow(tr("dtype"), m_dtype);
        form->addRow(tr("Largest shard"), m_shard);
        form->addRow(QString(), m_excludeFrozen);
        form->addRow(tr("Output folder"), outRow);
        m_skipUnsupported->hide();
    }
    setMinimumWidth(560);
    // Kept for the dialog's life: the window may open another checkpoint meanwhile.
    if (workspace && workspace->snapshot() && QString::fromStdString(workspace->snapshot()->path) == source) {
        m_opened = workspace->opened();
        m_workspace = workspace;
    }
    m_panel = new OperationPanel(tr("Export"), tr("Open folder"), tr("Export failed"),
                                 workspace ? &workspace->jobs() : nullptr, this);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_panel);
    updateTitle();
    noteTag();

    connect(m_tag, &QComboBox::currentTextChanged, this, &ExportDialog::updateTitle);
    connect(m_tag, &QComboBox::currentTextChanged, this, &ExportDialog::noteTag);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString d = m_singleFile
                              ? QFileDialog::getSaveFileName(this, tr("Output file"), m_output->text(),
                                                             tr("safetensors (*.safetensors)"))
                              : QFileDialog::getExistingDirectory(this, tr("Output folder"),
                                                                  Preferences::load().outputFolder);
        if (!d.isEmpty()) m_output->setText(d);
    });
    connect(m_panel, &OperationPanel::startClicked, this, &ExportDialog::start);
    connect(m_panel, &OperationPanel::closeClicked, this, &QDialog::reject);
    connect(m_panel, &OperationPanel::progressed, this, &ExportDialog::progressed);
    connect(m_panel, &OperationPanel::resultClicked, this, [this] {
        const QFileInfo out(m_output->text());
        QDesktopServices::openUrl(
            QUrl::fromLocalFile(m_singleFile ? out.absolutePath() : out.absoluteFilePath()));
    });
}

QString ExportDialog::tag() const
{
    return m_singleFile ? QString() : m_tag->currentText();
}

void ExportDialog::updateTitle()
{
    const QString name = QFileInfo(m_checkpoint).fileName();
    setWindowTitle(m_singleFile ? tr("Export %1 to safetensors").arg(name)
                                : tr("Export model: %1 of %2").arg(tag(), name));
}

QString ExportDialog::unreadableReason() const
{
    if (m_singleFile || !m_opened) return {};
    for (const auto& t : m_opened->model.tags)
        if (QString::fromStdString(t.name) == tag()) return QString::fromStdString(t.unreadable);
    return {};
}

// A tag whose files cannot be read has no model to export: said beside the tag, and Export
// refuses it (the engine would too, naming the file) instead of writing an empty model.
void ExportDialog::noteTag()
{
    const QString why = unreadableReason();
    m_tagNote->setText(
        why.isEmpty() ? QString() : tr("This tag cannot be read, so it has no model to export: %1").arg(why));
    m_tagNote->setVisible(!why.isEmpty());
}

void ExportDialog::noteWindowShows(const QString& path)
{
    if (QFileInfo(path).absoluteFilePath() == QFileInfo(m_checkpoint).absoluteFilePath()) {
        m_sourceNote->hide();
        return;
    }
    m_sourceNote->setText(tr("The window now shows %1; this export still reads the checkpoint above.")
                              .arg(QDir::toNativeSeparators(path)));
    m_sourceNote->show();
}

bool ExportDialog::running() const
{
    return m_panel->running();
}

void ExportDialog::reject()
{
    // The dialog stays to say that nothing was left behind; closed again, it closes.
    if (!m_panel->cancelIfRunning()) QDialog::reject();
}

void ExportDialog::onFinished(const JobResult<ExportOutcome>& r)
{
    m_outcome = r.value.value_or(ExportOutcome{});
    m_outcome.cancelled = r.cancelled;
    m_outcome.message = r.error;
    if (!m_outcome.compute.isEmpty()) m_panel->addNote(tr("Compute: %1").arg(m_outcome.compute));
    for (const std::string& w : m_outcome.result.warnings)
        m_panel->addNote(QString::fromStdString(w));
    if (m_outcome.ok)
        m_panel->succeeded(tr("Wrote %n file(s) to %1 in %2 s.", nullptr, int(m_outcome.result.files.size()))
                               .arg(m_output->text())
                               .arg(double(m_panel->elapsedMs()) / 1000.0, 0, 'f', 1),
                           true);
    emit finished(m_outcome.ok);
}

void ExportDialog::setOutputFolder(const QString& dir)
{
    m_output->setText(dir);
}

QString ExportDialog::outputFolder() const
{
    return m_output->text();
}

void ExportDialog::setTag(const QString& tag)
{
    m_tag->setCurrentText(tag);
}

void ExportDialog::setFormat(const QString& format)
{
    m_format->setCurrentText(format);
}

void ExportDialog::setMaxShardSize(const QString& size)
{
    m_shard->setText(size);
}

void ExportDialog::cancel()
{
    m_panel->cancel();
}

void ExportDialog::start()
{
    if (running()) return;
    if (m_output->text().isEmpty()) {
        m_panel->say(tr("Choose an output folder first."));
        return;
    }
    if (const QString why = unreadableReason(); !why.isEmpty()) {
        m_panel->say(tr("Tag %1 cannot be read: %2 Choose a tag that can be read.").arg(tag(), why));
        emit finished(false);
        return;
    }
    if (!mayExportAfterVerification()) return;
    // The operation's own check, before anything runs (an output on, inside or around the input).
    if (m_panel->refused({m_checkpoint.toStdString()}, m_output->text(), m_outcome)) {
        emit finished(false);
        return;
    }
    if (m_singleFile) {
        startFile(m_checkpoint.toStdString(), m_output->text().toStdString());
        return;
    }
    ops::ConsolidateOptions opt;
    opt.tag = m_tag->currentText().toStdString();
    opt.format = m_format->currentText() == QLatin1String("bin")
                     ? ops::ConsolidateOptions::Format::Bin
                     : ops::ConsolidateOptions::Format::Safetensors;
    opt.excludeFrozen = m_excludeFrozen->isChecked();
    if (const QString d = m_dtype->currentData().toString(); !d.isEmpty())
        opt.dtype = d == QLatin1String("bf16")   ? torch::DType::BFloat16
                    : d == QLatin1String("fp16") ? torch::DType::Float16
                                                 : torch::DType::Float32;
    try {
        opt.maxShardSize = ops::parseShardSize(m_shard->text().toStdString());
    } catch (const std::exception&) {
        m_panel->say(
            tr("Largest shard: '%1' is not a size like 5GB, 500MB or 2000000 (bytes).").arg(m_shard->text()));
        return;
    }
    if (!mayWriteInto(m_output->text())) return;
    opt.overwrite = true; // asked, or the folder is empty: either way nothing mixes
    const std::string in = m_checkpoint.toStdString(), out = m_output->text().toStdString();
    const gpu::Device device = Preferences::load().computeDevice();
    // The worker gets plain values (and the shared, immutable opened checkpoint) and returns plain
    // values; the GUI thread updates widgets.
    m_panel->run<ExportOutcome>(
        [in, out, opt, device, opened = m_opened](const ops::ProgressSink& progress,
                                                  const ops::CancelToken& cancel) {
            ExportOutcome r;
            ops::ConsolidateOptions o = opt;
            std::string reason; // the casts run where the status bar says: one backend per job
            try {
                o.backend = gpu::makeBackend(device, &reason);
            } catch (const std::exception& e) {
                reason = std::string("cpu: ") + e.what();
            }
            r.compute = QString::fromStdString(reason);
            r.result = opened ? ops::consolidate(layout::tagOf(opened, o.tag), out, o, progress, cancel)
                              : ops::consolidate(in, out, o, progress, cancel);
            r.ok = true;
            return r;
        },
        [this](const JobResult<ExportOutcome>& r) { onFinished(r); });
}

bool ExportDialog::mayWriteInto(const QString& folder)
{
    if (mayReplace(this, folder, m_replaceAnswer)) return true;
    m_panel->say(tr("Nothing written: %1 holds files. Choose an empty folder, or replace the export in it.")
                     .arg(QDir::toNativeSeparators(folder)));
    return false;
}

bool ExportDialog::mayExportAfterVerification()
{
    // Only what the window verified of the checkpoint it still shows counts.
    if (!m_workspace || !m_workspace->opened() || m_workspace->opened() != m_opened) return true;
    const auto& tags = m_workspace->snapshot()->tags();
    const std::string name = !m_singleFile  ? tag().toStdString()
                             : tags.empty() ? std::string()
                                            : tags.front().name;
    const auto* v = m_workspace->verification(name);
    if (!v || v->whole) return true;
    bool yes = m_damagedAnswer == ReplaceAnswer::Yes;
    if (m_damagedAnswer == ReplaceAnswer::Ask)
        yes = QMessageBox::warning(
                  this, tr("Export a damaged tag?"),
                  tr("Verify found this tag damaged: %n damaged or missing file(s), and %1 problem(s) beyond "
                     "one file. An export of it may hold wrong values.\n\nExport anyway?",
                     nullptr, v->damagedFiles)
                      .arg(v->problems),
                  QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes;
    if (!yes) {
        m_panel->say(tr("Nothing written: Verify found this tag damaged."));
        emit finished(false);
    }
    return yes;
}

void ExportDialog::startFile(const std::string& in, const std::string& out)
{
    m_panel->run<ExportOutcome>(
        [in, out, skip = m_skipUnsupported->isChecked(), opened = m_opened](const ops::ProgressSink& progress,
                                                                            const ops::CancelToken& cancel) {
            ExportOutcome r;
            ops::ExportOptions options;
            options.skipUnsupported = skip;
            const ops::ExportResult res =
                opened
                    ? ops::exportFileToSafetensors(layout::tagOf(opened, {}), out, options, progress, cancel)
                    : ops::exportFileToSafetensors(in, out, options, progress, cancel);
            r.result.files = {res.path};
            r.result.tensors = res.tensors;
            r.result.bytes = res.bytes;
            r.result.warnings = res.warnings;
            r.ok = true;
            return r;
        },
        [this](const JobResult<ExportOutcome>& r) { onFinished(r); });
}

} // namespace ckpt::app
