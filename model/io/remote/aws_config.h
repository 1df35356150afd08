// Where an s3:// URL's credentials, endpoint and region come from, the way the AWS CLI and
// botocore look for them: environment variables first, then the profile in ~/.aws/credentials
// and ~/.aws/config. The files are untrusted text (fuzzed by fuzz_aws_config).
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

struct S3Settings
{
    AwsCredentials credentials;
    std::string region = "us-east-1";
    std::string endpoint; // "" means AWS itself (virtual-host addressing); else path-style
    std::string profile;  // the profile read, when one was
};

// Looks an environment variable up; tests pass their own.
using EnvLookup = std::function<std::optional<std::string>(const char*)>;
std::optional<std::string> processEnv(const char* name);

// Throws ckpt::Error when AWS_PROFILE names a profile no file has, or a file holds a key
// without its secret.
S3Settings resolveS3Settings(const EnvLookup& env = processEnv);

} // namespace ckpt::io::remote
