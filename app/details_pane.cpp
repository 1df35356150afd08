#include "details_pane.h"

#include "cast.h"
#include "ops/tensor_source.h"
#include "partition_bar.h"
#include "tag_overview.h"
#include "tree_model.h"

#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <filesystem>

namespace ckpt::app {

namespace {

const QString kStatistics = QStringLiteral("statistics");

QString esc(const std::string& s)
{
    return QString::fromStdString(s).toHtmlEscaped();
}

QString row(const QString& k, const QString& v)
{
    return QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(k, v);
}

QString ints(const std::vector<int64_t>& v)
{
    QStringList l;
    for (auto x : v)
        l << QString::number(x);
    return QLatin1Char('[') + l.join(QLatin1String(", ")) + QLatin1Char(']');
}

// Where a tensor of a file lies, as the file stores it.
QString tensorRows(const Node& node)
{
    const ops::ListedTensor& t = *node.tensor;
    QString html = row(DetailsPane::tr("Stride"), ints(t.tensor.stride));
    html += row(DetailsPane::tr("Storage"), t.storage.empty() ? DetailsPane::tr("none")
                                                              : DetailsPane::tr("record %1, offset %2, %3")
                                                                    .arg(esc(t.storage))
                                                                    .arg(t.tensor.storageOffset)
                                                                    .arg(humanBytes(t.storageBytes)));
    html += row(DetailsPane::tr("File"), esc(node.file));
    if (!node.sharedWith.empty()) {
        QStringList others;
        for (const auto& o : node.sharedWith)
            others << esc(o);
        html += row(DetailsPane::tr("Shares storage with"), others.join(QLatin1String("<br>")));
    }
    return html;
}

// Runs on a worker: the first values and the statistics of one named tensor: of a tag of the
// checkpoint the window opened, or of one of its files (its parsed files are reused, nothing is
// opened again).
QString tensorReport(const std::shared_ptr<const layout::OpenedCheckpoint>& opened,
                     const std::optional<layout::Tag>& one, const std::string& source,
                     const std::string& name, const ops::CancelToken& cancel)
{
    try {
        const ops::TensorSet set =
            one ? ops::tagTensors(opened, *one, {}) : ops::fileTensors(*opened->files, source);
        const ops::SourceTensor* t = nullptr;
        for (const auto& s : set.tensors)
            if (s.tensor.name == name && s.aliasOf.empty()) t = &s;
        if (!t) return DetailsPane::tr("No data to read for this tensor.");
        const auto type = ops::scalarOf(t->tensor.dtype);
        if (!type) return DetailsPane::tr("This dtype has no statistics.");
        const uint32_t es = torch::elementSize(t->tensor.dtype);
        const uint64_t n = t->tensor.nbytes / es;
        std::vector<uint8_t> first(std::min<uint64_t>(n, 12) * es);
        if (!first.empty()) t->tensor.fill(0, first.size(), first.data());
        QStringList values;
        for (size_t i = 0; i < first.size() / es; ++i)
            values << QString::number(gpu::toDouble(*type, first.data() + i * es), 'g', 7);
        gpu::Stats st;
        std::vector<uint8_t> buf;
        const uint64_t per = (16u << 20) / es;
        for (uint64_t off = 0; off < n; off += per) {
            cancel.throwIfCancelled();
            const uint64_t len = std::min(per, n - off);
            buf.resize(len * es);
            t->tensor.fill(off * es, len * es, buf.data());
            st.merge(
                gpu::cpuBackend().stats(gpu::StridedView{buf.data(), es, {int64_t(len)}, {1}, 0}, *type));
        }
        return DetailsPane::tr("First values: %1\nmin %2  max %3  mean %4  std %5\nzeros %6  NaN %7  Inf %8")
            .arg(values.join(QLatin1String(", ")))
            .arg(st.min, 0, 'g', 7)
            .arg(st.max, 0, 'g', 7)
            .arg(st.mean, 0, 'g', 7)
            .arg(st.std(), 0, 'g', 7)
            .arg(st.zeros)
            .arg(st.nans)
            .arg(st.infs);
    } catch (const Cancelled&) {
        throw;
    } catch (const std::exception& e) {
        return DetailsPane::tr("Could not compute: %1").arg(QString::fromUtf8(e.what()));
    }
}

} // namespace

DetailsPane::DetailsPane(Workspace& workspace, QWidget* parent) : QWidget(parent), m_jobs(&workspace.jobs())
{
    auto* layout = new QVBoxLayout(this);
    m_summary = new QTextBrowser(this);
    m_bar = new PartitionBar(this);
    m_partitions = new QTableWidget(0, 5, this);
    m_partitions->setHorizontalHeaderLabels(
        {tr("Rank"), tr("File"), tr("Offset"), tr("Length"), tr("Padding")});
    // The file name takes the room; the numbers keep theirs.
    m_partitions->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_partitions->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_partitions->setTextElideMode(Qt::ElideMiddle);
    m_partitions->verticalHeader()->hide();
    m_partitions->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search the configuration"));
    m_json = new QPlainTextEdit(this);
    m_json->setReadOnly(true);
    m_statsButton = new QPushButton(tr("Show values and statistics"), this);
    m_stats = new QLabel(this);
    m_stats->setWordWrap(true);
    m_stats->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_summary);
    layout->addWidget(m_bar);
    layout->addWidget(m_partitions, 1);
    layout->addWidget(m_search);
    layout->addWidget(m_json, 1);
    layout->addWidget(m_statsButton);
    layout->addWidget(m_stats);
    m_overview = new TagOverview(workspace, this);
    layout->addWidget(m_overview, 1);
    connect(m_overview, &TagOverview::parameterClicked, this, &DetailsPane::parameterClicked);
    connect(m_statsButton, &QPushButton::clicked, this, &DetailsPane::computeStatistics);
    connect(m_search, &QLineEdit::returnPressed, this, [this] {
        if (!m_json->find(m_search->text())) {
            m_json->moveCursor(QTextCursor::Start); // wrap around
            m_json->find(m_search->text());
        }
    });
    show(nullptr, nullptr);
}

QString DetailsPane::statisticsText() const
{
    return m_stats->text();
}

bool DetailsPane::computing() const
{
    return m_jobs.running(kStatistics);
}

void DetailsPane::show(const Snapshot* snapshot, const Node* node)
{
    m_snapshot = snapshot;
    m_node = node;
    m_jobs.drop(kStatistics); // the previous node's report is not this one's
    m_stats->clear();
    m_partitions->setRowCount(0);
    const layout::Parameter* held = node && snapshot ? heldParameter(*snapshot, *node) : nullptr;
    // A tensor, a parameter, an optimizer moment or another tensor of a tag: values on demand.
    m_statsButton->setVisible((node && node->kind == NodeKind::Tensor) ||
                              (held && held->tiedTo.empty() && held->unreadable.empty()));
    m_statsButton->setEnabled(true);
    m_bar->setVisible(false);
    m_partitions->setVisible(false);
    m_search->setVisible(false);
    m_json->setVisible(false);
    // A tag, or a checkpoint (its latest tag, below the list of all): the overview and the map.
    const layout::Tag* overview = nullptr;
    if (node && snapshot && node->kind == NodeKind::Tag && node->tag >= 0)
        overview = &snapshot->tags()[size_t(node->tag)];
    if (node && snapshot && !node->parent && !snapshot->tags().empty()) {
        overview = &snapshot->tags().back();
        for (const auto& t : snapshot->tags())
            if (t.latest) overview = &t;
    }
    m_overview->setVisible(overview);
    m_summary->setVisible(!overview);
    if (overview) {
        // By reference (the tags hold every rank slice: a copy here stalled the GUI thread).
        static const std::vector<layout::Tag> none;
        const size_t index = size_t(overview - snapshot->tags().data());
        m_overview->setRunTags(snapshot->tags());
        m_overview->setTag(*overview, node->parent ? none : snapshot->tags(),
                           index < snapshot->layouts.size() ? snapshot->layouts[index] : nullptr);
        return;
    }
    if (!node) {
        m_summary->setHtml(tr("<p>Select an item to see its details.</p>"));
        return;
    }
    QString html = QStringLiteral("<h3>%1</h3><table>").arg(esc(node->name));
    html += row(tr("Kind"), TreeModel::kindLabel(*node));
    if (!node->dtype.empty())
        html += row(tr("dtype"), esc(node->dtype)) + row(tr("Shape"), ints(node->shape));
    if (node->elements) html += row(tr("Elements"), QLocale().toString(qulonglong(node->elements)));
    if (node->bytes) html += row(tr("Bytes"), humanBytes(node->bytes));
    if (node->tensor) html += tensorRows(*node);
    if (held) html += showPartitions(*held);
    for (const layout::Fact& f : node->facts)
        html += row(factText(f.label, true), factText(f.value, false).toHtmlEscaped());
    if (node->kind == NodeKind::Config) {
        m_json->setPlainText(QString::fromStdString(node->text));
        m_json->setVisible(true);
        m_search->setVisible(true);
    }
    if (node->kind == NodeKind::Entry && !node->value.empty()) html += row(tr("Value"), esc(node->value));
    if (!node->error.empty()) html += row(tr("Error"), esc(node->error));
    m_summary->setHtml(html + QStringLiteral("</table>"));
    fitSummary();
}

void DetailsPane::fitSummary()
{
    // As tall as its text when a table or the configuration shares the pane (at most three
    // fifths of it), all of the pane when it is alone: a fixed height cut long details off
    // above an empty pane.
    QVBoxLayout* l = static_cast<QVBoxLayout*>(layout());
    const bool alone = m_partitions->isHidden() && m_json->isHidden();
    l->setStretchFactor(m_summary, alone ? 1 : 0);
    if (alone) {
        m_summary->setMaximumHeight(QWIDGETSIZE_MAX);
        return;
    }
    m_summary->document()->setTextWidth(m_summary->viewport()->width());
    const int want = int(std::ceil(m_summary->document()->size().height())) + 2 * m_summary->frameWidth() + 2;
    m_summary->setMaximumHeight(std::max(60, std::min(want, height() * 3 / 5)));
}

void DetailsPane::resizeEvent(QResizeEvent* e)
{
    QWidget::resizeEvent(e);
    if (!m_summary->isHidden()) fitSummary();
}

QString DetailsPane::showPartitions(const layout::Parameter& p)
{
    // The partition table and bar of a parameter, moment or other tensor; its rows of facts.
    QString html;
    if (!p.tiedTo.empty()) html += row(tr("Tied to"), esc(p.tiedTo));
    if (p.group >= 0) html += row(tr("Flat group"), QString::number(p.group));
    std::vector<PartitionBar::Slice> slices;
    QStringList states;
    m_partitions->setRowCount(int(p.slices.size()));
    for (size_t r = 0; r < p.slices.size(); ++r) {
        const auto& s = p.slices[r];
        slices.push_back({s.rank, s.paramOffset, s.length, s.padding});
        const QString file =
            s.master.empty() ? QString()
                             : QString::fromStdString(
                                   std::filesystem::path(s.master.front().file.str()).filename().string());
        const QStringList cells = {QString::number(s.rank), file, QString::number(s.paramOffset),
                                   QString::number(s.length), QString::number(s.padding)};
        for (int c = 0; c < cells.size(); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if (c == 1) item->setToolTip(cells[c]);
            m_partitions->setItem(int(r), c, item);
        }
    }
    for (const auto& st : p.state)
        states << QString::fromStdString(st.name);
    if (!states.isEmpty()) html += row(tr("Optimizer state"), states.join(QLatin1String(", ")));
    m_bar->setSlices(std::move(slices), p.numel());
    m_bar->setVisible(p.tiedTo.empty());
    m_partitions->setVisible(p.tiedTo.empty());
    return html;
}

void DetailsPane::computeStatistics()
{
    if (!m_node || !m_snapshot) return;
    std::string source, name;
    std::optional<layout::Tag> tag; // the node's parameter alone (its moments are not its values)
    if (const layout::Parameter* p = heldParameter(*m_snapshot, *m_node)) {
        source = m_snapshot->path;
        tag = oneParameterTag(*m_snapshot, *m_node);
        name = p->name;
    } else {
        source = m_node->file.empty() ? m_snapshot->path : m_node->file;
        name = m_node->tensor ? m_node->tensor->tensor.path : std::string();
    }
    m_statsButton->setEnabled(false);
    m_stats->setText(tr("Computing..."));
    m_jobs.run(
        kStatistics,
        [opened = m_snapshot->opened, tag, source, name](const ops::ProgressSink&,
                                                         const ops::CancelToken& cancel) {
            return tensorReport(opened, tag, source, name, cancel);
        },
        [this](const JobResult<QString>& r) {
            m_stats->setText(r.value.value_or(r.error));
            m_statsButton->setEnabled(true);
            emit statisticsReady();
        });
}

} // namespace ckpt::app
