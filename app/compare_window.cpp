#include "compare_window.h"

#include "compare_heatmap.h"
#include "compare_histograms.h"
#include "compare_model.h"

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
CompareOutcome runCompare(const CompareRequest& q, std::shared_ptr<CompareFeed> feed)
{
    const std::string a = q.a.toStdString(), b = q.b.toStdString();
    CompareOutcome out;
    try {
        std::string reason;
        std::shared_ptr<gpu::ComputeBackend> backend = gpu::makeBackend(gpu::Device::Auto, &reason);
        ops::DiffOptions o;
        o.a.backend = o.b.backend = backend;
        o.a.tag = q.tagA.toStdString();
        o.b.tag = q.tagB.toStdString();
        o.moments = q.moments;
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
    for (auto s :
         {ops::DiffStatus::Changed, ops::DiffStatus::Identical, ops::DiffStatus::OnlyInA,
          ops::DiffStatus::OnlyInB, ops::DiffStatus::DTypeChanged, ops::DiffStatus::ShapeOrDTypeChanged})
        m_status->addItem(CompareModel::statusText(s), int(s));
    m_momentsBox = new QCheckBox(tr("Optimizer moments"), central);
    m_momentsBox->setToolTip(tr("Compare each parameter's optimizer moments too (exp_avg and exp_avg_sq, "
                                "as <param>/exp_avg): the comparison runs again"));
    m_export = new QPushButton(tr("Export..."), central);
    m_export->setToolTip(tr("Save the table as CSV or JSON"));
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_status);
    filterRow->addWidget(m_momentsBox);
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

    QMenu* menu = menuBar()->addMenu(tr("&Comparison"));
    menu->addAction(tr("&Compare Other Sides..."), this, &CompareWindow::askOtherSides);
    menu->addAction(tr("&Export Table..."), this, &CompareWindow::exportTable);
    menu->addSeparator();
    menu->addAction(tr("C&lose"), QKeySequence::Close, this, &QWidget::close);
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
    start(CompareRequest{a, b, {}, {}, m_momentsBox->isChecked()});
}

void CompareWindow::start(const CompareRequest& request)
{
    if (m_feed) m_feed->cancel.cancel(); // the previous run stops; its rows are never taken
    m_feed = std::make_shared<CompareFeed>();
    m_request = request;
    m_request.a = m_a = QFileInfo(request.a).absoluteFilePath();
    m_request.b = m_b = QFileInfo(request.b).absoluteFilePath();
    {
        const QSignalBlocker block(m_momentsBox);
        m_momentsBox->setChecked(request.moments);
    }
    m_outcome = {};
    m_done = false;
    m_userPicked = false;
    m_largest = -1;
    m_model->clear();
    m_heatmap->setGrid({});
    m_histograms->setTensor(nullptr);
    auto side = [this](const QString& path, const QString& tag) {
        return tag.isEmpty() ? path.toHtmlEscaped()
                             : tr("%1 (tag %2)").arg(path.toHtmlEscaped(), tag.toHtmlEscaped());
    };
    m_sides->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(side(m_a, request.tagA), side(m_b, request.tagB)));
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
    m_watcher.setFuture(QtConcurrent::run(runCompare, m_request, m_feed));
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
                tr("%1 changed, %2 identical, %3 only in A, %4 only in B, %5 dtype changed (compared), %6 "
                   "shape or dtype changed (not compared)")
                    .arg(t.changed)
                    .arg(t.identical)
                    .arg(t.onlyA)
                    .arg(t.onlyB)
                    .arg(t.dtypeChanged)
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
    const CompareRequest q = d.request();
    auto located = [](QString path, const QString& tag) {
        QString selected;
        for (const auto& [name, location] : CompareDialog::tagsOf(path, selected))
            if (name == tag) return location;
        return path;
    };
    a = q.tagA.isEmpty() ? q.a : located(q.a, q.tagA);
    b = q.tagB.isEmpty() ? q.b : located(q.b, q.tagB);
    return true;
}

CompareWindow* CompareWindow::ask(QWidget* parent, const QString& a, const QString& b)
{
    CompareDialog d(CompareRequest{a, b, {}, {}, false}, parent);
    if (d.exec() != QDialog::Accepted) return nullptr;
    auto* w = new CompareWindow(parent);
    w->setWindowFlag(Qt::Window); // its own top-level window, closed with its parent
    w->setAttribute(Qt::WA_DeleteOnClose);
    w->show();
    w->start(d.request());
    return w;
}

CompareDialog::CompareDialog(const CompareRequest& prefill, QWidget* parent) : QDialog(parent)
{
    setWindowTitle(tr("Compare"));
    auto* form = new QFormLayout(this);
    const QString paths[2] = {prefill.a, prefill.b}, tags[2] = {prefill.tagA, prefill.tagB};
    for (int side = 0; side < 2; ++side) {
        QLineEdit* edit = m_path[side] = new QLineEdit(paths[side], this);
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
        // Listed when the path is settled (typing a path would otherwise list at every key).
        connect(edit, &QLineEdit::editingFinished, this, [this, side] { listTags(side, {}); });
        connect(edit, &QLineEdit::textChanged, this, [this, side, edit] {
            if (!edit->hasFocus()) listTags(side, {}); // set by a button or a program
        });
        auto* h = new QHBoxLayout;
        h->addWidget(edit, 1);
        h->addWidget(m_tag[side]);
        h->addWidget(folder);
        h->addWidget(file);
        form->addRow(side == 0 ? tr("A:") : tr("B:"), h);
        listTags(side, tags[side]);
    }
    m_moments = new QCheckBox(tr("Compare the optimizer moments too (exp_avg, exp_avg_sq)"), this);
    m_moments->setChecked(prefill.moments);
    form->addRow(QString(), m_moments);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Compare"));
    connect(buttons, &QDialogButtonBox::accepted, this, [this] {
        if (!m_path[0]->text().isEmpty() && !m_path[1]->text().isEmpty()) accept();
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    form->addRow(buttons);
}

QList<std::pair<QString, QString>> CompareDialog::tagsOf(QString& path, QString& selected)
{
    auto list = [](const QString& p) {
        const std::string s = p.toStdString();
        return layout::familyOf(s).listTags(s);
    };
    QList<std::pair<QString, QString>> out;
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
                        selected = QString::fromStdString(name);
                        path = parent;
                        l = up;
                        break;
                    }
            } catch (const std::exception&) {
                // the folder above is no checkpoint: this one stands alone
            }
        }
        if (selected.isEmpty()) selected = QString::fromStdString(l.latest);
        for (const auto& [name, location] : l.tags)
            out.push_back({QString::fromStdString(name), QString::fromStdString(location)});
    } catch (const std::exception&) {
        // nothing to list yet (a path being typed, a file that is no checkpoint): no tags shown
    }
    return out;
}

void CompareDialog::listTags(int side, const QString& want)
{
    QString path = m_path[side]->text().trimmed(), selected = want;
    const auto tags = path.isEmpty() ? QList<std::pair<QString, QString>>{} : tagsOf(path, selected);
    QComboBox* box = m_tag[side];
    box->clear();
    for (const auto& [name, location] : tags)
        box->addItem(name, name);
    if (const int latest = box->findData(selected); latest >= 0) box->setCurrentIndex(latest);
    box->setVisible(tags.size() > 1);
    if (path != m_path[side]->text().trimmed()) {
        const QSignalBlocker block(m_path[side]);
        m_path[side]->setText(path);
    }
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
