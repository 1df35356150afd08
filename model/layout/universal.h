// DeepSpeed Universal checkpoints (what ds_to_universal and `ckpt universal` write) as a
// checkpoint family: a folder holding zero/<param>/{fp32,exp_avg,exp_avg_sq}.pt beside copied
// model-states files, or the checkpoint root whose `latest_universal` names one. Each parameter
// is whole in its fp32.pt (a dict with 'param' at ZeRO stage <= 2, a flat tensor at stage 3,
// shaped from param_shapes), with its moments beside it.
#pragma once

#include "layout/family.h"

#include <string>

namespace ckpt::layout {

// A Universal folder itself (zero/optimizer_state.pt and a *_model_states.pt beside zero/).
bool isUniversalFolder(const std::string& path);

} // namespace ckpt::layout
