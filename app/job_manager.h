// The window's background jobs: each runs on a worker on a named channel, where the latest request
// wins (a new job cancels the one before it, whose result is never delivered). A job gets an
// ops::CancelToken and an ops::ProgressSink; its throttled reports (bytes, permille, rate, ETA)
// and its result arrive on the GUI thread as plain values. Destroying the manager cancels every
// job and waits for it, so no worker outlives the widget that asked for it.
#pragma once

#include "io/error.h"
#include "ops/job.h"

#include <QFuture>
#include <QHash>
#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QtConcurrent>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
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

// What a job's work returned, or why it returned nothing.
// "stage: 1.2 GiB of 4.0 GiB, 1.50 GB/s, 3 s left", as the dialogs show a report.
QString progressText(const JobProgress& p);

template <typename T> struct JobResult
{
    std::optional<T> value;
    bool cancelled = false;
    QString error;     // the exception's message
    QString errorFile; // the file a ckpt::Error names, when it names one
    bool ok() const { return value.has_value(); }
};

class JobManager : public QObject
{
    Q_OBJECT
public:
    explicit JobManager(QObject* parent = nullptr);
    ~JobManager() override; // cancels every job and waits for its worker

    using ProgressHandler = std::function<void(const JobProgress&)>;

    // Runs work(progress, cancel) on a worker; it returns a plain value (or throws ckpt::Cancelled
    // or an exception, which the result reports). A job already on `channel` is cancelled first
    // and nothing of it is delivered any more. onResult and onProgress run on the GUI thread.
    template <typename Work, typename OnResult>
    void run(const QString& channel, Work work, OnResult onResult, ProgressHandler onProgress = {})
    {
        using T = std::invoke_result_t<Work&, const ops::ProgressSink&, const ops::CancelToken&>;
        const Started s = begin(channel, std::move(onProgress));
        // `this` outlives the worker: the destructor waits for it.
        remember(
            QtConcurrent::run([this, id = s.id, channel, work = std::move(work),
                               onResult = std::move(onResult), sink = s.sink, token = s.token]() mutable {
                auto result = std::make_shared<JobResult<T>>();
                try {
                    result->value.emplace(work(sink, *token));
                } catch (const Cancelled&) {
                    result->cancelled = true;
                } catch (const Error& e) {
                    result->error = QString::fromUtf8(e.what());
                    result->errorFile = QString::fromStdString(e.file());
                } catch (const std::exception& e) {
                    result->error = QString::fromUtf8(e.what());
                }
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

    // Stops the channel's job; its result (cancelled, unless it had already finished) is still
    // delivered, so that the one who asked can say so.
    void cancel(const QString& channel);
    // Stops the channel's job and drops it: nothing of it is delivered any more.
    void drop(const QString& channel);
    void cancelAll();
    bool running(const QString& channel) const { return m_jobs.contains(channel); }
    bool idle() const { return m_jobs.isEmpty(); }

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
    };
    struct Started
    {
        quint64 id;
        std::shared_ptr<ops::CancelToken> token;
        ops::ProgressSink sink;
    };
    Started begin(const QString& channel, ProgressHandler onProgress);
    void remember(QFuture<void> future);
    bool finish(const QString& channel, quint64 id); // true when `id` is still the channel's job
    void deliver(const QString& channel, quint64 id, const JobProgress& p);

    QHash<QString, Job> m_jobs;
    std::vector<QFuture<void>> m_futures; // every worker not yet known to be done, superseded ones too
    quint64 m_next = 0;
};

} // namespace ckpt::app
