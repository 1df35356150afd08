// Fuzzes the reader of ~/.aws/credentials and ~/.aws/config, and the credential chain over what
// it read (the same bytes serve as both files).
#include "io/error.h"
#include "io/remote/aws_config.h"

#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
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
