// The recognizers the registry (family.cpp) lists. Nothing else names a family directly.
#pragma once

#include "layout/family.h"

namespace ckpt::layout {

const Family& composerFamily();    // composer_family.cpp
const Family& deepSpeedFamily();   // deepspeed_family.cpp
const Family& dcpFamily();         // dcp_family.cpp
const Family& huggingFaceFamily(); // hf_family.cpp
const Family& singleFileFamily();  // file_family.cpp
const Family& trainerFamily();     // trainer_family.cpp
const Family& universalFamily();   // universal.cpp

} // namespace ckpt::layout
