#include "tag_overview.h"

#include "bloat_view.h"
#include "sharding_map.h"
#include "tree_model.h"

#include <QCoreApplication>
#include <QLocale>
#include <QPointer>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>
#include <map>

namespace ckpt::app {

namespace {

QString esc(const std::string& s)
{
    return QString::fromStdString(s).toHtmlEscaped();
}

QString row(const QString& k, const QString& v)
{
    return QStringLiteral("<tr><td><b>%1</b></td><td>&nbsp;&nbsp;%2</td></tr>").arg(k, v);
}

QString count(uint64_t n)
{
    return QLocale().toString(qulonglong(n));
}

} // namespace

QString factText(const std::string& text, bool label)
{
    // The families' words are listed in kinds.cpp for lupdate; a family's own key (a Composer
    // badge) or a number is shown as it is. Labels start with a capital, as the window's own.
    QString t = wordText("ckpt::app::Fact", text);
    if (label && !t.isEmpty()) t[0] = t[0].toUpper();
    return t;
}

ParameterCounts countParameters(const layout::Tag& tag)
{
    ParameterCounts c;
    for (const auto& p : tag.params) {
        if (!p.tiedTo.empty()) {
            ++c.tied; // an alias: no elements of its own
            continue;
        }
        switch (p.kind) {
        case layout::Parameter::Kind::Trainable:
            ++c.trainable, c.trainableElements += p.numel();
            break;
        case layout::Parameter::Kind::Frozen:
            ++c.frozen, c.frozenElements += p.numel();
            break;
        case layout::Parameter::Kind::Buffer:
            ++c.buffers, c.bufferElements += p.numel();
            break;
        }
    }
    return c;
}

TagOverview::TagOverview(Workspace& workspace, QWidget* parent) : QWidget(parent), m_workspace(workspace)
{
    auto* l = new QVBoxLayout(this);
    l->setContentsMargins(0, 0, 0, 0);
    auto* split = new QSplitter(Qt::Vertical, this);
    m_text = new QTextBrowser(split);
    m_chart = new TrainingChart(split);
    m_chart->setVisible(false);
    m_map = new ShardingMap(split);
    split->addWidget(m_text);
    split->addWidget(m_chart);
    split->addWidget(m_map);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 3);
    split->setStretchFactor(2, 2);
    l->addWidget(split);
    connect(m_map, &ShardingMap::parameterClicked, this,
            [this](const QString& name) { emit parameterClicked(QString::fromStdString(m_tag.name), name); });
}

TagOverview::~TagOverview() = default;

void TagOverview::setTag(const layout::Tag& tag, const std::vector<layout::Tag>& others,
                         std::shared_ptr<const ShardingLayout> layout)
{
    const bool same = tag.dir == m_tag.dir && m_roles && m_roles->dir == tag.dir;
    // What the text shows, without the parameters: copying a tag of 64 ranks x 10,000
    // parameters (676,000 rank slices) on the GUI thread was most of a half-second stall.
    auto header = [](const layout::Tag& t) {
        layout::Tag h;
        h.name = t.name, h.dir = t.dir, h.latest = t.latest, h.globalSteps = t.globalSteps;
        h.facts = t.facts, h.files = t.files, h.warnings = t.warnings, h.unreadable = t.unreadable;
        h.notExportable = t.notExportable;
        return h;
    };
    m_tag = header(tag);
    m_counts = countParameters(tag);
    m_others.clear();
    for (const auto& o : others)
        m_others.push_back(header(o));
    m_map->setVisible(tag.unreadable.empty()); // nothing to draw, and the text says why
    m_chart->setVisible(m_run && !m_run->logHistory.empty());
    if (m_chart->isVisibleTo(this)) m_chart->setRun(*m_run, m_runCheckpoints, tag.name);
    if (layout)
        m_map->setSharding(std::move(layout));
    else
        m_map->setSharding(shardingLayout(tag));
    if (!same) readRoles(tag.dir);
    render();
}

void TagOverview::setRunTags(const std::vector<layout::Tag>& tags)
{
    m_run.reset();
    m_runCheckpoints.clear();
    for (const auto& t : tags) {
        if (!t.trainingLog) continue;
        m_runCheckpoints.push_back({t.name, t.trainingLog->globalStep});
        if (!m_run || t.trainingLog->globalStep > m_run->globalStep) m_run = *t.trainingLog;
    }
}

void TagOverview::readRoles(const std::string& dir)
{
    if (m_roles) m_workspace.stopWaiting(m_roles->dir, this); // an earlier tag's, still reading
    m_roles.reset();
    if (const ops::FolderBloat* known = m_workspace.analysis(dir)) {
        m_roles = RoleBytesResult{dir, *known, {}, true};
        QMetaObject::invokeMethod(this, &TagOverview::rolesReady, Qt::QueuedConnection);
        return;
    }
    // The workspace reads it once for every view that asks (the Bloat view of this tag too).
    m_roles = RoleBytesResult{dir, {}, {}, false};
    m_workspace.analyse(dir, this, [this, dir](const JobResult<ops::FolderBloat>& r) {
        if (!m_roles || m_roles->dir != dir) return; // another tag is shown now
        if (r.cancelled) return m_roles.reset();     // stopped in the Bloat view: asked again when shown
        m_roles = RoleBytesResult{dir, r.value.value_or(ops::FolderBloat{}), r.error, true};
        render();
        emit rolesReady();
    });
}

bool TagOverview::busy() const
{
    return m_roles && !m_roles->done && m_workspace.analysing(m_roles->dir);
}

QString TagOverview::text() const
{
    return m_text->toPlainText();
}

void TagOverview::render()
{
    const layout::Tag& t = m_tag;
    const QLocale loc;
    QString html;
    if (!m_others.empty()) {
        html += tr("<h3>%n tag(s)</h3>", nullptr, int(m_others.size())) + QStringLiteral("<table>");
        for (const auto& o : m_others) {
            uint64_t bytes = 0;
            for (const auto& f : o.files)
                bytes += f.size;
            const QString what =
                !o.unreadable.empty()
                    ? tr("cannot be read")
                    : (o.globalSteps >= 0 ? tr("step %1").arg(count(uint64_t(o.globalSteps)))
                                          : tr("step unknown")) +
                          tr(", %1 in %n file(s)", nullptr, int(o.files.size())).arg(humanBytes(bytes));
            html += row(esc(o.name) + (o.latest ? tr(" (latest)") : QString()), what);
        }
        html += QStringLiteral("</table>");
    }
    html += QStringLiteral("<h3>%1%2</h3><table>").arg(esc(t.name), t.latest ? tr(" (latest)") : QString());
    if (!t.unreadable.empty()) { // no facts to show: why, naming the file
        html += row(tr("Cannot be read"), esc(t.unreadable));
        m_text->setHtml(html + QStringLiteral("</table>"));
        return;
    }
    // What the family says of the tag, as it says it (labels translated where they are ours).
    for (const layout::Fact& f : t.facts)
        html += row(factText(f.label, true), factText(f.value, false).toHtmlEscaped());
    // What the family could not make whole (masters it could not place, a model it cannot
    // export): beside the counts, so a model of 0 tensors never stands there without its reason.
    if (!t.notExportable.empty()) html += row(tr("No model to export"), esc(t.notExportable));
    for (const std::string& w : t.warnings)
        html += row(tr("Warning"), esc(w));
    const ParameterCounts& c = m_counts;
    html += row(tr("Trainable"),
                tr("%1 tensors, %2 elements").arg(count(c.trainable), count(c.trainableElements)));
    html += row(tr("Frozen"), tr("%1 tensors, %2 elements").arg(count(c.frozen), count(c.frozenElements)));
    html += row(tr("Buffers"), tr("%1 tensors, %2 elements").arg(count(c.buffers), count(c.bufferElements)));
    html += row(tr("Tied"), tr("%n alias(es)", nullptr, int(c.tied)));
    html += QStringLiteral("</table><h4>%1</h4><table>").arg(tr("Bytes on disk by role"));
    if (!m_roles || !m_roles->done) {
        html += row(tr("Reading the files..."), QString());
    } else if (!m_roles->error.isEmpty()) {
        html += row(tr("Cannot read"), m_roles->error.toHtmlEscaped());
    } else {
        for (size_t r = 0; r < ops::kByteRoles; ++r)
            if (m_roles->bloat.roleBytes[r])
                html += row(BloatView::roleLabel(ops::ByteRole(r)), humanBytes(m_roles->bloat.roleBytes[r]));
        html += row(tr("total"), humanBytes(m_roles->bloat.fileBytes));
    }
    html += QStringLiteral("</table><h4>%1</h4><table>").arg(tr("Rank files"));
    if (t.files.size() <= 32) {
        for (const auto& f : t.files)
            html += row(esc(f.name), humanBytes(f.size));
    } else {
        // Past 32 files, one line per role (how many, from the smallest to the largest, in
        // all): a table of 128 rows took 30-50 ms of the GUI thread to lay out, and each file
        // is listed with its size in the tree under "rank files".
        std::map<std::string, std::vector<uint64_t>> byRole;
        for (const auto& f : t.files)
            byRole[layout::roleName(f.role)].push_back(f.size);
        for (const auto& [role, sizes] : byRole) {
            const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
            uint64_t total = 0;
            for (uint64_t b : sizes)
                total += b;
            // The role in the window's language ("model states" is one of the kinds it translates).
            const QString roleText = wordText("ckpt::app::TreeModel", role).toHtmlEscaped();
            html += row(tr("%n %1 file(s)", nullptr, int(sizes.size())).arg(roleText),
                        (humanBytes(*lo) == humanBytes(*hi)
                             ? humanBytes(*lo)
                             : humanBytes(*lo) + QStringLiteral(" – ") + humanBytes(*hi)) +
                            tr(" each, %1 in all").arg(humanBytes(total)));
        }
    }
    m_text->setHtml(html + QStringLiteral("</table>"));
}

} // namespace ckpt::app
