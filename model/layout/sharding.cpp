#include "layout/sharding.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace ckpt::layout {

LayerName splitLayer(const std::string& name)
{
    static const std::regex layer(R"(^(.*?\b)(\d+)(?:\.|$)(.*)$)");
    LayerName l;
    std::smatch m;
    if (!std::regex_match(name, m, layer)) return l;
    l.isLayer = true;
    l.stem = m[1].str();
    try {
        l.number = std::stoll(m[2].str());
    } catch (const std::exception&) { // more digits than a long long: a name, not a layer
        return {};
    }
    l.rest = m[3].str();
    return l;
}

namespace {

// The layer a name belongs to (its first number: "layers.17.mlp" -> 17); other modules get
// negative keys in the order first seen, so each keeps one colour.
std::vector<int> layerKeys(const std::vector<std::string>& names)
{
    std::map<std::string, int> modules;
    std::vector<int> out;
    out.reserve(names.size());
    for (const std::string& n : names) {
        const LayerName l = splitLayer(n);
        if (l.isLayer) {
            out.push_back(int(l.number));
        } else {
            const size_t dot = n.rfind('.');
            const std::string module = dot == std::string::npos ? std::string() : n.substr(0, dot);
            out.push_back(-1 - modules.emplace(module, int(modules.size())).first->second);
        }
    }
    return out;
}

// "[0:19, 0:12]": the block an N-d chunk holds.
std::string blockText(const Source& src)
{
    std::string dims;
    for (size_t d = 0; d < src.chunkOffsets.size() && d < src.chunkShape.size(); ++d)
        dims += (dims.empty() ? "" : ", ") + std::to_string(src.chunkOffsets[d]) + ":" +
                std::to_string(src.chunkOffsets[d] + src.chunkShape[d]);
    return dims.empty() ? std::string() : "[" + dims + "]";
}

// N-d chunks (DCP): each rank's block of a parameter, a parameters x ranks grid as ZeRO-3's.
void chunkGrid(const Tag& tag, int ranks, ShardingLayout& l)
{
    l.mode = ShardingLayout::Mode::Grid;
    l.ranks = ranks;
    for (size_t i = 0; i < tag.params.size(); ++i) {
        const auto& p = tag.params[i];
        if (p.slices.empty()) continue;
        l.gridParams.push_back(int(i));
        l.gridFirst.push_back(l.segments.size());
        uint64_t per = 0;
        for (int r = 0; r < ranks; ++r) {
            ShardingLayout::Segment s;
            s.param = int(i);
            s.rank = r;
            for (const auto& sl : p.slices) {
                if (sl.rank != r) continue;
                s.length += sl.length;
                for (const auto& src : sl.master)
                    if (const std::string b = blockText(src); !b.empty())
                        s.where += (s.where.empty() ? "" : " ") + b;
            }
            per = std::max(per, s.length);
            l.segments.push_back(s);
        }
        l.perRank.push_back(per);
    }
}

std::vector<std::string> split(const std::string& path)
{
    std::vector<std::string> parts;
    size_t from = 0;
    for (size_t at; (at = path.find('/', from)) != std::string::npos; from = at + 1)
        parts.push_back(path.substr(from, at - from));
    parts.push_back(path.substr(from));
    return parts;
}

// Each lane's label: its path's shortest tail no other lane's path ends in. The file's name where
// that tells the lanes apart; a Universal folder's files are all fp32.pt, so zero/<param>/fp32.pt
// is <param>/fp32.pt beside the model file's own name (an integer buffer is read from there).
std::vector<std::string> laneLabels(const std::vector<std::string>& paths)
{
    std::vector<std::vector<std::string>> parts;
    size_t depth = 0;
    for (const auto& p : paths) {
        parts.push_back(split(p));
        depth = std::max(depth, parts.back().size());
    }
    auto tail = [&](size_t i, size_t k) {
        std::string label;
        for (size_t j = parts[i].size() - std::min(k, parts[i].size()); j < parts[i].size(); ++j)
            label += (label.empty() ? "" : "/") + parts[i][j];
        return label;
    };
    std::vector<std::string> out(paths.size());
    for (size_t k = 1; k <= depth; ++k) {
        std::map<std::string, size_t> seen;
        for (size_t i = 0; i < paths.size(); ++i)
            ++seen[tail(i, k)];
        for (size_t i = 0; i < paths.size(); ++i)
            if (out[i].empty() && (seen[tail(i, k)] == 1 || k == depth)) out[i] = tail(i, k);
    }
    return out;
}

// Orders the lanes by label (shard 1 of 4 first), the segments by lane, then in the tag's order.
void sortLanes(ShardingLayout& l)
{
    std::vector<int> order(l.laneNames.size()), lanePos(l.laneNames.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = int(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return l.laneNames[size_t(a)] < l.laneNames[size_t(b)]; });
    std::vector<std::string> sorted;
    for (size_t i = 0; i < order.size(); ++i) {
        lanePos[size_t(order[i])] = int(i);
        sorted.push_back(l.laneNames[size_t(order[i])]);
    }
    l.laneNames = std::move(sorted);
    for (auto& s : l.segments)
        s.rank = lanePos[size_t(s.rank)];
    std::stable_sort(l.segments.begin(), l.segments.end(),
                     [](const auto& a, const auto& b) { return a.rank < b.rank; });
}

// Unsharded tensors: a lane per file, its tensors one after another in the tag's order, each as
// long as its bytes. Positions are not file offsets (the domain model has none): what a file
// holds and how big, not where.
void fileLanes(const Tag& tag, ShardingLayout& l)
{
    l.mode = ShardingLayout::Mode::Files;
    std::map<std::string, int> lane;
    std::vector<uint64_t> at;
    for (size_t i = 0; i < tag.params.size(); ++i)
        for (const auto& sl : tag.params[i].slices)
            for (const auto& src : sl.master) {
                auto [it, added] = lane.emplace(src.file, int(at.size()));
                if (added) {
                    at.push_back(0);
                    const auto f = std::find_if(tag.files.begin(), tag.files.end(),
                                                [&](const auto& rf) { return rf.path == src.file; });
                    l.laneNames.push_back(f != tag.files.end() ? f->name : src.file.str());
                }
                uint64_t n = src.count;
                if (!src.chunkShape.empty()) {
                    n = 1;
                    for (int64_t x : src.chunkShape)
                        n *= uint64_t(x);
                }
                ShardingLayout::Segment s;
                s.param = int(i);
                s.rank = it->second;
                s.begin = at[size_t(it->second)];
                s.length = n * torch::elementSize(src.dtype);
                at[size_t(it->second)] += s.length;
                if (s.length) l.segments.push_back(s);
            }
    l.laneNames = laneLabels(l.laneNames);
    l.ranks = int(at.size());
    l.laneLength = at.empty() ? 0 : *std::max_element(at.begin(), at.end());
    if (!l.ranks || !l.laneLength) l.mode = ShardingLayout::Mode::Empty;
    sortLanes(l);
}

// Each parameter split flat over every rank (ZeRO-3): a row of W cells per parameter, each
// filled from its rank's slice in one pass over the slices (a search per cell made 64 ranks x
// 10,000 parameters 43 million steps).
void parameterGrid(const Tag& tag, ShardingLayout& l)
{
    const size_t W = size_t(tag.worldSize);
    l.mode = ShardingLayout::Mode::Grid;
    l.segments.reserve(tag.params.size() * W);
    for (size_t i = 0; i < tag.params.size(); ++i) {
        const auto& p = tag.params[i];
        if (p.slices.empty() || p.group < 0) continue; // buffers and the like: not partitioned
        l.gridParams.push_back(int(i));
        l.gridFirst.push_back(l.segments.size());
        const size_t row = l.segments.size();
        for (size_t r = 0; r < W; ++r) {
            ShardingLayout::Segment s;
            s.param = int(i);
            s.rank = int(r);
            l.segments.push_back(s);
        }
        for (const auto& sl : p.slices)
            if (sl.rank >= 0 && size_t(sl.rank) < W) {
                auto& s = l.segments[row + size_t(sl.rank)];
                s.length = sl.length, s.padding = sl.padding; // the last one wins, as before
            }
        uint64_t per = 0;
        for (size_t r = 0; r < W; ++r)
            per = std::max(per, l.segments[row + r].length + l.segments[row + r].padding);
        l.perRank.push_back(per);
    }
}

// Where each rank's share of each flat group begins and ends, in group positions.
struct GroupSpans
{
    std::vector<std::vector<uint64_t>> first, end; // [group][rank]
};

GroupSpans groupSpans(const Tag& tag, size_t W)
{
    int groups = 0;
    for (const auto& p : tag.params)
        groups = std::max(groups, p.group + 1);
    GroupSpans g{std::vector<std::vector<uint64_t>>(size_t(groups), std::vector<uint64_t>(W, UINT64_MAX)),
                 std::vector<std::vector<uint64_t>>(size_t(groups), std::vector<uint64_t>(W, 0))};
    for (const auto& p : tag.params)
        for (const auto& s : p.slices)
            if (p.group >= 0 && size_t(s.rank) < W && s.length) {
                const uint64_t pos = p.groupOffset + s.paramOffset;
                auto& f = g.first[size_t(p.group)][size_t(s.rank)];
                auto& e = g.end[size_t(p.group)][size_t(s.rank)];
                f = std::min(f, pos);
                e = std::max(e, pos + s.length);
            }
    return g;
}

// Flat groups partitioned over ranks (ZeRO-1/2): a rank's share of a group is contiguous in the
// group's flat buffer, so its lane position is the distance from the first element it holds.
// Groups follow one another, each as wide as its widest share, so their boundaries line up.
void flatLanes(const Tag& tag, ShardingLayout& l, size_t W)
{
    l.mode = ShardingLayout::Mode::Lanes;
    const GroupSpans g = groupSpans(tag, W);
    l.groupUsed.assign(g.first.size(), std::vector<uint64_t>(W, 0));
    uint64_t at = 0;
    for (size_t gi = 0; gi < g.first.size(); ++gi) {
        l.groupStarts.push_back(at);
        uint64_t width = 0;
        for (size_t r = 0; r < W; ++r)
            if (g.first[gi][r] != UINT64_MAX) {
                l.groupUsed[gi][r] = g.end[gi][r] - g.first[gi][r];
                width = std::max(width, l.groupUsed[gi][r]);
            }
        at += width;
    }
    l.laneLength = at;
    for (size_t i = 0; i < tag.params.size(); ++i) {
        const auto& p = tag.params[i];
        if (p.group < 0) continue;
        for (const auto& s : p.slices) {
            if (size_t(s.rank) >= W || !s.length) continue;
            ShardingLayout::Segment seg;
            seg.param = int(i);
            seg.rank = s.rank;
            seg.begin = l.groupStarts[size_t(p.group)] + p.groupOffset + s.paramOffset -
                        g.first[size_t(p.group)][size_t(s.rank)];
            seg.length = s.length;
            seg.padding = s.padding;
            l.segments.push_back(seg);
        }
    }
    std::sort(l.segments.begin(), l.segments.end(), [](const auto& a, const auto& b) {
        return a.rank != b.rank ? a.rank < b.rank : a.begin < b.begin;
    });
}

int chunkRanks(const Tag& tag)
{
    int maxRank = 0;
    for (const auto& p : tag.params)
        for (const auto& s : p.slices)
            maxRank = std::max(maxRank, s.rank);
    return maxRank + 1;
}

} // namespace

ShardingLayout shardingLayout(const Tag& tag)
{
    ShardingLayout l;
    l.ranks = tag.worldSize;
    for (const auto& p : tag.params)
        l.names.push_back(p.name);
    l.layer = layerKeys(l.names);
    // A partitioned tag with nothing partitioned in it (every group empty) draws its files.
    const bool grouped = std::any_of(tag.params.begin(), tag.params.end(),
                                     [](const auto& p) { return p.group >= 0 && !p.slices.empty(); });
    const bool partitioned = grouped && tag.worldSize > 0;
    switch (tag.sharding) {
    case Sharding::FlatPartitions:
        if (partitioned) {
            // A pipeline's stages and an MoE model's expert groups partition over ranks beyond
            // the ZeRO partition count: each rank that holds a slice gets its lane.
            l.ranks = std::max(tag.worldSize, chunkRanks(tag));
            flatLanes(tag, l, size_t(l.ranks));
            return l;
        }
        break;
    case Sharding::ParameterPartitions:
        if (partitioned) {
            parameterGrid(tag, l);
            return l;
        }
        break;
    case Sharding::NdChunks:
        if (chunkRanks(tag) > 1) {
            chunkGrid(tag, chunkRanks(tag), l);
            return l;
        }
        break;
    case Sharding::WholeFiles:
        break;
    }
    fileLanes(tag, l);
    return l;
}

} // namespace ckpt::layout
