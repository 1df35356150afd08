#include "slim_dialog.h"

#include "preferences.h"
#include "workspace.h"

#include "io/location.h"
#include "io/output.h"
#include "ops/slim.h"
#include "replace_prompt.h"
#include "tree_model.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ckpt::app {

namespace {

enum Column { FileColumn, ActionColumn, BeforeColumn, PredictedColumn, AfterColumn, ColumnCount };

const QString kPredict = QStringLiteral("predict");

// Runs on a worker: ops::slim, its result as plain values. Errors reach the job's result.
SlimOutcome runSlim(const std::string& in, const std::string& out, bool dryRun, const layout::FileSet* files,
                    const ops::ProgressSink& progress, const ops::CancelToken& token)
{
    SlimOutcome r;
    r.dryRun = dryRun;
    ops::SlimOptions options;
    options.dryRun = dryRun;
    options.overwrite = true; // the dialog asked before a folder that holds files is written
    r.result = ops::slim(in, out, options, progress, token, files);
    r.ok = true;
    return r;
}

// A job's result as the dialog keeps it: errors keep the file they name.
SlimOutcome outcomeOf(const JobResult<SlimOutcome>& job, bool dryRun)
{
    SlimOutcome r = job.value.value_or(SlimOutcome{});
    r.dryRun = dryRun;
    r.cancelled = job.cancelled;
    if (!job.ok()) {
        r.message = job.error;
        r.file = job.errorFile;
    }
    return r;
}

QString saving(quint64 before, quint64 after)
{
    const quint64 saved = before > after ? before - after : 0;
    return SlimDialog::tr("%1 \u2192 %2, %3 saved (%4%)")
        .arg(humanBytes(before), humanBytes(after), humanBytes(saved))
        .arg(QLocale().toString(before ? 100.0 * double(saved) / double(before) : 0.0, 'f', 0));
}

} // namespace

SlimDialog::SlimDialog(const QString& input, QWidget* parent, Workspace* workspace)
    : QDialog(parent), m_input(absoluteLocation(input)), m_files(workspace ? workspace->files() : nullptr),
      m_folder(isFolder(m_input, workspace))
{
    setWindowTitle(tr("Slim %1").arg(locationName(m_input)));
    auto* intro = new QLabel(
        m_folder
            ? tr("Writes a copy of this folder in which every torch.save file keeps, of each storage, only "
                 "the bytes its tensors view. Other files are copied. torch.load gives the same tensors; "
                 "the input is not changed.")
            : tr("Writes a copy of this file in which each storage keeps only the bytes its tensors view. "
                 "torch.load gives the same tensors; the input is not changed."),
        this);
    intro->setWordWrap(true);
    auto* form = new QFormLayout;
    auto* in = new QLabel(m_input, this);
    in->setObjectName(QStringLiteral("input"));
    in->setTextFormat(Qt::PlainText);
    in->setTextInteractionFlags(Qt::TextSelectableByMouse);
    in->setWordWrap(true);
    m_output = new QLineEdit(defaultOutput(m_input, m_folder), this);
    m_output->setObjectName(QStringLiteral("output"));
    auto* browse = new QPushButton(tr("Browse..."), this);
    auto* outRow = new QHBoxLayout;
    outRow->addWidget(m_output, 1);
    outRow->addWidget(browse);
    form->addRow(tr("Input"), in);
    form->addRow(m_folder ? tr("Output folder") : tr("Output file"), outRow);
    if (io::isRemotePath(m_input.toStdString())) {
        // Said before anything runs: the suggested output is not beside the input.
        auto* local =
            new QLabel(tr("The input is read from its URL; the copy is written on this computer."), this);
        local->setWordWrap(true);
        form->addRow(QString(), local);
    }
    m_predictionLabel = new QLabel(this);
    m_predictionLabel->setWordWrap(true);
    m_predictionLabel->setTextFormat(Qt::PlainText);
    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setHorizontalHeaderLabels(
        {tr("File"), tr("Action"), tr("Before"), tr("Predicted"), tr("After")});
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 8);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    // One line, elided in the middle: a tag's files differ at their ends (word wrap cut them after the tag).
    m_table->setWordWrap(false);
    m_table->setTextElideMode(Qt::ElideMiddle);
    m_table->horizontalHeader()->setSectionResizeMode(FileColumn, QHeaderView::Stretch);
    for (int c = ActionColumn; c < ColumnCount; ++c)
        m_table->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    m_panel = new OperationPanel(tr("Slim"), tr("Open in window"), tr("Slim failed"),
                                 workspace ? &workspace->jobs() : nullptr, this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(m_predictionLabel);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_panel);
    resize(720, 460);

    connect(browse, &QPushButton::clicked, this, [this] {
        // A save dialog for both: a folder output is a new folder, named like a file.
        const QString p =
            QFileDialog::getSaveFileName(this, m_folder ? tr("Output folder") : tr("Output file"), output());
        if (!p.isEmpty()) m_output->setText(p);
    });
    connect(m_panel, &OperationPanel::startClicked, this, &SlimDialog::start);
    connect(m_panel, &OperationPanel::closeClicked, this, &QDialog::reject);
    connect(m_panel, &OperationPanel::progressed, this, &SlimDialog::progressed);
    connect(m_panel, &OperationPanel::resultClicked, this, [this] {
        emit openRequested(output());
        accept();
    });
    predict();
}

void SlimDialog::onPredicted(const SlimOutcome& o)
{
    m_prediction = o;
    if (m_prediction.cancelled) return; // the real run started; it says what happened
    m_predicted = true;
    if (!m_prediction.ok) {
        m_predictionLabel->setText(tr("Cannot predict: %1").arg(m_prediction.message));
        emit predicted(false);
        return;
    }
    if (!m_outcome.ok) fillTable(m_prediction, PredictedColumn);
    const uint64_t before = m_prediction.result.bytesBefore(), after = m_prediction.result.bytesAfter();
    m_predictionLabel->setText(
        before > after
            ? tr("Predicted: %1.").arg(saving(before, after))
            : tr("Predicted: nothing to gain, %1 would be copied as it is.").arg(humanBytes(before)));
    emit predicted(true);
}

void SlimDialog::onFinished(const SlimOutcome& o)
{
    m_outcome = o;
    m_running = false;
    m_output->setEnabled(true);
    if (m_outcome.ok) {
        fillTable(m_outcome, AfterColumn);
        const qint64 ms = m_panel->elapsedMs();
        const QString took =
            ms < 1000 ? tr("%1 ms").arg(ms) : tr("%1 s").arg(QLocale().toString(double(ms) / 1000.0, 'f', 1));
        // A second run would only find its output taken.
        m_panel->succeeded(
            tr("Done in %1: %2. Written to %3.")
                .arg(took, saving(m_outcome.result.bytesBefore(), m_outcome.result.bytesAfter()), output()),
            false);
    }
    emit finished(m_outcome.ok);
}

bool SlimDialog::isFolder(const QString& input, const Workspace* workspace)
{
    if (const std::optional<bool> known =
            knownFolder(input, workspace ? workspace->snapshot().get() : nullptr))
        return *known;
    // A URL outside the open checkpoint (the Bloat view of another folder): its server says.
    try {
        return io::pathKind(input.toStdString()) == io::PathKind::Folder;
    } catch (const std::exception&) {
        return input.endsWith(QLatin1Char('/')); // the dry run then says what the server answered
    }
}

QString SlimDialog::defaultOutput(const QString& input)
{
    return defaultOutput(input, isFolder(input, nullptr));
}

QString SlimDialog::defaultOutput(const QString& input, bool folder)
{
    // A URL's name, in the home folder: outputs are written on this computer.
    const QFileInfo fi(locationName(input));
    const QString dir = defaultOutputFolder(input);
    const QString base = folder ? fi.fileName() : fi.completeBaseName();
    const QString suffix = folder || fi.suffix().isEmpty() ? QString() : QLatin1Char('.') + fi.suffix();
    for (int n = 1;; ++n) {
        const QString tail = n == 1 ? QString() : QStringLiteral("-%1").arg(n);
        const QString candidate = folder ? QDir(dir).filePath(base + QStringLiteral("-slim") + tail)
                                         : QDir(dir).filePath(base + QStringLiteral(".slim") + tail + suffix);
        if (!QFileInfo::exists(candidate)) return candidate;
    }
}

void SlimDialog::setOutput(const QString& path)
{
    m_output->setText(path);
}

QString SlimDialog::output() const
{
    return m_output->text().trimmed();
}

QString SlimDialog::actionText(const QString& action) const
{
    if (action == QLatin1String("slimmed")) return tr("slimmed");
    if (action == QLatin1String("copied (not bloated)")) return tr("copied (not bloated)");
    if (action == QLatin1String("copied (not a torch.save file)"))
        return tr("copied (not a torch.save file)");
    return action;
}

void SlimDialog::fillTable(const SlimOutcome& o, int column)
{
    const std::vector<ops::SlimFile>& files = o.result.files;
    m_table->setRowCount(int(files.size()));
    for (int r = 0; r < int(files.size()); ++r) {
        const ops::SlimFile& f = files[size_t(r)];
        auto set = [&](int c, const QString& text, const QString& tip = {}) {
            auto* item = new QTableWidgetItem(text);
            if (c >= BeforeColumn) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            if (!tip.isEmpty()) item->setToolTip(tip);
            m_table->setItem(r, c, item);
        };
        // relative to a folder input; a file input's name (a URL's last part)
        const QString path = QString::fromStdString(f.path);
        const QString shown = m_folder ? path : locationName(path);
        set(FileColumn, shown, shown);
        set(ActionColumn, actionText(QString::fromStdString(f.action)));
        set(BeforeColumn, humanBytes(f.bytesBefore),
            tr("%1 bytes").arg(QLocale().toString(qulonglong(f.bytesBefore))));
        set(column, humanBytes(f.bytesAfter),
            tr("%1 bytes").arg(QLocale().toString(qulonglong(f.bytesAfter))));
    }
}

void SlimDialog::predict()
{
    m_predictionLabel->setText(tr("Predicting the savings..."));
    const std::string in = m_input.toStdString(), out = output().toStdString();
    // A dry run reads every pickle: a worker's job, like the real one.
    m_panel->jobs().run(
        kPredict,
        [in, out, files = m_files](const ops::ProgressSink&, const ops::CancelToken& cancel) {
            return runSlim(in, out, true, files.get(), {}, cancel);
        },
        [this](const JobResult<SlimOutcome>& r) { onPredicted(outcomeOf(r, true)); });
}

void SlimDialog::cancel()
{
    m_panel->cancel();
}

void SlimDialog::reject()
{
    // Escape or the window's close button while it runs: stop the job first, the dialog stays
    // to say that nothing was left behind.
    if (!m_panel->cancelIfRunning()) QDialog::reject();
}

void SlimDialog::start()
{
    if (running()) return;
    if (output().isEmpty()) {
        m_panel->say(m_folder ? tr("Choose an output folder first.") : tr("Choose an output file first."));
        return;
    }
    // The operation's own check, before anything runs (an output on, inside or around the input).
    if (m_panel->refused({m_input.toStdString()}, output(), m_outcome)) {
        emit finished(false);
        return;
    }
    if (m_folder && !mayReplace(this, output(), m_replaceAnswer)) {
        m_panel->say(tr("Nothing written: %1 holds files. Choose an empty folder, or replace them.")
                         .arg(QDir::toNativeSeparators(output())));
        return;
    }
    // The real run tells the real sizes: a prediction still running is cancelled (and says so).
    m_panel->jobs().cancel(kPredict);
    m_outcome = {};
    m_running = true;
    m_output->setEnabled(false);
    const std::string in = m_input.toStdString(), out = output().toStdString();
    m_panel->run<SlimOutcome>(
        [in, out, files = m_files](const ops::ProgressSink& progress, const ops::CancelToken& cancel) {
            return runSlim(in, out, false, files.get(), progress, cancel);
        },
        [this](const JobResult<SlimOutcome>& r) { onFinished(outcomeOf(r, false)); });
}

} // namespace ckpt::app
