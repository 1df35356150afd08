// What a run says about its training at a tag, whichever framework kept it: the step, epoch,
// best checkpoint, the schedule's intervals and the log the window charts (losses, learning rate,
// gradient norm, evaluations), as plain values. A family fills it from what its framework saves
// (the Hugging Face Trainer: trainer_state.json, layout/trainer_state.h); `ckpt inspect --json`
// writes it as "trainer_state", its contract's key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt::layout {

// One logged entry (a Trainer's log_history entry): a training log (loss, learning_rate, grad_norm), an
// evaluation (eval_loss, eval_*), or the run's closing summary (train_loss, train_runtime, ...). A value the
// entry does not have is nullopt; NaN and infinities, which Python's json writes bare, are kept.
struct TrainingLogEntry
{
    int64_t step = -1;
    std::optional<double> epoch, loss, learningRate, gradNorm, evalLoss;
    // Every other number of the entry (eval_accuracy, train_runtime, ...), in file order.
    std::vector<std::pair<std::string, double>> other;
};

struct TrainingLog
{
    int64_t globalStep = -1;
    std::optional<double> epoch;
    // As saved: a path on the machine that trained (absolute), so compare its last component.
    std::string bestModelCheckpoint;
    std::optional<double> bestMetric;
    std::optional<int64_t> bestGlobalStep, maxSteps, saveSteps, loggingSteps, evalSteps;
    std::vector<TrainingLogEntry> logHistory; // in the order logged (the Trainer appends as it goes)

    // The best checkpoint's folder name ("checkpoint-500"); empty when there is none.
    std::string bestCheckpointName() const;
};

} // namespace ckpt::layout
