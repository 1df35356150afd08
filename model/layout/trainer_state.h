// What a Hugging Face Trainer says about its run in trainer_state.json (step, epoch, best
// checkpoint, and the log_history the window charts), read into the family-neutral TrainingLog:
// no JSON types leak out.
#pragma once

#include "layout/training_log.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt::layout {

// Strict: JSON that does not parse, nesting deeper than any Trainer writes, or a known key of the
// wrong type throws Error naming `file` (and the key). Unknown keys are ignored.
TrainingLog parseTrainerState(std::string_view text, const std::string& file);
// Reads and parses `path`, refusing a file over 64 MiB (a long run's log is a few MB).
TrainingLog readTrainerState(const std::string& path);

} // namespace ckpt::layout
