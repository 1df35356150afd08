// Which checkpoint family a path holds, decided from what is there (files and their content),
// never from the path's name. A folder that no family recognises gets an error that says so
// and lists what was looked for; a FIFO, socket or device is refused by its type.
#pragma once

#include <string>

namespace ckpt::layout {

enum class Family {
    DeepSpeed, // a checkpoint root (latest + tag folders) or one tag folder
    File       // one torch.save or safetensors file (its format is sniffed when it is read)
};

Family recognize(const std::string& path);

// What recognize() looks for in a folder, as one line for messages.
std::string folderFamiliesLookedFor();

} // namespace ckpt::layout
