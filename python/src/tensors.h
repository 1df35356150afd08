// What the Python package reads tensors through: one tag's TensorSet (any family), with the
// drop-in rules of DeepSpeed's get_fp32_state_dict_from_zero_checkpoint when asked, filled into
// memory Python owns or handed out as views of a private, copy-on-write map of the file.
#pragma once

#include "io/private_map.h"
#include "layout/family.h"
#include "ops/tensor_source.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::python {

// Which tensors a tag gives, and how.
struct SetRequest
{
    std::string tag;
    // "model": the tag's model as `ckpt export` writes it (the family's default dtype);
    // "deepspeed": get_fp32_state_dict_from_zero_checkpoint's dictionary (its names, order and
    // dtypes: frozen parameters in their stored dtype, none at stage 1 where it drops them);
    // "optimizer": one parameter's fp32 master and Adam moments (`param`), as stored.
    std::string mode = "model";
    std::optional<torch::DType> dtype;
    bool excludeFrozen = false;
    bool all = false;
    std::vector<std::string> ignore;
    std::string param;
};

class Tensors
{
public:
    Tensors(const layout::OpenedTag& in, const SetRequest& request);

    const ops::TensorSet& set() const { return m_set; }
    size_t size() const { return m_set.tensors.size(); }
    const ops::SourceTensor& at(size_t i) const;
    // The position of a name, or -1.
    long indexOf(const std::string& name) const;
    // Copies bytes [offset, offset + count) of tensor i to dst, on all cores for large ranges.
    // Call without the GIL.
    void fill(size_t i, uint64_t offset, uint64_t count, uint8_t* dst) const;
    // Tensor i's bytes where they lie contiguous and uncast in one mapped file (a whole stored
    // tensor, or a parameter inside one rank's flat ZeRO partition); else nullptr.
    const uint8_t* contiguous(size_t i) const;
    // Whether contiguous(i) may give them, known without reading (in_place in Python's info).
    bool maybeContiguous(size_t i) const;
    // Tensor i's bytes inside a private map of its file, when they lie there contiguous and
    // uncast; else nullptr. `owner` receives what keeps the map alive.
    uint8_t* mapped(size_t i, std::shared_ptr<io::PrivateMap>& owner);

private:
    ops::TensorSet m_set;
    std::map<std::string, size_t> m_index;
    std::mutex m_mutex; // guards the two caches below
    io::MapIndex m_maps;
    std::map<std::string, std::shared_ptr<io::PrivateMap>> m_private; // by path
};

// The parameter names `optimizer_state` knows for a tag (its moments' parameters).
std::vector<std::string> optimizerParameters(const layout::Tag& tag);

} // namespace ckpt::python
