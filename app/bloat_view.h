// The Bloat view: where the bytes of a file, a tag folder or a whole checkpoint go. A bar per file
// (used / wasted / overhead, to scale), the bytes by role (model weights, fp32 masters, Adam
// moments, ...), and the storage table of one file with the tensors that view each storage.
// Everything is computed on workers with progress and cancel: the analysis (ops::analyzeFolderBloat)
// by the workspace, once per path of the open checkpoint for every view that asks, the storage
// table (ops::analyzeBloat) here. The latest request wins and an older result is dropped.
#pragma once

#include "job_manager.h"
#include "ops/bloat.h"
#include "storage_model.h"
#include "workspace.h"

#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;
class QScrollArea;
class QSplitter;
class QTreeView;

namespace ckpt::app {

class FileBars;
class RoleBar;

struct StorageResult
{
    std::vector<StorageRow> rows;
    quint64 fileBytes = 0, storageBytes = 0, usedBytes = 0;
};

class BloatView : public QWidget
{
    Q_OBJECT
public:
    explicit BloatView(Workspace& workspace, QWidget* parent = nullptr);
    ~BloatView() override;

    // A file or a folder (tag, checkpoint, any folder): analysed on a worker unless it already is
    // the target. The first file with the most waste is then shown in the storage table.
    void setTarget(const QString& path);
    void refresh();
    void clear(); // no target: nothing shown, nothing running
    QString target() const { return m_target; }
    // A request is pending: from setTarget()/showFile() until its result has been shown.
    bool busy() const { return !m_analysing.empty() || m_jobs.running(kStorages); }
    void cancel();

    // The file of a bar (by its row in the bars, which are sorted by waste) into the storage table.
    void showFile(int row);
    // The storage table's file, absolute; empty when none.
    QString currentFile() const { return m_currentFile; }
    // Shows a tensor's file and selects its row in the storage table (the tree's selection).
    void showTensor(const QString& file, const QString& tensorPath);
    // The absolute path of the file behind a bar.
    QString filePath(int row) const;

    const ops::FolderBloat& result() const { return m_result; }
    bool hasResult() const { return m_hasResult; }
    FileBars* fileBars() const { return m_bars; }
    RoleBar* roleBar() const { return m_roles; }
    StorageModel* storageModel() const { return m_storageModel; }
    QTreeView* storageView() const { return m_storageView; }
    QString summaryText() const;

    static QString roleLabel(ops::ByteRole role);

signals:
    void analysed(bool ok);      // the bars and the role breakdown are filled (or failed)
    void storagesShown(bool ok); // the storage table holds currentFile()
    void settled();              // nothing is running any more after a request
    void tensorActivated(const QString& file, const QString& tensorPath);
    void slimRequested(const QString& path);

protected:
    void resizeEvent(QResizeEvent* e) override;

private:
    static inline const QString kStorages = QStringLiteral("storages");
    void reset();
    void onAnalysed(const JobResult<ops::FolderBloat>& r);
    void onStorages(const QString& file, JobResult<StorageResult> r);
    void loadStorages(const QString& file);
    void setBusy(bool busy, const QString& what = {});
    void selectPendingTensor();
    QString displayName(const QString& file) const;

    QString m_target;
    bool m_targetFolder = false; // known once the target is analysed
    QString m_currentFile;
    QString m_pendingTensor; // selected once the storage table holds its file
    QString m_wantFile;      // shown in the storage table once the analysis is done
    ops::FolderBloat m_result;
    bool m_hasResult = false;
    std::vector<int> m_order; // bar row -> index into m_result.files
    std::string m_analysing;  // the target whose analysis is awaited from the workspace
    Workspace& m_workspace;
    JobLane m_jobs; // the storage table

    QSplitter* m_split;
    QLabel* m_summary;
    QPushButton* m_slim;
    QProgressBar* m_progress;
    QPushButton* m_cancel;
    QLabel* m_filesCaption;
    QScrollArea* m_barsScroll;
    FileBars* m_bars;
    QLabel* m_rolesCaption;
    RoleBar* m_roles;
    QLabel* m_storageCaption;
    StorageModel* m_storageModel;
    QTreeView* m_storageView;
};

} // namespace ckpt::app
