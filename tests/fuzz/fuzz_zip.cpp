// Fuzzes the zip directory parser and entry reads (stored and deflated).
#include "io/zip_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        ckpt::io::ZipReader zip(ckpt::io::MappedFile::fromBuffer({data, data + size}, "fuzz.zip"));
        for (const auto& e : zip.entries())
            zip.read(e);
    } catch (const ckpt::Error&) {
    }
    return 0;
}
