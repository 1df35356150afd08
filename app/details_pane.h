// The details of the selected node: a tensor's layout, a parameter's partition table and bar,
// a configuration as pretty JSON with search, and on demand the first values and statistics,
// computed on a worker.
#pragma once

#include "snapshot.h"

#include <QFutureWatcher>
#include <QWidget>

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QTableWidget;
class QTextBrowser;

namespace ckpt::app {

class PartitionBar;

class DetailsPane : public QWidget
{
    Q_OBJECT
public:
    explicit DetailsPane(QWidget* parent = nullptr);
    void show(const Snapshot* snapshot, const Node* node);
    QTableWidget* partitionTable() const { return m_partitions; }
    QString statisticsText() const;

signals:
    void statisticsReady();

private:
    void computeStatistics();

    const Snapshot* m_snapshot = nullptr;
    const Node* m_node = nullptr;
    QTextBrowser* m_summary;
    QTableWidget* m_partitions;
    PartitionBar* m_bar;
    QLineEdit* m_search;
    QPlainTextEdit* m_json;
    QPushButton* m_statsButton;
    QLabel* m_stats;
    QFutureWatcher<QString> m_watcher;
};

} // namespace ckpt::app
