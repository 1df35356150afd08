#include "verify_dialog.h"

#include "snapshot.h"
#include "tree_model.h"
#include "workspace.h"

#include <QCheckBox>
#include <QColor>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

namespace ckpt::app {

namespace {
enum Column { FileColumn, FormatColumn, StatusColumn, ProblemColumn, ColumnCount };
} // namespace

VerifyDialog::VerifyDialog(const QString& path, const QString& tag, QWidget* parent, Workspace* workspace)
    : QDialog(parent), m_path(absoluteLocation(path)), m_tag(tag)
{
    setWindowTitle(tr("Verify %1").arg(locationName(m_path)));
    auto* intro = new QLabel(
        tr("Reads every file of the checkpoint once: the files its format needs are all there, each zip "
           "record's CRC-32 (which torch.load never checks), safetensors offsets, archives to their end, and "
           "a manifest's SHA-256 where there is one (Megatron's integrity.json). Nothing is written."),
        this);
    intro->setWordWrap(true);
    auto* form = new QFormLayout;
    auto* in = new QLabel(m_path, this);
    in->setTextFormat(Qt::PlainText);
    in->setTextInteractionFlags(Qt::TextSelectableByMouse);
    in->setWordWrap(true);
    form->addRow(tr("Checkpoint"), in);
    if (!m_tag.isEmpty()) form->addRow(tr("Tag"), new QLabel(m_tag, this));
    m_allTags = new QCheckBox(tr("Every tag"), this);
    form->addRow(QString(), m_allTags);
    m_problems = new QLabel(this);
    m_problems->setWordWrap(true);
    m_problems->setTextFormat(Qt::PlainText);
    m_problems->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_problems->hide();
    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setHorizontalHeaderLabels({tr("File"), tr("Format"), tr("Status"), tr("Problem")});
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setWordWrap(false);
    m_table->setTextElideMode(Qt::ElideRight);
    // A file's whole name: ranks differ in its middle, which eliding would hide.
    m_table->horizontalHeader()->setSectionResizeMode(FileColumn, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(FormatColumn, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(StatusColumn, QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(ProblemColumn, QHeaderView::Stretch);
    m_panel = new OperationPanel(tr("Verify"), tr("Close"), tr("Verify failed"),
                                 workspace ? &workspace->jobs() : nullptr, this);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(m_problems);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_panel);
    resize(1180, 520);
    connect(m_panel, &OperationPanel::startClicked, this, &VerifyDialog::start);
    connect(m_panel, &OperationPanel::closeClicked, this, &QDialog::reject);
    connect(m_panel, &OperationPanel::resultClicked, this, &QDialog::accept);
}

void VerifyDialog::setAllTags(bool all)
{
    m_allTags->setChecked(all);
}

bool VerifyDialog::running() const
{
    return m_panel->running();
}

QString VerifyDialog::status() const
{
    return m_panel->status();
}

void VerifyDialog::start()
{
    ops::VerifyOptions o;
    o.tag = m_tag.toStdString();
    o.allTags = m_allTags->isChecked();
    m_report.reset();
    m_problems->hide();
    m_table->setRowCount(0);
    // The worker gets plain values and returns the report; the GUI thread fills the widgets.
    m_panel->run<ops::VerifyReport>(
        [path = m_path.toStdString(), o](const ops::ProgressSink& progress, const ops::CancelToken& cancel) {
            return ops::verify(path, o, progress, cancel);
        },
        [this](const JobResult<ops::VerifyReport>& r) { onFinished(r); });
}

void VerifyDialog::onFinished(const JobResult<ops::VerifyReport>& r)
{
    if (!r.value) { // cancelled or could not check: the panel says which
        emit finished(false);
        return;
    }
    m_report = *r.value;
    fillTable(*m_report);
    const ops::VerifyReport& v = *m_report;
    QStringList problems;
    for (const auto& p : v.problems)
        problems << QString::fromStdString(p);
    for (const auto& n : v.notes)
        m_panel->addNote(QString::fromStdString(n));
    m_problems->setText(problems.join(QLatin1Char('\n')));
    m_problems->setVisible(!problems.isEmpty());
    if (v.whole())
        m_panel->succeeded(
            tr("Whole: %n file(s), %1 read.", nullptr, int(v.files.size())).arg(humanBytes(v.bytes)), true);
    else
        m_panel->say(tr("Damaged: %n file(s) of %1, and %2 problem(s) beyond one file.", nullptr,
                        int(v.damagedFiles()))
                         .arg(v.files.size())
                         .arg(v.problems.size()));
    emit finished(v.whole());
}

void VerifyDialog::fillTable(const ops::VerifyReport& r)
{
    m_table->setRowCount(int(r.files.size()));
    for (int row = 0; row < int(r.files.size()); ++row) {
        const ops::FileVerdict& f = r.files[size_t(row)];
        const bool bad = f.status == "damaged" || f.status == "missing";
        const QString status = f.status == "ok"            ? tr("\u2713 whole")
                               : f.status == "not covered" ? tr("not covered by a checksum")
                               : f.status == "missing"     ? tr("\u2717 missing")
                                                           : tr("\u2717 damaged");
        const QString problem =
            QString::fromStdString(f.problems.empty() ? std::string() : f.problems.front());
        const QString cells[] = {QString::fromStdString(f.name), QString::fromStdString(f.format), status,
                                 problem};
        for (int c = 0; c < ColumnCount; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setToolTip(c == ProblemColumn && f.problems.size() > 1
                                 ? QString::fromStdString(f.problems.front() + "\n" + f.problems.back())
                                 : cells[c]);
            if (bad && c == StatusColumn) item->setForeground(QColor(0xd0, 0x30, 0x30));
            m_table->setItem(row, c, item);
        }
    }
}

void VerifyDialog::reject()
{
    if (!m_panel->cancelIfRunning()) QDialog::reject();
}

} // namespace ckpt::app
