// What the DeepSpeed recognizer's parts share (deepspeed.cpp and the files beside this one): a
// rank file as opened, and the few helpers every part reads tensors with. Not for anything
// outside model/layout: the family's interface is layout/deepspeed.h.
#pragma once

#include "layout/checkpoint.h"
#include "layout/file_set.h"
#include "torch/torch_file.h"

#include <memory>
#include <string>

namespace ckpt::layout::ds {

// One rank file of a tag, parsed.
struct OpenFile
{
    RankFile info;
    std::shared_ptr<const TensorFile> owner; // shared with the FileSet operations read from
    const torch::TorchFile* file = nullptr;
};

[[noreturn]] void fail(const std::string& what, const std::string& file);
// The tensor at a path, or throw naming the file.
const torch::Tensor& tensorAt(const OpenFile& f, const std::string& path);
Source source(const OpenFile& f, const std::string& path, uint64_t offset, uint64_t count);
// A whole tensor of a file as a parameter.
Parameter wholeTensor(const OpenFile& f, const std::string& name, const std::string& path,
                      Parameter::Kind kind);

// ZeRO stage 0 (zero0.cpp): the model, its masters and its optimizer, all in the one model file.
void openStageZero(Tag& tag, const OpenFile& m0);

} // namespace ckpt::layout::ds
