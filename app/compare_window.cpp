#include "compare_window.h"

#include "compare_heatmap.h"
#include "compare_histograms.h"
#include "compare_model.h"
#include "preferences.h"

#include "layout/family.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ckpt::app {

namespace {

constexpr int kBins = 64;
const QString kChannel = QStringLiteral("compare");

// One side: a tag of the checkpoint the window holds (the path is that checkpoint or one of its
// tag folders) is taken from it; anything else is opened through the registry.
layout::OpenedTag sideOf(const std::shared_ptr<const layout::OpenedCheckpoint>& opened, const QString& path,
                         const QString& tag, const ops::ProgressSink& progress,
                         const ops::CancelToken& cancel, const char* label)
{
    const QString want = canonicalLocation(path);
    const auto same = [&](const std::string& p) {
        return !p.empty() && canonicalLocation(QString::fromStdString(p)) == want;
    };
    if (opened && !want.isEmpty()) {
        if (same(opened->model.opened) || same(opened->model.root))
            return layout::tagOf(opened, tag.toStdString());
        for (const layout::Tag& t : opened->model.tags)
            if (same(t.dir) && !opened->model.singleFile && t.unreadable.empty() &&
                (tag.isEmpty() || tag.toStdString() == t.name))
                return layout::tagOf(opened, t.name);
    }
    return layout::openTag(path.toStdString(), tag.toStdString(),
                           ops::openingObserver(progress, cancel, label));
}

// The worker: both sides opened and compared; each tensor's result is published the moment it
// is known, so the table fills in while the rest is computed.
ops::DiffResult runCompare(const CompareRequest& q,
                           const std::shared_ptr<const layout::OpenedCheckpoint>& opened,
                           const ops::ProgressSink& progress, const ops::CancelToken& cancel,
                           const PartialSink<ops::TensorDiff>& publish)
{
    std::string reason;
    std::shared_ptr<gpu::ComputeBackend> backend = gpu::makeBackend(q.device, &reason);
    ops::DiffOptions o;
    o.a.backend = o.b.backend = backend;
    o.a.tag = q.tagA.toStdString();
    o.b.tag = q.tagB.toStdString();
    o.moments = q.moments;
    o.sideStats = true;
    o.histogramBins = kBins;
    const layout::OpenedTag a = sideOf(opened, q.a, q.tagA, progress, cancel, "A");
    cancel.throwIfCancelled();
    const layout::OpenedTag b = sideOf(opened, q.b, q.tagB, progress, cancel, "B");
    ops::DiffResult r =
        ops::computeDiff(a, b, o, *backend, progress, cancel, [&](const ops::TensorDiff& d) { publish(d); });
    r.a.path = q.a.toStdString();
    r.b.path = q.b.toStdString();
    r.tensors = {}; // published already: the window's model holds them
    return r;
}

} // namespace

CompareWindow::CompareWindow(QWidget* parent, Workspace* workspace)
    : QMainWindow(parent), m_workspace(workspace), m_jobs(workspace ? &workspace->jobs() : nullptr)
{
    setWindowTitle(tr("Compare - Checkpoint Studio"));
    resize(1280, 800); // a laptop's screen: every pane usable at this size
    m_model = new CompareModel(this);
    m_proxy = new CompareProxy(this);
    m_proxy->setSourceModel(m_model);

    auto* central = new QWidget(this);
    auto* l = new QVBoxLayout(central);
    m_sides = new QLabel(central);
    m_sides->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_sides->setWordWrap(true);
    m_summary = new QLabel(central);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->addWidget(m_sides);
    l->addWidget(m_summary);
    l->addLayout(buildProgressRow(central));
    l->addLayout(buildFilterRow(central));
    l->addWidget(buildViews(central), 1);
    setCentralWidget(central);
    buildMenu();
    connectWidgets();
    m_export->setEnabled(false);
}

QLayout* CompareWindow::buildProgressRow(QWidget* parent)
{
    auto* row = new QHBoxLayout;
    m_progress = new QProgressBar(parent);
    m_progress->setRange(0, 1000);
    // The job manager's words for a report (stage, bytes, rate, time left), as the dialogs
    // show them; sized by the row, not by the text, so that the row keeps still as it changes.
    m_eta = new QLabel(parent);
    m_eta->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_cancel = new QPushButton(tr("Cancel"), parent);
    row->addWidget(m_progress, 2);
    row->addWidget(m_eta, 3);
    row->addWidget(m_cancel);
    m_progress->hide();
    m_eta->hide();
    m_cancel->hide();
    return row;
}

QLayout* CompareWindow::buildFilterRow(QWidget* parent)
{
    auto* row = new QHBoxLayout;
    m_filter = new QLineEdit(parent);
    m_filter->setPlaceholderText(tr("Filter by name (wildcards)"));
    m_filter->setClearButtonEnabled(true);
    m_status = new QComboBox(parent);
    m_status->addItem(tr("All tensors"), int(CompareProxy::AnyStatus));
    m_status->addItem(tr("All but identical"), int(CompareProxy::NotIdentical));
    for (auto s :
         {ops::DiffStatus::Changed, ops::DiffStatus::Identical, ops::DiffStatus::OnlyInA,
          ops::DiffStatus::OnlyInB, ops::DiffStatus::DTypeChanged, ops::DiffStatus::ShapeOrDTypeChanged})
        m_status->addItem(CompareModel::statusText(s), int(s));
    m_momentsBox = new QCheckBox(tr("Optimizer moments"), parent);
    m_momentsBox->setToolTip(tr("Compare each parameter's optimizer moments too (exp_avg and exp_avg_sq, "
                                "as <param>/exp_avg): the comparison runs again"));
    m_export = new QPushButton(tr("Export..."), parent);
    m_export->setToolTip(tr("Save the table as CSV or JSON"));
    row->addWidget(m_filter, 1);
    row->addWidget(m_status);
    row->addWidget(m_momentsBox);
    row->addWidget(m_export);
    return row;
}

QTableView* CompareWindow::buildTable(QWidget* parent)
{
    m_table = new QTableView(parent);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(-1, Qt::AscendingOrder); // arrival order until a header is clicked
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    // Names are what people read: the name column starts wide, the numbers fit their contents
    // and the table scrolls sideways when the window is narrow.
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->horizontalHeader()->setSectionResizeMode(CompareModel::Name, QHeaderView::Interactive);
    m_table->horizontalHeader()->setMinimumSectionSize(60);
    m_table->setColumnWidth(CompareModel::Name, 320);
    m_table->setAlternatingRowColors(true);
    m_table->setTextElideMode(Qt::ElideMiddle); // "model.layers.17...weight": both ends say which
    return m_table;
}

// The table beside the heatmap, the selected tensor's histograms below both.
QSplitter* CompareWindow::buildViews(QWidget* parent)
{
    m_heatmap = new CompareHeatmap(parent);
    m_histograms = new CompareHistograms(parent);
    auto* top = new QSplitter(Qt::Horizontal, parent);
    top->addWidget(buildTable(parent));
    top->addWidget(m_heatmap);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    top->setSizes({860, 520});
    auto* split = new QSplitter(Qt::Vertical, parent);
    split->addWidget(top);
    split->addWidget(m_histograms);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({440, 360});
    return split;
}

void CompareWindow::buildMenu()
{
    QMenu* menu = menuBar()->addMenu(tr("&Comparison"));
    menu->addAction(tr("&Compare Other Sides..."), this, &CompareWindow::askOtherSides);
    menu->addAction(tr("&Export Table..."), this, &CompareWindow::exportTable);
    menu->addSeparator();
    menu->addAction(tr("C&lose"), QKeySequence::Close, this, &QWidget::close);
}

void CompareWindow::connectWidgets()
{
    connect(m_momentsBox, &QCheckBox::toggled, this, [this](bool on) {
        if (m_request.a.isEmpty() || m_request.moments == on) return;
        CompareRequest q = m_request;
        q.moments = on;
        start(q);
    });
    connect(m_cancel, &QPushButton::clicked, this, &CompareWindow::cancel);
    connect(m_export, &QPushButton::clicked, this, &CompareWindow::exportTable);
    connect(m_filter, &QLineEdit::textChanged, m_proxy, &CompareProxy::setPattern);
    connect(m_status, &QComboBox::currentIndexChanged, this,
            [this] { m_proxy->setStatus(m_status->currentData().toInt()); });
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &CompareWindow::showCurrent);
    connect(m_heatmap, &CompareHeatmap::tensorClicked, this, [this](const QString& name) {
        m_userPicked = true;
        selectTensor(name);
    });
    connect(m_table, &QTableView::pressed, this, [this] { m_userPicked = true; });
}

void CompareWindow::start(const QString& a, const QString& b)
{
    start(CompareRequest{a, b, {}, {}, m_momentsBox->isChecked()});
}

void CompareWindow::start(const CompareRequest& request)
{
    m_request = request;
    m_request.a = m_a = absoluteLocation(request.a);
    m_request.b = m_b = absoluteLocation(request.b);
    m_request.device = Preferences::load().computeDevice();
    {
        const QSignalBlocker block(m_momentsBox);
        m_momentsBox->setChecked(request.moments);
    }
    showStarting();
    m_clock.start();
    // A comparison already running is dropped: its rows and its result never arrive.
    m_jobs.run<ops::TensorDiff>(
        kChannel,
        [q = m_request, opened = m_workspace ? m_workspace->opened() : nullptr](
            const ops::ProgressSink& progress, const ops::CancelToken& cancel,
            const PartialSink<ops::TensorDiff>& publish) {
            return runCompare(q, opened, progress, cancel, publish);
        },
        [this](std::vector<ops::TensorDiff> rows) { addRows(std::move(rows)); },
        [this](JobResult<ops::DiffResult> outcome) { onFinished(std::move(outcome)); },
        [this](const JobProgress& p) { onProgress(p); });
}

// Everything of the last comparison cleared, the sides named, the progress row shown.
void CompareWindow::showStarting()
{
    m_outcome = {};
    m_done = false;
    m_cancelling = false;
    m_userPicked = false;
    m_largest = -1;
    m_model->clear();
    m_heatmap->setGrid({});
    m_histograms->setTensor(nullptr);
    auto side = [this](const QString& path, const QString& tag) {
        return tag.isEmpty() ? path.toHtmlEscaped()
                             : tr("%1 (tag %2)").arg(path.toHtmlEscaped(), tag.toHtmlEscaped());
    };
    m_sides->setText(
        tr("<b>A</b> %1<br><b>B</b> %2").arg(side(m_a, m_request.tagA), side(m_b, m_request.tagB)));
    m_summary->setText(tr("Reading both sides..."));
    // Both sides by name, and by tag where one is chosen: two tags of one run read "run @ a vs run @ b".
    auto titled = [](const QString& path, const QString& tag) {
        const QString name = QFileInfo(path).fileName().isEmpty() ? path : QFileInfo(path).fileName();
        return tag.isEmpty() ? name : QStringLiteral("%1 @ %2").arg(name, tag);
    };
    setWindowTitle(tr("%1 vs %2 - Compare").arg(titled(m_a, m_request.tagA), titled(m_b, m_request.tagB)));
    m_progress->setValue(0);
    m_progress->setFormat(tr("Opening"));
    m_progress->show();
    m_eta->clear();
    m_eta->show();
    m_cancel->show();
    m_cancel->setEnabled(true);
    m_export->setEnabled(false);
}

bool CompareWindow::running() const
{
    return m_jobs.running(kChannel);
}

void CompareWindow::cancel()
{
    if (!running()) return;
    m_jobs.cancel(kChannel);
    m_cancelling = true;
    m_cancel->setEnabled(false);
    m_progress->setFormat(tr("Cancelling..."));
}

void CompareWindow::onProgress(const JobProgress& p)
{
    if (!p.note.isEmpty()) { // a one-off message: the report itself is unchanged
        statusBar()->showMessage(p.note);
        return;
    }
    m_progress->setValue(p.permille);
    if (!m_cancelling) m_progress->setFormat(p.stage.isEmpty() ? tr("Opening") : QStringLiteral("%p%"));
    m_eta->setText(progressText(p));
    emit progressed(p.permille);
}

void CompareWindow::addRows(std::vector<ops::TensorDiff> rows)
{
    const bool first = m_model->rowCount() == 0 && !rows.empty();
    m_model->append(std::move(rows));
    m_heatmap->setGrid(heatmapGrid(m_model->rows()));
    updateSummary();
    if (first && !m_table->currentIndex().isValid()) m_table->selectRow(0);
    // As wide as the names so far, within reason: short names leave room for the numbers.
    m_table->resizeColumnToContents(CompareModel::Name);
    m_table->setColumnWidth(CompareModel::Name,
                            std::clamp(m_table->columnWidth(CompareModel::Name), 160, 420));
}

void CompareWindow::onFinished(JobResult<ops::DiffResult> outcome)
{
    m_outcome = std::move(outcome);
    m_done = true;
    m_cancelling = false;
    m_progress->hide();
    m_eta->hide();
    m_cancel->hide();
    m_export->setEnabled(m_model->rowCount() > 0);
    if (!m_outcome.error.isEmpty()) {
        m_summary->setText(tr("<b>Comparison failed:</b> %1").arg(m_outcome.error.toHtmlEscaped()));
        emit finished(false);
        return;
    }
    if (m_outcome.cancelled) {
        updateSummary();
        m_summary->setText(tr("<b>Cancelled</b> after %n tensor(s). ", nullptr, m_model->rowCount()) +
                           m_summary->text());
        emit finished(false);
        return;
    }
    addTiedRows(m_outcome.value->tied);
    showCompared();
    emit finished(true);
}

// The tied aliases listed too ("tied to X"), each with the numbers of the row of the tensor it
// ties to: copied here from the table, not kept for every tensor on the worker.
void CompareWindow::addTiedRows(const std::vector<std::pair<std::string, std::string>>& tied)
{
    std::vector<ops::TensorDiff> rows;
    for (const auto& [alias, target] : tied)
        if (const int at = m_model->rowOf(QString::fromStdString(target)); at >= 0) {
            ops::TensorDiff row = m_model->rows()[size_t(at)];
            row.name = alias;
            row.tiedTo = target;
            rows.push_back(std::move(row));
        }
    if (rows.empty()) return;
    addRows(std::move(rows));
    m_table->resizeColumnToContents(CompareModel::Status); // "tied to X" is the longest status
}

// A comparison computed: the sides as it read them, the largest change selected, its warnings
// or where and how fast it ran.
void CompareWindow::showCompared()
{
    const ops::DiffResult& r = *m_outcome.value;
    auto side = [](const ops::DiffSide& s) { return QString::fromStdString(s.label).toHtmlEscaped(); };
    m_sides->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(side(r.a), side(r.b)));
    updateSummary();
    // Nobody picked a tensor while it ran: show the one that changed most, what people look for.
    if (!m_userPicked && m_largest >= 0)
        selectTensor(QString::fromStdString(m_model->rows()[size_t(m_largest)].name));
    for (const auto& w : r.warnings)
        statusBar()->showMessage(tr("Warning: %1").arg(QString::fromStdString(w)));
    if (r.warnings.empty())
        statusBar()->showMessage(tr("Computed on %1 in %2 s")
                                     .arg(QString::fromStdString(r.device))
                                     .arg(QLocale().toString(double(m_clock.elapsed()) / 1000, 'f', 1)));
}

void CompareWindow::updateSummary()
{
    const auto& rows = m_model->rows();
    const ops::DiffTotals t = ops::totalsOf(rows);
    std::vector<const ops::TensorDiff*> changed;
    size_t tied = 0;
    for (const auto& d : rows) {
        tied += !d.tiedTo.empty();
        if (d.status == ops::DiffStatus::Changed && d.tiedTo.empty()) changed.push_back(&d);
    }
    // The largest relative changes, NaN (a zero tensor on A's side) counted as largest.
    auto key = [](const ops::TensorDiff* d) {
        const double v = d->diff.relL2();
        return std::isnan(v) ? INFINITY : v;
    };
    std::partial_sort(changed.begin(), changed.begin() + std::min<size_t>(3, changed.size()), changed.end(),
                      [&](auto* x, auto* y) { return key(x) > key(y); });
    m_largest = changed.empty() ? -1 : int(changed.front() - rows.data());
    QStringList top;
    for (size_t i = 0; i < changed.size() && i < 3; ++i)
        top << QStringLiteral("%1 (%2)").arg(QString::fromStdString(changed[i]->name).toHtmlEscaped(),
                                             QString::number(changed[i]->diff.relL2(), 'g', 3));
    QString s = tr("<b>%n tensor(s)</b>: ", nullptr, int(rows.size() - tied)) +
                tr("%1 changed, %2 identical, %3 only in A, %4 only in B, %5 dtype changed (compared), %6 "
                   "shape or dtype changed (not compared)")
                    .arg(t.changed)
                    .arg(t.identical)
                    .arg(t.onlyA)
                    .arg(t.onlyB)
                    .arg(t.dtypeChanged)
                    .arg(t.shapeOrDType);
    if (tied) s += tr(", %n tied alias(es) listed beside the tensor each ties to", nullptr, int(tied));
    if (!top.isEmpty()) s += tr(". Largest relative change: %1").arg(top.join(QLatin1String(", ")));
    m_summary->setText(s);
}

QString CompareWindow::summaryText() const
{
    return m_summary->text();
}

void CompareWindow::showCurrent()
{
    const QModelIndex cur = m_table->currentIndex();
    if (!cur.isValid()) {
        m_histograms->setTensor(nullptr);
        return;
    }
    const int row = m_proxy->mapToSource(cur).row();
    const ops::TensorDiff& d = m_model->rows()[size_t(row)];
    m_histograms->setTensor(&d);
    m_heatmap->setSelected(QString::fromStdString(d.name));
}

bool CompareWindow::selectTensor(const QString& name)
{
    const int row = m_model->rowOf(name);
    if (row < 0) return false;
    QModelIndex idx = m_proxy->mapFromSource(m_model->index(row, 0));
    if (!idx.isValid()) { // filtered out: show everything again
        m_filter->clear();
        m_status->setCurrentIndex(0);
        idx = m_proxy->mapFromSource(m_model->index(row, 0));
    }
    m_table->selectRow(idx.row());
    m_table->scrollTo(idx);
    return true;
}

void CompareWindow::exportTable()
{
    QString filter;
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export comparison"), QStringLiteral("comparison.csv"),
                                     tr("CSV (*.csv);;JSON (*.json)"), &filter);
    if (path.isEmpty()) return;
    const bool json =
        path.endsWith(QLatin1String(".json"), Qt::CaseInsensitive) || filter.contains(QLatin1String("json"));
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(shownTable(json)) < 0) {
        QMessageBox::warning(this, tr("Export comparison"),
                             tr("Cannot write %1: %2").arg(path, f.errorString()));
        return;
    }
    statusBar()->showMessage(
        tr("Saved %1: %n row(s) as shown (filter and sort applied)", nullptr, m_proxy->rowCount()).arg(path),
        5000);
}

QByteArray CompareWindow::shownTable(bool json) const
{
    // What the table shows, in its order: the filter and the sort the user chose are the point.
    QList<int> rows;
    for (int r = 0; r < m_proxy->rowCount(); ++r)
        rows << m_proxy->mapToSource(m_proxy->index(r, 0)).row();
    return json ? m_model->toJson(rows) : m_model->toCsv(rows);
}

void CompareWindow::askOtherSides()
{
    CompareDialog d(m_request, this);
    if (d.exec() == QDialog::Accepted) start(d.request());
}

bool CompareWindow::askSides(QWidget* parent, QString& a, QString& b)
{
    CompareDialog d(CompareRequest{a, b, {}, {}, false}, parent);
    d.momentsBox()->hide(); // two paths carry no moments: the window's checkbox asks for them
    if (d.exec() != QDialog::Accepted) return false;
    // A tag travels as its location, which opens as that tag (as the tree's tags do).
    a = d.location(0);
    b = d.location(1);
    return true;
}

CompareWindow* CompareWindow::ask(QWidget* parent, const QString& a, const QString& b, Workspace* workspace)
{
    CompareDialog d(CompareRequest{a, b, {}, {}, false}, parent);
    if (d.exec() != QDialog::Accepted) return nullptr;
    auto* w = new CompareWindow(parent, workspace);
    w->setWindowFlag(Qt::Window); // its own top-level window, closed with its parent
    w->setAttribute(Qt::WA_DeleteOnClose);
    w->show();
    w->start(d.request());
    return w;
}

CompareDialog::~CompareDialog()
{
    // QDialog's destructor hides the dialog, which takes the focus from a path field and makes it
    // emit editingFinished: by then this is a QDialog no longer able to list tags.
    for (QLineEdit* edit : m_path)
        disconnect(edit, nullptr, this, nullptr);
    m_lane.cancelAll(); // a listing still under way delivers nothing to a dialog that is gone
}

CompareDialog::CompareDialog(const CompareRequest& prefill, QWidget* parent) : QDialog(parent)
{
    setWindowTitle(tr("Compare"));
    auto* form = new QFormLayout(this);
    const QString paths[2] = {prefill.a, prefill.b}, tags[2] = {prefill.tagA, prefill.tagB};
    for (int side = 0; side < 2; ++side) {
        form->addRow(side == 0 ? tr("A:") : tr("B:"), sideRow(side, paths[side]));
        listTags(side, tags[side]);
    }
    m_moments = new QCheckBox(tr("Compare the optimizer moments too (exp_avg, exp_avg_sq)"), this);
    m_moments->setChecked(prefill.moments);
    form->addRow(QString(), m_moments);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_compare = buttons->button(QDialogButtonBox::Ok);
    m_compare->setText(tr("Compare"));
    m_compare->setEnabled(listed());
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (!m_path[0]->text().isEmpty() && !m_path[1]->text().isEmpty() && listed()) accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
}

// A side: its path, its tag (shown when it holds several), and buttons to pick a folder or file.
QLayout* CompareDialog::sideRow(int side, const QString& path)
{
    QLineEdit* edit = m_path[side] = new QLineEdit(path, this);
    edit->setMinimumWidth(420);
    edit->setPlaceholderText(tr("Checkpoint folder, tag folder or file"));
    auto* folder = new QPushButton(tr("Folder..."), this);
    auto* file = new QPushButton(tr("File..."), this);
    m_tag[side] = new QComboBox(this);
    m_tag[side]->setToolTip(tr("The tag of this side, when it holds several"));
    m_tag[side]->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    connect(folder, &QPushButton::clicked, this, [this, edit] {
        const QString p =
            QFileDialog::getExistingDirectory(this, tr("Checkpoint or tag folder"), edit->text());
        if (!p.isEmpty()) edit->setText(p);
    });
    connect(file, &QPushButton::clicked, this, [this, edit] {
        const QString p = QFileDialog::getOpenFileName(this, tr("Checkpoint file"), edit->text());
        if (!p.isEmpty()) edit->setText(p);
    });
    // A path being typed is listed once it rests for 300 ms (or when it is left), never at every
    // key: each listing reads a folder, or asks a server for a URL.
    m_typing[side] = new QTimer(this);
    m_typing[side]->setSingleShot(true);
    m_typing[side]->setInterval(300);
    connect(m_typing[side], &QTimer::timeout, this, [this, side] { listTags(side, {}); });
    connect(edit, &QLineEdit::editingFinished, this, [this, side] { listTags(side, {}); });
    connect(edit, &QLineEdit::textChanged, this, [this, side, edit] {
        if (edit->hasFocus())
            m_typing[side]->start();
        else
            listTags(side, {}); // set by a button or a program
    });
    auto* row = new QHBoxLayout;
    row->addWidget(edit, 1);
    row->addWidget(m_tag[side]);
    row->addWidget(folder);
    row->addWidget(file);
    return row;
}

SideTags tagsOf(const QString& path, const QString& want)
{
    auto list = [](const QString& p) {
        const std::string s = p.toStdString();
        return layout::familyOf(s).listTags(s);
    };
    SideTags out{path, want, {}};
    try {
        layout::TagList l = list(path);
        // A tag folder: its checkpoint's tags, this one selected, so that another can be picked.
        if (l.tags.size() == 1) {
            const QString parent = QFileInfo(path).absolutePath();
            try {
                const layout::TagList up = list(parent);
                const QString self = QFileInfo(path).absoluteFilePath();
                for (const auto& [name, location] : up.tags)
                    if (QFileInfo(QString::fromStdString(location)).absoluteFilePath() == self &&
                        up.tags.size() > 1) {
                        out.selected = QString::fromStdString(name);
                        out.path = parent;
                        l = up;
                        break;
                    }
            } catch (const std::exception&) {
                // the folder above is no checkpoint: this one stands alone
            }
        }
        if (out.selected.isEmpty()) out.selected = QString::fromStdString(l.latest);
        for (const auto& [name, location] : l.tags)
            out.tags.push_back({QString::fromStdString(name), QString::fromStdString(location)});
    } catch (const std::exception&) {
        // nothing to list yet (a path being typed, a file that is no checkpoint): no tags shown
    }
    return out;
}

void CompareDialog::listTags(int side, const QString& want)
{
    m_typing[side]->stop();
    const QString path = m_path[side]->text().trimmed();
    // Listed already (typing rested, then the field was left): the box is (or will be) up to date.
    if (want.isEmpty() && m_listed[side] == path) return;
    m_listed[side] = path;
    if (path.isEmpty()) {
        m_lane.drop(QString::number(side));
        showTags(side, {});
        return;
    }
    if (m_compare) m_compare->setEnabled(false);
    // The latest request of a side wins: a listing of a path since retyped is never shown.
    m_lane.run(
        QString::number(side),
        [path, want](const ops::ProgressSink&, const ops::CancelToken&) { return tagsOf(path, want); },
        [this, side](const JobResult<SideTags>& r) {
            if (r.ok()) showTags(side, *r.value);
            if (m_compare) m_compare->setEnabled(listed());
        });
}

void CompareDialog::showTags(int side, const SideTags& tags)
{
    m_locations[side] = tags.tags;
    QComboBox* box = m_tag[side];
    box->clear();
    for (const auto& [name, location] : tags.tags)
        box->addItem(name, name);
    if (const int latest = box->findData(tags.selected); latest >= 0) box->setCurrentIndex(latest);
    box->setVisible(tags.tags.size() > 1);
    if (!tags.path.isEmpty() && tags.path != m_path[side]->text().trimmed()) {
        const QSignalBlocker block(m_path[side]);
        m_path[side]->setText(tags.path);
        m_listed[side] = tags.path;
    }
}

QString CompareDialog::location(int side) const
{
    const QString tag = m_tag[side]->count() > 1 ? m_tag[side]->currentData().toString() : QString();
    for (const auto& [name, location] : m_locations[side])
        if (!tag.isEmpty() && name == tag) return location;
    return m_path[side]->text().trimmed();
}

CompareRequest CompareDialog::request() const
{
    CompareRequest q;
    q.a = m_path[0]->text().trimmed();
    q.b = m_path[1]->text().trimmed();
    if (m_tag[0]->count() > 1) q.tagA = m_tag[0]->currentData().toString();
    if (m_tag[1]->count() > 1) q.tagB = m_tag[1]->currentData().toString();
    q.moments = m_moments->isChecked();
    return q;
}

int runCompareMode(const QString& a, const QString& b, const QString& screenshot, const QString& select)
{
    return runCompareMode(CompareRequest{a, b, {}, {}, false}, screenshot, select);
}

int runCompareMode(const CompareRequest& request, const QString& screenshot, const QString& select)
{
    auto* w = new CompareWindow;
    w->setAttribute(Qt::WA_DeleteOnClose);
    w->show();
    auto fail = [](const QString& why) {
        std::fprintf(stderr, "checkpoint-studio: %s\n", qPrintable(why));
        QApplication::exit(1);
    };
    if (!screenshot.isEmpty()) {
        QObject::connect(w, &CompareWindow::finished, w, [=](bool ok) {
            if (!ok)
                return fail(w->outcome().error.isEmpty() ? QStringLiteral("comparison cancelled")
                                                         : w->outcome().error);
            if (!select.isEmpty() && !w->selectTensor(select))
                return fail(QStringLiteral("no tensor '%1' in the comparison").arg(select));
            // A moment for the last layout and paint before the grab.
            QTimer::singleShot(300, w, [=] {
                const bool saved = w->grab().save(screenshot);
                if (!saved)
                    fail(QStringLiteral("cannot write %1").arg(screenshot));
                else
                    QApplication::exit(0);
            });
        });
    }
    w->start(request);
    return QApplication::exec();
}

} // namespace ckpt::app
