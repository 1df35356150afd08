#include "ops/verify.h"

#include "io/archive.h"
#include "io/error.h"
#include "io/input_file.h"
#include "io/location.h"
#include "io/mapped_file.h"
#include "io/output.h"
#include "io/zip_reader.h"
#include "layout/family.h"
#include "ops/describe_json.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <set>
#include <thread>
#include <zlib.h>

namespace ckpt::ops {

namespace {

constexpr uint64_t kChunk = 8u << 20;
constexpr uint64_t kMaxManifestBytes = 256u << 20;
const char* const kIntegrityName = "integrity.json"; // Megatron-Core's manifest
const char* const kTensorDigestName = "xxh3-64 of each tensor's elements in C order, as stored";

// The bytes [offset, offset + size) of `file` through `eat`, a chunk at a time: a remote file's
// ranges are fetched as they come, and the pages read are released after, so a terabyte file
// costs a chunk of memory.
template <class Eat>
void stream(const io::MappedFile& file, uint64_t offset, uint64_t size, const CancelToken& cancel, Eat&& eat)
{
    for (uint64_t done = 0; done < size;) {
        cancel.throwIfCancelled();
        const uint64_t n = std::min(kChunk, size - done);
        file.ensure(offset + done, n);
        const uint8_t* p = file.bytes().data() + offset + done;
        eat(p, n);
        file.release(p, n);
        done += n;
    }
}

std::string hex32(uint32_t v)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08x", v);
    return buf;
}

class Sha256
{
public:
    Sha256() : m_ctx(EVP_MD_CTX_new()) { EVP_DigestInit_ex(m_ctx, EVP_sha256(), nullptr); }
    ~Sha256() { EVP_MD_CTX_free(m_ctx); }
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const uint8_t* p, uint64_t n) { EVP_DigestUpdate(m_ctx, p, n); }
    std::string hex()
    {
        unsigned char d[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_DigestFinal_ex(m_ctx, d, &n);
        std::string s;
        for (unsigned int i = 0; i < n; ++i) {
            char b[3];
            std::snprintf(b, sizeof b, "%02x", d[i]);
            s += b;
        }
        return s;
    }

private:
    EVP_MD_CTX* m_ctx;
};

void writeJsonFile(const std::vector<std::string>& inputs, const std::string& path,
                   const nlohmann::ordered_json& j)
{
    io::OutputTransaction tx(inputs, path, io::OutputTransaction::Shape::File);
    io::AtomicFile& file = tx.create();
    const std::string text = j.dump(2) + "\n";
    file.write(text.data(), text.size());
    file.finish();
    tx.commit();
}

// Every record of a zip container: its CRC-32 and sizes against what the directory records.
void checkZipRecords(const std::shared_ptr<const io::MappedFile>& file, FileVerdict& v,
                     const CancelToken& cancel)
{
    const io::ZipReader zip(file); // the directory against the file and the local headers
    for (const io::ZipEntry& e : zip.entries()) {
        uLong crc = crc32_z(0L, Z_NULL, 0);
        uint64_t got = 0;
        if (e.method == 0) {
            if (e.compressedSize != e.size) {
                v.problems.push_back("record '" + e.name + "': stored, but its sizes differ (" +
                                     std::to_string(e.compressedSize) + " and " + std::to_string(e.size) +
                                     ")");
                continue;
            }
            stream(*file, e.dataOffset, e.size, cancel, [&](const uint8_t* p, uint64_t n) {
                crc = crc32_z(crc, p, n);
                got += n;
            });
        } else {
            // A deflated record (a checkpoint zipped again by a user) inflates into memory once.
            const io::Blob b = zip.read(e);
            crc = crc32_z(crc, b.bytes.data(), b.bytes.size());
            got = b.bytes.size();
        }
        if (got != e.size)
            v.problems.push_back("record '" + e.name + "' holds " + std::to_string(got) +
                                 " bytes where the directory records " + std::to_string(e.size));
        else if (uint32_t(crc) != e.crc32)
            v.problems.push_back("record '" + e.name + "': CRC-32 " + hex32(uint32_t(crc)) +
                                 " where the zip records " + hex32(e.crc32) +
                                 ": its bytes changed after they were written");
    }
}

// What one file's bytes prove by their format; its SHA-256 too when `hash`, and each tensor's
// digest when `digests` (read again from the page cache: a manifest is asked for rarely, and the
// format's checks stream by record).
void checkFile(FileVerdict& v, bool hash, bool digests, const CancelToken& cancel)
{
    try {
        const auto file = io::MappedFile::open(v.path);
        v.size = file->size();
        if (v.size == 0) throw Error("the file is empty");
        file->ensure(0, std::min<uint64_t>(v.size, 64));
        const io::ByteSpan head = file->bytes().first(std::min<uint64_t>(v.size, 64));
        const std::string wrapper = io::wrapperOf(head);
        const auto endsWith = [&](const char* e) {
            const std::string s(e);
            return v.name.size() >= s.size() && v.name.compare(v.name.size() - s.size(), s.size(), s) == 0;
        };
        if (endsWith(".distcp")) {
            // DCP's data: items written one after another at the offsets .metadata records (some
            // are torch.save zips, most are raw bytes); its family checked that each lies inside
            // the file when it opened the tag. No format checksum covers the bytes.
            v.format = "dcp data";
        } else if (endsWith(".metadata")) {
            v.format = "dcp metadata"; // parsed whole by its family when it opened the tag
        } else if (io::ZipReader::looksLikeZip(head)) {
            v.format = "zip";
            checkZipRecords(file, v, cancel);
            if (v.problems.empty() && torch::TorchFile::looksLikeTorch(head)) {
                v.format = "torch zip";
                // The pickle parses; every storage is there, with its length.
                const auto tf = torch::TorchFile::open(file);
                if (digests) v.tensors = tensorDigests(*tf, cancel);
            }
        } else if (torch::TorchFile::looksLikeTorch(head)) {
            v.format = "torch legacy";
            const auto tf = torch::TorchFile::open(file);
            if (digests) v.tensors = tensorDigests(*tf, cancel);
        } else if (safetensors::SafetensorsFile::looksLikeSafetensors(head)) {
            v.format = "safetensors";
            const auto sf =
                safetensors::SafetensorsFile::open(file); // header, offsets covering the data, size
            if (digests) v.tensors = tensorDigests(*sf, cancel);
        } else if (!wrapper.empty()) {
            v.format = "archive (" + wrapper + ")";
            io::unwrap(v.path, [](const std::string&) { return false; }); // read to its end
        } else if (endsWith(".json")) {
            v.format = "json";
            if (v.size > kMaxManifestBytes) throw Error("a JSON file over 256 MiB");
            file->ensure(0, v.size);
            const io::ByteSpan all = file->bytes();
            if (!nlohmann::json::accept(all.begin(), all.end())) throw Error("not valid JSON");
        } else {
            v.format = endsWith(".distcp") ? "dcp data" : "data";
        }
        if (hash) {
            Sha256 sha;
            stream(*file, 0, v.size, cancel, [&](const uint8_t* p, uint64_t n) { sha.update(p, n); });
            v.sha256 = sha.hex();
        }
    } catch (const Cancelled&) {
        throw;
    } catch (const Error& e) {
        v.problems.push_back(e.message());
    } catch (const std::exception& e) {
        v.problems.push_back(e.what());
    }
    if (!v.problems.empty())
        v.status = "damaged";
    else if (v.format == "data" || v.format == "dcp data")
        v.status = "not covered"; // until a manifest covers it
    else
        v.status = "ok";
}

// A manifest: what it records of each file, by name relative to `base`.
struct Manifest
{
    struct File
    {
        int64_t size = -1;                       // -1: not recorded (Megatron's integrity.json)
        std::string sha256;                      // "": not recorded (an export's manifest: its tensors only)
        std::map<std::string, uint64_t> tensors; // key -> xxh3-64
    };
    std::string path, base;
    std::map<std::string, File> files;
};

Manifest readManifest(const std::string& path, const std::string& base)
{
    Manifest m;
    m.path = path;
    m.base = base;
    const auto j = nlohmann::json::parse(io::readSmallFile(path, kMaxManifestBytes), nullptr, false);
    if (!j.is_object() || !j.contains("files") || !j["files"].is_object())
        throw Error("not a manifest (a JSON object with \"files\")", path);
    if (j.contains("algorithm") && j["algorithm"] != "sha256")
        throw Error("the manifest's algorithm is " + j["algorithm"].dump() + "; sha256 is the one read",
                    path);
    for (const auto& [name, entry] : j["files"].items()) {
        Manifest::File& f = m.files[name];
        if (entry.is_string()) { // Megatron's integrity.json: name -> hex
            f.sha256 = entry.get<std::string>();
            continue;
        }
        if (!entry.is_object()) throw Error("file '" + name + "' is recorded as " + entry.dump(), path);
        if (const auto it = entry.find("size"); it != entry.end()) {
            if (!it->is_number_unsigned())
                throw Error("file '" + name + "' has a size that is not one", path);
            f.size = it->get<int64_t>();
        }
        if (const auto it = entry.find("sha256"); it != entry.end() && it->is_string())
            f.sha256 = it->get<std::string>();
        if (const auto it = entry.find("tensors"); it != entry.end() && it->is_object())
            for (const auto& [key, hex] : it->items()) {
                const auto d = hex.is_string() ? parseDigestHex(hex.get<std::string>()) : std::nullopt;
                if (!d)
                    throw Error("tensor '" + key + "' of file '" + name + "' has no xxh3-64 digest", path);
                f.tensors[key] = *d;
            }
        if (f.sha256.empty() && f.tensors.empty())
            throw Error("file '" + name + "' has neither a sha256 nor tensor digests", path);
    }
    return m;
}

// The folders whose files a verification reads: each tag's, or the file itself.
struct Scope
{
    std::string base;                                       // names are relative to it
    std::vector<std::pair<std::string, std::string>> files; // path, name
};

bool isFile(const std::string& path)
{
    return io::pathKind(path) == io::PathKind::File;
}

// A path as one file is known by however it was reached (a local path made absolute and normal).
std::string identity(const std::string& path)
{
    if (io::isRemotePath(path)) return path;
    return std::filesystem::absolute(path).lexically_normal().string();
}

// `path` named relative to the scope's folder where it lies in it.
std::string nameIn(const Scope& s, const std::string& path)
{
    const std::string base = identity(s.base), p = identity(path);
    return p.rfind(base + "/", 0) == 0 ? p.substr(base.size() + 1) : path;
}

void addFile(Scope& s, const std::string& path, std::set<std::string>& seen)
{
    if (seen.insert(identity(path)).second) s.files.push_back({path, nameIn(s, path)});
}

void addFolder(Scope& s, const std::string& dir, std::set<std::string>& seen)
{
    for (const io::FileBelow& f : io::listFilesBelow(dir))
        addFile(s, io::childPath(dir, f.relative), seen);
}

// The checkpoint folder's tags to verify, by its family, into `scope`: false when its family
// recognises it but cannot open it (the error is then the report's first problem). Throws Error
// for a folder no family recognises: nothing to check it against.
bool openFolder(const std::string& path, const VerifyOptions& options, VerifyReport& r, Scope& scope,
                std::set<std::string>& seen)
{
    const layout::Family& family = layout::familyOf(path);
    std::shared_ptr<const layout::OpenedCheckpoint> opened;
    try {
        opened = layout::openCheckpoint(path);
    } catch (const Cancelled&) {
        throw;
    } catch (const Error& e) {
        r.family = std::string(family.displayName());
        r.problems.push_back(e.file().empty() ? path + ": " + e.message() : std::string(e.what()));
        return false;
    }
    const layout::Checkpoint& ck = opened->model;
    r.family = ck.familyName;
    scope.base = io::normalFolder(ck.root.empty() ? path : ck.root);
    for (const std::string& w : ck.warnings)
        if (w.find("'latest'") != std::string::npos)
            r.problems.push_back(io::childPath(scope.base, "latest") + ": " + w);
    std::vector<const layout::Tag*> tags;
    if (options.allTags)
        for (const auto& t : ck.tags)
            tags.push_back(&t);
    else
        tags.push_back(&opened->chooseTag(options.tag));
    for (const layout::Tag* t : tags) {
        r.tags.push_back(t->name);
        if (!t->unreadable.empty())
            r.problems.push_back(
                "tag " + t->name + ": " +
                (t->unreadableError ? std::string(t->unreadableError->what()) : t->unreadable));
        const std::string dir = t->dir.empty() ? scope.base : io::normalFolder(t->dir);
        if (isFile(dir))
            addFile(scope, dir, seen);
        else
            addFolder(scope, dir, seen);
        // Files of the tag outside its folder (a Trainer's files beside its DeepSpeed tag), and
        // the archives whose members it reads (Composer's tarballs: "<archive>!<member>").
        for (const auto& f : t->files) {
            const std::string file = f.path.substr(0, f.path.find('!'));
            if (isFile(file)) addFile(scope, file, seen);
        }
    }
    return true;
}

} // namespace

size_t VerifyReport::damagedFiles() const
{
    return size_t(std::count_if(files.begin(), files.end(), [](const FileVerdict& f) {
        return f.status == "damaged" || f.status == "missing";
    }));
}

namespace {

// A file given alone: its bytes say all there is, even where no family can open it (which is then
// its first problem).
void openFile(const std::string& path, VerifyReport& r, Scope& scope)
{
    scope.base = io::parentPath(path);
    scope.files.push_back({path, io::fileName(path)});
    try {
        const auto opened = layout::openCheckpoint(path);
        r.family = opened->model.familyName;
        for (const auto& t : opened->model.tags)
            if (!t.unreadable.empty())
                r.problems.push_back(t.unreadableError ? std::string(t.unreadableError->what())
                                                       : t.unreadable);
    } catch (const Cancelled&) {
        throw;
    } catch (const Error& e) {
        r.family = "file";
        r.problems.push_back(e.file().empty() ? path + ": " + e.message() : std::string(e.what()));
    }
}

// Every file of the scope into r.files, checked in parallel, each read once by its format's
// checks (and hashed when `hash`); their bytes in all, as far as known beforehand.
uint64_t checkFiles(const Scope& scope, bool hash, const std::set<std::string>& digested, VerifyReport& r,
                    const ProgressSink& progress, const CancelToken& cancel)
{
    r.files.resize(scope.files.size());
    uint64_t total = 0;
    for (size_t i = 0; i < scope.files.size(); ++i) {
        r.files[i].path = scope.files[i].first;
        r.files[i].name = scope.files[i].second;
        total += io::knownSize(r.files[i].path).value_or(0);
    }
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> done{0};
    std::mutex lock;
    std::exception_ptr failed;
    auto work = [&] {
        for (size_t i; (i = next++) < r.files.size();) {
            try {
                checkFile(r.files[i], hash, digested.count("*") || digested.count(r.files[i].path), cancel);
            } catch (...) {
                const std::lock_guard<std::mutex> g(lock);
                if (!failed) failed = std::current_exception();
                next = r.files.size();
                return;
            }
            const uint64_t d = done += r.files[i].size;
            const std::lock_guard<std::mutex> g(lock);
            if (progress)
                progress(
                    {int(total ? std::min<uint64_t>(d, total) * 1000 / total : 1000), "verifying", d, total});
        }
    };
    std::vector<std::thread> threads;
    const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
    for (size_t t = 1; t < std::min(n, r.files.size()); ++t)
        threads.emplace_back(work);
    work();
    for (auto& t : threads)
        t.join();
    if (failed) std::rethrow_exception(failed);
    r.bytes = done;
    return total;
}

// A file's tensors against the digests a manifest records of them: each one changed, gone or new
// named (the file's SHA-256 says only that something in it changed).
void checkTensors(const Manifest::File& entry, const std::string& manifest, FileVerdict& f)
{
    if (entry.tensors.empty() || f.status == "damaged") return; // damaged: its tensors did not read
    std::map<std::string, uint64_t> found;
    for (const TensorDigest& d : f.tensors)
        found.emplace(d.key, d.xxh3);
    for (const auto& [key, digest] : entry.tensors) {
        const auto it = found.find(key);
        if (it == found.end())
            f.problems.push_back("tensor '" + key + "': recorded by the manifest " + manifest +
                                 ", but not in the file");
        else if (it->second != digest)
            f.problems.push_back("tensor '" + key + "': xxh3 " + digestHex(it->second) +
                                 " where the manifest records " + digestHex(digest) + ": its values changed");
    }
    for (const auto& [key, digest] : found)
        if (!entry.tensors.count(key))
            f.problems.push_back("tensor '" + key + "': not recorded by the manifest " + manifest);
}

// The files against one manifest: its sizes and hashes, the files it names that are gone, and
// those beside it that it does not name.
void applyManifest(const Manifest& m, VerifyReport& r)
{
    r.manifest = m.path;
    std::set<std::string> named;
    for (const auto& [name, entry] : m.files) {
        const std::string p = io::childPath(m.base, name);
        named.insert(p);
        auto f =
            std::find_if(r.files.begin(), r.files.end(), [&](const FileVerdict& x) { return x.path == p; });
        if (f == r.files.end()) {
            FileVerdict gone;
            gone.path = p;
            gone.name = name;
            gone.status = "missing";
            gone.problems.push_back("named by the manifest " + m.path + ", but not there");
            r.files.push_back(std::move(gone));
            continue;
        }
        if (entry.size >= 0 && uint64_t(entry.size) != f->size)
            f->problems.push_back("holds " + std::to_string(f->size) + " bytes where the manifest records " +
                                  std::to_string(entry.size));
        else if (!entry.sha256.empty() && !f->sha256.empty() && f->sha256 != entry.sha256)
            f->problems.push_back("SHA-256 " + f->sha256 + " where the manifest records " + entry.sha256);
        checkTensors(entry, m.path, *f);
        if (!f->problems.empty())
            f->status = "damaged";
        else if (f->status == "not covered")
            f->status = "ok";
    }
    for (const FileVerdict& f : r.files)
        if (!named.count(f.path) && io::fileName(f.path) != kIntegrityName &&
            f.path.rfind(m.base + "/", 0) == 0)
            r.notes.push_back(f.name + ": not in the manifest " + m.path);
}

// The manifest of the files verified, ours or Megatron's integrity.json.
void writeVerifiedManifest(const std::string& input, const VerifyOptions& options, const VerifyReport& r)
{
    if (!options.megatronManifest) {
        std::vector<ManifestEntry> files;
        for (const FileVerdict& f : r.files)
            if (f.status != "missing") files.push_back({f.name, f.size, f.sha256, f.tensors});
        writeManifest({input}, options.writeManifest, files, nullptr);
        return;
    }
    nlohmann::ordered_json j;
    j["algorithm"] = "sha256";
    for (const FileVerdict& f : r.files)
        if (f.status != "missing" && io::fileName(f.path) != kIntegrityName) j["files"][f.name] = f.sha256;
    writeJsonFile({input}, options.writeManifest, j);
}

} // namespace

VerifyReport verify(const std::string& path, const VerifyOptions& options, const ProgressSink& progress,
                    const CancelToken& cancel)
{
    io::requireOpenable(path);
    // A manifest is written as every output is: never on, inside or around what it describes (a
    // Megatron integrity.json is copied into the iteration folder by the user, knowingly).
    if (!options.writeManifest.empty())
        io::OutputTransaction::precheck({path}, options.writeManifest, io::OutputTransaction::Shape::File);
    VerifyReport r;
    r.checkpoint = path;
    Scope scope;
    std::set<std::string> seen;
    if (progress) progress({0, "reading the checkpoint layout", 0, 0});
    if (isFile(path)) {
        openFile(path, r, scope);
    } else if (!openFolder(path, options, r, scope, seen)) {
        // A folder its family recognises but cannot open is damaged (a .distcp cut short, an index
        // naming a shard that is gone): said, and its files still checked one by one.
        scope.base = io::normalFolder(path);
        addFolder(scope, scope.base, seen);
    }

    // The manifests: the one given, and Megatron's integrity.json wherever it lies among the files.
    std::vector<Manifest> manifests;
    if (!options.manifest.empty()) manifests.push_back(readManifest(options.manifest, scope.base));
    for (const auto& [p, name] : scope.files)
        if (io::fileName(p) == kIntegrityName && options.manifest.empty())
            manifests.push_back(readManifest(p, io::parentPath(p)));

    // Tensor digests: of every file for a manifest written, else of those a manifest records them of.
    std::set<std::string> digested;
    if (!options.writeManifest.empty() && !options.megatronManifest) digested.insert("*");
    for (const Manifest& m : manifests)
        for (const auto& [name, f] : m.files)
            if (!f.tensors.empty()) digested.insert(io::childPath(m.base, name));
    const uint64_t total = checkFiles(scope, !manifests.empty() || !options.writeManifest.empty(), digested,
                                      r, progress, cancel);
    for (const Manifest& m : manifests)
        applyManifest(m, r);
    const size_t uncovered = size_t(std::count_if(
        r.files.begin(), r.files.end(), [](const FileVerdict& f) { return f.status == "not covered"; }));
    if (uncovered)
        r.notes.push_back(std::to_string(uncovered) +
                          " file(s) hold data no checksum covers (their format records none): a manifest "
                          "(--write-manifest, then --manifest) covers them");
    if (!options.writeManifest.empty()) {
        writeVerifiedManifest(path, options, r);
        r.manifestWritten = options.writeManifest;
    }
    std::sort(r.files.begin(), r.files.end(),
              [](const FileVerdict& a, const FileVerdict& b) { return a.name < b.name; });
    if (progress) progress({1000, "done", r.bytes, total});
    return r;
}

void writeManifest(const std::vector<std::string>& inputs, const std::string& path,
                   const std::vector<ManifestEntry>& files, const nlohmann::ordered_json& source)
{
    nlohmann::ordered_json j;
    j["format"] = "checkpoint-studio manifest";
    j["version"] = 2;
    j["algorithm"] = "sha256";
    j["tensor_digest"] = kTensorDigestName;
    if (!source.is_null()) j["source"] = source;
    j["files"] = nlohmann::ordered_json::object();
    for (const ManifestEntry& f : files) {
        auto& e = j["files"][f.name] = {{"size", f.size}};
        if (!f.sha256.empty()) e["sha256"] = f.sha256;
        for (const TensorDigest& d : f.tensors)
            e["tensors"][d.key] = digestHex(d.xxh3);
    }
    writeJsonFile(inputs, path, j);
}

nlohmann::ordered_json toJson(const VerifyReport& r)
{
    return describedJson(r);
}

} // namespace ckpt::ops
