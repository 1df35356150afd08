// What a tag holds at a glance, shown when a checkpoint or tag is selected: ZeRO stage, world
// sizes, dtype, DeepSpeed version, step and samples, parameter counts (trainable, frozen,
// buffers, tied), bytes on disk by role (on a worker: ops::analyzeFolderBloat reads every
// pickle) and per rank file, and the sharding map.
#pragma once

#include "job_manager.h"
#include "layout/checkpoint.h"
#include "layout/file_set.h"
#include "layout/sharding.h"
#include "ops/bloat.h"

#include <QWidget>
#include <map>
#include <memory>

class QTextBrowser;

namespace ckpt::app {

class ShardingMap;

// A tag's bytes by role, read once per tag (from the opened checkpoint's parsed files).
struct RoleBytesResult
{
    std::string dir;
    ops::FolderBloat bloat;
    QString error;
};

// The summary's parameter counts, kept apart so tests can check them against the layout.
struct ParameterCounts
{
    uint64_t trainable = 0, frozen = 0, buffers = 0, tied = 0;              // tensors
    uint64_t trainableElements = 0, frozenElements = 0, bufferElements = 0; // elements
};
ParameterCounts countParameters(const layout::Tag& tag);
// A fact's label or value (layout::Fact) in the window's language where it is a word of ours.
QString factText(const std::string& text, bool label);

class TagOverview : public QWidget
{
    Q_OBJECT
public:
    explicit TagOverview(QWidget* parent = nullptr);
    ~TagOverview() override;
    // `others`: every tag of the checkpoint, listed when the checkpoint itself is selected.
    // `layout`: the tag's map laid out beforehand (on a worker); null: laid out here.
    void setTag(const layout::Tag& tag, const std::vector<layout::Tag>& others = {},
                std::shared_ptr<const layout::ShardingLayout> layout = {});
    // The opened checkpoint's parsed files: the bytes by role are read from them, nothing parsed
    // again (null: the tag's files are parsed for it).
    void setFiles(std::shared_ptr<const layout::FileSet> files);
    ShardingMap* map() const { return m_map; }
    QString text() const; // the summary as plain text (tests)
    bool busy() const { return !m_jobs.idle(); }

signals:
    void parameterClicked(const QString& tag, const QString& name);
    void rolesReady();

private:
    void render();
    void readRoles(const std::string& dir);

    layout::Tag m_tag; // without its parameters (see setTag)
    ParameterCounts m_counts;
    std::vector<layout::Tag> m_others;
    std::optional<RoleBytesResult> m_roles;
    QTextBrowser* m_text;
    ShardingMap* m_map;
    std::shared_ptr<const layout::FileSet> m_files;
    std::map<std::string, RoleBytesResult> m_rolesOf; // by tag folder: each tag read once
    JobManager m_jobs;                                // last: stops and waits for the reading
};

} // namespace ckpt::app
