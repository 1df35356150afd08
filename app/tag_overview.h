// What a tag holds at a glance, shown when a checkpoint or tag is selected: ZeRO stage, world
// sizes, dtype, DeepSpeed version, step and samples, parameter counts (trainable, frozen,
// buffers, tied), bytes on disk by role (the workspace's analysis of the tag's folder, read once
// for the overview and the Bloat view alike) and per rank file, and the sharding map.
#pragma once

#include "layout/checkpoint.h"
#include "layout/sharding.h"
#include "ops/bloat.h"
#include "training_chart.h"
#include "workspace.h"

#include <QWidget>
#include <map>
#include <memory>

class QTextBrowser;

namespace ckpt::app {

class ShardingMap;

// A tag's bytes by role, read once per tag by the workspace (from the opened checkpoint's parsed
// files).
struct RoleBytesResult
{
    std::string dir;
    ops::FolderBloat bloat;
    QString error;
    bool done = false; // false while the workspace reads them
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
    explicit TagOverview(Workspace& workspace, QWidget* parent = nullptr);
    ~TagOverview() override;
    // `others`: every tag of the checkpoint, listed when the checkpoint itself is selected.
    // `layout`: the tag's map laid out beforehand (on a worker); null: laid out here.
    void setTag(const layout::Tag& tag, const std::vector<layout::Tag>& others = {},
                std::shared_ptr<const layout::ShardingLayout> layout = {});
    // The run the tags belong to (every tag of the checkpoint), before setTag: a Hugging Face
    // Trainer run's training chart is drawn from its newest trainer_state.json, with each
    // checkpoint marked; a checkpoint without one hides the chart.
    void setRunTags(const std::vector<layout::Tag>& tags);
    ShardingMap* map() const { return m_map; }
    TrainingChart* trainingChart() const { return m_chart; }
    QString text() const; // the summary as plain text (tests)
    bool busy() const;    // the bytes by role are being read

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
    TrainingChart* m_chart;
    std::optional<layout::TrainingLog> m_run; // the newest trainer_state.json of the run
    std::vector<RunCheckpoint> m_runCheckpoints;
    ShardingMap* m_map;
    Workspace& m_workspace; // reads the bytes by role, once per tag for every view
};

} // namespace ckpt::app
