// Fuzzes the reader of ~/.aws/credentials and ~/.aws/config, and the credential chain over what
// it read (the same bytes serve as both files); and the readers of what fetched credentials
// come as (credential_process's JSON, ECS's and IMDS's, their Expiration) and of a
// credential_process command line. Choosing a source runs and fetches nothing.
#include "io/error.h"
#include "io/remote/aws_config.h"
#include "io/remote/aws_credentials.h"

#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (auto parse :
         {ckpt::io::remote::parseProcessCredentials, ckpt::io::remote::parseMetadataCredentials}) {
        try {
            const auto c = parse(text, "fuzz");
            if (c.accessKey.empty() || c.secretKey.empty()) __builtin_trap();
        } catch (const ckpt::Error&) {
        }
    }
    (void)ckpt::io::remote::parseIso8601(text);
    try {
        ckpt::io::remote::splitCommandLine(text);
    } catch (const ckpt::Error&) {
    }
    const auto ini = ckpt::io::remote::parseIni(text);
    for (const auto& [section, keys] : ini)
        for (const auto& [k, v] : keys)
            if (k.find('=') != std::string::npos) __builtin_trap();

    // One file per process, rewritten each run (the chain reads real files), removed at exit.
    struct TempFile
    {
        std::string path = "/tmp/fuzz_aws_config." + std::to_string(::getpid());
        ~TempFile() { std::remove(path.c_str()); }
    };
    static const TempFile temp;
    const std::string& path = temp.path;
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    for (const char* profile : {"default", "p"}) {
        const ckpt::io::remote::EnvLookup env = [&](const char* name) -> std::optional<std::string> {
            const std::string n = name;
            if (n == "AWS_SHARED_CREDENTIALS_FILE" || n == "AWS_CONFIG_FILE") return path;
            if (n == "AWS_PROFILE") return std::string(profile);
            return std::nullopt;
        };
        try {
            ckpt::io::remote::resolveS3Settings(env);
        } catch (const ckpt::Error&) {
        }
    }
    return 0;
}
