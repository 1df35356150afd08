#include "io/remote/aws_config.h"

#include "io/error.h"
#include "io/text.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace ckpt::io::remote {

namespace {

std::string trim(std::string_view s)
{
    return std::string(trimBlanks(s));
}

std::string lower(std::string s)
{
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return s;
}

// A file that does not exist is an empty one (most users have only one of the two); one that
// exists but is too large to be a config file is refused rather than read whole.
IniFile readIni(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.size() > (4u << 20)) throw Error("AWS configuration file larger than 4 MiB", path);
    return parseIni(text);
}

std::string homeFile(const EnvLookup& env, const char* var, const char* rel)
{
    if (auto v = env(var); v && !v->empty()) return *v;
    const auto home = env("HOME");
    return (home ? *home : std::string()) + "/.aws/" + rel;
}

const std::map<std::string, std::string>* section(const IniFile& ini, const std::string& name)
{
    const auto it = ini.find(name);
    return it == ini.end() ? nullptr : &it->second;
}

std::string get(const std::map<std::string, std::string>* s, const char* key)
{
    if (!s) return {};
    const auto it = s->find(key);
    return it == s->end() ? std::string() : it->second;
}

// Keys from a profile section; a key without its secret is a broken file, said so.
bool credentialsFrom(const std::map<std::string, std::string>* s, const std::string& where,
                     AwsCredentials& out)
{
    const std::string key = get(s, "aws_access_key_id");
    if (key.empty()) return false;
    const std::string secret = get(s, "aws_secret_access_key");
    if (secret.empty()) throw Error("profile has aws_access_key_id but no aws_secret_access_key", where);
    out = {key, secret, get(s, "aws_session_token"), where};
    return true;
}

bool isTrue(const std::optional<std::string>& v)
{
    return v && lower(trim(*v)) == "true";
}

// botocore's rule for AWS_CONTAINER_CREDENTIALS_FULL_URI: https anywhere; plain http only to
// this machine or the container agent's link-local addresses, so a credential request (with its
// authorization token) cannot be sent in the clear across a network.
bool allowedContainerUrl(const std::string& url)
{
    if (url.rfind("https://", 0) == 0) return true;
    if (url.rfind("http://", 0) != 0) return false;
    std::string host = url.substr(7, url.find_first_of("/?#", 7) - 7);
    if (const auto at = host.rfind('@'); at != std::string::npos) host = host.substr(at + 1);
    if (host.starts_with("["))
        host = host.substr(1, host.find(']') - 1);
    else
        host = host.substr(0, host.find(':'));
    host = lower(host);
    // 127.x only as an address: "127.0.0.1.example.com" is a name anyone may point anywhere.
    const bool loopbackV4 =
        host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
    return host == "localhost" || loopbackV4 || host == "::1" || host == "169.254.170.2" ||
           host == "169.254.170.23" || host == "fd00:ec2::23";
}

std::optional<DynamicAwsSource> containerSource(const EnvLookup& env)
{
    DynamicAwsSource d;
    d.kind = DynamicAwsSource::Kind::Container;
    d.name = "ECS container credentials";
    if (const auto rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel && !rel->empty()) {
        d.url = "http://169.254.170.2" + *rel;
        d.where = "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI";
    } else if (const auto full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI"); full && !full->empty()) {
        if (!allowedContainerUrl(*full))
            throw Error("AWS_CONTAINER_CREDENTIALS_FULL_URI='" + *full +
                            "' is neither https nor plain http to this machine or the ECS agent",
                        "s3://");
        d.url = *full;
        d.where = "AWS_CONTAINER_CREDENTIALS_FULL_URI";
        d.authTokenFile = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or("");
        d.authToken = env("AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or("");
    } else {
        return std::nullopt;
    }
    return d;
}

std::optional<DynamicAwsSource> instanceMetadataSource(const EnvLookup& env)
{
    if (isTrue(env("AWS_EC2_METADATA_DISABLED"))) return std::nullopt;
    DynamicAwsSource d;
    d.kind = DynamicAwsSource::Kind::InstanceMetadata;
    d.name = "EC2 instance metadata";
    d.where = "AWS_EC2_METADATA_SERVICE_ENDPOINT";
    const auto mode = env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
    d.url = mode && lower(*mode) == "ipv6" ? "http://[fd00:ec2::254]" : "http://169.254.169.254";
    if (const auto e = env("AWS_EC2_METADATA_SERVICE_ENDPOINT"); e && !e->empty()) d.url = *e;
    while (!d.url.empty() && d.url.back() == '/')
        d.url.pop_back();
    d.v1Fallback = !isTrue(env("AWS_EC2_METADATA_V1_DISABLED"));
    return d;
}

// The profile's credential_process: the credentials file's wins, as botocore merges that file
// over the config file.
std::optional<DynamicAwsSource> processSource(const std::map<std::string, std::string>* credSection,
                                              const std::map<std::string, std::string>* confSection,
                                              const std::string& profile, const std::string& credPath,
                                              const std::string& confPath)
{
    DynamicAwsSource d;
    d.kind = DynamicAwsSource::Kind::Process;
    d.name = "credential_process of profile '" + profile + "'";
    d.command = get(credSection, "credential_process");
    d.where = credPath;
    if (d.command.empty()) {
        d.command = get(confSection, "credential_process");
        d.where = confPath;
    }
    if (d.command.empty()) return std::nullopt;
    return d;
}

} // namespace

IniFile parseIni(std::string_view text)
{
    IniFile ini;
    std::string current;
    bool inSection = false;
    while (!text.empty()) {
        const auto nl = text.find('\n');
        const std::string_view raw = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        const bool indented = !raw.empty() && (raw[0] == ' ' || raw[0] == '\t');
        const std::string line = trim(raw);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[' && line.back() == ']') {
            current = trim(std::string_view(line).substr(1, line.size() - 2));
            inSection = true;
            ini[current];
            continue;
        }
        // Indented lines belong to a nested block ("s3 =\n  endpoint_url = ..."), which this
        // reader does not model: skipping them keeps them from overriding the profile's own keys.
        const auto eq = line.find('=');
        if (!inSection || indented || eq == std::string::npos) continue;
        ini[current][lower(trim(std::string_view(line).substr(0, eq)))] =
            trim(std::string_view(line).substr(eq + 1));
    }
    return ini;
}

namespace {

std::mutex g_defaultsMutex;
std::map<std::string, std::string> g_defaults;

} // namespace

void setEnvDefaults(std::map<std::string, std::string> values)
{
    std::lock_guard lock(g_defaultsMutex);
    g_defaults = std::move(values);
}

std::optional<std::string> processEnv(const char* name)
{
    if (const char* v = std::getenv(name)) return std::string(v);
    std::lock_guard lock(g_defaultsMutex);
    const auto it = g_defaults.find(name);
    if (it == g_defaults.end() || it->second.empty()) return std::nullopt;
    return it->second;
}

S3Settings resolveS3Settings(const EnvLookup& env)
{
    S3Settings s;
    const auto named = env("AWS_PROFILE");
    s.profile = named && !named->empty() ? *named : "default";
    const std::string credPath = homeFile(env, "AWS_SHARED_CREDENTIALS_FILE", "credentials");
    const std::string confPath = homeFile(env, "AWS_CONFIG_FILE", "config");
    const IniFile creds = readIni(credPath);
    const IniFile conf = readIni(confPath);
    const auto* credSection = section(creds, s.profile);
    const auto* confSection = section(conf, s.profile == "default" ? "default" : "profile " + s.profile);
    if (named && !named->empty() && !credSection && !confSection)
        throw Error("AWS_PROFILE names profile '" + s.profile + "', which neither " + credPath + " nor " +
                        confPath + " has",
                    "s3://");

    const auto key = env("AWS_ACCESS_KEY_ID");
    const auto secret = env("AWS_SECRET_ACCESS_KEY");
    if (key && !key->empty()) {
        if (!secret || secret->empty())
            throw Error("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not", "s3://");
        s.credentials = {*key, *secret, env("AWS_SESSION_TOKEN").value_or(""),
                         "environment (AWS_ACCESS_KEY_ID)"};
    } else if (!credentialsFrom(credSection, "profile '" + s.profile + "' in " + credPath, s.credentials)) {
        s.dynamic = processSource(credSection, confSection, s.profile, credPath, confPath);
        if (!s.dynamic &&
            !credentialsFrom(confSection, "profile '" + s.profile + "' in " + confPath, s.credentials)) {
            s.dynamic = containerSource(env);
            if (!s.dynamic) s.dynamic = instanceMetadataSource(env);
        }
        if (s.dynamic) s.credentials.source = s.dynamic->name;
    }

    for (const char* var : {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"})
        if (auto v = env(var); v && !v->empty() && s.endpoint.empty()) s.endpoint = *v;
    if (s.endpoint.empty()) s.endpoint = get(confSection, "endpoint_url");
    while (!s.endpoint.empty() && s.endpoint.back() == '/')
        s.endpoint.pop_back();

    std::string region;
    for (const char* var : {"AWS_REGION", "AWS_DEFAULT_REGION"})
        if (auto v = env(var); v && !v->empty() && region.empty()) region = *v;
    if (region.empty()) region = get(confSection, "region");
    if (!region.empty()) s.region = region;
    return s;
}

} // namespace ckpt::io::remote
