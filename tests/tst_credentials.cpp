// Credential sources that are fetched (issue 26): the AWS chain's credential_process, ECS
// container credentials and EC2 instance metadata (IMDSv2, against tools/servers/fake_credentials.py
// and against moto's own metadata service), and Google credentials files (a service account's
// RS256 JWT, an authorized user's refresh token) exchanged at a token endpoint that checks them.
#include "io/error.h"
#include "io/mapped_file.h"
#include "io/remote/aws_config.h"
#include "io/remote/aws_credentials.h"
#include "io/remote/google_auth.h"
#include "io/remote/remote_object.h"
#include "io/remote/stores.h"
#include "io/remote/url.h"
#include "test_servers.h"
#include "testutil.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <cerrno>
#include <map>
#include <nlohmann/json.hpp>

using namespace ckpt;
using namespace ckpt::io::remote;
using namespace testservers;

namespace {

const QString kSource = QStringLiteral(CKPT_SOURCE_DIR);
const QString kEmail = QStringLiteral("ckpt-test@example.iam.gserviceaccount.com");

void writeAll(const QString& path, const QByteArray& bytes)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile f(path);
    if (f.open(QIODevice::WriteOnly)) f.write(bytes);
}

using testutil::errorOf;

using Vars = std::map<std::string, std::string>;
EnvLookup envOf(const Vars& vars)
{
    return [vars](const char* name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
}

bool run(const QString& program, const QStringList& args)
{
    QProcess p;
    p.start(program, args);
    return p.waitForFinished(60000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

QString authorization(const HttpRequest& q)
{
    for (const auto& [k, v] : q.headers)
        if (k == "Authorization") return QString::fromStdString(v);
    return {};
}

} // namespace

class TestCredentials : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase();
    void init();
    void cleanupTestCase();

    // No server
    void processCredentialsJson();
    void iso8601AndCommandLines();
    void chainOrder();
    void containerUrlsBotocoreRefuses();
    void googleCredentialsFiles();
    // Commands and servers
    void credentialProcess();
    void credentialProcessFailures();
    void runCommandBounds();
    void containerCredentials();
    void instanceMetadataV2();
    void instanceMetadataV1Fallback();
    void instanceMetadataAbsent();
    void instanceMetadataFromMotoSignsS3();
    void gcsServiceAccount();
    void gcsAuthorizedUserAndAdc();
    void gcsCredentialErrors();

private:
    QString path(const QString& rel) const { return m_tmp.filePath(rel); }
    std::string base() const { return QString("http://127.0.0.1:%1").arg(m_port).toStdString(); }
    QList<QJsonObject> log() const { return proxyLog(path("creds.log")); }
    // A service-account file for the test key, its token_uri the fake server's.
    QString serviceAccountFile(const QString& name, const QString& key);

    QTemporaryDir m_tmp;
    std::unique_ptr<QProcess> m_server;
    int m_port = 0;
    QString m_keyPem;
};

void TestCredentials::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    qputenv("NO_PROXY", "127.0.0.1,localhost");
    qputenv("no_proxy", "127.0.0.1,localhost");
    // A test RSA key made now: no private key is committed.
    m_keyPem = path("sa-key.pem");
    QVERIFY(run("openssl",
                {"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", m_keyPem}));
    QVERIFY(run("openssl", {"pkey", "-in", m_keyPem, "-pubout", "-out", path("sa-pub.pem")}));
    m_port = freePort();
    m_server = startServer("python3",
                           {kSource + "/tools/servers/fake_credentials.py", QString::number(m_port),
                            path("creds.log"), "--public-key", path("sa-pub.pem"), "--client-email", kEmail});
    QVERIFY2(waitForPort(m_port, *m_server, 10000), m_server->readAll().constData());
}

void TestCredentials::init()
{
    clearAwsCredentialCache();
    clearGoogleTokenCache();
    QFile::remove(path("creds.log"));
}

void TestCredentials::cleanupTestCase()
{
    stop(m_server);
}

QString TestCredentials::serviceAccountFile(const QString& name, const QString& key)
{
    QFile k(key);
    if (!k.open(QIODevice::ReadOnly)) return {};
    nlohmann::json doc = {{"type", "service_account"},
                          {"project_id", "p"},
                          {"private_key_id", "kid1"},
                          {"private_key", k.readAll().toStdString()},
                          {"client_email", kEmail.toStdString()},
                          {"token_uri", base() + "/token"}};
    writeAll(path(name), QByteArray::fromStdString(doc.dump()));
    return path(name);
}

void TestCredentials::processCredentialsJson()
{
    const AwsCredentials c = parseProcessCredentials(
        R"({"Version": 1, "AccessKeyId": "AKP", "SecretAccessKey": "sk", "SessionToken": "st",
            "Expiration": "2030-01-02T03:04:05Z"})",
        "p");
    QCOMPARE(c.accessKey, std::string("AKP"));
    QCOMPARE(c.secretKey, std::string("sk"));
    QCOMPARE(c.sessionToken, std::string("st"));
    QCOMPARE(c.expiration, std::time_t(1893553445));
    // Optional fields may be absent: long-term keys never expire.
    QCOMPARE(
        parseProcessCredentials(R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"s"})", "p").expiration,
        std::time_t(0));
    const std::pair<const char*, const char*> bad[] = {
        {"not json", "JSON object"},
        {"[1]", "JSON object"},
        {R"({"AccessKeyId":"A","SecretAccessKey":"s"})", "Version"},
        {R"({"Version":2,"AccessKeyId":"A","SecretAccessKey":"s"})", "Version"},
        {R"({"Version":1,"SecretAccessKey":"s"})", "AccessKeyId"},
        {R"({"Version":1,"AccessKeyId":"A"})", "SecretAccessKey"},
        {R"({"Version":1,"AccessKeyId":7,"SecretAccessKey":"s"})", "AccessKeyId"},
        {R"({"Version":1,"AccessKeyId":"A\r\nX: y","SecretAccessKey":"s"})", "AccessKeyId"},
        {R"({"Version":1,"AccessKeyId":"A","SecretAccessKey":"s","Expiration":"tomorrow"})", "Expiration"},
    };
    for (const auto& [json, what] : bad) {
        const char* const text = json; // clang 14 (the asan tree) captures no structured binding
        const QString e =
            errorOf([&] { parseProcessCredentials(text, "credential_process of profile 'x'"); });
        QVERIFY2(e.contains("credential_process of profile 'x'") && e.contains(what), qPrintable(e));
    }
    const AwsCredentials m = parseMetadataCredentials(
        R"({"Code":"Success","AccessKeyId":"ASIA","SecretAccessKey":"s","Token":"t","Expiration":"2030-01-02T03:04:05.123+01:00"})",
        "imds");
    QCOMPARE(m.sessionToken, std::string("t"));
    QCOMPARE(m.expiration, std::time_t(1893553445 - 3600));
}

void TestCredentials::iso8601AndCommandLines()
{
    QCOMPARE(parseIso8601("1970-01-01T00:00:00Z").value_or(-1), std::time_t(0));
    QCOMPARE(parseIso8601("2000-02-29T12:00:00-02:30").value_or(-1), std::time_t(951825600 + 9000));
    for (const char* bad : {"", "2030-01-02", "2030-13-02T00:00:00Z", "2030-01-02T00:00:00",
                            "2030-01-02T00:00:00.Z", "2030-01-02T00:00:00+1", "x030-01-02T00:00:00Z"})
        QVERIFY2(!parseIso8601(bad), bad);

    using W = std::vector<std::string>;
    QCOMPARE(splitCommandLine("  /bin/tool --profile x  "), (W{"/bin/tool", "--profile", "x"}));
    QCOMPARE(splitCommandLine("a 'b c' \"d \\\"e\\\" \\\\ \\n\" f\\ g 'h'\"i\""),
             (W{"a", "b c", "d \"e\" \\ \\n", "f g", "hi"}));
    QCOMPARE(splitCommandLine(R"(x '' "")"), (W{"x", "", ""})); // empty quoted words stay, as in shlex
    QCOMPARE(splitCommandLine("echo $HOME;rm -rf ~"), (W{"echo", "$HOME;rm", "-rf", "~"})); // no shell
    for (const char* bad : {"a 'b", "a \"b", "a \\"})
        QVERIFY2(!errorOf([&] { splitCommandLine(bad); }).isEmpty(), bad);
}

// botocore's order: environment, credentials-file keys, credential_process, config-file keys,
// ECS, IMDS; choosing runs nothing.
void TestCredentials::chainOrder()
{
    const QString creds = path("chain/credentials"), conf = path("chain/config");
    writeAll(creds, "[filekeys]\naws_access_key_id = FILE\naws_secret_access_key = s\n"
                    "credential_process = /never/run\n"
                    "[procincreds]\ncredential_process = /from/credentials --x\n");
    writeAll(conf, "[profile filekeys]\nregion = eu-west-1\n"
                   "[profile procincreds]\ncredential_process = /from/config\n"
                   "[profile proc]\ncredential_process = /bin/proc 'a b'\naws_access_key_id = CFG\n"
                   "aws_secret_access_key = s\n"
                   "[profile cfgkeys]\naws_access_key_id = CFG\naws_secret_access_key = s\n"
                   "[profile empty]\nregion = us-west-2\n");
    Vars v{{"AWS_SHARED_CREDENTIALS_FILE", creds.toStdString()}, {"AWS_CONFIG_FILE", conf.toStdString()}};
    auto with = [&](Vars extra) {
        for (auto& [k, x] : v)
            extra.emplace(k, x);
        return resolveS3Settings(envOf(extra));
    };
    QCOMPARE(with({{"AWS_PROFILE", "filekeys"}}).credentials.accessKey, std::string("FILE"));
    QVERIFY(!with({{"AWS_PROFILE", "filekeys"}}).dynamic);
    S3Settings s = with({{"AWS_PROFILE", "procincreds"}});
    QVERIFY(s.dynamic && s.dynamic->kind == DynamicAwsSource::Kind::Process);
    QCOMPARE(s.dynamic->command, std::string("/from/credentials --x")); // the credentials file wins
    QCOMPARE(s.dynamic->where, creds.toStdString());
    QCOMPARE(s.credentials.source, std::string("credential_process of profile 'procincreds'"));
    s = with({{"AWS_PROFILE", "proc"}});
    QVERIFY(s.dynamic && s.dynamic->kind == DynamicAwsSource::Kind::Process); // before config keys
    QCOMPARE(s.dynamic->where, conf.toStdString());
    QCOMPARE(with({{"AWS_PROFILE", "cfgkeys"}}).credentials.accessKey, std::string("CFG"));
    // The environment beats the profile's process.
    s = with({{"AWS_PROFILE", "proc"}, {"AWS_ACCESS_KEY_ID", "ENV"}, {"AWS_SECRET_ACCESS_KEY", "s"}});
    QVERIFY(!s.dynamic);
    QCOMPARE(s.credentials.accessKey, std::string("ENV"));

    // No keys in the profile: the container's, then instance metadata, then none.
    const Vars ecs{{"AWS_PROFILE", "empty"},
                   {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc"},
                   {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/full"}};
    s = with(ecs);
    QVERIFY(s.dynamic && s.dynamic->kind == DynamicAwsSource::Kind::Container);
    QCOMPARE(s.dynamic->url, std::string("http://169.254.170.2/v2/credentials/abc")); // relative first
    QCOMPARE(s.credentials.source, std::string("ECS container credentials"));
    s = with({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:9/full"},
              {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "tok"}});
    QCOMPARE(s.dynamic->url, std::string("http://127.0.0.1:9/full"));
    QCOMPARE(s.dynamic->authToken, std::string("tok"));
    QVERIFY(with({{"AWS_PROFILE", "proc"}, {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/x"}}).dynamic->kind ==
            DynamicAwsSource::Kind::Process);
    s = with({});
    QVERIFY(s.dynamic && s.dynamic->kind == DynamicAwsSource::Kind::InstanceMetadata);
    QCOMPARE(s.dynamic->url, std::string("http://169.254.169.254"));
    QCOMPARE(s.credentials.source, std::string("EC2 instance metadata"));
    QVERIFY(s.dynamic->v1Fallback);
    s = with({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:7/"},
              {"AWS_EC2_METADATA_V1_DISABLED", "true"}});
    QCOMPARE(s.dynamic->url, std::string("http://127.0.0.1:7"));
    QVERIFY(!s.dynamic->v1Fallback);
    QCOMPARE(with({{"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv6"}}).dynamic->url,
             std::string("http://[fd00:ec2::254]"));
    s = with({{"AWS_EC2_METADATA_DISABLED", "True"}});
    QVERIFY(!s.dynamic);
    QVERIFY(s.credentials.anonymous());
}

void TestCredentials::containerUrlsBotocoreRefuses()
{
    for (const char* ok : {"http://127.0.0.1:51679/creds", "http://localhost/x", "http://169.254.170.23/v1",
                           "https://creds.example.com/x", "http://[::1]:80/x", "http://[fd00:ec2::23]/x"})
        QVERIFY2(errorOf([&] {
                     resolveS3Settings(envOf({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", ok},
                                              {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                              {"AWS_CONFIG_FILE", "/nonexistent"}}));
                 }).isEmpty(),
                 ok);
    for (const char* bad : {"http://10.0.0.1/creds", "http://evil.example.com/x", "file:///etc/passwd",
                            "http://127.0.0.1.evil.com/x"}) {
        const QString e = errorOf([&] {
            resolveS3Settings(envOf({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", bad},
                                     {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                     {"AWS_CONFIG_FILE", "/nonexistent"}}));
        });
        QVERIFY2(e.contains("AWS_CONTAINER_CREDENTIALS_FULL_URI"), qPrintable(bad + (": " + e)));
    }
}

void TestCredentials::googleCredentialsFiles()
{
    const GoogleCredentials sa = parseGoogleCredentials(
        R"({"type":"service_account","client_email":"a@b","private_key":"PEM","private_key_id":"k1",
            "token_uri":"https://t/token"})",
        "/f.json");
    QCOMPARE(sa.clientEmail, std::string("a@b"));
    QCOMPARE(sa.tokenUri, std::string("https://t/token"));
    const GoogleCredentials user = parseGoogleCredentials(
        R"({"type":"authorized_user","client_id":"c","client_secret":"s","refresh_token":"r"})", "/u.json",
        "http://127.0.0.1:1/token");
    QCOMPARE(user.tokenUri, std::string("http://127.0.0.1:1/token"));
    QCOMPARE(QString::fromStdString(tokenRequestBody(user, 0, kGcsReadScope)),
             QString("grant_type=refresh_token&client_id=c&client_secret=s&refresh_token=r"));
    const std::pair<const char*, const char*> bad[] = {
        {"nope", "not a JSON object"},
        {R"({"client_email":"a"})", "no type"},
        {R"({"type":"external_account"})", "external_account"},
        {R"({"type":"service_account","private_key":"P"})", "client_email"},
        {R"({"type":"service_account","client_email":"a"})", "private_key"},
        {R"({"type":"service_account","client_email":"a","private_key":"P","token_uri":"file:///x"})",
         "token_uri"},
        {R"({"type":"authorized_user","client_id":"c","client_secret":"s"})", "refresh_token"},
        {R"({"type":"authorized_user","client_id":1,"client_secret":"s","refresh_token":"r"})", "client_id"},
    };
    for (const auto& [json, what] : bad) {
        const char* const text = json; // clang 14 (the asan tree) captures no structured binding
        const QString e = errorOf([&] { parseGoogleCredentials(text, "/creds/x.json"); });
        QVERIFY2(e.startsWith("/creds/x.json: ") && e.contains(what), qPrintable(e));
    }
    QCOMPARE(base64Url(std::string("\xfb\xff\xfe", 3)), std::string("-__-"));
    QCOMPARE(base64Url("ab"), std::string("YWI"));
    QCOMPARE(parseTokenAnswer(R"({"access_token":"ya29.x","expires_in":100})", "/f", 1000).expires,
             std::time_t(1100));
    QVERIFY(errorOf([] { parseTokenAnswer(R"({"token":"x"})", "/f", 0); }).contains("access_token"));
    QVERIFY(errorOf([] { parseTokenAnswer(R"({"access_token":"a\nb"})", "/f", 0); }).contains("unusable"));
}

void TestCredentials::credentialProcess()
{
    // The script counts its runs: a second request within the credentials' life runs nothing.
    const QString script = path("proc/helper.sh"), count = path("proc/runs");
    writeAll(
        script,
        "#!/bin/sh\necho run >> '" + count.toUtf8() + "'\n" +
            "printf '{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC%s\", \"SecretAccessKey\": "
            "\"secret\", \"SessionToken\": \"tok\", \"Expiration\": \"2099-01-01T00:00:00Z\"}' \"$1\"\n");
    QFile::setPermissions(script, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    writeAll(path("proc/config"), "[profile p]\ncredential_process = '" + script.toUtf8() + "' \"-arg 1\"\n");
    const EnvLookup env = envOf({{"AWS_PROFILE", "p"},
                                 {"AWS_CONFIG_FILE", path("proc/config").toStdString()},
                                 {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                 {"AWS_ENDPOINT_URL", "http://127.0.0.1:9"}});
    const S3Settings s = resolveS3Settings(env);
    QVERIFY(!QFile::exists(count)); // resolving runs nothing
    const AwsCredentials c = currentAwsCredentials(*s.dynamic);
    QCOMPARE(c.accessKey, std::string("AKIDPROC-arg 1")); // one argument, quotes removed
    QCOMPARE(c.sessionToken, std::string("tok"));
    QVERIFY(c.source.find("credential_process of profile 'p'") != std::string::npos);
    // The store signs with them and names them.
    const auto store = makeS3Store(s);
    const HttpRequest q = store->request(parseUrl("s3://b/k"));
    const HeaderList signedHeaders = q.sign();
    bool signedWithIt = false;
    for (const auto& [k, v] : signedHeaders)
        signedWithIt |= k == "Authorization" && v.find("Credential=AKIDPROC-arg 1/") != std::string::npos;
    QVERIFY(signedWithIt);
    const std::string note = store->credentialNote();
    QVERIFY2(note.find("credential_process of profile 'p'") != std::string::npos &&
                 note.find("key AKIDPROC-arg 1") != std::string::npos,
             note.c_str());
    currentAwsCredentials(*s.dynamic);
    QFile f(count);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll().count('\n'), qsizetype(1));
}

void TestCredentials::credentialProcessFailures()
{
    auto errorFor = [&](const QByteArray& body) {
        const QString script = path("fail/helper.sh");
        writeAll(script, "#!/bin/sh\n" + body);
        QFile::setPermissions(script, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        writeAll(path("fail/credentials"), "[broken]\ncredential_process = " + script.toUtf8() + "\n");
        clearAwsCredentialCache();
        const S3Settings s =
            resolveS3Settings(envOf({{"AWS_PROFILE", "broken"},
                                     {"AWS_SHARED_CREDENTIALS_FILE", path("fail/credentials").toStdString()},
                                     {"AWS_CONFIG_FILE", "/nonexistent"}}));
        return errorOf([&] { currentAwsCredentials(*s.dynamic); });
    };
    QString e = errorFor("echo 'token expired, run aws sso login' >&2\nexit 3\n");
    QVERIFY2(e.contains("credential_process of profile 'broken'") && e.contains("exited with status 3") &&
                 e.contains("run aws sso login") && e.contains(path("fail/credentials")),
             qPrintable(e));
    e = errorFor("echo '{\"Version\": 1, \"AccessKeyId\": \"A\"}'\n");
    QVERIFY2(e.contains("credential_process of profile 'broken'") && e.contains("SecretAccessKey"),
             qPrintable(e));
    e = errorFor("echo not json\n");
    QVERIFY2(e.contains("not json") && e.contains("JSON object"), qPrintable(e));
    // A command that is not there: the store's request is the one that fails, with the same words.
    writeAll(path("fail/credentials"), "[gone]\ncredential_process = /no/such/helper --flag\n");
    const S3Settings s =
        resolveS3Settings(envOf({{"AWS_PROFILE", "gone"},
                                 {"AWS_SHARED_CREDENTIALS_FILE", path("fail/credentials").toStdString()},
                                 {"AWS_CONFIG_FILE", "/nonexistent"}}));
    e = errorOf([&] { makeS3Store(s)->request(parseUrl("s3://b/k")); });
    QVERIFY2(e.contains("credential_process of profile 'gone'") && e.contains("could not be started") &&
                 e.contains("/no/such/helper"),
             qPrintable(e));
}

void TestCredentials::runCommandBounds()
{
    // Commands that never end on their own: runCommand returns only because the timeout fired
    // (were it not enforced, the test would hang to ctest's TIMEOUT and fail there), and kills them.
    CommandResult r = runCommand({"sleep", "infinity"}, 1024, std::chrono::milliseconds(300));
    QVERIFY(r.timedOut);
    QVERIFY(!r.outputTooLarge);
    r = runCommand({"sh", "-c", "yes"}, 4096, std::chrono::seconds(600));
    QVERIFY(r.outputTooLarge);
    QVERIFY(!r.timedOut);
    QVERIFY(r.out.size() <= 4096);
    // A child that closes stdout and lingers is still bounded by the timeout.
    r = runCommand({"sh", "-c", "exec >&- 2>&-; exec sleep infinity"}, 1024, std::chrono::milliseconds(300));
    QVERIFY(r.timedOut);
    r = runCommand({"sh", "-c", "printf out; printf err >&2; exit 4"}, 1024, std::chrono::seconds(10));
    QCOMPARE(r.exitStatus, 4);
    QCOMPARE(r.out, std::string("out"));
    QCOMPARE(r.err, std::string("err"));
    QVERIFY(!runCommand({"/no/such/program"}, 1024, std::chrono::seconds(1)).spawnError.empty());
}

void TestCredentials::containerCredentials()
{
    writeAll(path("ecs/token"), "ecs-secret-token\n");
    DynamicAwsSource d =
        *resolveS3Settings(envOf({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", base() + "/ecs/credentials"},
                                  {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "ignored-when-file"},
                                  {"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", path("ecs/token").toStdString()},
                                  {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                  {"AWS_CONFIG_FILE", "/nonexistent"}}))
             .dynamic;
    const AwsCredentials c = currentAwsCredentials(d);
    QCOMPARE(c.accessKey, std::string("ASIAECS"));
    QCOMPARE(c.sessionToken, std::string("ASIAECS-session"));
    QVERIFY(c.expiration > std::time(nullptr) + 3600);
    QVERIFY(c.source.find("ECS container credentials") != std::string::npos);
    d.authTokenFile.clear();
    d.authToken = "wrong";
    const QString e = errorOf([&] { currentAwsCredentials(d); });
    QVERIFY2(e.contains("ECS container credentials") && e.contains("401") &&
                 e.contains("bad authorization token"),
             qPrintable(e));
}

void TestCredentials::instanceMetadataV2()
{
    QVERIFY(run("curl", {"-sf", QString("http://127.0.0.1:%1/__set__?imds=v2").arg(m_port)}));
    DynamicAwsSource d = *resolveS3Settings(envOf({{"AWS_EC2_METADATA_SERVICE_ENDPOINT", base()},
                                                   {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                                   {"AWS_CONFIG_FILE", "/nonexistent"}}))
                              .dynamic;
    const AwsCredentials c = currentAwsCredentials(d);
    QCOMPARE(c.accessKey, std::string("ASIAIMDSV2"));
    QVERIFY2(c.source.find("EC2 instance metadata (IMDSv2) role 'ckpt-test-role'") != std::string::npos,
             c.source.c_str());
    currentAwsCredentials(d); // cached: no second round
    QStringList seen;
    for (const QJsonObject& o : log()) {
        if (o["path"].toString().startsWith("/__set__")) continue;
        const QJsonObject h = o["headers"].toObject();
        seen << o["method"].toString() + " " + o["path"].toString() + " " +
                    (o["method"] == "PUT" ? h["x-aws-ec2-metadata-token-ttl-seconds"].toString()
                                          : h["x-aws-ec2-metadata-token"].toString());
    }
    QCOMPARE(seen, (QStringList{
                       "PUT /latest/api/token 21600",
                       "GET /latest/meta-data/iam/security-credentials/ imds-session-token",
                       "GET /latest/meta-data/iam/security-credentials/ckpt-test-role imds-session-token"}));
}

void TestCredentials::instanceMetadataV1Fallback()
{
    QVERIFY(run("curl", {"-sf", QString("http://127.0.0.1:%1/__set__?imds=v1only").arg(m_port)}));
    DynamicAwsSource d;
    d.name = "EC2 instance metadata";
    d.url = base();
    const AwsCredentials c = currentAwsCredentials(d);
    QCOMPARE(c.accessKey, std::string("ASIAIMDSV1ONLY"));
    QVERIFY(c.source.find("(IMDSv1)") != std::string::npos);
    clearAwsCredentialCache();
    d.v1Fallback = false;
    const QString e = errorOf([&] { currentAwsCredentials(d); });
    QVERIFY2(e.contains("AWS_EC2_METADATA_V1_DISABLED") && e.contains("403"), qPrintable(e));
    QVERIFY(run("curl", {"-sf", QString("http://127.0.0.1:%1/__set__?imds=v2").arg(m_port)}));
}

// Off EC2: nothing listens, the chain ends in anonymous requests that say why, and the absence
// is remembered rather than asked again per object: once the first answer is in, something
// listens on that port, and the second call must not have connected to it.
void TestCredentials::instanceMetadataAbsent()
{
    DynamicAwsSource d;
    d.name = "EC2 instance metadata";
    const int port = freePort();
    d.url = "http://127.0.0.1:" + std::to_string(port);
    AwsCredentials c = currentAwsCredentials(d);
    QVERIFY(c.anonymous());
    QVERIFY2(c.source.find("did not answer") != std::string::npos &&
                 c.source.find(d.url) != std::string::npos,
             c.source.c_str());
    // A listener that never answers: the kernel completes a connection to it without accept(),
    // so a non-blocking accept() afterwards says whether anyone came.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    QVERIFY(fd >= 0);
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    QVERIFY(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    QVERIFY(::listen(fd, 16) == 0);
    const AwsCredentials again = currentAwsCredentials(d);
    const int came = ::accept(fd, nullptr, nullptr);
    const int why = errno;
    if (came >= 0) ::close(came);
    ::close(fd);
    QVERIFY2(came < 0 && (why == EAGAIN || why == EWOULDBLOCK), "the absent service was asked again");
    QVERIFY(again.anonymous());
    QCOMPARE(again.source, c.source);
}

// moto serves IMDS on its own port (a role "default-role", key "test-key"). A moto that checks
// no signatures reads the object; its 404 for a missing key names the source and the key id.
void TestCredentials::instanceMetadataFromMotoSignsS3()
{
    QString why;
    const QString dir = serversVenv(kSource, why);
    if (dir.isEmpty()) {
        if (qEnvironmentVariable("CI") == "true") QFAIL(qPrintable(why));
        QSKIP(qPrintable(why));
    }
    const int port = freePort();
    auto moto = startServer(dir + "/bin/moto_server", {"-H", "127.0.0.1", "-p", QString::number(port)});
    QVERIFY2(waitForPort(port, *moto, 30000), moto->readAll().constData());
    const QString endpoint = QString("http://127.0.0.1:%1").arg(port);
    writeAll(path("moto/small.bin"), "twelve bytes");
    QProcess setup;
    setup.start(dir + "/bin/python", {kSource + "/tools/servers/moto_setup.py", endpoint, "imds-bucket",
                                      path("moto"), "small.bin"});
    QVERIFY(setup.waitForFinished(120000));
    QVERIFY2(setup.exitCode() == 0, setup.readAllStandardError().constData());

    for (const char* v : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                          "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                          "AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL_S3"})
        qunsetenv(v);
    qputenv("AWS_SHARED_CREDENTIALS_FILE", path("none").toUtf8());
    qputenv("AWS_CONFIG_FILE", path("none").toUtf8());
    qputenv("AWS_REGION", "us-east-1");
    qputenv("AWS_ENDPOINT_URL", endpoint.toUtf8());
    qputenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint.toUtf8());
    QString e = errorOf([&] { io::MappedFile::open("s3://imds-bucket/small.bin")->ensure(0, 12); });
    QVERIFY2(e.isEmpty(), qPrintable(e));
    e = errorOf([&] { io::MappedFile::open("s3://imds-bucket/missing.bin"); });
    QVERIFY2(e.contains("404") && e.contains("EC2 instance metadata (IMDSv2) role 'default-role'") &&
                 e.contains("key test-key"),
             qPrintable(e));
    qunsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
    qunsetenv("AWS_ENDPOINT_URL");
    stop(moto);
}

void TestCredentials::gcsServiceAccount()
{
    const QString file = serviceAccountFile("sa.json", m_keyPem);
    QVERIFY(!file.isEmpty());
    const auto store = gcsStore(envOf({{"GOOGLE_APPLICATION_CREDENTIALS", file.toStdString()}}));
    QVERIFY(log().isEmpty()); // the token is fetched on first use
    QCOMPARE(authorization(store->request(parseUrl("gs://bkt/a.pt"))),
             QString("Bearer ya29.service-account"));
    QCOMPARE(authorization(store->request(parseUrl("gs://bkt/b.pt"))),
             QString("Bearer ya29.service-account"));
    QCOMPARE(log().size(), qsizetype(1)); // one exchange, then the cached token
    QCOMPARE(log()[0]["path"].toString(), QString("/token"));
    QVERIFY(QString::fromStdString(store->credentialNote()).contains("service account " + kEmail));
    // HMAC keys and a given token come first.
    QCOMPARE(authorization(gcsStore(envOf({{"GOOGLE_APPLICATION_CREDENTIALS", file.toStdString()},
                                           {"GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.given"}}))
                               ->request(parseUrl("gs://bkt/a"))),
             QString("Bearer ya29.given"));
    const auto hmac = gcsStore(envOf({{"GOOGLE_APPLICATION_CREDENTIALS", file.toStdString()},
                                      {"GS_ACCESS_KEY_ID", "GOOG1"},
                                      {"GS_SECRET_ACCESS_KEY", "s"}}));
    QVERIFY(QString::fromStdString(hmac->credentialNote()).contains("GS_ACCESS_KEY_ID"));
}

void TestCredentials::gcsAuthorizedUserAndAdc()
{
    // gcloud's file names no token endpoint: CKPT_GOOGLE_TOKEN_URI points it at the fake one.
    const QString gcloud = path("gcloud");
    writeAll(gcloud + "/application_default_credentials.json",
             R"({"type":"authorized_user","client_id":"ckpt-client","client_secret":"ckpt-client-secret",
                 "refresh_token":"ckpt-refresh-token"})");
    const auto store = gcsStore(envOf({{"CLOUDSDK_CONFIG", gcloud.toStdString()},
                                       {"HOME", path("nohome").toStdString()},
                                       {"CKPT_GOOGLE_TOKEN_URI", base() + "/token"}}));
    QCOMPARE(authorization(store->request(parseUrl("gs://bkt/a.pt"))),
             QString("Bearer ya29.authorized-user"));
    QVERIFY(QString::fromStdString(store->credentialNote()).contains("application default credentials"));
    // ~/.config/gcloud without CLOUDSDK_CONFIG.
    writeAll(path("home/.config/gcloud/application_default_credentials.json"),
             R"({"type":"authorized_user","client_id":"ckpt-client","client_secret":"wrong",
                 "refresh_token":"ckpt-refresh-token"})");
    const auto wrong =
        gcsStore(envOf({{"HOME", path("home").toStdString()}, {"CKPT_GOOGLE_TOKEN_URI", base() + "/token"}}));
    const QString e = errorOf([&] { wrong->request(parseUrl("gs://bkt/a.pt")); });
    QVERIFY2(e.contains(path("home/.config/gcloud/application_default_credentials.json")) &&
                 e.contains("400") && e.contains("invalid_grant") && e.contains("Bad client credentials"),
             qPrintable(e));
    // Nothing at all: anonymous, saying what would serve.
    const auto anon = gcsStore(envOf({{"HOME", path("nohome").toStdString()}}));
    QVERIFY(authorization(anon->request(parseUrl("gs://bkt/a"))).isEmpty());
    QVERIFY(QString::fromStdString(anon->credentialNote()).contains("GOOGLE_APPLICATION_CREDENTIALS"));
}

void TestCredentials::gcsCredentialErrors()
{
    auto requestWith = [&](const QString& file) {
        return errorOf([&] {
            gcsStore(envOf({{"GOOGLE_APPLICATION_CREDENTIALS", file.toStdString()}}))
                ->request(parseUrl("gs://b/k"));
        });
    };
    // An EC key cannot sign RS256; a PEM that is not a key is said so; both name the file.
    QVERIFY(run("openssl", {"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                            path("ec.pem")}));
    QString e = requestWith(serviceAccountFile("ec.json", path("ec.pem")));
    QVERIFY2(e.contains(path("ec.json")) && e.contains("not an RSA key"), qPrintable(e));
    writeAll(path("junk.pem"), "-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n");
    e = requestWith(serviceAccountFile("junk.json", path("junk.pem")));
    QVERIFY2(e.contains(path("junk.json")) && e.contains("not a PEM private key"), qPrintable(e));
    // A key the token endpoint does not know: its answer is in the message.
    QVERIFY(run("openssl", {"genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out",
                            path("other.pem")}));
    e = requestWith(serviceAccountFile("other.json", path("other.pem")));
    QVERIFY2(e.contains(path("other.json")) && e.contains("400") && e.contains("signature does not verify"),
             qPrintable(e));
    e = requestWith(path("no-such.json"));
    QVERIFY2(e.contains(path("no-such.json")) && e.contains("GOOGLE_APPLICATION_CREDENTIALS"), qPrintable(e));
    writeAll(path("partial.json"), R"({"type":"service_account","client_email":"x@y"})");
    e = requestWith(path("partial.json"));
    QVERIFY2(e.contains(path("partial.json")) && e.contains("private_key"), qPrintable(e));
    // A token endpoint that does not answer.
    nlohmann::json doc = {{"type", "authorized_user"},
                          {"client_id", "c"},
                          {"client_secret", "s"},
                          {"refresh_token", "r"},
                          {"token_uri", "http://127.0.0.1:" + std::to_string(freePort()) + "/token"}};
    writeAll(path("dead.json"), QByteArray::fromStdString(doc.dump()));
    e = requestWith(path("dead.json"));
    QVERIFY2(e.contains(path("dead.json")) && e.contains("no answer"), qPrintable(e));
}

QTEST_GUILESS_MAIN(TestCredentials)
#include "tst_credentials.moc"
