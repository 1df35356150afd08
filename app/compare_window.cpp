#include "compare_window.h"

#include "compare_heatmap.h"
#include "compare_histograms.h"
#include "compare_model.h"

#include <QApplication>
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
#include <QMessageBox>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStatusBar>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ckpt::app {

namespace {

constexpr int kBins = 64;

// The worker: both sides opened and compared; each tensor's result goes into the feed the
// moment it is known, so the table fills in while the rest is computed.
CompareOutcome runCompare(const std::string& a, const std::string& b, std::shared_ptr<CompareFeed> feed)
{
    CompareOutcome out;
    try {
        std::string reason;
        std::shared_ptr<gpu::ComputeBackend> backend = gpu::makeBackend(gpu::Device::Auto, &reason);
        ops::DiffOptions o;
        o.a.backend = o.b.backend = backend;
        o.sideStats = true;
        o.histogramBins = kBins;
        ops::DiffResult r = ops::computeDiff(
            a, b, o, *backend,
            [&](const ops::Progress& p) {
                std::lock_guard g(feed->lock);
                feed->progress = p;
            },
            feed->cancel,
            [&](const ops::TensorDiff& d) {
                std::lock_guard g(feed->lock);
                feed->rows.push_back(d);
            });
        out.a = std::move(r.a);
        out.b = std::move(r.b);
        out.device = std::move(r.device);
        out.warnings = std::move(r.warnings);
    } catch (const Cancelled&) {
        out.cancelled = true;
    } catch (const std::exception& e) {
        out.error = QString::fromUtf8(e.what());
    }
    return out;
}

QString duration(qint64 seconds)
{
    return seconds >= 3600
               ? QStringLiteral("%1:%2:%3")
                     .arg(seconds / 3600)
                     .arg(seconds / 60 % 60, 2, 10, QLatin1Char('0'))
                     .arg(seconds % 60, 2, 10, QLatin1Char('0'))
               : QStringLiteral("%1:%2").arg(seconds / 60).arg(seconds % 60, 2, 10, QLatin1Char('0'));
}

} // namespace

CompareWindow::CompareWindow(QWidget* parent) : QMainWindow(parent)
{
    setWindowTitle(tr("Compare - Checkpoint Studio"));
    resize(1400, 900);
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

    auto* progressRow = new QHBoxLayout;
    m_progress = new QProgressBar(central);
    m_progress->setRange(0, 1000);
    m_eta = new QLabel(central);
    m_cancel = new QPushButton(tr("Cancel"), central);
    progressRow->addWidget(m_progress, 1);
    progressRow->addWidget(m_eta);
    progressRow->addWidget(m_cancel);
    l->addLayout(progressRow);

    auto* filterRow = new QHBoxLayout;
    m_filter = new QLineEdit(central);
    m_filter->setPlaceholderText(tr("Filter by name (wildcards)"));
    m_filter->setClearButtonEnabled(true);
    m_status = new QComboBox(central);
    m_status->addItem(tr("All tensors"), int(CompareProxy::AnyStatus));
    m_status->addItem(tr("All but identical"), int(CompareProxy::NotIdentical));
    for (auto s : {ops::DiffStatus::Changed, ops::DiffStatus::Identical, ops::DiffStatus::OnlyInA,
                   ops::DiffStatus::OnlyInB, ops::DiffStatus::ShapeOrDTypeChanged})
        m_status->addItem(CompareModel::statusText(s), int(s));
    m_export = new QPushButton(tr("Export..."), central);
    m_export->setToolTip(tr("Save the table as CSV or JSON"));
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_status);
    filterRow->addWidget(m_export);
    l->addLayout(filterRow);

    m_table = new QTableView(central);
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
    m_heatmap = new CompareHeatmap(central);
    m_histograms = new CompareHistograms(central);

    auto* top = new QSplitter(Qt::Horizontal, central);
    top->addWidget(m_table);
    top->addWidget(m_heatmap);
    top->setStretchFactor(0, 3);
    top->setStretchFactor(1, 2);
    top->setSizes({860, 520});
    auto* split = new QSplitter(Qt::Vertical, central);
    split->addWidget(top);
    split->addWidget(m_histograms);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({440, 360});
    l->addWidget(split, 1);
    setCentralWidget(central);

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
    connect(&m_watcher, &QFutureWatcher<CompareOutcome>::finished, this, &CompareWindow::onFinished);
    m_poll.setInterval(100);
    connect(&m_poll, &QTimer::timeout, this, &CompareWindow::drain);
    m_progress->hide();
    m_eta->hide();
    m_cancel->hide();
    m_export->setEnabled(false);
}

CompareWindow::~CompareWindow()
{
    // The worker owns its share of the feed: cancelled, it stops at its next chunk, and nobody
    // waits for it here (its result goes nowhere).
    if (m_feed) m_feed->cancel.cancel();
}

void CompareWindow::start(const QString& a, const QString& b)
{
    if (m_feed) m_feed->cancel.cancel(); // the previous run stops; its rows are never taken
    m_feed = std::make_shared<CompareFeed>();
    m_a = QFileInfo(a).absoluteFilePath();
    m_b = QFileInfo(b).absoluteFilePath();
    m_outcome = {};
    m_done = false;
    m_userPicked = false;
    m_largest = -1;
    m_model->clear();
    m_heatmap->setGrid({});
    m_histograms->setTensor(nullptr);
    m_sides->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(m_a.toHtmlEscaped(), m_b.toHtmlEscaped()));
    m_summary->setText(tr("Reading both sides..."));
    setWindowTitle(tr("%1 vs %2 - Compare").arg(QFileInfo(m_a).fileName(), QFileInfo(m_b).fileName()));
    m_progress->setValue(0);
    m_progress->setFormat(tr("Opening"));
    m_progress->show();
    m_eta->clear();
    m_eta->show();
    m_cancel->show();
    m_cancel->setEnabled(true);
    m_export->setEnabled(false);
    m_clock.start();
    m_watcher.setFuture(QtConcurrent::run(runCompare, m_a.toStdString(), m_b.toStdString(), m_feed));
    m_poll.start();
}

void CompareWindow::cancel()
{
    if (!m_feed || !running()) return;
    m_feed->cancel.cancel();
    m_cancel->setEnabled(false);
    m_progress->setFormat(tr("Cancelling..."));
}

void CompareWindow::drain()
{
    if (!m_feed) return;
    std::vector<ops::TensorDiff> rows;
    ops::Progress p;
    {
        std::lock_guard g(m_feed->lock);
        rows.swap(m_feed->rows);
        p = m_feed->progress;
    }
    const bool first = m_model->rowCount() == 0 && !rows.empty();
    if (!rows.empty()) {
        m_model->append(std::move(rows));
        m_heatmap->setGrid(heatmapGrid(m_model->rows()));
        updateSummary();
        if (first && !m_table->currentIndex().isValid()) m_table->selectRow(0);
        // As wide as the names so far, within reason: short names leave room for the numbers.
        m_table->resizeColumnToContents(CompareModel::Name);
        m_table->setColumnWidth(CompareModel::Name,
                                std::clamp(m_table->columnWidth(CompareModel::Name), 160, 420));
    }
    if (!running()) return;
    m_progress->setValue(p.permille);
    m_progress->setFormat(p.stage.empty() ? tr("Opening")
                                          : QString::fromStdString(p.stage) + QStringLiteral("  %p%"));
    // The rate so far predicts the rest; too early it says nothing useful.
    const qint64 ms = m_clock.elapsed();
    if (p.permille >= 10 && ms >= 1000 && p.doneBytes) {
        const qint64 left = qint64(double(ms) * (1000 - p.permille) / p.permille / 1000);
        const double mbps = double(p.doneBytes) / 1e6 / (double(ms) / 1000);
        m_eta->setText(tr("%1 MB/s, about %2 left").arg(QLocale().toString(mbps, 'f', 0), duration(left)));
    }
    emit progressed(p.permille);
}

void CompareWindow::onFinished()
{
    if (!m_feed || m_watcher.future().isCanceled()) return;
    drain();
    m_poll.stop();
    m_outcome = m_watcher.result();
    m_done = true;
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
    auto side = [](const ops::DiffSide& s) { return QString::fromStdString(s.label).toHtmlEscaped(); };
    m_sides->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(side(m_outcome.a), side(m_outcome.b)));
    updateSummary();
    // Nobody picked a tensor while it ran: show the one that changed most, what people look for.
    if (!m_userPicked && m_largest >= 0)
        selectTensor(QString::fromStdString(m_model->rows()[size_t(m_largest)].name));
    for (const auto& w : m_outcome.warnings)
        statusBar()->showMessage(tr("Warning: %1").arg(QString::fromStdString(w)));
    if (m_outcome.warnings.empty())
        statusBar()->showMessage(tr("Computed on %1 in %2 s")
                                     .arg(QString::fromStdString(m_outcome.device))
                                     .arg(QLocale().toString(double(m_clock.elapsed()) / 1000, 'f', 1)));
    emit finished(true);
}

void CompareWindow::updateSummary()
{
    const auto& rows = m_model->rows();
    const ops::DiffTotals t = ops::totalsOf(rows);
    std::vector<const ops::TensorDiff*> changed;
    for (const auto& d : rows)
        if (d.status == ops::DiffStatus::Changed) changed.push_back(&d);
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
    QString s = tr("<b>%n tensor(s)</b>: ", nullptr, int(rows.size())) +
                tr("%1 changed, %2 identical, %3 only in A, %4 only in B, %5 shape or dtype changed")
                    .arg(t.changed)
                    .arg(t.identical)
                    .arg(t.onlyA)
                    .arg(t.onlyB)
                    .arg(t.shapeOrDType);
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
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        f.write(json ? m_model->toJson() : m_model->toCsv()) < 0) {
        QMessageBox::warning(this, tr("Export comparison"),
                             tr("Cannot write %1: %2").arg(path, f.errorString()));
        return;
    }
    statusBar()->showMessage(tr("Saved %1").arg(path), 5000);
}

bool CompareWindow::askSides(QWidget* parent, QString& a, QString& b)
{
    QDialog d(parent);
    d.setWindowTitle(tr("Compare"));
    auto* form = new QFormLayout(&d);
    auto row = [&](const QString& value) {
        auto* edit = new QLineEdit(value, &d);
        edit->setMinimumWidth(420);
        edit->setPlaceholderText(tr("Checkpoint folder, tag folder or file"));
        auto* folder = new QPushButton(tr("Folder..."), &d);
        auto* file = new QPushButton(tr("File..."), &d);
        QObject::connect(folder, &QPushButton::clicked, &d, [&d, edit] {
            const QString p =
                QFileDialog::getExistingDirectory(&d, tr("Checkpoint or tag folder"), edit->text());
            if (!p.isEmpty()) edit->setText(p);
        });
        QObject::connect(file, &QPushButton::clicked, &d, [&d, edit] {
            const QString p = QFileDialog::getOpenFileName(&d, tr("Checkpoint file"), edit->text());
            if (!p.isEmpty()) edit->setText(p);
        });
        auto* h = new QHBoxLayout;
        h->addWidget(edit, 1);
        h->addWidget(folder);
        h->addWidget(file);
        return std::make_pair(edit, h);
    };
    auto [ea, ha] = row(a);
    auto [eb, hb] = row(b);
    form->addRow(tr("A:"), ha);
    form->addRow(tr("B:"), hb);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &d);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Compare"));
    QObject::connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
    form->addRow(buttons);
    if (d.exec() != QDialog::Accepted || ea->text().isEmpty() || eb->text().isEmpty()) return false;
    a = ea->text();
    b = eb->text();
    return true;
}

int runCompareMode(const QString& a, const QString& b, const QString& screenshot, const QString& select)
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
    w->start(a, b);
    return QApplication::exec();
}

} // namespace ckpt::app
