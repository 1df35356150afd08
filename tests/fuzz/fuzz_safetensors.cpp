// Fuzzes the safetensors header parser and its validation.
#include "safetensors/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    try {
        auto f = ckpt::safetensors::SafetensorsFile::open(
            ckpt::io::MappedFile::fromBuffer({data, data + size}, "fuzz.safetensors"));
        uint64_t sum = 0;
        for (const auto& t : f->tensors())
            for (uint8_t b : f->bytes(t))
                sum += b;
        (void)sum;
    } catch (const ckpt::Error&) {
    }
    return 0;
}
