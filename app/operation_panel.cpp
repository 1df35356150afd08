#include "operation_panel.h"

#include "io/output.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace ckpt::app {

OperationPanel::OperationPanel(const QString& startText, const QString& resultText,
                               const QString& failureTitle, JobManager* jobs, QWidget* parent)
    : QWidget(parent), m_failureTitle(failureTitle), m_jobs(jobs)
{
    m_progress = new QProgressBar(this);
    m_progress->setRange(0, 1000);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText); // messages name files; a '<' in one is not markup
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Room for a path and two lines of progress: at its size hint a dialog cut both off.
    m_status->setMinimumHeight(2 * m_status->fontMetrics().lineSpacing());
    m_start = new QPushButton(startText, this);
    m_start->setDefault(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_result = new QPushButton(resultText, this);
    m_result->setVisible(false);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch();
    buttons->addWidget(m_result);
    buttons->addWidget(m_cancel);
    buttons->addWidget(m_start);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addLayout(buttons);

    connect(m_start, &QPushButton::clicked, this, &OperationPanel::startClicked);
    connect(m_result, &QPushButton::clicked, this, &OperationPanel::resultClicked);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        if (!cancelIfRunning()) emit closeClicked();
    });
}

bool OperationPanel::running() const
{
    return m_jobs.running(kChannel);
}

void OperationPanel::cancel()
{
    if (!running()) return;
    m_jobs.cancel(kChannel);
    m_status->setText(tr("Cancelling..."));
}

bool OperationPanel::cancelIfRunning()
{
    if (!running()) return false;
    cancel();
    return true;
}

bool OperationPanel::refused(const std::vector<std::string>& inputs, const QString& output,
                             OperationOutcome& outcome)
{
    try {
        io::checkOutputOutsideInputs(inputs, output.toStdString());
        return false;
    } catch (const std::exception& e) {
        outcome = {};
        outcome.message = QString::fromUtf8(e.what());
        say(outcome.message);
        return true;
    }
}

void OperationPanel::say(const QString& text)
{
    m_status->setText(text);
}

QString OperationPanel::status() const
{
    return m_status->text();
}

void OperationPanel::addNote(const QString& note)
{
    m_notes << note;
    m_status->setToolTip(m_notes.join(QLatin1Char('\n')));
}

void OperationPanel::began()
{
    m_notes.clear();
    m_status->setToolTip(QString());
    m_start->setEnabled(false);
    m_result->setVisible(false);
    m_cancel->setText(tr("Cancel"));
    m_progress->setValue(0);
    m_status->setText(tr("Starting..."));
    m_clock.start();
}

void OperationPanel::onProgress(const JobProgress& p)
{
    if (!p.note.isEmpty()) { // e.g. a stale partial output removed: worth a line of its own
        addNote(p.note);
        return;
    }
    m_progress->setValue(p.permille);
    m_status->setText(p.totalBytes ? progressText(p) : p.stage); // a stage with no bytes yet: its name
    emit progressed(p.permille);
}

void OperationPanel::ended(bool cancelled, const QString& error, const QString& errorFile)
{
    m_start->setEnabled(true);
    m_cancel->setText(tr("Close"));
    if (cancelled) {
        m_progress->setValue(0);
        m_status->setText(tr("Cancelled; nothing was left behind."));
    } else if (!error.isEmpty()) {
        m_progress->setValue(0);
        m_status->setText(error);
        if (!isVisible()) return;
        QMessageBox box(QMessageBox::Critical, m_failureTitle,
                        errorFile.isEmpty() ? m_failureTitle + QLatin1Char('.')
                                            : tr("%1: %2").arg(m_failureTitle, errorFile),
                        QMessageBox::Ok, this);
        box.setInformativeText(error);
        box.exec();
    }
}

void OperationPanel::succeeded(const QString& summary, bool again)
{
    m_progress->setValue(1000);
    m_status->setText(m_fetched.isEmpty() ? summary : summary + QLatin1Char(' ') + m_fetched);
    m_start->setEnabled(again);
    m_result->setVisible(true);
    m_result->setDefault(true);
}

} // namespace ckpt::app
