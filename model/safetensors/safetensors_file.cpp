#include "safetensors/safetensors_file.h"

#include "compute_backend.h"
#include "io/parse_count.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

namespace ckpt::safetensors {

namespace {

// Reference enum order (alignment ascending); the writer sorts by it descending.
int alignmentRank(std::string_view code)
{
    static constexpr std::string_view kOrder[] = {
        "BOOL",    "F4",          "F6_E2M3",     "F6_E3M2", "U8",  "I8",  "F8_E5M2", "F8_E4M3",
        "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "I16",     "U16", "F16", "BF16",    "I32",
        "U32",     "F32",         "C64",         "F64",     "I64", "U64"};
    for (size_t i = 0; i < std::size(kOrder); ++i)
        if (kOrder[i] == code) return int(i);
    return -1;
}

} // namespace

uint64_t TensorInfo::numel() const
{
    return gpu::numelOf(shape);
}

bool SafetensorsFile::looksLikeSafetensors(io::ByteSpan head)
{
    if (head.size() < 9) return false;
    for (size_t i = 8; i < head.size(); ++i) {
        const char c = char(head[i]);
        if (c == '{') return true;
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
    }
    return false;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path)
{
    return open(io::MappedFile::open(path));
}

namespace {

// The steps of SafetensorsFile::open; each fails the way the whole parse does, naming the file.
[[noreturn]] void fail(const std::string& path, const std::string& why, uint64_t at = Error::kNoOffset)
{
    throw Error("safetensors: " + why, path, at);
}

// Parses the JSON header (which starts at byte 8 of the file) into an object.
nlohmann::ordered_json parseHeader(io::ByteSpan json, const std::string& path)
{
    // Duplicate names are forbidden by the spec; nlohmann would silently keep one, so catch them.
    std::set<std::string> seen;
    std::string duplicate;
    nlohmann::ordered_json header;
    try {
        header = nlohmann::ordered_json::parse(
            io::asStringView(json),
            [&](int depth, nlohmann::ordered_json::parse_event_t ev, nlohmann::ordered_json& parsed) {
                if (depth == 1 && ev == nlohmann::ordered_json::parse_event_t::key) {
                    const auto k = parsed.get<std::string>();
                    if (!seen.insert(k).second && duplicate.empty()) duplicate = k;
                }
                return true;
            });
    } catch (const nlohmann::json::exception& e) {
        fail(path, std::string("header is not valid JSON: ") + e.what(), 8);
    }
    if (!duplicate.empty()) fail(path, "header names tensor '" + duplicate + "' twice", 8);
    if (!header.is_object()) fail(path, "header is not a JSON object", 8);
    return header;
}

// The header's "__metadata__" entry: a flat object of strings.
void readMetadata(const nlohmann::ordered_json& v, std::map<std::string, std::string>& metadata,
                  const std::string& path)
{
    if (!v.is_object()) fail(path, "__metadata__ is not an object");
    for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail(path, "__metadata__ value for '" + m.key() + "' is not a string");
        metadata[m.key()] = m.value().get<std::string>();
    }
}

// One tensor entry of the header, with its fields type-checked (offsets are checked later,
// against all the others).
TensorInfo readTensorEntry(const std::string& name, const nlohmann::ordered_json& v, const std::string& path)
{
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
        fail(path, "entry '" + name + "' lacks dtype, shape or data_offsets");
    TensorInfo t;
    t.name = name;
    if (!v["dtype"].is_string()) fail(path, "entry '" + name + "' has a non-string dtype");
    t.code = v["dtype"].get<std::string>();
    auto dt = torch::fromSafetensors(t.code);
    if (!dt) fail(path, "entry '" + name + "' has unsupported dtype '" + t.code + "'");
    t.dtype = *dt;
    if (!v["shape"].is_array()) fail(path, "entry '" + name + "' has a non-array shape");
    for (const auto& s : v["shape"]) {
        if (!s.is_number_unsigned())
            fail(path, "entry '" + name + "' has a negative or non-integer dimension");
        const uint64_t d = s.get<uint64_t>();
        if (d > uint64_t(INT64_MAX)) fail(path, "entry '" + name + "' has an absurd dimension");
        t.shape.push_back(int64_t(d));
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
        fail(path, "entry '" + name + "' has malformed data_offsets");
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    return t;
}

// Reference validation: sorted by offsets, contiguous from 0, sizes match shapes, no trailing bytes.
void checkDataLayout(const std::vector<TensorInfo>& tensors, uint64_t dataOffset, uint64_t fileSize,
                     const std::string& path)
{
    std::vector<const TensorInfo*> sorted;
    for (const auto& t : tensors)
        sorted.push_back(&t);
    std::sort(sorted.begin(), sorted.end(), [](const TensorInfo* a, const TensorInfo* b) {
        return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
    });
    uint64_t expect = 0;
    for (const TensorInfo* t : sorted) {
        if (t->begin != expect || t->end < t->begin)
            fail(path, "tensor '" + t->name + "' has offsets [" + std::to_string(t->begin) + ", " +
                           std::to_string(t->end) + ") but the previous tensor ends at " +
                           std::to_string(expect) + " (gap or overlap)");
        uint64_t numel = 1;
        for (int64_t d : t->shape) {
            if (d != 0 && numel > UINT64_MAX / 64 / uint64_t(d))
                fail(path, "tensor '" + t->name + "' shape overflows");
            numel *= uint64_t(d);
        }
        if (numel * torch::elementSize(t->dtype) != t->end - t->begin)
            fail(path, "tensor '" + t->name + "' has " + std::to_string(t->end - t->begin) +
                           " bytes but its shape needs " +
                           std::to_string(numel * torch::elementSize(t->dtype)));
        expect = t->end;
    }
    if (dataOffset + expect != fileSize)
        fail(path, "data section is " + std::to_string(fileSize - dataOffset) +
                       " bytes but the tensors cover " + std::to_string(expect));
}

} // namespace

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(std::shared_ptr<const io::MappedFile> file)
{
    ++s_parses;
    auto f = std::make_unique<SafetensorsFile>();
    f->m_file = std::move(file);
    io::ParseCount::add(f->m_file->path());
    const std::string path = f->m_file->path();
    const io::ByteSpan all = f->m_file->bytes();

    if (all.size() < 8) fail(path, "file is shorter than the 8-byte header length");
    f->m_file->ensure(0, 8);
    const uint64_t n = io::loadLE<uint64_t>(all.data());
    if (n > kMaxHeaderSize) fail(path, "header length " + std::to_string(n) + " exceeds the 100 MB limit", 0);
    if (n > all.size() - 8)
        fail(path, "header length " + std::to_string(n) + " runs past the end of the file", 0);
    f->m_dataOffset = 8 + n;
    f->m_file->ensure(8, n);

    const nlohmann::ordered_json header = parseHeader(all.subspan(8, n), path);
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__")
            readMetadata(it.value(), f->m_metadata, path);
        else
            f->m_tensors.push_back(readTensorEntry(it.key(), it.value(), path));
    }
    checkDataLayout(f->m_tensors, f->m_dataOffset, all.size(), path);
    return f;
}

std::string buildHeader(std::vector<OutTensor>& tensors, const std::map<std::string, std::string>& metadata)
{
    std::stable_sort(tensors.begin(), tensors.end(), [](const OutTensor& a, const OutTensor& b) {
        const int ra = alignmentRank(torch::info(a.dtype).safetensors);
        const int rb = alignmentRank(torch::info(b.dtype).safetensors);
        if (ra != rb) return ra > rb;
        return a.name < b.name;
    });
    // Written by hand so key order is exactly the reference's: metadata, then tensors in data order.
    std::string h = "{";
    auto str = [](const std::string& s) { return nlohmann::json(s).dump(); };
    if (!metadata.empty()) {
        h += "\"__metadata__\":{";
        bool first = true;
        for (const auto& [k, v] : metadata) {
            if (!first) h += ",";
            first = false;
            h += str(k) + ":" + str(v);
        }
        h += "}";
    }
    uint64_t offset = 0;
    for (const OutTensor& t : tensors) {
        if (h.size() > 1) h += ",";
        h +=
            str(t.name) + ":{\"dtype\":\"" + std::string(torch::info(t.dtype).safetensors) + "\",\"shape\":[";
        for (size_t i = 0; i < t.shape.size(); ++i)
            h += (i ? "," : "") + std::to_string(t.shape[i]);
        h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.nbytes) + "]}";
        offset += t.nbytes;
    }
    h += "}";
    h.append((8 - h.size() % 8) % 8, ' ');
    if (h.size() > kMaxHeaderSize) throw Error("safetensors header would exceed 100 MB (too many tensors)");
    return h;
}

} // namespace ckpt::safetensors
