// Fetching the AWS credentials that expire (aws_config.h chose the source): a profile's
// credential_process, ECS container credentials, EC2 instance metadata (IMDSv2). Each is fetched
// once per process and reused until shortly before its Expiration, so opening many objects runs
// the command or asks the metadata service once. The parsers read untrusted text (fuzzed by
// fuzz_aws_config).
#pragma once

#include "io/remote/aws_config.h"

#include <chrono>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::io::remote {

// The credentials to sign with now: cached, or fetched afresh. Throws ckpt::Error naming the
// source and what went wrong (a command that failed, an answer that is not credentials). EC2
// instance metadata that does not answer (not on EC2) gives anonymous credentials saying so.
AwsCredentials currentAwsCredentials(const DynamicAwsSource& source);
// Forgets every cached credential (tests, and a user who changed their setup).
void clearAwsCredentialCache();

// credential_process's output: {"Version": 1, "AccessKeyId", "SecretAccessKey", "SessionToken"?,
// "Expiration"?}. `name` says whose output it is in the Error.
AwsCredentials parseProcessCredentials(std::string_view json, const std::string& name);
// ECS's and IMDS's answer: {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}.
AwsCredentials parseMetadataCredentials(std::string_view json, const std::string& name);
// "2024-05-01T12:00:00Z" (also with fractional seconds or a +hh:mm offset), as seconds since the
// epoch; nullopt for anything else.
std::optional<std::time_t> parseIso8601(std::string_view text);

// A command line split as Python's shlex.split does it (botocore's way): whitespace separates,
// single quotes are literal, double quotes allow \" and \\, a backslash outside quotes escapes
// any character. Throws Error for an unclosed quote or a trailing backslash.
std::vector<std::string> splitCommandLine(std::string_view line);

struct CommandResult
{
    int exitStatus = -1; // the exit code; -1 when it did not exit by itself
    std::string out, err;
    bool timedOut = false, outputTooLarge = false;
    std::string spawnError; // exec failed (no such program)
};
// Runs argv (PATH searched, no shell) with stdout and stderr captured: stdout up to maxOut
// bytes, stderr's first 4 KiB; killed when it runs past `timeout` or writes more.
CommandResult runCommand(const std::vector<std::string>& argv, size_t maxOut,
                         std::chrono::milliseconds timeout);

} // namespace ckpt::io::remote
