// Test servers on 127.0.0.1 (tools/servers/): a free port, a server process that dies with the
// test, waiting until it listens, and stopping it. tst_remote and tst_gui_remote start theirs.
#pragma once

#include "io/remote/transport.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>
#include <QProcess>
#include <QStandardPaths>
#include <QTest>
#include <arpa/inet.h>
#include <csignal>
#include <memory>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

namespace testservers {

// A port nothing listens on right now (the kernel's pick); the server binds it a moment later.
inline int freePort()
{
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(s);
    return ntohs(a.sin_port);
}

inline bool listening(int port)
{
    const int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(s);
    return ok;
}

// A server process that dies with this test (PR_SET_PDEATHSIG), so a crashed run leaves none.
inline std::unique_ptr<QProcess>
startServer(const QString& program, const QStringList& args,
            const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment())
{
    auto p = std::make_unique<QProcess>();
    p->setProgram(program);
    p->setArguments(args);
    p->setProcessEnvironment(env);
    // Nothing reads a server's output while a test blocks on a client, so a pipe would fill and
    // stop the server mid-answer (moto logs a line per request: ~600 requests fill 64 KiB).
    p->setProcessChannelMode(QProcess::MergedChannels);
    p->setStandardOutputFile(QProcess::nullDevice());
    p->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGTERM); });
    p->start();
    return p;
}

inline bool waitForPort(int port, QProcess& p, int ms)
{
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < ms) {
        if (listening(port)) return true;
        if (p.state() == QProcess::NotRunning) return false;
        QTest::qWait(50);
    }
    return false;
}

inline void stop(std::unique_ptr<QProcess>& p)
{
    if (!p) return;
    p->terminate();
    if (!p->waitForFinished(5000)) p->kill();
    p->waitForFinished(2000);
    p.reset();
}

// nginx serving `root` on a free port, its files under `dir` (tools/servers/nginx.sh); null with
// `why` set when nginx is not installed.
inline std::unique_ptr<QProcess> startNginx(const QString& source, const QString& dir, const QString& root,
                                            int& port, QString& why)
{
    const QString nginx =
        QFile::exists("/usr/sbin/nginx") ? "/usr/sbin/nginx" : QStandardPaths::findExecutable("nginx");
    if (nginx.isEmpty()) {
        why = "nginx is not installed: run tools/install-deps.sh";
        return nullptr;
    }
    port = freePort();
    auto p = startServer("bash", {source + "/tools/servers/nginx.sh", dir, QString::number(port), root});
    if (!waitForPort(port, *p, 10000)) why = "nginx did not start: " + QString::fromUtf8(p->readAll());
    return p;
}

// The project's venv of S3 servers (tools/servers/venv.sh: moto, rclone, boto3), made when a
// developer runs a test before test.sh ever did; empty with `why` set when it cannot be made.
inline QString serversVenv(const QString& source, QString& why)
{
    QProcess venv;
    venv.start("bash", {source + "/tools/servers/venv.sh"});
    venv.waitForFinished(600000);
    const QString dir = QString::fromUtf8(venv.readAllStandardOutput()).trimmed();
    if (venv.exitCode() == 0 && QFile::exists(dir + "/bin/moto_server")) return dir;
    why = "moto could not be installed (tools/servers/venv.sh): " +
          QString::fromUtf8(venv.readAllStandardError());
    return {};
}

// moto on a free port, checking every SigV4 signature after tools/servers/moto_setup.py's three
// setup calls, with `files` (relative to `root`) uploaded into `bucket`; `keys` gets the access
// key and secret a client signs with. `env` adds moto's own settings. Null with `why` set when it
// did not start or the upload failed.
inline std::unique_ptr<QProcess> startMoto(const QString& source, const QString& venv, const QString& bucket,
                                           const QString& root, const QStringList& files,
                                           QProcessEnvironment env, int& port, QStringList& keys,
                                           QString& why)
{
    env.insert("INITIAL_NO_AUTH_ACTION_COUNT", "3");
    port = freePort();
    auto moto = startServer(venv + "/bin/moto_server", {"-H", "127.0.0.1", "-p", QString::number(port)}, env);
    if (!waitForPort(port, *moto, 30000)) {
        why = "moto did not start: " + QString::fromUtf8(moto->readAll());
        return nullptr;
    }
    QProcess setup;
    setup.start(venv + "/bin/python", QStringList{source + "/tools/servers/moto_setup.py",
                                                  QString("http://127.0.0.1:%1").arg(port), bucket, root} +
                                          files);
    setup.waitForFinished(120000);
    keys = QString::fromUtf8(setup.readAllStandardOutput()).trimmed().split(' ');
    if (setup.exitCode() != 0 || keys.size() != 2) {
        why = "moto_setup.py failed: " + QString::fromUtf8(setup.readAllStandardError());
        return nullptr;
    }
    return moto;
}

// tools/servers/fault_proxy.py in front of `upstream`, logging to `log`; null when it did not start.
inline std::unique_ptr<QProcess> startFaultProxy(const QString& source, const QString& upstream,
                                                 const QString& log, int& port)
{
    port = freePort();
    auto p = startServer("python3", {source + "/tools/servers/fault_proxy.py", "--port",
                                     QString::number(port), "--upstream", upstream, "--log", log});
    if (!waitForPort(port, *p, 10000)) return nullptr;
    return p;
}

// Sets the proxy's faults (fault_proxy.py's /__fault__ query): true when it took them.
inline bool setFaults(int proxyPort, const QString& query)
{
    std::vector<ckpt::io::remote::HttpRequest> q(1);
    q[0].url = QString("http://127.0.0.1:%1/__fault__?%2").arg(proxyPort).arg(query).toStdString();
    return ckpt::io::remote::Transport::shared().perform(q)[0].status == 200;
}

// What the proxy logged: one object per request it answered (or, "held", holds back).
inline QList<QJsonObject> proxyLog(const QString& path)
{
    QList<QJsonObject> out;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return out;
    for (const QByteArray& line : f.readAll().split('\n'))
        if (!line.isEmpty()) out.push_back(QJsonDocument::fromJson(line).object());
    return out;
}

} // namespace testservers
