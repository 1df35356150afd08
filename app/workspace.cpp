#include "workspace.h"

#include "io/location.h"

#include <filesystem>

namespace ckpt::app {

Workspace::Workspace(QObject* parent) : QObject(parent) {}

Workspace::~Workspace() = default;

std::shared_ptr<const layout::OpenedCheckpoint> Workspace::opened() const
{
    return m_snapshot ? m_snapshot->opened : nullptr;
}

std::shared_ptr<const layout::FileSet> Workspace::files() const
{
    return m_snapshot ? std::shared_ptr<const layout::FileSet>(m_snapshot->opened->files) : nullptr;
}

void Workspace::setSnapshot(std::shared_ptr<const Snapshot> snapshot)
{
    for (const auto& [key, waiters] : m_waiting)
        m_jobs.drop(channelOf(key)); // computed from the last checkpoint's files
    m_waiting.clear();
    m_analyses.clear();
    const bool verified = !m_verified.empty() || !m_damaged.empty();
    m_verified.clear(); // the files may have changed since: a reload verifies afresh
    m_damaged.clear();
    m_snapshot = std::move(snapshot);
    emit snapshotChanged();
    if (verified) emit verificationChanged();
}

void Workspace::recordVerification(const ops::VerifyReport& report)
{
    if (!m_snapshot || report.checkpoint != m_snapshot->path) return;
    // Each damaged file counts for the tag whose folder or files hold it; a problem beyond one
    // file for the tag it names (else for every tag verified).
    std::map<std::string, std::string> dirOf;
    for (const auto& t : m_snapshot->tags())
        dirOf[t.name] = t.dir.empty() ? std::string() : keyOf(t.dir);
    const auto holds = [&](const std::string& tag, const std::string& file) {
        const std::string& dir = dirOf[tag];
        if (dir.empty() || file == dir || file.rfind(dir + "/", 0) == 0) return true;
        for (const auto& t : m_snapshot->tags())
            if (t.name == tag)
                for (const auto& f : t.files)
                    if (keyOf(f.path.substr(0, f.path.find('!'))) == file) return true;
        return false;
    };
    for (const std::string& tag : report.tags) {
        TagVerification& v = m_verified[tag] = {};
        for (const auto& f : report.files)
            if ((f.status == "damaged" || f.status == "missing") && holds(tag, keyOf(f.path)))
                ++v.damagedFiles;
        for (const auto& p : report.problems)
            if (report.tags.size() == 1 || p.rfind("tag " + tag + ":", 0) == 0) ++v.problems;
        v.whole = v.damagedFiles == 0 && v.problems == 0;
    }
    for (const auto& f : report.files) {
        const std::string key = keyOf(f.path);
        if (f.status == "damaged" || f.status == "missing")
            m_damaged[key] = QString::fromStdString(f.problems.empty() ? f.status : f.problems.front());
        else
            m_damaged.erase(key); // whole now
    }
    emit verificationChanged();
}

const Workspace::TagVerification* Workspace::verification(const std::string& tag) const
{
    const auto it = m_verified.find(tag);
    return it == m_verified.end() ? nullptr : &it->second;
}

QString Workspace::channelOf(const std::string& key)
{
    return QStringLiteral("analysis:") + QString::fromStdString(key);
}

std::string Workspace::keyOf(const std::string& path)
{
    // A URL names its object as it is; a path is made absolute, as the Bloat view names files.
    std::string key =
        io::isRemotePath(path) ? path : std::filesystem::absolute(path).lexically_normal().string();
    while (key.size() > 1 && key.back() == '/')
        key.pop_back();
    return key;
}

bool Workspace::insideOpened(const std::string& key) const
{
    if (!m_snapshot) return false;
    const std::string root = keyOf(m_snapshot->path);
    return key == root || (key.size() > root.size() && key.starts_with(root) && key[root.size()] == '/');
}

const ops::FolderBloat* Workspace::analysis(const std::string& path) const
{
    const auto it = m_analyses.find(keyOf(path));
    return it == m_analyses.end() ? nullptr : &it->second;
}

bool Workspace::analysing(const std::string& path) const
{
    return m_jobs.running(channelOf(keyOf(path)));
}

void Workspace::analyse(const std::string& path, QObject* receiver, AnalysisDone done,
                        JobManager::ProgressHandler progress)
{
    const std::string key = keyOf(path);
    if (const auto known = m_analyses.find(key); known != m_analyses.end()) {
        // Read before: delivered as a result that arrives at once, never within the call.
        QMetaObject::invokeMethod(
            this,
            [receiver = QPointer<QObject>(receiver), done = std::move(done),
             r = JobResult<ops::FolderBloat>{known->second, false, {}, {}}] {
                if (receiver) done(r);
            },
            Qt::QueuedConnection);
        return;
    }
    m_waiting[key].push_back({receiver, std::move(done), std::move(progress)});
    if (m_jobs.running(channelOf(key))) return; // the one computing serves this receiver too
    // Reading every pickle of the files (or their parsed forms): never on the GUI thread.
    m_jobs.run(
        channelOf(key),
        [key, opened = opened()](const ops::ProgressSink& sink, const ops::CancelToken& cancel) {
            return ops::analyzeFolderBloat(key, sink, cancel, opened ? opened->files.get() : nullptr,
                                           opened ? &opened->model : nullptr);
        },
        [this, key](const JobResult<ops::FolderBloat>& r) { analysed(key, r); },
        [this, key](const JobProgress& p) {
            const auto it = m_waiting.find(key);
            if (it == m_waiting.end()) return;
            for (const Waiter& w : std::vector<Waiter>(it->second)) // a handler may stop waiting
                if (w.receiver && w.progress) w.progress(p);
        });
}

void Workspace::analysed(const std::string& key, const JobResult<ops::FolderBloat>& r)
{
    if (r.ok() && insideOpened(key)) m_analyses[key] = *r.value;
    const auto it = m_waiting.find(key);
    if (it == m_waiting.end()) return;
    const std::vector<Waiter> waiters = std::move(it->second);
    m_waiting.erase(it); // a waiter may ask again from its handler
    for (const Waiter& w : waiters)
        if (w.receiver) w.done(r);
}

void Workspace::stopWaiting(const std::string& path, const QObject* receiver)
{
    const std::string key = keyOf(path);
    const auto it = m_waiting.find(key);
    if (it == m_waiting.end()) return;
    std::erase_if(it->second, [receiver](const Waiter& w) { return !w.receiver || w.receiver == receiver; });
    if (!it->second.empty()) return;
    m_waiting.erase(it);
    m_jobs.drop(channelOf(key)); // nobody reads it any more
}

void Workspace::cancelAnalysis(const std::string& path)
{
    m_jobs.cancel(channelOf(keyOf(path)));
}

} // namespace ckpt::app
