// Fuzzes what the Hugging Face Hub sends for a folder: a tree page (JSON, nlohmann underneath)
// and the Link header that names the next one, and parses the same bytes as an hf:// URL.
#include "io/error.h"
#include "io/remote/stores.h"
#include "io/remote/url.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto page = ckpt::io::remote::parseHubTree(text, "hf://fuzz/repo/");
        for (const auto& o : page.objects)
            if (o.key.empty() || o.key.front() == '/') __builtin_trap(); // refused, never listed
        for (const auto& p : page.prefixes)
            if (p.empty() || p.back() != '/') __builtin_trap();
    } catch (const ckpt::Error&) {
    }
    ckpt::io::remote::nextLink(text);
    try {
        const auto u = ckpt::io::remote::parseUrl("hf://" + text);
        if (u.authority.find('/') == std::string::npos) __builtin_trap(); // always ORG/REPO
    } catch (const ckpt::Error&) {
    }
    return 0;
}
