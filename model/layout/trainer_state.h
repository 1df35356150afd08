// What a Hugging Face Trainer says about its run in trainer_state.json (step, epoch, best
// checkpoint, and the log_history the window charts), as plain values: no JSON types leak out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt::layout {

// One log_history entry: a training log (loss, learning_rate, grad_norm), an evaluation
// (eval_loss, eval_*), or the run's closing summary (train_loss, train_runtime, ...). A value the
// entry does not have is nullopt; NaN and infinities, which Python's json writes bare, are kept.
struct TrainerLogEntry
{
    int64_t step = -1;
    std::optional<double> epoch, loss, learningRate, gradNorm, evalLoss;
    // Every other number of the entry (eval_accuracy, train_runtime, ...), in file order.
    std::vector<std::pair<std::string, double>> other;
};

struct TrainerState
{
    int64_t globalStep = -1;
    std::optional<double> epoch;
    // As saved: a path on the machine that trained (absolute), so compare its last component.
    std::string bestModelCheckpoint;
    std::optional<double> bestMetric;
    std::optional<int64_t> bestGlobalStep, maxSteps, saveSteps, loggingSteps, evalSteps;
    std::vector<TrainerLogEntry> logHistory; // in file order (the Trainer appends as it goes)

    // The best checkpoint's folder name ("checkpoint-500"); empty when there is none.
    std::string bestCheckpointName() const;
};

// Strict: JSON that does not parse, nesting deeper than any Trainer writes, or a known key of the
// wrong type throws Error naming `file` (and the key). Unknown keys are ignored.
TrainerState parseTrainerState(std::string_view text, const std::string& file);
// Reads and parses `path`, refusing a file over 64 MiB (a long run's log is a few MB).
TrainerState readTrainerState(const std::string& path);

} // namespace ckpt::layout
