#include "layout/recognize.h"

#include "io/error.h"
#include "io/input_file.h"
#include "layout/deepspeed.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace ckpt::layout {

std::string folderFamiliesLookedFor()
{
    return "a DeepSpeed checkpoint (a `latest` file or tag folders holding *_model_states.pt / "
           "*_optim_states.pt) or a DeepSpeed tag folder (those files directly)";
}

Family recognize(const std::string& path)
{
    struct stat st
    {
    };
    if (::stat(path.c_str(), &st) != 0)
        throw Error(std::string("cannot open: ") + std::strerror(errno), path);
    if (S_ISDIR(st.st_mode)) {
        if (looksLikeDeepSpeed(path)) return Family::DeepSpeed;
        throw Error("no checkpoint found in this folder; looked for " + folderFamiliesLookedFor() +
                        " (a single file is opened by its own path)",
                    path);
    }
    // Refused here with its type, before any reader could block on it.
    io::requireRegularFile(path);
    return Family::File;
}

} // namespace ckpt::layout
