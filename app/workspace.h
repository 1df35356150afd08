// The window's workspace: the checkpoint it has open (the snapshot, whose opened checkpoint holds
// the parsed files), the one JobManager every view and dialog of the window runs its jobs on
// (each through a JobLane of its own), and what is computed once per opened checkpoint and shared
// by whoever asks: a folder's or a file's bytes by role and waste (ops::FolderBloat), which the
// tag overview shows as bytes by role and the Bloat view as bars. The tree, the details pane,
// the overview, the Bloat view, the dialogs and the comparison window are handed the workspace;
// none of them opens or parses the checkpoint again.
#pragma once

#include "job_manager.h"
#include "ops/bloat.h"
#include "ops/verify.h"
#include "snapshot.h"

#include <QObject>
#include <QPointer>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ckpt::app {

class Workspace : public QObject
{
    Q_OBJECT
public:
    explicit Workspace(QObject* parent = nullptr);
    ~Workspace() override; // stops every job of the window and waits for it

    JobManager& jobs() { return m_jobs; }
    const JobManager& jobs() const { return m_jobs; }
    // What the window shows; null when nothing is open.
    const std::shared_ptr<const Snapshot>& snapshot() const { return m_snapshot; }
    // The opened checkpoint, or null.
    std::shared_ptr<const layout::OpenedCheckpoint> opened() const;
    // Its parsed files, or null: an operation on a path inside it reads them, parsing nothing.
    std::shared_ptr<const layout::FileSet> files() const;
    // Another checkpoint (or none) is open: what was computed for the last one is forgotten and
    // its analyses still running are dropped.
    void setSnapshot(std::shared_ptr<const Snapshot> snapshot);

    using AnalysisDone = std::function<void(const JobResult<ops::FolderBloat>&)>;
    // The analysis of `path` (a file, a tag folder, the checkpoint, any folder) if it is known:
    // computed once for a path inside the open checkpoint. Null otherwise.
    const ops::FolderBloat* analysis(const std::string& path) const;
    // Computes the analysis of `path` on a worker, unless it is already computing (then `receiver`
    // waits for that one) or known (then `done` gets it at once, queued). `done` and `progress`
    // run on the GUI thread while `receiver` lives; a path outside the open checkpoint is
    // analysed afresh each time.
    void analyse(const std::string& path, QObject* receiver, AnalysisDone done,
                 JobManager::ProgressHandler progress = {});
    // `receiver` waits no longer for `path`; an analysis nobody waits for any more is dropped.
    void stopWaiting(const std::string& path, const QObject* receiver);
    // Stops the analysis of `path`: its waiters are told it was cancelled.
    void cancelAnalysis(const std::string& path);
    bool analysing(const std::string& path) const;

    // What the last verification of the open checkpoint found, kept until another checkpoint (or
    // a reload) is open: per tag verified, whether it was whole; per file found damaged or
    // missing, its first problem. The tree marks those files; an export of such a tag asks first.
    struct TagVerification
    {
        bool whole = true;
        int damagedFiles = 0;
        int problems = 0; // beyond one file's bytes (a rank file missing, an unreadable tag)
    };
    // A report of another checkpoint than the open one is ignored.
    void recordVerification(const ops::VerifyReport& report);
    const TagVerification* verification(const std::string& tag) const;
    const std::map<std::string, QString>& damagedFiles() const { return m_damaged; } // by keyOf(path)
    static std::string keyOf(const std::string& path); // absolute, as the Bloat view names paths

signals:
    void snapshotChanged();
    void verificationChanged();

private:
    struct Waiter
    {
        QPointer<QObject> receiver;
        AnalysisDone done;
        JobManager::ProgressHandler progress;
    };
    static QString channelOf(const std::string& key);
    bool insideOpened(const std::string& key) const;
    void analysed(const std::string& key, const JobResult<ops::FolderBloat>& r);

    std::shared_ptr<const Snapshot> m_snapshot;
    std::map<std::string, ops::FolderBloat> m_analyses; // by absolute path, for the open checkpoint
    std::map<std::string, std::vector<Waiter>> m_waiting;
    std::map<std::string, TagVerification> m_verified; // by tag name
    std::map<std::string, QString> m_damaged;          // by keyOf(file)
    JobManager m_jobs; // last: destroyed first, it stops and waits for every worker
};

} // namespace ckpt::app
