#include "export_dialog.h"

#include "io/output.h"
#include "ops/consolidate.h"
#include "tree_model.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMetaObject>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QUrl>
#include <QtConcurrent>

namespace ckpt::app {

ExportDialog::ExportDialog(const QString& checkpoint, const QStringList& tags, const QString& latest,
                           QWidget* parent)
    : QDialog(parent), m_checkpoint(checkpoint)
{
    setWindowTitle(tr("Export consolidated model"));
    auto* form = new QFormLayout;
    m_tag = new QComboBox(this);
    m_tag->addItems(tags);
    m_tag->setCurrentText(latest);
    m_format = new QComboBox(this);
    m_format->addItems({QStringLiteral("safetensors"), QStringLiteral("bin")});
    m_dtype = new QComboBox(this);
    m_dtype->addItems({QStringLiteral("fp32"), QStringLiteral("bf16"), QStringLiteral("fp16")});
    m_shard = new QLineEdit(QStringLiteral("5GB"), this);
    m_excludeFrozen = new QCheckBox(tr("Leave out frozen parameters"), this);
    m_output = new QLineEdit(this);
    auto* browse = new QPushButton(tr("Browse..."), this);
    auto* outRow = new QHBoxLayout;
    outRow->addWidget(m_output, 1);
    outRow->addWidget(browse);
    form->addRow(tr("Tag"), m_tag);
    form->addRow(tr("Format"), m_format);
    form->addRow(tr("dtype"), m_dtype);
    form->addRow(tr("Largest shard"), m_shard);
    form->addRow(QString(), m_excludeFrozen);
    form->addRow(tr("Output folder"), outRow);
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_start = new QPushButton(tr("Export"), this);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_openFolder = new QPushButton(tr("Open folder"), this);
    m_openFolder->setVisible(false);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch();
    buttons->addWidget(m_openFolder);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_start);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addLayout(buttons);

    connect(browse, &QPushButton::clicked, this, [this] {
        const QString d = QFileDialog::getExistingDirectory(this, tr("Output folder"));
        if (!d.isEmpty()) m_output->setText(d);
    });
    connect(m_start, &QPushButton::clicked, this, &ExportDialog::start);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (running())
            cancel();
        else
            reject();
    });
    connect(m_openFolder, &QPushButton::clicked, this,
            [this] { QDesktopServices::openUrl(QUrl::fromLocalFile(m_output->text())); });
    connect(&m_watcher, &QFutureWatcher<ExportOutcome>::finished, this, [this] {
        m_outcome = m_watcher.result();
        m_start->setEnabled(true);
        m_cancel->setText(tr("Close"));
        if (m_outcome.ok) {
            m_progress->setValue(1000);
            m_status->setText(tr("Wrote %n file(s) to %1 in %2 s.", nullptr, int(m_outcome.files.size()))
                                  .arg(m_output->text())
                                  .arg(m_clock.elapsed() / 1000.0, 0, 'f', 1));
            m_openFolder->setVisible(true);
        } else if (m_outcome.cancelled) {
            m_progress->setValue(0);
            m_status->setText(tr("Cancelled; nothing was left behind."));
        } else {
            m_status->setText(m_outcome.message);
            if (isVisible()) QMessageBox::critical(this, tr("Export failed"), m_outcome.message);
        }
        emit finished(m_outcome.ok);
    });
}

void ExportDialog::setOutputFolder(const QString& dir)
{
    m_output->setText(dir);
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
    if (m_token) m_token->cancel();
    m_status->setText(tr("Cancelling..."));
}

void ExportDialog::onProgress(const ops::Progress& p)
{
    if (!p.note.empty()) { // e.g. stale partial output removed: worth a line of its own
        m_notes << QString::fromStdString(p.note);
        m_status->setToolTip(m_notes.join(QLatin1Char('\n')));
        return;
    }
    m_progress->setValue(p.permille);
    const double secs = m_clock.elapsed() / 1000.0;
    const double rate = secs > 0 ? double(p.doneBytes) / secs : 0;
    const double eta = rate > 0 && p.totalBytes > p.doneBytes ? double(p.totalBytes - p.doneBytes) / rate : 0;
    m_status->setText(
        tr("%1: %2 of %3, %4 GB/s, %5 s left")
            .arg(QString::fromStdString(p.stage), humanBytes(p.doneBytes), humanBytes(p.totalBytes))
            .arg(rate / 1e9, 0, 'f', 2)
            .arg(eta, 0, 'f', 0));
    emit progressed(p.permille);
}

void ExportDialog::start()
{
    if (running()) return;
    if (m_output->text().isEmpty()) {
        m_status->setText(tr("Choose an output folder first."));
        return;
    }
    // The same check the export makes, before anything runs: an output on or inside the
    // checkpoint is refused here with the reason, not after a worker has started.
    try {
        io::checkOutputOutsideInputs({m_checkpoint.toStdString()}, m_output->text().toStdString());
    } catch (const std::exception& e) {
        m_outcome = {false, false, QString::fromUtf8(e.what()), {}};
        m_status->setText(m_outcome.message);
        emit finished(false);
        return;
    }
    ops::ConsolidateOptions opt;
    opt.tag = m_tag->currentText().toStdString();
    opt.format = m_format->currentText() == QLatin1String("bin")
                     ? ops::ConsolidateOptions::Format::Bin
                     : ops::ConsolidateOptions::Format::Safetensors;
    opt.excludeFrozen = m_excludeFrozen->isChecked();
    opt.dtype = m_dtype->currentText() == QLatin1String("bf16")   ? torch::DType::BFloat16
                : m_dtype->currentText() == QLatin1String("fp16") ? torch::DType::Float16
                                                                  : torch::DType::Float32;
    try {
        opt.maxShardSize = ops::parseShardSize(m_shard->text().toStdString());
    } catch (const std::exception& e) {
        m_status->setText(QString::fromUtf8(e.what()));
        return;
    }
    m_token = std::make_shared<ops::CancelToken>();
    m_start->setEnabled(false);
    m_openFolder->setVisible(false);
    m_cancel->setText(tr("Cancel"));
    m_clock.start();
    const std::string in = m_checkpoint.toStdString(), out = m_output->text().toStdString();
    auto token = m_token;
    QPointer<ExportDialog> self(this);
    auto reports = std::make_shared<int>(0);
    const int cancelAfter = m_cancelAfter;
    // The worker only posts plain values back; the GUI thread updates widgets.
    m_watcher.setFuture(QtConcurrent::run([in, out, opt, token, self, reports, cancelAfter] {
        ExportOutcome r;
        try {
            auto res = ops::consolidate(
                in, out, opt,
                [self, token, reports, cancelAfter](const ops::Progress& p) {
                    if (cancelAfter && p.doneBytes > 0 && ++*reports == cancelAfter) token->cancel();
                    QMetaObject::invokeMethod(
                        self,
                        [self, p] {
                            if (self) self->onProgress(p);
                        },
                        Qt::QueuedConnection);
                },
                *token);
            r.ok = true;
            for (const auto& f : res.files)
                r.files << QString::fromStdString(f);
        } catch (const Cancelled&) {
            r.cancelled = true;
        } catch (const std::exception& e) {
            r.message = QString::fromUtf8(e.what());
        }
        return r;
    }));
}

} // namespace ckpt::app
