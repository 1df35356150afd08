#include "io/remote/aws_credentials.h"

#include "io/error.h"
#include "io/remote/transport.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace ckpt::io::remote {

namespace {

constexpr size_t kMaxProcessOutput = 1u << 20;
constexpr std::chrono::seconds kProcessTimeout{60};
// A metadata service that did not answer is asked again after this long, not on every object.
constexpr std::time_t kRetryUnavailable = 300;

using Json = nlohmann::json;

std::string firstLine(std::string s)
{
    s = s.substr(0, s.find('\n'));
    while (!s.empty() && (s.back() == '\r' || s.back() == ' '))
        s.pop_back();
    return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

std::string stringField(const Json& doc, const char* key, const std::string& name, bool required)
{
    const auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        if (required) throw Error(name + " gave credentials without " + key);
        return {};
    }
    if (!it->is_string()) throw Error(name + " gave credentials whose " + key + " is not a string");
    std::string v = it->get<std::string>();
    // Each becomes a header value or part of a signature: no line breaks may hide in one.
    if (v.find_first_of("\r\n") != std::string::npos || (required && v.empty()))
        throw Error(name + " gave credentials with an unusable " + key);
    return v;
}

Json parseObject(std::string_view json, const std::string& name)
{
    Json doc = Json::parse(json, nullptr, false);
    if (!doc.is_object())
        throw Error(name + " did not answer a JSON object (it gave '" +
                    firstLine(std::string(json.substr(0, 300))) + "')");
    return doc;
}

// Expiration is optional; one that is there but unreadable would make the cache keep stale keys
// forever, so it is refused.
void readExpiration(const Json& doc, const std::string& name, AwsCredentials& c)
{
    const std::string text = stringField(doc, "Expiration", name, false);
    if (text.empty()) return;
    const auto t = parseIso8601(text);
    if (!t) throw Error(name + " gave an Expiration '" + text + "' that is not an ISO 8601 time");
    c.expiration = *t;
}

int digits(std::string_view s, size_t at, size_t n)
{
    if (at + n > s.size()) return -1;
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

// ---- the sources ----

AwsCredentials fromProcess(const DynamicAwsSource& s)
{
    const std::string who = s.name + " (" + s.where + ")";
    const CommandResult r = runCommand(splitCommandLine(s.command), kMaxProcessOutput, kProcessTimeout);
    std::string why;
    if (!r.spawnError.empty())
        why = "could not be started: " + r.spawnError;
    else if (r.timedOut)
        why = "did not finish within " + std::to_string(kProcessTimeout.count()) + " s";
    else if (r.outputTooLarge)
        why = "wrote more than 1 MiB";
    else if (r.exitStatus != 0)
        why = "exited with status " + std::to_string(r.exitStatus) +
              (r.err.empty() ? std::string() : ": " + firstLine(r.err));
    if (!why.empty()) throw Error(who + ": '" + s.command + "' " + why, s.where);
    try {
        return parseProcessCredentials(r.out, who);
    } catch (const Error& e) {
        throw Error(e.message(), s.where);
    }
}

std::string readSmallFile(const std::string& path, const std::string& what)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(what + " cannot be read", path);
    std::string text(64u << 10, '\0');
    f.read(text.data(), std::streamsize(text.size()));
    text.resize(size_t(f.gcount()));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    return text;
}

HttpResponse exchange(HttpRequest q, bool instanceMetadata)
{
    std::vector<HttpRequest> qs{std::move(q)};
    return credentialTransport(instanceMetadata).perform(qs).front();
}

std::string answerOf(const HttpResponse& r)
{
    if (!r.failure.empty()) return "no answer (" + r.failure + ")";
    return "HTTP " + std::to_string(r.status) + (r.body.empty() ? "" : " '" + firstLine(r.body) + "'");
}

AwsCredentials fromContainer(const DynamicAwsSource& s)
{
    HttpRequest q;
    q.url = s.url;
    q.maxBody = 64u << 10;
    std::string token = s.authToken;
    if (!s.authTokenFile.empty())
        token = readSmallFile(s.authTokenFile, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    if (token.find_first_of("\r\n") != std::string::npos)
        throw Error("the ECS authorization token holds a line break", s.where);
    if (!token.empty()) q.headers.emplace_back("Authorization", token);
    const HttpResponse r = exchange(std::move(q), false);
    const std::string who = s.name + " at " + s.url;
    if (!r.failure.empty() || r.status != 200 || r.overflow)
        throw Error(who + " answered " + answerOf(r), s.where);
    AwsCredentials c = parseMetadataCredentials(r.body, who);
    c.source = s.name + " (" + s.where + ")";
    return c;
}

// Anonymous credentials saying why: off EC2, metadata is simply absent, and a public bucket must
// still open (botocore would end the chain with no credentials the same way).
AwsCredentials noInstanceMetadata(const DynamicAwsSource& s, const std::string& why)
{
    AwsCredentials c;
    c.source = "none (anonymous requests: no AWS credentials were found; EC2 instance metadata at " + s.url +
               " " + why + ")";
    c.expiration = std::time(nullptr) + kRetryUnavailable;
    return c;
}

bool validRoleName(const std::string& role)
{
    return !role.empty() && role.size() <= 128 && std::all_of(role.begin(), role.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) || std::strchr("+=,.@_-", ch);
    });
}

// IMDSv2: a session token from PUT, then the role's name and its credentials with it. Without a
// token (the PUT refused with 403, 404 or 405, as botocore allows) the same GETs go as IMDSv1.
AwsCredentials fromInstanceMetadata(const DynamicAwsSource& s)
{
    HttpRequest put;
    put.method = "PUT";
    put.url = s.url + "/latest/api/token";
    put.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
    const HttpResponse t = exchange(std::move(put), true);
    if (!t.failure.empty()) return noInstanceMetadata(s, "did not answer (" + t.failure + ")");
    const bool refused = t.status == 403 || t.status == 404 || t.status == 405;
    if (refused && !s.v1Fallback)
        throw Error(s.name + " at " + s.url + " refused a session token (HTTP " + std::to_string(t.status) +
                        ") and AWS_EC2_METADATA_V1_DISABLED forbids IMDSv1",
                    "s3://");
    if (t.status != 200 && !refused)
        return noInstanceMetadata(s, "answered the token request with " + answerOf(t));
    const std::string token = t.status == 200 ? firstLine(t.body) : std::string();
    const std::string version = token.empty() ? "IMDSv1" : "IMDSv2";
    auto get = [&](const std::string& path) {
        HttpRequest q;
        q.url = s.url + path;
        q.maxBody = 64u << 10;
        if (!token.empty()) q.headers.emplace_back("X-aws-ec2-metadata-token", token);
        return exchange(std::move(q), true);
    };
    const HttpResponse roles = get("/latest/meta-data/iam/security-credentials/");
    if (!roles.failure.empty() || roles.status != 200)
        return noInstanceMetadata(s, "gave no IAM role (" + answerOf(roles) + ")");
    const std::string role = firstLine(roles.body);
    const std::string who = s.name + " (" + version + ") at " + s.url;
    if (!validRoleName(role)) throw Error(who + " named a role '" + role + "' IAM cannot have", "s3://");
    const HttpResponse r = get("/latest/meta-data/iam/security-credentials/" + role);
    if (!r.failure.empty() || r.status != 200 || r.overflow)
        throw Error(who + " answered " + answerOf(r) + " for role '" + role + "'", "s3://");
    AwsCredentials c = parseMetadataCredentials(r.body, who);
    c.source = s.name + " (" + version + ") role '" + role + "' at " + s.url;
    return c;
}

AwsCredentials fetch(const DynamicAwsSource& s)
{
    switch (s.kind) {
    case DynamicAwsSource::Kind::Process:
        return fromProcess(s);
    case DynamicAwsSource::Kind::Container:
        return fromContainer(s);
    case DynamicAwsSource::Kind::InstanceMetadata:
        return fromInstanceMetadata(s);
    }
    throw Error("unknown credential source");
}

// ---- the cache ----

struct Cached
{
    AwsCredentials credentials;
    std::time_t refreshAt = 0; // 0: never (no Expiration)
};

std::mutex g_cacheMutex;
std::map<std::string, Cached> g_cache;

// botocore refreshes 10 minutes before expiry; credentials that live less than 20 minutes are
// refreshed at half their life instead, so short-lived ones are not fetched for every request.
std::time_t refreshTime(const AwsCredentials& c, std::time_t now)
{
    if (c.expiration == 0) return 0;
    const std::time_t life = std::max<std::time_t>(0, c.expiration - now);
    return c.expiration - std::min<std::time_t>(600, life / 2);
}

} // namespace

AwsCredentials currentAwsCredentials(const DynamicAwsSource& source)
{
    const std::string key = std::to_string(int(source.kind)) + '\n' + source.where + '\n' + source.name +
                            '\n' + source.command + '\n' + source.url + '\n' + source.authTokenFile + '\n' +
                            source.authToken;
    // One fetch at a time: threads opening objects together wait for the first one's answer
    // instead of each running the command.
    std::lock_guard lock(g_cacheMutex);
    const std::time_t now = std::time(nullptr);
    if (const auto it = g_cache.find(key);
        it != g_cache.end() && (it->second.refreshAt == 0 || now < it->second.refreshAt))
        return it->second.credentials;
    AwsCredentials c = fetch(source);
    if (c.source.empty() || c.source == AwsCredentials{}.source) c.source = source.name;
    g_cache[key] = {c, refreshTime(c, now)};
    return c;
}

void clearAwsCredentialCache()
{
    std::lock_guard lock(g_cacheMutex);
    g_cache.clear();
}

std::optional<std::time_t> parseIso8601(std::string_view s)
{
    // YYYY-MM-DDTHH:MM:SS[.fff](Z|+hh:mm|-hh:mm)
    std::tm tm{};
    tm.tm_year = digits(s, 0, 4) - 1900;
    tm.tm_mon = digits(s, 5, 2) - 1;
    tm.tm_mday = digits(s, 8, 2);
    tm.tm_hour = digits(s, 11, 2);
    tm.tm_min = digits(s, 14, 2);
    tm.tm_sec = digits(s, 17, 2);
    if (s.size() < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        s[13] != ':' || s[16] != ':' || tm.tm_year < 0 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
        tm.tm_mday > 31 || tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 ||
        tm.tm_sec < 0 || tm.tm_sec > 60)
        return std::nullopt;
    size_t at = 19;
    if (s[at] == '.') {
        ++at;
        const size_t start = at;
        while (at < s.size() && s[at] >= '0' && s[at] <= '9')
            ++at;
        if (at == start) return std::nullopt;
    }
    long offset = 0;
    const std::string_view zone = s.substr(std::min(at, s.size()));
    if (zone == "Z" || zone == "z") {
    } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
        const int h = digits(zone, 1, 2), m = digits(zone, 4, 2);
        if (h < 0 || h > 23 || m < 0 || m > 59) return std::nullopt;
        offset = (zone[0] == '+' ? 1 : -1) * (h * 3600L + m * 60L);
    } else {
        return std::nullopt;
    }
    return timegm(&tm) - offset;
}

namespace {

// The keys both answers carry; the session token's key differs (SessionToken, Token).
AwsCredentials credentialsIn(const Json& doc, const char* tokenKey, const std::string& name)
{
    AwsCredentials c;
    c.accessKey = stringField(doc, "AccessKeyId", name, true);
    c.secretKey = stringField(doc, "SecretAccessKey", name, true);
    c.sessionToken = stringField(doc, tokenKey, name, false);
    readExpiration(doc, name, c);
    c.source = name;
    return c;
}

} // namespace

AwsCredentials parseProcessCredentials(std::string_view json, const std::string& name)
{
    const Json doc = parseObject(json, name);
    const auto version = doc.find("Version");
    if (version == doc.end() || !version->is_number_integer() || version->get<int64_t>() != 1)
        throw Error(name + " gave credentials without \"Version\": 1 (the only version the AWS CLI knows)");
    return credentialsIn(doc, "SessionToken", name);
}

AwsCredentials parseMetadataCredentials(std::string_view json, const std::string& name)
{
    return credentialsIn(parseObject(json, name), "Token", name);
}

std::vector<std::string> splitCommandLine(std::string_view line)
{
    std::vector<std::string> words;
    std::string word;
    bool inWord = false;
    for (size_t i = 0; i < line.size(); ++i) {
        const char ch = line[i];
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            if (inWord) words.push_back(std::move(word));
            word.clear();
            inWord = false;
        } else if (ch == '\'') {
            const size_t close = line.find('\'', i + 1);
            if (close == std::string_view::npos) throw Error("credential_process has no closing quotation");
            word.append(line.substr(i + 1, close - i - 1));
            i = close;
            inWord = true;
        } else if (ch == '"') {
            size_t j = i + 1;
            for (; j < line.size() && line[j] != '"'; ++j) {
                if (line[j] == '\\' && j + 1 < line.size() && (line[j + 1] == '"' || line[j + 1] == '\\'))
                    ++j;
                word += line[j];
            }
            if (j >= line.size()) throw Error("credential_process has no closing quotation");
            i = j;
            inWord = true;
        } else if (ch == '\\') {
            if (i + 1 >= line.size()) throw Error("credential_process ends with a lone backslash");
            word += line[++i];
            inWord = true;
        } else {
            word += ch;
            inWord = true;
        }
    }
    if (inWord) words.push_back(std::move(word));
    return words;
}

namespace {

// Reads what is ready on the child's pipes; false once both are closed.
bool drain(pollfd (&fds)[2], CommandResult& r, size_t maxOut)
{
    char buf[8192];
    for (int k = 0; k < 2; ++k) {
        if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            ::close(fds[k].fd);
            fds[k].fd = -1;
            continue;
        }
        std::string& to = k == 0 ? r.out : r.err;
        if (k == 0 && to.size() + size_t(n) > maxOut) r.outputTooLarge = true;
        const size_t cap = k == 0 ? maxOut : 4096;
        to.append(buf, std::min(size_t(n), cap - std::min(cap, to.size())));
    }
    return fds[0].fd >= 0 || fds[1].fd >= 0;
}

} // namespace

CommandResult runCommand(const std::vector<std::string>& argv, size_t maxOut,
                         std::chrono::milliseconds timeout)
{
    CommandResult r;
    if (argv.empty()) {
        r.spawnError = "the command is empty";
        return r;
    }
    // Close-on-exec pipes: another thread's child never inherits them, and only the dup2'd ends
    // reach this one.
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
        r.spawnError = std::strerror(errno);
        return r;
    }
    if (::pipe2(err, O_CLOEXEC) != 0) {
        r.spawnError = std::strerror(errno);
        ::close(out[0]);
        ::close(out[1]);
        return r;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    std::vector<char*> args;
    for (const std::string& a : argv)
        args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_t pid = -1;
    const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(err[1]);
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    if (rc != 0) {
        r.spawnError = std::strerror(rc);
        ::close(out[0]);
        ::close(err[0]);
        return r;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto left = [&] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                     std::chrono::steady_clock::now())
            .count();
    };
    bool open = true;
    while (open && !r.outputTooLarge && left() > 0) {
        if (::poll(fds, 2, int(std::min<long long>(left(), 100))) < 0 && errno != EINTR) break;
        open = drain(fds, r, maxOut);
    }
    for (const pollfd& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    // It may have closed its pipes and still run: wait for it to the deadline, then kill it.
    int status = 0;
    pid_t done = 0;
    while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && !r.outputTooLarge && left() > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (done == 0) {
        r.timedOut = !r.outputTooLarge;
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        return r;
    }
    if (done > 0 && WIFEXITED(status)) r.exitStatus = WEXITSTATUS(status);
    return r;
}

} // namespace ckpt::io::remote
