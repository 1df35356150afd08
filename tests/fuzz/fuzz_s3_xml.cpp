// Fuzzes the S3 ListObjectsV2 page and <Error> body parsers (expat underneath).
#include "io/error.h"
#include "io/remote/s3_xml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view xml(reinterpret_cast<const char*>(data), size);
    try {
        const auto page = ckpt::io::remote::parseListPage(xml, "s3://fuzz/");
        if (page.truncated && page.continuationToken.empty()) __builtin_trap();
    } catch (const ckpt::Error&) {
    }
    ckpt::io::remote::parseErrorBody(xml);
    return 0;
}
