// Sniffs what a file is from its content, never from its name.
#pragma once

#include <string>

namespace ckpt::io {
class MappedFile;
}

namespace ckpt::ops {

enum class FileKind { TorchZip, TorchLegacy, Safetensors, Pickle, Unknown };

FileKind detect(const std::string& path); // throws Error if the file cannot be read
FileKind detect(const io::MappedFile& file, const std::string& name); // a file opened (an archive member)
const char* kindName(FileKind k);

} // namespace ckpt::ops
