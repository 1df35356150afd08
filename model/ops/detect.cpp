#include "ops/detect.h"

#include "io/mapped_file.h"
#include "io/zip_reader.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

namespace ckpt::ops {

FileKind detect(const std::string& path)
{
    return detect(*io::MappedFile::open(path), path);
}

FileKind detect(const io::MappedFile& f, const std::string& name)
{
    if (f.size() == 0) throw Error("file is empty", name);
    f.ensure(0, 4096);
    const io::ByteSpan head = f.bytes().subspan(0, std::min<uint64_t>(f.size(), 4096));
    if (io::ZipReader::looksLikeZip(head)) return FileKind::TorchZip;
    if (torch::TorchFile::looksLikeTorch(head)) return FileKind::TorchLegacy;
    if (safetensors::SafetensorsFile::looksLikeSafetensors(head)) return FileKind::Safetensors;
    if (!head.empty() && head[0] == 0x80 && head.size() > 1 && head[1] <= 5) return FileKind::Pickle;
    return FileKind::Unknown;
}

const char* kindName(FileKind k)
{
    switch (k) {
    case FileKind::TorchZip:
        return "torch-zip";
    case FileKind::TorchLegacy:
        return "torch-legacy";
    case FileKind::Safetensors:
        return "safetensors";
    case FileKind::Pickle:
        return "pickle";
    case FileKind::Unknown:
        return "unknown";
    }
    return "?";
}

} // namespace ckpt::ops
