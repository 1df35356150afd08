// The window's background jobs: each runs on a worker on a named channel, where the latest request
// wins (a new job cancels the one before it, whose result is never delivered). A job gets an
// ops::CancelToken and an ops::ProgressSink, and may publish partial values as it goes (rows as
// they arrive); its throttled reports (bytes, permille, rate, ETA), its partial values in batches
// and its result arrive on the GUI thread as plain values. Destroying the manager cancels every
// job and waits for it, so no worker outlives the widget that asked for it.
#pragma once

#include "io/error.h"
#include "io/fetch_watch.h"
#include "ops/job.h"

#include <QFuture>
#include <QHash>
#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QtConcurrent>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace ckpt::app {

// One throttled progress report, on the GUI thread.
struct JobProgress
{
    int permille = 0;
    QString stage;
    quint64 doneBytes = 0, totalBytes = 0;
    double bytesPerSecond = 0; // since the job started; 0 until bytes flow
    double secondsLeft = -1;   // -1: unknown
    QString note;              // a one-off message (ops::Progress::note); the rest is then unchanged
};

// "stage: 1.2 GiB of 4.0 GiB, 1.50 GB/s, 3 s left", as the dialogs show a report.
QString progressText(const JobProgress& p);
// "Fetched 1.3 GiB from the network in 31 s (41 MiB/s)." for a job that read remote files;
// empty for one that fetched nothing.
QString fetchedText(quint64 bytes, double seconds);

// What a job's work returned, or why it returned nothing.
template <typename T> struct JobResult
{
    std::optional<T> value;
    bool cancelled = false;
    QString error;            // the exception's message
    QString errorFile;        // the file a ckpt::Error names, when it names one
    quint64 fetchedBytes = 0; // from the network, by the job's remote reads
    double fetchSeconds = 0;  // since its first request
    bool ok() const { return value.has_value(); }
};

// Hands a partial value from the worker to the GUI thread (a job's third argument).
template <typename P> using PartialSink = std::function<void(P)>;

namespace detail {
// What a job's worker has published and the GUI thread has not taken yet.
template <typename P> class Partials
{
public:
    // True when nothing was waiting: the GUI thread must then be asked to take it.
    bool put(P value)
    {
        const std::lock_guard<std::mutex> hold(m_lock);
        m_values.push_back(std::move(value));
        return std::exchange(m_asked, true) == false;
    }
    std::vector<P> take()
    {
        const std::lock_guard<std::mutex> hold(m_lock);
        m_asked = false;
        return std::exchange(m_values, {});
    }

private:
    std::mutex m_lock;
    std::vector<P> m_values;
    bool m_asked = false; // a delivery is on its way
};
} // namespace detail

class JobManager : public QObject
{
    Q_OBJECT
public:
    explicit JobManager(QObject* parent = nullptr);
    ~JobManager() override; // cancels every job and waits for its worker

    using ProgressHandler = std::function<void(const JobProgress&)>;
    // Partial values reach the GUI thread at most this often: each batch makes its receiver
    // redo what it shows from them (the comparison's heatmap and summary go over every row).
    static constexpr std::chrono::milliseconds kPartialInterval{100};

    // Runs work(progress, cancel) on a worker; it returns a plain value (or throws ckpt::Cancelled
    // or an exception, which the result reports). A job already on `channel` is cancelled first
    // and nothing of it is delivered any more. onResult and onProgress run on the GUI thread.
    template <typename Work, typename OnResult>
    void run(const QString& channel, Work work, OnResult onResult, ProgressHandler onProgress = {})
    {
        const Started s = begin(channel, std::move(onProgress), {});
        launch(
            channel, s,
            [work = std::move(work), sink = s.sink](const ops::CancelToken& cancel) mutable {
                return work(sink, cancel);
            },
            std::move(onResult));
    }

    // The same for work(progress, cancel, publish) that publishes values of type P before it
    // returns (a comparison's rows as they are computed). They reach onPartial(std::vector<P>)
    // on the GUI thread in batches, in the order published, at most one batch per
    // kPartialInterval; the last batch comes just before onResult, and none once the job is
    // superseded or dropped.
    template <typename P, typename Work, typename OnPartial, typename OnResult>
    void run(const QString& channel, Work work, OnPartial onPartial, OnResult onResult,
             ProgressHandler onProgress = {})
    {
        auto partials = std::make_shared<detail::Partials<P>>();
        // One onPartial, shared by the job's batches and the last one before the result.
        std::function<void()> takePartials = [partials,
                                              receiver = std::make_shared<OnPartial>(std::move(onPartial))] {
            std::vector<P> batch = partials->take();
            if (!batch.empty()) (*receiver)(std::move(batch));
        };
        const Started s = begin(channel, std::move(onProgress), takePartials);
        PartialSink<P> publish = [this, channel, id = s.id, partials](P value) {
            if (partials->put(std::move(value))) askForPartials(channel, id);
        };
        launch(
            channel, s,
            [work = std::move(work), sink = s.sink, publish](const ops::CancelToken& cancel) mutable {
                return work(sink, cancel, publish);
            },
            [takePartials, onResult = std::move(onResult)](auto result) {
                takePartials(); // what was published after the last batch, before the result
                onResult(std::move(result));
            });
    }

    // Stops the channel's job; its result (cancelled, unless it had already finished) is still
    // delivered, so that the one who asked can say so.
    void cancel(const QString& channel);
    // Stops the channel's job and drops it: nothing of it is delivered any more.
    void drop(const QString& channel);
    void cancelAll();
    // Drops every channel named under `prefix` and waits for their workers, superseded ones too:
    // what a view's or dialog's JobLane does when its owner goes.
    void release(const QString& prefix);
    bool running(const QString& channel) const { return m_jobs.contains(channel); }
    bool idle() const { return m_jobs.isEmpty(); }
    // No job runs on a channel named under `prefix`.
    bool idleUnder(const QString& prefix) const;
    QStringList channels() const { return m_jobs.keys(); } // those with a job running

signals:
    // Every delivered report and every delivered result, for whoever watches any channel.
    void progressed(const QString& channel, const ckpt::app::JobProgress& progress);
    void finished(const QString& channel);

private:
    struct Job
    {
        quint64 id = 0;
        std::shared_ptr<ops::CancelToken> token;
        ProgressHandler onProgress;
        std::function<void()> takePartials;                 // hands what was published to onPartial
        std::chrono::steady_clock::time_point partialsAt{}; // when a batch was last handed over
    };
    struct Started
    {
        quint64 id;
        std::shared_ptr<ops::CancelToken> token;
        ops::ProgressSink sink;
        io::FetchWatch::Listener fetched; // the job's remote transfers, as reports through `sink`'s throttle
    };
    Started begin(const QString& channel, ProgressHandler onProgress, std::function<void()> takePartials);
    // Runs work(cancel) on a worker and delivers its result to onResult, unless superseded.
    template <typename Work, typename OnResult>
    void launch(const QString& channel, const Started& s, Work work, OnResult onResult)
    {
        using T = std::invoke_result_t<Work&, const ops::CancelToken&>;
        // `this` outlives the worker: the destructor waits for it.
        remember(channel, QtConcurrent::run([this, id = s.id, channel, work = std::move(work),
                                             onResult = std::move(onResult), token = s.token,
                                             fetched = s.fetched]() mutable {
                     auto result = std::make_shared<JobResult<T>>();
                     // Remote transfers the work makes stop with the job and report through it.
                     const io::FetchWatch watch(token.get(), fetched);
                     const io::FetchWatch::Scope scope(&watch);
                     try {
                         result->value.emplace(work(*token));
                     } catch (const Cancelled&) {
                         result->cancelled = true;
                     } catch (const Error& e) {
                         fail(*result, *token, QString::fromUtf8(e.what()), QString::fromStdString(e.file()));
                     } catch (const std::exception& e) {
                         fail(*result, *token, QString::fromUtf8(e.what()), {});
                     }
                     result->fetchedBytes = watch.fetched();
                     result->fetchSeconds = watch.seconds();
                     // Queued to the manager, so dropped with it should it be destroyed first.
                     QMetaObject::invokeMethod(
                         this,
                         [this, id, channel, result, onResult] {
                             if (!finish(channel, id)) return; // superseded or dropped
                             QPointer<JobManager> alive(this);
                             onResult(std::move(*result));
                             if (alive) emit finished(channel);
                         },
                         Qt::QueuedConnection);
                 }));
    }
    // An error raised while a cancelled job unwinds (a fetch cut short, read as a short file) is
    // the cancellation, not a failure to show.
    template <typename T>
    static void fail(JobResult<T>& r, const ops::CancelToken& token, QString error, QString file)
    {
        r.cancelled = token.cancelled();
        if (r.cancelled) return;
        r.error = std::move(error);
        r.errorFile = std::move(file);
    }
    void remember(const QString& channel, QFuture<void> future);
    bool finish(const QString& channel, quint64 id); // true when `id` is still the channel's job
    void deliver(const QString& channel, quint64 id, const JobProgress& p);
    // From the worker: values were published; the GUI thread takes them within kPartialInterval.
    void askForPartials(const QString& channel, quint64 id);
    void deliverPartials(const QString& channel, quint64 id);

    QHash<QString, Job> m_jobs;
    // Every worker not yet known to be done, superseded ones too, with its channel.
    std::vector<std::pair<QString, QFuture<void>>> m_futures;
    quint64 m_next = 0;
};

// A view's or a dialog's channels on the window's one JobManager. They are named under a prefix
// of the lane's own, so two dialogs (or two views both saying "analysis") never replace each
// other's job, and the window sees every job in one place. Destroying the lane drops its
// channels and waits for their workers, which may use what its owner holds. A lane made without
// a manager has one of its own: a dialog or a view shown alone (a test, a screenshot).
class JobLane
{
public:
    explicit JobLane(JobManager* jobs);
    ~JobLane();
    JobLane(const JobLane&) = delete;
    JobLane& operator=(const JobLane&) = delete;

    template <typename Work, typename OnResult>
    void run(const QString& channel, Work work, OnResult onResult,
             JobManager::ProgressHandler onProgress = {})
    {
        if (m_jobs) m_jobs->run(name(channel), std::move(work), std::move(onResult), std::move(onProgress));
    }
    template <typename P, typename Work, typename OnPartial, typename OnResult>
    void run(const QString& channel, Work work, OnPartial onPartial, OnResult onResult,
             JobManager::ProgressHandler onProgress = {})
    {
        if (m_jobs)
            m_jobs->run<P>(name(channel), std::move(work), std::move(onPartial), std::move(onResult),
                           std::move(onProgress));
    }
    void cancel(const QString& channel);
    void drop(const QString& channel);
    void cancelAll(); // drops every channel of the lane
    bool running(const QString& channel) const { return m_jobs && m_jobs->running(name(channel)); }
    bool idle() const { return !m_jobs || m_jobs->idleUnder(m_prefix); }

private:
    QString name(const QString& channel) const { return m_prefix + channel; }
    std::unique_ptr<JobManager> m_own; // only when made without the window's manager
    QPointer<JobManager> m_jobs;       // null once the window's manager is gone (it waited for all)
    QString m_prefix;                  // "lane7/": unique to this lane
};

} // namespace ckpt::app
