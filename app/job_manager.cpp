#include "job_manager.h"

#include "tree_model.h"

#include <QTimer>
#include <chrono>
#include <mutex>

namespace ckpt::app {

namespace {

// A report reaches the GUI thread when its permille moved or after this interval (notes always):
// a job with many small records must not flood the event queue, whatever its speed.
constexpr auto kReportInterval = std::chrono::milliseconds(50);

} // namespace

QString fetchedText(quint64 bytes, double seconds)
{
    if (bytes == 0) return {};
    if (seconds < 1) return JobManager::tr("Fetched %1 from the network.").arg(humanBytes(bytes));
    return JobManager::tr("Fetched %1 from the network in %2 s (%3/s).")
        .arg(humanBytes(bytes), QString::number(seconds, 'f', 1),
             humanBytes(quint64(double(bytes) / seconds)));
}

QString progressText(const JobProgress& p)
{
    if (p.secondsLeft < 0)
        return JobManager::tr("%1: %2 of %3").arg(p.stage, humanBytes(p.doneBytes), humanBytes(p.totalBytes));
    // The rate in the bytes' own units: a small job's GB/s would read 0.00.
    return JobManager::tr("%1: %2 of %3, %4/s, %5 s left")
        .arg(p.stage, humanBytes(p.doneBytes), humanBytes(p.totalBytes),
             humanBytes(quint64(p.bytesPerSecond)))
        .arg(p.secondsLeft, 0, 'f', 0);
}

JobManager::JobManager(QObject* parent) : QObject(parent) {}

JobManager::~JobManager()
{
    cancelAll();
    for (auto& [channel, f] : m_futures)
        f.waitForFinished();
}

namespace {

// A job's reports on their way to the GUI thread: what passes the throttle, and what the job
// said last, which a remote transfer's report repeats with its own stage and bytes.
struct Throttle
{
    std::mutex lock; // writers and transfers may report from several threads at once
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), last{};
    int permille = -1;
    ops::Progress said; // the job's last report (its permille, stage and bytes)
    bool pass(const ops::Progress& p, std::chrono::steady_clock::time_point now)
    {
        if (p.note.empty() && p.permille == permille && now - last < kReportInterval) return false;
        if (p.note.empty()) permille = p.permille;
        last = now;
        return true;
    }
};

JobProgress toReport(const ops::Progress& p, const Throttle& t, std::chrono::steady_clock::time_point now)
{
    JobProgress r;
    r.permille = p.permille;
    r.stage = QString::fromStdString(p.stage);
    r.doneBytes = p.doneBytes;
    r.totalBytes = p.totalBytes;
    r.note = QString::fromStdString(p.note);
    const double secs = std::chrono::duration<double>(now - t.start).count();
    if (secs > 0 && p.doneBytes) r.bytesPerSecond = double(p.doneBytes) / secs;
    if (r.bytesPerSecond > 0 && p.totalBytes >= p.doneBytes)
        r.secondsLeft = double(p.totalBytes - p.doneBytes) / r.bytesPerSecond;
    return r;
}

// "fetching model_states.pt, 1.2 MiB of 4.0 MiB, 41 MiB/s": what a job waiting on the network
// is doing; a retry says why the line waits ("x.pt: the server answered 503; retrying in 1.2 s,
// attempt 2 of 5").
QString fetchStage(const io::FetchProgress& f)
{
    const QString name = QString::fromStdString(f.url).section(QLatin1Char('/'), -1);
    if (!f.retry.empty())
        return JobManager::tr("%1: %2; retrying in %3 s, attempt %4 of %5")
            .arg(name, QString::fromStdString(f.retry), QString::number(f.retryIn, 'f', 1))
            .arg(f.attempt)
            .arg(f.attempts);
    const QString what = f.objects > 1 ? JobManager::tr("%n file(s)", nullptr, int(f.objects)) : name;
    QString s = f.waveTotal == 0
                    ? JobManager::tr("fetching %1").arg(what)
                    : JobManager::tr("fetching %1, %2 of %3")
                          .arg(what, humanBytes(std::min(f.waveDone, f.waveTotal)), humanBytes(f.waveTotal));
    if (f.bytesPerSecond > 0)
        s += QStringLiteral(", ") + humanBytes(quint64(f.bytesPerSecond)) + QStringLiteral("/s");
    return s;
}

} // namespace

JobManager::Started JobManager::begin(const QString& channel, ProgressHandler onProgress,
                                      std::function<void()> takePartials)
{
    drop(channel); // the latest request wins
    Job job{
        ++m_next, std::make_shared<ops::CancelToken>(), std::move(onProgress), std::move(takePartials), {}};
    auto throttle = std::make_shared<Throttle>();
    const quint64 id = job.id;
    auto post = [this, channel, id](const JobProgress& r) {
        QMetaObject::invokeMethod(
            this, [this, channel, id, r] { deliver(channel, id, r); }, Qt::QueuedConnection);
    };
    ops::ProgressSink sink = [throttle, post](const ops::Progress& p) {
        const auto now = std::chrono::steady_clock::now();
        {
            const std::lock_guard<std::mutex> hold(throttle->lock);
            if (p.note.empty()) throttle->said = p;
            if (!throttle->pass(p, now)) return;
        }
        post(toReport(p, *throttle, now));
    };
    // A transfer's report: the job's own figures (the bar does not jump), the transfer's stage.
    io::FetchWatch::Listener fetched = [throttle, post](const io::FetchProgress& f) {
        const auto now = std::chrono::steady_clock::now();
        ops::Progress p;
        {
            const std::lock_guard<std::mutex> hold(throttle->lock);
            p = throttle->said;
            // A retry is said at once: the line would otherwise look frozen while it waits.
            if (f.retry.empty() && !throttle->pass(p, now)) return;
        }
        JobProgress r = toReport(p, *throttle, now);
        r.stage = fetchStage(f);
        post(r);
    };
    Started s{job.id, job.token, std::move(sink), std::move(fetched)};
    m_jobs.insert(channel, std::move(job));
    return s;
}

void JobManager::remember(const QString& channel, QFuture<void> future)
{
    std::erase_if(m_futures, [](const auto& f) { return f.second.isFinished(); });
    m_futures.emplace_back(channel, std::move(future));
}

bool JobManager::finish(const QString& channel, quint64 id)
{
    const auto it = m_jobs.constFind(channel);
    if (it == m_jobs.constEnd() || it->id != id) return false;
    m_jobs.erase(it);
    return true;
}

void JobManager::deliver(const QString& channel, quint64 id, const JobProgress& p)
{
    const auto it = m_jobs.constFind(channel);
    if (it == m_jobs.constEnd() || it->id != id) return; // superseded, dropped or done
    const ProgressHandler handler = it->onProgress;      // it may start or drop jobs
    if (handler) handler(p);
    emit progressed(channel, p);
}

void JobManager::askForPartials(const QString& channel, quint64 id)
{
    // On the worker: the rest happens on the GUI thread, where the job's state lives.
    QMetaObject::invokeMethod(
        this,
        [this, channel, id] {
            const auto it = m_jobs.constFind(channel);
            if (it == m_jobs.constEnd() || it->id != id) return; // superseded, dropped or done
            const auto since = std::chrono::steady_clock::now() - it->partialsAt;
            if (since >= kPartialInterval)
                deliverPartials(channel, id);
            else // a batch went out just now: this one waits its turn, gathering more
                QTimer::singleShot(std::chrono::ceil<std::chrono::milliseconds>(kPartialInterval - since),
                                   this, [this, channel, id] { deliverPartials(channel, id); });
        },
        Qt::QueuedConnection);
}

void JobManager::deliverPartials(const QString& channel, quint64 id)
{
    const auto it = m_jobs.find(channel);
    if (it == m_jobs.end() || it->id != id) return;
    it->partialsAt = std::chrono::steady_clock::now();
    const std::function<void()> take = it->takePartials; // onPartial may start or drop jobs
    take();
}

void JobManager::cancel(const QString& channel)
{
    const auto it = m_jobs.constFind(channel);
    if (it != m_jobs.constEnd()) it->token->cancel();
}

void JobManager::drop(const QString& channel)
{
    const auto it = m_jobs.constFind(channel);
    if (it == m_jobs.constEnd()) return;
    it->token->cancel();
    m_jobs.erase(it);
}

void JobManager::cancelAll()
{
    for (const Job& j : std::as_const(m_jobs))
        j.token->cancel();
    m_jobs.clear();
}

void JobManager::release(const QString& prefix)
{
    for (auto it = m_jobs.begin(); it != m_jobs.end();) {
        if (it.key().startsWith(prefix)) {
            it->token->cancel();
            it = m_jobs.erase(it);
        } else {
            ++it;
        }
    }
    for (auto& [channel, f] : m_futures)
        if (channel.startsWith(prefix)) f.waitForFinished();
    std::erase_if(m_futures, [](const auto& f) { return f.second.isFinished(); });
}

bool JobManager::idleUnder(const QString& prefix) const
{
    for (auto it = m_jobs.cbegin(); it != m_jobs.cend(); ++it)
        if (it.key().startsWith(prefix)) return false;
    return true;
}

JobLane::JobLane(JobManager* jobs) : m_jobs(jobs)
{
    static quint64 lanes = 0; // lanes are made on the GUI thread only
    m_prefix = QStringLiteral("lane%1/").arg(++lanes);
    if (!m_jobs) {
        m_own = std::make_unique<JobManager>();
        m_jobs = m_own.get();
    }
}

JobLane::~JobLane()
{
    if (m_jobs) m_jobs->release(m_prefix);
}

void JobLane::cancel(const QString& channel)
{
    if (m_jobs) m_jobs->cancel(name(channel));
}

void JobLane::drop(const QString& channel)
{
    if (m_jobs) m_jobs->drop(name(channel));
}

void JobLane::cancelAll()
{
    if (!m_jobs) return;
    for (const QString& c : m_jobs->channels())
        if (c.startsWith(m_prefix)) m_jobs->drop(c);
}

} // namespace ckpt::app
