#include "io/remote/aws_config.h"

#include "io/error.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace ckpt::io::remote {

namespace {

std::string trim(std::string_view s)
{
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string_view::npos) return {};
    const auto e = s.find_last_not_of(" \t\r");
    return std::string(s.substr(b, e - b + 1));
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

std::optional<std::string> processEnv(const char* name)
{
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
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
        credentialsFrom(confSection, "profile '" + s.profile + "' in " + confPath, s.credentials);
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
