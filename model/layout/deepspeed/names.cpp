// DeepSpeed's files by name: what a rank file is (role, ranks) from its name, whether a folder
// holds rank files, `latest`, and the tag folders of a checkpoint root. Nothing here parses a
// pickle: a file's first two bytes at most.
#include "layout/deepspeed.h"
#include "layout/deepspeed/internal.h"
#include "layout/family.h"

#include "compute_backend.h"
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "io/mapped_file.h"
#include "io/zip_reader.h"
#include "layout/sharding.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>
#include <variant>

namespace ckpt::layout::ds {

// Natural order, as zero_to_fp32 sorts: digit runs compare as numbers.
bool naturalLess(const std::string& a, const std::string& b)
{
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
            size_t ie = i, je = j;
            while (ie < a.size() && std::isdigit(uint8_t(a[ie])))
                ++ie;
            while (je < b.size() && std::isdigit(uint8_t(b[je])))
                ++je;
            const auto na = std::stoull(a.substr(i, std::min<size_t>(ie - i, 18)));
            const auto nb = std::stoull(b.substr(j, std::min<size_t>(je - j, 18)));
            if (na != nb) return na < nb;
            i = ie, j = je;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i, ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

RankFile classifyName(const std::string& name)
{
    static const std::regex modelMp(R"(mp_rank_(\d+)_model_states\.pt)");
    static const std::regex modelZero(R"(zero_pp_rank_(\d+)_mp_rank_(\d+)_model_states\.pt)");
    static const std::regex optim(R"((bf16_|fp16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_?optim_states\.pt)");
    static const std::regex layer(R"(layer_(\d+)-model_(?:(\d+)-model_)?states\.pt)");
    static const std::regex expert(R"((?:layer_\d+_)?expert_(\d+)_mp_rank_(\d+)_model_states\.pt)");
    static const std::regex expOptim(R"(expp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt)");
    RankFile f;
    f.name = name;
    std::smatch m;
    if (std::regex_match(f.name, m, modelZero)) {
        f.role = FileRole::ModelStates, f.dpRank = std::stoi(m[1]), f.mpRank = std::stoi(m[2]);
    } else if (std::regex_match(f.name, m, modelMp)) {
        f.role = FileRole::ModelStates, f.mpRank = std::stoi(m[1]);
    } else if (std::regex_match(f.name, m, optim)) {
        f.role = FileRole::OptimStates, f.prefix = m[1], f.dpRank = std::stoi(m[2]),
        f.mpRank = std::stoi(m[3]);
    } else if (std::regex_match(f.name, m, layer)) {
        f.role = FileRole::Layer, f.mpRank = m[2].matched ? std::stoi(m[2]) : 0;
    } else if (std::regex_match(f.name, m, expert)) {
        f.role = FileRole::Expert, f.mpRank = std::stoi(m[2]);
    } else if (std::regex_match(f.name, m, expOptim)) {
        f.role = FileRole::ExpertOptim, f.mpRank = std::stoi(m[2]);
    }
    return f;
}

// Folders and files through io/location.h: a tag folder may be local or in an object store.
RankFile classify(const std::string& dir, const io::FolderEntry& e)
{
    RankFile f = classifyName(e.name);
    f.path = io::childPath(dir, e.name);
    f.size = e.size;
    return f;
}

// Never throws: a folder that cannot be listed has no rank files.
std::vector<io::FolderEntry> entriesOf(const std::string& dir)
{
    try {
        return io::listFolder(dir);
    } catch (const Error&) {
        return {};
    }
}

// A folder whose server cannot list it (plain HTTP): its files by the names DeepSpeed gives
// them, asked for in waves — the first model and optimizer files of rank 0, then the ranks
// after, doubling, until one is missing. Model parallelism (mp_rank_01…) is not looked for.
const std::vector<std::string> kRank0Names = {
    "mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt",
    "zero_pp_rank_0_mp_rank_00_optim_states.pt", "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"};

std::vector<io::FolderEntry> entriesByName(const std::string& dir)
{
    const std::vector<std::string>& rank0 = kRank0Names;
    std::vector<io::FolderEntry> out;
    std::vector<std::string> patterns; // per-rank names whose rank 0 exists, "{}" for the rank
    const auto add = [&](const std::vector<std::string>& names) {
        const auto sizes = io::Folder(dir).probe(names);
        for (size_t i = 0; i < names.size(); ++i)
            if (sizes[i]) out.push_back({names[i], false, *sizes[i]});
        return sizes;
    };
    const auto first = add(rank0);
    for (size_t i = 1; i < rank0.size(); ++i)
        if (first[i])
            patterns.push_back(rank0[i].substr(0, rank0[i].find("rank_0_") + 5) + "{}" +
                               rank0[i].substr(rank0[i].find("rank_0_") + 6));
    for (int from = 1, count = 8; !patterns.empty() && from < 65536; from += count, count *= 2) {
        std::vector<std::string> names;
        for (int r = from; r < from + count; ++r)
            for (const auto& p : patterns)
                names.push_back(p.substr(0, p.find("{}")) + std::to_string(r) + p.substr(p.find("{}") + 2));
        const auto sizes = add(names);
        if (std::any_of(sizes.begin(), sizes.end(), [](const auto& s) { return !s; })) break;
    }
    return out;
}

bool hasRankFiles(const std::string& dir)
{
    const io::Folder folder(dir);
    const auto entries = folder.lists() ? entriesOf(dir) : entriesByName(dir);
    // The rank files are sniffed below and opened next: remote ones all in one wave now, with the
    // `latest` of the folder above where its listing has one (it says whether this tag is the
    // latest; over plain HTTP it was asked for by name before the tag was).
    std::vector<std::pair<std::string, uint64_t>> open;
    for (const auto& e : entries)
        if (!e.folder && e.name.ends_with("_states.pt")) open.push_back({folder.file(e.name), e.size});
    const io::Folder above = folder.parent();
    if (!open.empty() && above.path() != dir && above.lists() &&
        io::pathKind(above.file("latest")) == io::PathKind::File)
        open.push_back({above.file("latest"), 0});
    io::MappedFile::prefetch(open);
    for (const auto& e : entries) {
        const std::string& n = e.name;
        if (!e.folder && n.size() > 3 && n.substr(n.size() - 3) == ".pt" &&
            (n.find("_model_states") != std::string::npos || n.find("optim_states") != std::string::npos)) {
            // The name says where to look; the content decides: a torch.save zip or legacy pickle.
            const std::string head = io::readHead(io::childPath(dir, n), 2);
            if (head == "PK" || (head.size() == 2 && uint8_t(head[0]) == 0x80)) return true;
        }
    }
    return false;
}

std::string readLatest(const std::string& root)
{
    const std::string path = io::childPath(root, "latest");
    // Anything there is read, so that a FIFO or device named `latest` is refused, not skipped.
    if (!io::Folder(root).has("latest")) return {};
    // DeepSpeed writes the tag name and nothing else; anything longer is not a `latest` file.
    std::string s = io::readSmallFile(path, 4096);
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    while (!s.empty() && std::isspace(uint8_t(s.front())))
        s.erase(s.begin());
    return s;
}

// Step 1: what the tag folder holds, classified by file name.
std::vector<RankFile> listTagFolder(const std::string& tagDir)
{
    std::vector<RankFile> files;
    const io::Folder folder(tagDir);
    for (const auto& e : folder.lists() ? folder.entries() : entriesByName(tagDir))
        if (!e.folder) files.push_back(classify(tagDir, e));
    std::sort(files.begin(), files.end(),
              [](const RankFile& a, const RankFile& b) { return naturalLess(a.name, b.name); });
    return files;
}

} // namespace ckpt::layout::ds

namespace ckpt::layout {

using ds::classify;
using ds::classifyName;
using ds::entriesOf;
using ds::hasRankFiles;
using ds::kRank0Names;
using ds::naturalLess;
using ds::readLatest;

RankFile classifyTagFile(const std::string& path)
{
    return classify(io::parentPath(path), {io::fileName(path), false, io::fileSize(path)});
}

RankFile classifyTagFileName(const std::string& name)
{
    return classifyName(name);
}

std::vector<std::string> deepSpeedNamesAsked()
{
    std::vector<std::string> names = kRank0Names;
    names.push_back("latest");
    return names;
}

bool looksLikeDeepSpeed(const std::string& path)
{
    const io::Folder folder(path);
    try {
        if (!folder.exists()) return false;
    } catch (const Error&) {
        return false; // match() never throws; opening says what is wrong
    }
    if (hasRankFiles(path)) return true;
    try {
        if (folder.has("latest")) return true;
    } catch (const Error&) {
    }
    for (const auto& e : entriesOf(path))
        if (e.folder && hasRankFiles(io::childPath(path, e.name))) return true;
    return false;
}

TagList ds::findDeepSpeedTags(const std::string& path)
{
    TagList f;
    const io::Folder folder(path);
    if (!folder.exists()) throw Error("not a folder", path);
    const bool tagFolder = hasRankFiles(path);
    if (tagFolder) { // a tag folder itself
        f.root = io::parentPath(path);
        f.tags.push_back({io::fileName(path), path});
    } else if (!folder.lists()) { // the one tag `latest` names is all that can be found
        f.root = path;
        const std::string latest = readLatest(path);
        // Written with its '/': over HTTP that is what says "folder".
        const std::string dir = folder.folder(latest).path();
        if (!latest.empty() && latest.find('/') == std::string::npos && hasRankFiles(dir))
            f.tags.push_back({latest, dir});
    } else {
        f.root = path;
        for (const auto& e : folder.entries())
            if (e.folder && hasRankFiles(io::childPath(path, e.name)))
                f.tags.push_back({e.name, io::childPath(path, e.name)});
    }
    std::sort(f.tags.begin(), f.tags.end(),
              [](const auto& a, const auto& b) { return naturalLess(a.first, b.first); });
    if (f.tags.empty()) throw Error("no DeepSpeed tag folder (with *_model_states.pt files) found", path);
    f.latest = readLatest(f.root.empty() ? std::string(".") : f.root);
    // Opened on its own, a tag is the latest when the parent's `latest` names it; that `latest`
    // naming one of its siblings is no news about this tag.
    if (tagFolder && f.latest != f.tags.front().first) f.latest.clear();
    return f;
}

} // namespace ckpt::layout
