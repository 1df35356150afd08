// What the DeepSpeed recognizer's parts share (the files beside this one): a rank file as
// opened, the tag's files as opened, and the steps each part takes of reading a tag. Not for
// anything outside model/layout/deepspeed*: the family's interface is layout/deepspeed.h.
#pragma once

#include "io/location.h"
#include "layout/checkpoint.h"
#include "layout/family.h"
#include "layout/file_set.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt::layout::ds {

using pickle::Kind;
using pickle::Value;
using torch::asInt;
using torch::asInts;
using torch::asString;
using torch::dictGet;
using torch::seqAt;

// One rank file of a tag, parsed.
struct OpenFile
{
    RankFile info;
    std::shared_ptr<const TensorFile> owner; // shared with the FileSet operations read from
    const torch::TorchFile* file = nullptr;
};

// What the tag needs from a model file other than the first: ZeRO-3 saves one per rank, each
// with a placeholder tensor per parameter, so keeping them all parsed would cost memory in
// proportion to parameters x ranks. They are parsed one at a time, digested, and let go (the
// FileSet keeps them only within its budget).
struct ModelDigest
{
    RankFile info;
    std::optional<int64_t> globalSteps;
    struct Fragment
    {
        torch::DType dtype;
        uint64_t numel;
    };
    std::map<std::string, Fragment> frozenFragments; // frozen_param_fragments/<name>
};

// The rank files of a tag, opened (parsed), in name order: the first model file whole, every
// model file digested (the first one included), the optimizer files whole.
struct OpenTag
{
    // The first model file (it speaks for the tag), then the other mp_rank_MM files (one per
    // pipeline stage or tensor-parallel rank, small): ZeRO-3's per-rank files are only digested.
    std::vector<OpenFile> models;
    std::vector<ModelDigest> digests;
    std::vector<OpenFile> optims;
    std::vector<RankFile> layers;  // pipeline layer_LL files, parsed when consolidated
    std::vector<OpenFile> experts; // MoE layer_L_expert_E files (one expert's tensors each, small)
};

// Optimizer files of data-parallel ranks 0..W-1 (mp rank 0), by rank.
using FilesByRank = std::vector<const OpenFile*>;

// names.cpp: files by name, nothing parsed
bool naturalLess(const std::string& a, const std::string& b); // as zero_to_fp32 sorts
extern const std::vector<std::string> kRank0Names;
bool hasRankFiles(const std::string& dir);
std::string readLatest(const std::string& root);
// Step 1: what the tag folder holds, classified by file name.
std::vector<RankFile> listTagFolder(const std::string& tagDir);
// The tag folders of a checkpoint root (or the one tag folder given), in natural order, found
// from file names and `latest` only: nothing is parsed. Throws Error if there are none.
TagList findDeepSpeedTags(const std::string& path);

// rank_files.cpp: the tag's files parsed and checked against one another
[[noreturn]] void fail(const std::string& what, const std::string& file);
// The tensor at a path, or throw naming the file.
const torch::Tensor& tensorAt(const OpenFile& f, const std::string& path);
Source source(const OpenFile& f, const std::string& path, uint64_t offset, uint64_t count);
// A whole tensor of a file as a parameter.
Parameter wholeTensor(const OpenFile& f, const std::string& name, const std::string& path,
                      Parameter::Kind kind);
OpenFile openRankFile(const RankFile& f, FileSet& files);
OpenTag openRankFiles(Tag& tag, FileSet& files);
void readModelFacts(Tag& tag, const OpenFile& m0);
void checkModelFilesAgree(const OpenTag& open);
void readOptimizerKind(Tag& tag, const OpenFile& o0);
FilesByRank optimizerFilesByRank(const Tag& tag, const OpenTag& open, int mp = 0);
void checkOptimizerFilesAgree(const Tag& tag, const FilesByRank& byRank);

// zero.cpp: ZeRO 1-3 and BF16_Optimizer
Parameter shapedParameter(const Value* key, const Value* shape, int group, uint64_t offset,
                          const OpenFile& m0);
std::optional<Parameter> fromModule(const OpenFile& m0, const std::string& name, Parameter::Kind kind);
void flatGroup(const Tag& tag, size_t g, const Value* shapes, const OpenFile& m0, const FilesByRank& byRank,
               std::vector<Parameter>& trainable);
std::vector<Parameter> trainableParameters(const Tag& tag, const OpenFile& m0, const FilesByRank& byRank);
void addBuffers(Tag& tag, const OpenFile& m0);
void addFrozen(Tag& tag, const OpenTag& open, const std::vector<Parameter>& trainable);
void addTiedAliases(Tag& tag, const OpenFile& m0);

// tag.cpp: the tag as the files of one tensor-parallel rank give it (all of mp rank 0's files,
// or another rank's renumbered as rank 0): openDeepSpeedTagFiles without the other ranks' parts.
Tag openDeepSpeedRank(std::vector<RankFile> rankFiles, const std::string& tagDir, const std::string& tagName,
                      bool latest, FileSet& files);
// tensor_parallel.cpp: the other tensor-parallel ranks' parts of every trainable parameter and
// how they merge (DeepSpeedTag::tensorParallel, Parameter::tensorParallel). Failures are stated,
// not thrown: rank 0 stays readable whatever the other ranks hold.
void stateTensorParallel(Tag& tag, FileSet& files);

// zero0.cpp: ZeRO stage 0, the model, its masters and its optimizer all in the one model file.
void openStageZero(Tag& tag, const OpenFile& m0);
// pipeline.cpp: PipelineModule's layer files and per-stage partitions.
void openPipeline(Tag& tag, const OpenTag& open, FileSet& files);
// moe.cpp: the expert groups' parameters under their global expert ids.
std::vector<Parameter> moeParameters(Tag& tag, const OpenTag& open, const FilesByRank& byRank,
                                     const std::vector<OpenFile>& experts);

} // namespace ckpt::layout::ds
