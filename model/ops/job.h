// The operations' names for the job types, which live in io/job.h (the writers below the
// operations report and stop through them too).
#pragma once

#include "io/job.h"

namespace ckpt::ops {

using io::CancelToken;
using io::Progress;
using io::ProgressSink;
using io::reportNotes;

} // namespace ckpt::ops
