// Where an s3:// URL's credentials, endpoint and region come from, the way the AWS CLI and
// botocore look for them: environment variables first, then the profile in ~/.aws/credentials
// and ~/.aws/config (keys, or its credential_process), then ECS container credentials, then EC2
// instance metadata. The files are untrusted text (fuzzed by fuzz_aws_config). Choosing a source
// runs and fetches nothing: that happens on the first request (aws_credentials.h).
#pragma once

#include "io/remote/sigv4.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt::io::remote {

// section -> key -> value, keys lower-cased; later duplicates win, as in botocore.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
IniFile parseIni(std::string_view text);

// A source whose credentials are fetched when first needed and expire.
struct DynamicAwsSource
{
    enum class Kind { Process, Container, InstanceMetadata };
    Kind kind = Kind::InstanceMetadata;
    std::string name;                     // for messages: "credential_process of profile 'x'"
    std::string where;                    // the file or variable that configured it
    std::string command;                  // Process: the command line as written in the profile
    std::string url;                      // Container: the full URL; InstanceMetadata: the endpoint
    std::string authToken, authTokenFile; // Container: the Authorization header's value, or its file
    bool v1Fallback = true;               // InstanceMetadata: IMDSv1 when the token PUT is refused
};

struct S3Settings
{
    AwsCredentials credentials; // with `dynamic`, only its source (the name) is set
    std::optional<DynamicAwsSource> dynamic;
    std::string region = "us-east-1";
    std::string endpoint; // "" means AWS itself (virtual-host addressing); else path-style
    std::string profile;  // the profile read, when one was
};

// Looks an environment variable up; tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
// The process environment, then the defaults set below for names it does not set.
std::optional<std::string> processEnv(const char* name);
// Values for variables the process environment does not set (a desktop-launched window has no
// shell environment: its Preferences give the S3 endpoint, profile, ...). The environment wins
// where set; the stores read them afresh, so a change applies to the URLs opened after it.
void setEnvDefaults(std::map<std::string, std::string> values);

// The chain, in botocore's order: environment keys; the profile's keys in the credentials file;
// its credential_process; its keys in the config file; ECS container credentials
// (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI); EC2 instance metadata unless
// AWS_EC2_METADATA_DISABLED=true. Throws ckpt::Error when AWS_PROFILE names a profile no file
// has, a file holds a key without its secret, or a container URL names a host botocore refuses.
S3Settings resolveS3Settings(const EnvLookup& env = processEnv);

} // namespace ckpt::io::remote
