// xxh3-64 of each tensor's bytes, fed chunk by chunk in tensor order: what a writer records
// while streaming and checks again after re-reading its output.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>
#include <xxhash.h>

namespace ckpt::io {

class TensorHasher
{
public:
    explicit TensorHasher(size_t tensors) : m_digests(tensors, XXH3_64bits(nullptr, 0)) {}

    void update(size_t tensor, const uint8_t* data, uint64_t n)
    {
        if (!m_state || tensor != m_current) {
            flush();
            m_state.reset(XXH3_createState());
            XXH3_64bits_reset(m_state.get());
            m_current = tensor;
        }
        XXH3_64bits_update(m_state.get(), data, n);
    }
    // Tensors that never got bytes keep the hash of nothing.
    std::vector<uint64_t> digests()
    {
        flush();
        return m_digests;
    }

private:
    void flush()
    {
        if (m_state) m_digests[m_current] = XXH3_64bits_digest(m_state.get());
        m_state.reset();
    }

    struct Free
    {
        void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
    };
    std::vector<uint64_t> m_digests;
    std::unique_ptr<XXH3_state_t, Free> m_state;
    size_t m_current = 0;
};

} // namespace ckpt::io
