// Streams tensors' bytes in fixed-size chunks through a small ring of buffers: a producer
// thread fills chunks (gather from mapped files, cast) while the caller's thread consumes the
// previous ones (hash, write). Reads and writes overlap; memory is ring size x chunk size,
// whatever the tensor sizes.
#pragma once

#include "io/job.h"
#include "io/tensor_hasher.h"
#include "torch/out_tensor.h"

#include <functional>
#include <vector>

namespace ckpt::torch {

// Calls consume(tensorIndex, data, size) for every chunk of every tensor, in order (a tensor of
// zero bytes gets no call). With `hasher`, each chunk is hashed into it by the producer as soon as
// it is filled: off the consumer's thread, whose writes are what a stream waits for (a writer
// reads the digests once the call returns). Exceptions from either side propagate to the caller;
// cancel is checked per chunk.
void streamChunks(const std::vector<torch::OutTensor>& tensors,
                  const std::function<void(size_t tensor, const uint8_t* data, uint64_t size)>& consume,
                  const io::CancelToken& cancel, io::TensorHasher* hasher = nullptr,
                  uint64_t chunkSize = 16u << 20, int ringSize = 3);

} // namespace ckpt::torch
