// Fuzzes the reader of Google credentials files (GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// application default credentials) and of a token endpoint's answer: both untrusted JSON.
#include "io/error.h"
#include "io/remote/google_auth.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const auto c = ckpt::io::remote::parseGoogleCredentials(text, "fuzz.json");
        if (c.type != "service_account" && c.type != "authorized_user") __builtin_trap();
        // The refresh grant is built from the file's strings alone (no key, no network).
        if (c.type == "authorized_user") ckpt::io::remote::tokenRequestBody(c, 0, "scope");
    } catch (const ckpt::Error&) {
    }
    try {
        const auto t = ckpt::io::remote::parseTokenAnswer(text, "fuzz.json", 0);
        if (t.accessToken.empty() || t.accessToken.find('\n') != std::string::npos) __builtin_trap();
    } catch (const ckpt::Error&) {
    }
    return 0;
}
