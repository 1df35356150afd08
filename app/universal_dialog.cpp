#include "universal_dialog.h"

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
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt::app {

namespace {

const QString kChannel = QStringLiteral("universal");

QString bytesText(uint64_t n)
{
    return QString::fromStdString(ops::humanBytes(n));
}

} // namespace

UniversalDialog::UniversalDialog(const QString& checkpoint, const QString& tag, QWidget* parent)
    : QDialog(parent), m_tag(tag)
{
    // The tag folder is what is converted (as ds_to_universal's --input_folder): the Universal
    // folder may then lie beside it in the checkpoint folder, where DeepSpeed's
    // load_checkpoint(folder) with load_universal finds it through latest_universal.
    const QDir root(checkpoint);
    const bool isRoot = !tag.isEmpty() && QFileInfo(root.filePath(tag)).isDir();
    m_input = isRoot ? QDir::cleanPath(root.filePath(tag)) : QDir::cleanPath(checkpoint);
    const QString parentDir = QFileInfo(m_input).absolutePath();
    const QString name = QFileInfo(m_input).fileName();

    setWindowTitle(tr("Convert to Universal checkpoint"));
    auto* form = new QFormLayout;
    auto* from = new QLabel(m_input, this);
    from->setTextFormat(Qt::PlainText);
    from->setTextInteractionFlags(Qt::TextSelectableByMouse);
    from->setWordWrap(true);
    m_output = new QLineEdit(QDir(parentDir).filePath(name + QStringLiteral("_universal")), this);
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
    auto* hint = new QLabel(tr("latest_universal is written beside the Universal folder: resume with "
                               "\"checkpoint\": {\"load_universal\": true} and load_checkpoint(its parent)."),
                            this);
    hint->setWordWrap(true);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText); // messages name files; a '<' in one is not markup
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_start = new QPushButton(tr("Convert"), this);
    m_start->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_open = new QPushButton(tr("Open result"), this);
    m_open->setObjectName(QStringLiteral("openResult"));
    m_open->setVisible(false);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch();
    buttons->addWidget(m_open);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_start);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(hint);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addLayout(buttons);
    resize(640, sizeHint().height());

    connect(browse, &QPushButton::clicked, this, [this] {
        // A new folder's name: chosen like a file to save (an existing folder must be empty).
        const QString d = QFileDialog::getSaveFileName(this, tr("Universal folder"), m_output->text());
        if (!d.isEmpty()) m_output->setText(d);
    });
    connect(m_start, &QPushButton::clicked, this, &UniversalDialog::start);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (running())
            cancel();
        else
            QDialog::reject();
    });
    connect(m_open, &QPushButton::clicked, this, &UniversalDialog::openResult);
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
    return m_jobs.running(kChannel);
}

void UniversalDialog::cancel()
{
    if (!running()) return;
    m_jobs.cancel(kChannel);
    m_status->setText(tr("Cancelling..."));
}

void UniversalDialog::reject()
{
    // The dialog stays to say that nothing was left behind; closed again, it closes.
    if (running())
        cancel();
    else
        QDialog::reject();
}

void UniversalDialog::openResult()
{
    if (!m_outcome.ok) return;
    if (m_openResult) m_openResult(m_outcome.output);
    accept();
}

void UniversalDialog::onProgress(const JobProgress& p)
{
    if (!p.note.isEmpty()) { // e.g. stale partial output removed: kept for the tooltip
        m_notes << p.note;
        m_status->setToolTip(m_notes.join(QLatin1Char('\n')));
        return;
    }
    m_progress->setValue(p.permille);
    m_status->setText(p.totalBytes ? progressText(p) : p.stage);
    emit progressed(p.permille);
}

void UniversalDialog::start()
{
    if (running()) return;
    const QString out = m_output->text().trimmed();
    if (out.isEmpty()) {
        m_status->setText(tr("Choose the Universal folder first."));
        return;
    }
    // The check the conversion makes, before anything runs: an output on or inside the tag is
    // refused here with its reason.
    try {
        io::checkOutputOutsideInputs({m_input.toStdString()}, out.toStdString());
    } catch (const std::exception& e) {
        m_outcome = {};
        m_outcome.message = QString::fromUtf8(e.what());
        m_status->setText(m_outcome.message);
        emit finished(false);
        return;
    }
    if (!mayReplace(this, out, m_replaceAnswer)) {
        m_status->setText(tr("Nothing written: %1 holds files. Choose an empty folder, or replace the "
                             "conversion in it.")
                              .arg(QDir::toNativeSeparators(out)));
        return;
    }
    ops::UniversalOptions opt;
    opt.injectMissingState = m_inject->isChecked();
    opt.overwrite = true; // asked, or nothing is there to mix with
    m_outcome = {};
    m_notes.clear();
    m_status->setToolTip(QString());
    m_start->setEnabled(false);
    m_output->setEnabled(false);
    m_inject->setEnabled(false);
    m_open->setVisible(false);
    m_cancel->setText(tr("Cancel"));
    m_progress->setValue(0);
    m_status->setText(tr("Reading %1...").arg(m_input));
    m_clock.start();
    const std::string in = m_input.toStdString(), outPath = out.toStdString();
    // The worker gets plain values and returns plain values; the GUI thread updates widgets.
    m_jobs.run(
        kChannel,
        [in, outPath, opt](const ops::ProgressSink& progress, const ops::CancelToken& cancel) {
            const ops::UniversalResult res = ops::universal(in, outPath, opt, progress, cancel);
            UniversalOutcome r;
            r.ok = true;
            r.output = QString::fromStdString(res.output);
            r.latestFile = QString::fromStdString(res.latestFile);
            r.zeroStage = res.zeroStage;
            r.worldSize = res.worldSize;
            r.parameters = qint64(res.parameters);
            r.files = qint64(res.files);
            r.bytesWritten = res.bytesWritten;
            return r;
        },
        [this](const JobResult<UniversalOutcome>& r) {
            UniversalOutcome o = r.value.value_or(UniversalOutcome{});
            o.cancelled = r.cancelled;
            o.message = r.error;
            onFinished(o);
        },
        [this](const JobProgress& p) { onProgress(p); });
}

void UniversalDialog::onFinished(const UniversalOutcome& outcome)
{
    m_outcome = outcome;
    m_start->setEnabled(true);
    m_output->setEnabled(true);
    m_inject->setEnabled(true);
    m_cancel->setText(tr("Close"));
    const double secs = m_clock.elapsed() / 1000.0;
    if (m_outcome.ok) {
        m_progress->setValue(1000);
        m_status->setText(tr("Wrote %1: ZeRO stage %2 of %3 ranks, %4 parameters, %5 files, %6 in %7 s "
                             "(%8 GB/s). latest_universal is in %9.")
                              .arg(m_outcome.output)
                              .arg(m_outcome.zeroStage)
                              .arg(m_outcome.worldSize)
                              .arg(m_outcome.parameters)
                              .arg(m_outcome.files)
                              .arg(bytesText(m_outcome.bytesWritten))
                              .arg(secs, 0, 'f', 1)
                              .arg(secs > 0 ? double(m_outcome.bytesWritten) / secs / 1e9 : 0.0, 0, 'f', 2)
                              .arg(QFileInfo(m_outcome.latestFile).absolutePath()));
        m_start->setEnabled(false); // the folder is no longer empty: a second run would be refused
        m_open->setVisible(true);
        m_open->setDefault(true);
    } else if (m_outcome.cancelled) {
        m_progress->setValue(0);
        m_status->setText(tr("Cancelled; nothing was left behind."));
    } else {
        m_progress->setValue(0);
        m_status->setText(m_outcome.message);
        if (isVisible()) QMessageBox::critical(this, tr("Conversion failed"), m_outcome.message);
    }
    emit finished(m_outcome.ok);
}

void showConvertToUniversal(QWidget* parent, const QString& checkpointPath, const QString& tag,
                            std::function<void(const QString&)> openResult)
{
    auto* dialog = new UniversalDialog(checkpointPath, tag, parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setOpenResult(std::move(openResult));
    dialog->open();
}

} // namespace ckpt::app
