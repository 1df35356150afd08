// Describes a single checkpoint file, as a JSON document (the `ckpt inspect --json` contract)
// and as readable text. Reads no tensor bytes.
#pragma once

#include "layout/family.h"
#include "layout/file_set.h"
#include "ops/describe.h"
#include "ops/file_listing.h"

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace ckpt::ops {

// A checkpoint folder (DeepSpeed, ...) as `ckpt inspect --json` lists it, typed: its tags, each
// with its facts, files and parameters with their partition maps. Each type names its keys once
// (ops/describe.h); toJson() is the document.

struct ListedFact
{
    std::string label, value;

    template <class V> static void describe(V& v)
    {
        v("label", &ListedFact::label);
        v("value", &ListedFact::value);
    }
};

struct ListedRankFile
{
    std::string name, role;
    int dpRank = -1, mpRank = 0;
    uint64_t size = 0;

    template <class V> static void describe(V& v)
    {
        v("name", &ListedRankFile::name);
        v("role", &ListedRankFile::role);
        v("dp_rank", &ListedRankFile::dpRank);
        v("mp_rank", &ListedRankFile::mpRank);
        v("size", &ListedRankFile::size);
    }
};

// Where a partition's elements lie: that range of that tensor of that file (named without its folder).
struct ListedSource
{
    std::string file, tensor;
    uint64_t offset = 0, count = 0;

    template <class V> static void describe(V& v)
    {
        v("file", &ListedSource::file);
        v("tensor", &ListedSource::tensor);
        v("offset", &ListedSource::offset);
        v("count", &ListedSource::count);
    }
};

// One rank's part of a parameter; its sources only when the listing was asked for them.
struct ListedPartition
{
    int rank = 0;
    uint64_t offset = 0, length = 0, padding = 0;
    std::optional<std::vector<ListedSource>> master;
    std::optional<Keyed<std::vector<ListedSource>>> states; // each state sliced as the partition is

    template <class V> static void describe(V& v)
    {
        v("rank", &ListedPartition::rank);
        v("offset", &ListedPartition::offset);
        v("length", &ListedPartition::length);
        v("padding", &ListedPartition::padding);
        v("master", &ListedPartition::master);
        v("states", &ListedPartition::states);
    }
};

// One tensor of a parameter's optimizer state, as the family placed it (a moment, a master copy,
// the step): its name as the optimizer keeps it, its shape and stored dtype.
struct ListedState
{
    std::string name, dtype;
    std::vector<int64_t> shape;

    template <class V> static void describe(V& v)
    {
        v("name", &ListedState::name);
        v("shape", &ListedState::shape);
        v("dtype", &ListedState::dtype);
    }
};

struct ListedParameter
{
    std::string name, kind, dtype; // kind: "trainable", "frozen", "buffer"
    std::vector<int64_t> shape;
    uint64_t numel = 0;
    std::string tiedTo;
    int group = -1; // a flat group (ZeRO-1/2) or sub-group (ZeRO-3); -1: none
    uint64_t groupOffset = 0;
    std::vector<ListedState> optimizerState;
    std::vector<ListedPartition> partitions;

    template <class V> static void describe(V& v)
    {
        using P = ListedParameter;
        const auto tied = [](const P& p) { return !p.tiedTo.empty(); };
        const auto grouped = [](const P& p) { return p.group >= 0; };
        v("name", &P::name);
        v("kind", &P::kind);
        v("dtype", &P::dtype);
        v("shape", &P::shape);
        v("numel", &P::numel);
        v("tied_to", &P::tiedTo, tied);
        v("group", &P::group, grouped);
        v("group_offset", &P::groupOffset, grouped);
        v("optimizer_state", &P::optimizerState, [](const P& p) { return !p.optimizerState.empty(); });
        v("partitions", &P::partitions);
    }
};

// trainer_state.json as `ckpt inspect --json` gives it: the summary and every log entry, with
// the keys the Trainer uses (a value an entry lacks is left out; NaN and infinities are null).
nlohmann::ordered_json trainerStateJson(const layout::TrainingLog& log);

// The document `toJson` makes of a value there may not be.
template <class T, class ToJson>
std::optional<nlohmann::ordered_json> documentOf(const std::optional<T>& value, ToJson toJson)
{
    return value ? std::optional<nlohmann::ordered_json>(toJson(*value)) : std::nullopt;
}

// Describes, in an owner's describe(), the fields of one of its described members as the owner's
// own: they stand in its document and on its Python class at this place, flattened. (Here, beside
// its one use: the tag's header, which the listing and Python's TagInfo share.)
template <class V, class Owner, class Member> void describeFlat(V& v, Member Owner::*member)
{
    auto field = [&](const char* key, auto get, auto... present) {
        v(
            key, [member, get](const Owner& o) { return std::invoke(get, o.*member); },
            [member, present](const Owner& o) { return present(o.*member); }...);
    };
    Member::describe(field);
}

// What every tag's listing starts with: its name and the contract's DeepSpeed keys, there for
// every tag (with their "none" values elsewhere).
struct TagHeader
{
    std::string name;
    bool latest = false;
    std::string optimizer;
    int zeroStage = -1, worldSize = 0, mpWorldSize = 1;
    std::string dtype, dsVersion;
    int64_t globalSteps = -1, globalSamples = -1, skippedSteps = -1;

    template <class V> static void describe(V& v)
    {
        using T = TagHeader;
        v("name", &T::name);
        v("latest", &T::latest);
        v("optimizer", &T::optimizer);
        v("zero_stage", &T::zeroStage);
        v("world_size", &T::worldSize);
        v("mp_world_size", &T::mpWorldSize);
        v("dtype", &T::dtype);
        v("ds_version", &T::dsVersion);
        v("global_steps", &T::globalSteps);
        v("global_samples", &T::globalSamples);
        v("skipped_steps", &T::skippedSteps);
    }
};
TagHeader tagHeader(const layout::Tag& t);

// One tag. The trainer state, the folder's bytes and the file listings are documents of their own.
struct TagListing
{
    TagHeader header;
    nlohmann::ordered_json badges =
        nlohmann::ordered_json::object(); // pipeline stages, experts, the family's own
    std::vector<ListedFact> facts;
    std::string unreadable; // non-empty: why the tag cannot be read (then no bloat, no listings)
    std::optional<layout::TrainingLog> trainerState;
    std::optional<FolderBloat> bloat;
    std::vector<ListedRankFile> files;
    std::optional<std::vector<nlohmann::ordered_json>> fileListings; // each file's listing (or its error)
    // Filled only by inspectCheckpoint: a CheckpointListing makes them one at a time (parameter()).
    std::vector<ListedParameter> parameters;
    nlohmann::ordered_json config, lrScheduler, clientState;
    std::vector<std::string> warnings;

    template <class V> static void describe(V& v)
    {
        using T = TagListing;
        describeFlat(v, &T::header);
        v("badges", &T::badges, [](const T& t) { return !t.badges.empty(); });
        v("facts", &T::facts);
        v("unreadable", &T::unreadable, [](const T& t) { return !t.unreadable.empty(); });
        v("trainer_state", [](const T& t) { return documentOf(t.trainerState, trainerStateJson); });
        v("bloat", [](const T& t) { return documentOf(t.bloat, folderBloatJson); });
        v("files", &T::files);
        v("file_listings", &T::fileListings);
        v("parameters", &T::parameters);
        v("config", &T::config);
        v("lr_scheduler", &T::lrScheduler);
        v("client_state", &T::clientState);
        v("warnings", &T::warnings);
    }
};

// `tag` empty: every tag. `sources`: each partition's file, tensor and range too (--json); the
// text listing needs only ranks and ranges.
// The parameters are made one at a time when written: at 64 ranks x 10,000 parameters the
// whole document held at once took 4.5 GB for a 770 MB text.
struct CheckpointListing
{
    std::shared_ptr<const layout::OpenedCheckpoint> opened;
    std::string root, family;
    std::vector<TagListing> tags;           // each with no parameters: see parameter()
    std::vector<const layout::Tag*> models; // tags[i] lists models[i]
    std::vector<std::string> otherFiles;    // beside the checkpoint, named like one, but not
    std::vector<std::string> warnings;
    bool sources = true;

    // Parameter `index` of tags[tag].
    ListedParameter parameter(size_t tag, size_t index) const;

    template <class V> static void describe(V& v)
    {
        using L = CheckpointListing;
        v("root", &L::root);
        v("family", &L::family);
        v("tags", &L::tags);
        v("other_files", &L::otherFiles, [](const L& l) { return !l.otherFiles.empty(); });
        v("warnings", &L::warnings);
    }
};
// The document, parameters included, of a listing small enough to hold at once.
nlohmann::ordered_json toJson(const CheckpointListing& listing);
// `entries`: each tag's files listed whole too ("file_listings": every entry and tensor of each
// file, as a single file's listing); a checkpoint opened as one file (a Composer .pt) always is.
CheckpointListing listCheckpoint(const std::string& path, const std::string& tag = {}, bool sources = true,
                                 bool entries = false);
void writeCheckpointJson(const CheckpointListing& listing, std::ostream& out); // as dump(2), streamed
void printCheckpoint(const CheckpointListing& listing, std::ostream& out);
// The whole document at once, parameters included (small checkpoints, tests).
nlohmann::ordered_json inspectCheckpoint(const std::string& path, const std::string& tag = {},
                                         bool sources = true);

void printInspect(const FileListing& listing, std::ostream& out);
// The `ckpt inspect --json` document of one file.
nlohmann::ordered_json toJson(const FileListing& listing);
// A listed tensor's bytes: a safetensors header's range, else its shape times its dtype.
uint64_t listedBytes(const ListedTensor& t, bool safetensors);

std::string humanBytes(uint64_t n);

} // namespace ckpt::ops
