#include "bloat_view.h"

#include "bloat_bars.h"
#include "io/location.h"
#include "layout/file_set.h"
#include "torch/torch_file.h"
#include "tree_model.h"

#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

namespace ckpt::app {

namespace {

QString shapeText(const std::vector<int64_t>& shape)
{
    QStringList dims;
    for (auto d : shape)
        dims << QString::number(d);
    return QLatin1Char('[') + dims.join(QLatin1String(", ")) + QLatin1Char(']');
}

// Runs on a worker: the storage table of one torch.save file.
StorageResult storagesOf(const QString& file, const layout::FileSet* files, const ops::CancelToken& cancel)
{
    StorageResult r;
    // One of the open checkpoint's files is read as it was parsed; any other file is parsed here.
    const std::shared_ptr<const layout::TensorFile> parsed =
        files ? files->find(file.toStdString()) : nullptr;
    std::shared_ptr<const torch::TorchFile> own;
    const torch::TorchFile* tf = parsed ? parsed->torch() : nullptr;
    if (!tf) {
        own = torch::TorchFile::open(file.toStdString());
        tf = own.get();
    }
    cancel.throwIfCancelled();
    const ops::FileBloat b = ops::analyzeBloat(*tf);
    r.fileBytes = b.fileBytes;
    r.storageBytes = b.storageBytes;
    r.usedBytes = b.usedBytes;
    for (const ops::StorageBloat& s : b.storages) {
        const torch::Storage& st = tf->storages()[size_t(s.storage)];
        StorageRow row;
        row.key = QString::fromStdString(st.key);
        row.dtype = QString::fromStdString(std::string(torch::name(st.dtype)));
        if (st.viewOf >= 0) row.viewOf = QString::fromStdString(tf->storages()[size_t(st.viewOf)].key);
        row.size = s.nbytes;
        row.used = s.usedBytes;
        row.wholeUse = s.wholeUse;
        row.approximate = s.approximate;
        for (int t : s.tensors) {
            const torch::Tensor& tensor = tf->tensors()[size_t(t)];
            row.tensors.push_back({QString::fromStdString(tensor.path),
                                   QString::fromStdString(std::string(torch::name(tensor.dtype))),
                                   shapeText(tensor.shape), tensor.nbytes()});
        }
        r.rows.push_back(std::move(row));
    }
    // The worst first: what a user came here to find.
    std::stable_sort(r.rows.begin(), r.rows.end(), [](const StorageRow& x, const StorageRow& y) {
        return x.wasted() != y.wasted() ? x.wasted() > y.wasted() : x.size > y.size;
    });
    return r;
}

QLabel* caption(const QString& text, QWidget* parent)
{
    auto* l = new QLabel(text, parent);
    QFont f = l->font();
    f.setBold(true);
    l->setFont(f);
    return l;
}

} // namespace

QString BloatView::roleLabel(ops::ByteRole role)
{
    switch (role) {
    case ops::ByteRole::ModelWeights:
        return tr("model weights");
    case ops::ByteRole::Fp32Master:
        return tr("fp32 masters");
    case ops::ByteRole::ExpAvg:
        return tr("exp_avg");
    case ops::ByteRole::ExpAvgSq:
        return tr("exp_avg_sq");
    case ops::ByteRole::OtherOptimizer:
        return tr("other optimizer state");
    case ops::ByteRole::Other:
        return tr("other");
    }
    return tr("other");
}

BloatView::BloatView(Workspace& workspace, QWidget* parent)
    : QWidget(parent), m_workspace(workspace), m_jobs(&workspace.jobs())
{
    m_split = new QSplitter(Qt::Horizontal, this);
    m_split->setChildrenCollapsible(false);

    // Left: what the target is made of.
    auto* left = new QWidget(m_split);
    auto* ll = new QVBoxLayout(left);
    ll->setContentsMargins(0, 0, 4, 0);
    auto* head = new QHBoxLayout;
    m_summary = new QLabel(left);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_slim = new QPushButton(tr("Slim..."), left);
    m_slim->setToolTip(tr("Write a copy in which every storage keeps only the bytes its views reach"));
    m_slim->setEnabled(false);
    head->addWidget(m_summary, 1);
    head->addWidget(m_slim, 0, Qt::AlignTop);
    auto* busyRow = new QHBoxLayout;
    m_progress = new QProgressBar(left);
    m_progress->setRange(0, 1000);
    m_progress->setTextVisible(true);
    m_cancel = new QPushButton(tr("Cancel"), left);
    busyRow->addWidget(m_progress, 1);
    busyRow->addWidget(m_cancel);
    m_filesCaption = caption(tr("Files, most wasted first"), left);
    m_bars = new FileBars;
    m_barsScroll = new QScrollArea(left);
    m_barsScroll->setWidget(m_bars);
    m_barsScroll->setWidgetResizable(true);
    m_barsScroll->setFrameShape(QFrame::NoFrame);
    m_barsScroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_rolesCaption = caption(tr("Bytes by role"), left);
    m_roles = new RoleBar(left);
    // The role bar is one line: above the file list, which may be long and scrolls.
    ll->addLayout(head);
    ll->addLayout(busyRow);
    ll->addWidget(m_rolesCaption);
    ll->addWidget(m_roles);
    ll->addSpacing(6);
    ll->addWidget(m_filesCaption);
    ll->addWidget(m_barsScroll, 1);

    // Right: the storages of one file.
    auto* right = new QWidget(m_split);
    auto* rl = new QVBoxLayout(right);
    rl->setContentsMargins(4, 0, 0, 0);
    m_storageCaption = caption(QString(), right);
    m_storageCaption->setWordWrap(true);
    m_storageModel = new StorageModel(this);
    m_storageView = new QTreeView(right);
    m_storageView->setModel(m_storageModel);
    m_storageView->setUniformRowHeights(true);
    m_storageView->setAlternatingRowColors(true);
    m_storageView->header()->setStretchLastSection(true);
    m_storageView->setEditTriggers(QAbstractItemView::NoEditTriggers);
    // Tensor paths differ at their ends (.../0/exp_avg, .../1/exp_avg): keep both ends readable.
    m_storageView->setTextElideMode(Qt::ElideMiddle);
    rl->addWidget(m_storageCaption);
    rl->addWidget(m_storageView, 1);
    m_split->addWidget(left);
    m_split->addWidget(right);
    // The table's paths need the room more than the bars do.
    m_split->setStretchFactor(0, 4);
    m_split->setStretchFactor(1, 5);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_split);

    connect(m_bars, &FileBars::rowClicked, this, &BloatView::showFile);
    connect(m_slim, &QPushButton::clicked, this, [this] { emit slimRequested(m_target); });
    connect(m_cancel, &QPushButton::clicked, this, &BloatView::cancel);
    // A click on a tensor finds it in the main tree; a storage viewed by one tensor stands for it.
    connect(m_storageView, &QTreeView::clicked, this, [this](const QModelIndex& i) {
        const QString tensor = i.siblingAtColumn(0).data(StorageModel::TensorPathRole).toString();
        if (!tensor.isEmpty()) emit tensorActivated(m_currentFile, tensor);
    });
    // A new checkpoint drops the analyses of the last one, their waiters untold: one this view
    // waits for is asked again (else setTarget of the same path would think it still coming).
    connect(&m_workspace, &Workspace::snapshotChanged, this, [this] {
        if (m_analysing.empty()) return;
        m_analysing.clear();
        refresh();
    });
    clear();
}

BloatView::~BloatView() = default; // m_jobs stops the storage table's worker and waits for it

void BloatView::resizeEvent(QResizeEvent* e)
{
    // Side by side in a wide dock, stacked in a tall narrow one.
    m_split->setOrientation(width() >= 760 ? Qt::Horizontal : Qt::Vertical);
    QWidget::resizeEvent(e);
}

void BloatView::setBusy(bool busy, const QString& what)
{
    m_progress->setVisible(busy);
    m_cancel->setVisible(busy);
    if (busy) {
        m_progress->setValue(0);
        m_progress->setFormat(what);
    }
}

void BloatView::setTarget(const QString& path)
{
    if (path.isEmpty()) return clear();
    const QString abs = absoluteLocation(path); // a URL stays one
    if (abs == m_target && (m_hasResult || !m_analysing.empty())) return;
    m_target = abs;
    refresh();
}

void BloatView::reset()
{
    m_jobs.cancelAll(); // the previous storage table stops early; its result is dropped
    // The previous analysis stops too, unless another view (the tag overview) still waits for it.
    if (!m_analysing.empty()) m_workspace.stopWaiting(m_analysing, this);
    m_analysing.clear();
    m_hasResult = false;
    m_result = {};
    m_order.clear();
    m_currentFile.clear();
    m_bars->setRows({});
    m_roles->setParts({});
    m_storageModel->setRows({});
    m_slim->setEnabled(false);
    m_storageCaption->setText(tr("Storages"));
    setBusy(false);
}

void BloatView::clear()
{
    reset();
    m_target.clear();
    m_pendingTensor.clear();
    m_wantFile.clear();
    m_summary->setText(tr("Select a file, a tag or a checkpoint to see where its bytes go."));
}

void BloatView::refresh()
{
    if (m_target.isEmpty()) return clear();
    reset();
    const QString name = locationName(m_target);
    m_summary->setText(tr("<b>%1</b>: reading...").arg(name.toHtmlEscaped()));
    setBusy(true, tr("Reading %1").arg(name));
    m_analysing = m_target.toStdString();
    // Parsing every pickle of a checkpoint takes a while: the workspace does it on a worker, once
    // for whichever views ask (a tag the overview has read is shown at once).
    m_workspace.analyse(
        m_analysing, this,
        [this, path = m_analysing](const JobResult<ops::FolderBloat>& r) {
            if (path == m_analysing) onAnalysed(r);
        },
        [this, path = m_analysing](const JobProgress& p) {
            if (path != m_analysing) return;
            m_progress->setValue(p.permille);
            m_progress->setFormat(p.stage);
        });
}

void BloatView::cancel()
{
    if (!m_analysing.empty()) m_workspace.cancelAnalysis(m_analysing);
    m_jobs.cancel(kStorages);
}

QString BloatView::filePath(int row) const
{
    if (row < 0 || size_t(row) >= m_order.size()) return {};
    const QString rel = QString::fromStdString(m_result.files[size_t(m_order[size_t(row)])].path);
    if (!m_targetFolder) return m_target;
    const std::string target = m_target.toStdString();
    // A URL's files are URLs in it (QDir would make "s3://b/k" a local "s3:/b/k").
    return io::isRemotePath(target) ? QString::fromStdString(io::childPath(target, rel.toStdString()))
                                    : QDir(m_target).filePath(rel);
}

QString BloatView::displayName(const QString& file) const
{
    // Relative to the folder shown: two tags hold files of the same name.
    return file.startsWith(m_target + QLatin1Char('/')) ? file.mid(m_target.size() + 1) : locationName(file);
}

QString BloatView::summaryText() const
{
    return m_summary->text();
}

void BloatView::onAnalysed(const JobResult<ops::FolderBloat>& r)
{
    m_analysing.clear();
    setBusy(m_jobs.running(kStorages));
    const QString name = locationName(m_target).toHtmlEscaped();
    if (!r.ok()) {
        m_summary->setText(r.cancelled ? tr("<b>%1</b>: cancelled.").arg(name)
                                       : tr("<b>%1</b>: %2").arg(name, r.error.toHtmlEscaped()));
        emit analysed(false);
        emit settled();
        return;
    }
    m_result = *r.value;
    m_hasResult = true;
    // What the open checkpoint knows of the target, else (a URL outside it, whose server is not
    // asked again) what the analysis found: one file named as the target is the target.
    const std::optional<bool> folder = knownFolder(m_target, m_workspace.snapshot().get());
    m_targetFolder = folder
                         ? *folder
                         : !(m_result.files.size() == 1 &&
                             QString::fromStdString(m_result.files.front().path) == locationName(m_target));
    // Bars: the most wasted first (a user looks for the worst file), then the largest.
    m_order.resize(m_result.files.size());
    for (size_t i = 0; i < m_order.size(); ++i)
        m_order[i] = int(i);
    auto wasted = [this](int i) { return m_result.files[size_t(i)].bloat.reclaimableBytes(); };
    std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) {
        if (wasted(a) != wasted(b)) return wasted(a) > wasted(b);
        return m_result.files[size_t(a)].fileBytes > m_result.files[size_t(b)].fileBytes;
    });
    std::vector<FileBars::Row> rows;
    int torchFiles = 0;
    for (int i : m_order) {
        const ops::FolderFile& f = m_result.files[size_t(i)];
        FileBars::Row row;
        row.name = QString::fromStdString(f.path);
        if (f.torch) {
            ++torchFiles;
            row.used = f.bloat.usedBytes;
            row.wasted = f.bloat.reclaimableBytes();
            row.overhead = f.bloat.overheadBytes;
        } else {
            row.other = f.fileBytes;
        }
        rows.push_back(row);
    }
    m_bars->setRows(std::move(rows));
    std::vector<RoleBar::Part> parts;
    for (size_t role = 0; role < ops::kByteRoles; ++role)
        parts.push_back({roleLabel(ops::ByteRole(role)), m_result.roleBytes[role]});
    m_roles->setParts(std::move(parts));

    const quint64 wastedBytes = m_result.reclaimableBytes();
    QString text = tr("<b>%1</b>: %n file(s), %2 on disk.", nullptr, int(m_result.files.size()))
                       .arg(name, humanBytes(m_result.fileBytes));
    if (!torchFiles)
        text += QLatin1Char(' ') + tr("No torch.save file here: nothing to slim.");
    else if (wastedBytes)
        text += QLatin1Char(' ') +
                tr("<span style=\"color:#d64f45\"><b>%1 wasted</b></span> (%2% of the storage bytes): no "
                   "tensor view reaches them. Slim writes a copy without them (gaps inside a strided view "
                   "stay, so that torch.load gives the same strides).")
                    .arg(humanBytes(wastedBytes),
                         percentText(wastedBytes, m_result.storageBytes).toHtmlEscaped());
    else
        text += QLatin1Char(' ') + tr("Nothing wasted: every storage byte is reached by a view.");
    m_summary->setText(text);
    m_slim->setEnabled(torchFiles > 0);
    emit analysed(true);

    // The storage table: the file a tensor selection asked for, else the worst torch file.
    int row = -1;
    for (int i = 0; !m_wantFile.isEmpty() && i < int(m_order.size()); ++i)
        if (filePath(i) == m_wantFile) row = i;
    m_wantFile.clear();
    for (int i = 0; row < 0 && i < int(m_order.size()); ++i)
        if (m_result.files[size_t(m_order[size_t(i)])].torch) row = i;
    if (row >= 0)
        showFile(row);
    else {
        m_storageCaption->setText(tr("Storages: no torch.save file"));
        emit settled();
    }
}

void BloatView::showFile(int row)
{
    if (row < 0 || size_t(row) >= m_order.size()) return;
    m_bars->setCurrent(row);
    const ops::FolderFile& f = m_result.files[size_t(m_order[size_t(row)])];
    if (!f.torch) {
        m_jobs.drop(kStorages);
        m_currentFile = filePath(row);
        m_storageModel->setRows({});
        m_storageCaption->setText(
            tr("%1 is not a torch.save file: it has no storages.").arg(QString::fromStdString(f.path)));
        emit storagesShown(false);
        if (!busy()) emit settled();
        return;
    }
    loadStorages(filePath(row));
}

void BloatView::loadStorages(const QString& file)
{
    m_currentFile = file;
    m_storageModel->setRows({});
    m_storageCaption->setText(tr("Storages of %1: reading...").arg(displayName(file)));
    if (m_analysing.empty()) setBusy(true, tr("Reading %1").arg(locationName(file)));
    m_jobs.run(
        kStorages,
        [file, files = m_workspace.files()](const ops::ProgressSink&, const ops::CancelToken& cancel) {
            return storagesOf(file, files.get(), cancel);
        },
        [this, file](JobResult<StorageResult> r) { onStorages(file, std::move(r)); });
}

void BloatView::onStorages(const QString& file, JobResult<StorageResult> job)
{
    setBusy(!m_analysing.empty());
    const QString name = displayName(file);
    if (!job.ok()) {
        m_storageCaption->setText(job.cancelled ? tr("Storages of %1: cancelled.").arg(name)
                                                : tr("Storages of %1: %2").arg(name, job.error));
        emit storagesShown(false);
        emit settled();
        return;
    }
    StorageResult& r = *job.value;
    const quint64 wasted = r.storageBytes - r.usedBytes;
    m_storageCaption->setText(
        tr("Storages of %1: %n storage(s), %2 of %3 wasted", nullptr, int(r.rows.size()))
            .arg(name, humanBytes(wasted), humanBytes(r.storageBytes)));
    size_t tensors = 0;
    for (const auto& s : r.rows)
        tensors += s.tensors.size();
    m_storageModel->setRows(std::move(r.rows));
    // Few enough to read: show the tensors behind each storage at once.
    // Few enough to read: show the tensors behind each shared storage at once (a storage of
    // one tensor names it in its own row).
    if (tensors <= 200)
        for (int row = 0; row < m_storageModel->rowCount(); ++row)
            if (m_storageModel->rowCount(m_storageModel->index(row, 0)) > 1)
                m_storageView->expand(m_storageModel->index(row, 0));
    // Keys and numbers are short; the tensor paths have the last, stretching column.
    for (int c = 0; c < StorageModel::Tensors; ++c)
        m_storageView->resizeColumnToContents(c);
    m_storageView->setColumnWidth(StorageModel::Name,
                                  std::max(m_storageView->columnWidth(StorageModel::Name), 70));
    selectPendingTensor();
    emit storagesShown(true);
    emit settled();
}

void BloatView::showTensor(const QString& file, const QString& tensorPath)
{
    const QString abs = absoluteLocation(file);
    m_pendingTensor = tensorPath;
    if (abs == m_currentFile && !m_jobs.running(kStorages)) return selectPendingTensor();
    for (int i = 0; i < int(m_order.size()); ++i)
        if (filePath(i) == abs) return showFile(i);
    if (!m_analysing.empty() && abs.startsWith(m_target + QLatin1Char('/'))) {
        m_wantFile = abs; // part of what is being analysed: shown when that is done
        return;
    }
    // Not part of what is shown: the file becomes the target, and its tensor is selected once read.
    setTarget(abs);
}

void BloatView::selectPendingTensor()
{
    if (m_pendingTensor.isEmpty()) return;
    const QModelIndex i = m_storageModel->indexOfTensor(m_pendingTensor);
    m_pendingTensor.clear();
    if (!i.isValid()) return;
    if (i.parent().isValid()) m_storageView->expand(i.parent());
    m_storageView->scrollTo(i);
    // Selecting, not activating: a click emits tensorActivated, this must not (the tree asked).
    m_storageView->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect |
                                                            QItemSelectionModel::Rows);
}

} // namespace ckpt::app
