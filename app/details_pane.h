// The details of the selected node: a tensor's layout, a parameter's partition table and bar,
// a configuration as pretty JSON with search, and on demand the first values and statistics,
// computed on a worker; for a checkpoint or a tag, the tag overview and its sharding map. A
// report still computing when another node is shown is cancelled and never shown.
#pragma once

#include "job_manager.h"
#include "snapshot.h"
#include "workspace.h"

#include <QWidget>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace ckpt::app {

class PartitionBar;
class TagOverview;

class DetailsPane : public QWidget
{
    Q_OBJECT
public:
    explicit DetailsPane(Workspace& workspace, QWidget* parent = nullptr);
    void show(const Snapshot* snapshot, const Node* node);
    QTableWidget* partitionTable() const { return m_partitions; }
    QString statisticsText() const;
    bool computing() const; // a report is being computed for the node shown
    TagOverview* overview() const { return m_overview; }

    // The selected tensor's first values and statistics, on a worker ("Show values and statistics").
    void computeStatistics();

signals:
    void statisticsReady();
    void parameterClicked(const QString& tag, const QString& name); // in the sharding map

protected:
    void resizeEvent(QResizeEvent* e) override;

private:
    void fitSummary();
    QString showPartitions(const layout::Parameter& p);
    const Snapshot* m_snapshot = nullptr;
    const Node* m_node = nullptr;
    QTextBrowser* m_summary;
    QTableWidget* m_partitions;
    PartitionBar* m_bar;
    QLineEdit* m_search;
    QPlainTextEdit* m_json;
    QPushButton* m_statsButton;
    QLabel* m_stats;
    TagOverview* m_overview;
    JobLane m_jobs; // the statistics, on the window's JobManager
};

} // namespace ckpt::app
