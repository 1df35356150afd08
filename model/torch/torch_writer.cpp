#include "torch/torch_writer.h"

#include "io/tensor_hasher.h"
#include "torch/chunk_stream.h"

#include <algorithm>
#include <map>
#include <memory>
#include <xxhash.h>
#include <zlib.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace ckpt::torch {

namespace {

constexpr uint64_t kAlign = 64;

#if defined(__x86_64__)
// zlib's crc32 (the zip polynomial, reflected) folded with carry-less multiplication, 16 bytes a
// step in four lanes (Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ",
// with Chromium zlib's constants): several times zlib's slice-by-8 tables.
__attribute__((target("pclmul,sse4.1"))) uint32_t crc32Folded(uint32_t crc, const uint8_t* buf, size_t len)
{
    // len >= 64, a multiple of 16; crc pre- and post-inverted by the caller
    alignas(16) static const uint64_t k1k2[] = {0x0154442bd4, 0x01c6e41596};
    alignas(16) static const uint64_t k3k4[] = {0x01751997d0, 0x00ccaa009e};
    alignas(16) static const uint64_t k5k0[] = {0x0163cd6124, 0x0000000000};
    alignas(16) static const uint64_t poly[] = {0x01db710641, 0x01f7011641};
    __m128i x0, x1, x2, x3, x4, x5, x6, x7, x8;
    x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x00));
    x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x10));
    x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x20));
    x4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x30));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128(int(crc)));
    x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(k1k2));
    buf += 64;
    len -= 64;
    while (len >= 64) {
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x6 = _mm_clmulepi64_si128(x2, x0, 0x00);
        x7 = _mm_clmulepi64_si128(x3, x0, 0x00);
        x8 = _mm_clmulepi64_si128(x4, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x2 = _mm_clmulepi64_si128(x2, x0, 0x11);
        x3 = _mm_clmulepi64_si128(x3, x0, 0x11);
        x4 = _mm_clmulepi64_si128(x4, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x5),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x00)));
        x2 = _mm_xor_si128(_mm_xor_si128(x2, x6),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x10)));
        x3 = _mm_xor_si128(_mm_xor_si128(x3, x7),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x20)));
        x4 = _mm_xor_si128(_mm_xor_si128(x4, x8),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf + 0x30)));
        buf += 64;
        len -= 64;
    }
    x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(k3k4));
    for (__m128i next : {x2, x3, x4}) {
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, next), x5);
    }
    while (len >= 16) {
        x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(buf));
        x5 = _mm_clmulepi64_si128(x1, x0, 0x00);
        x1 = _mm_clmulepi64_si128(x1, x0, 0x11);
        x1 = _mm_xor_si128(_mm_xor_si128(x1, x2), x5);
        buf += 16;
        len -= 16;
    }
    x2 = _mm_clmulepi64_si128(x1, x0, 0x10);
    x3 = _mm_setr_epi32(~0, 0, ~0, 0);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(k5k0));
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, x3), x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    x0 = _mm_load_si128(reinterpret_cast<const __m128i*>(poly));
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, x3), x0, 0x10);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, x3), x0, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return uint32_t(_mm_extract_epi32(x1, 1));
}

#endif

// crc32 as zlib computes it, for any length.
uint32_t crc32Fast(uint32_t crc, const uint8_t* p, uint64_t n)
{
#if defined(__x86_64__)
    static const bool folded = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    if (folded && n >= 64) {
        const uint64_t m = n & ~uint64_t(15);
        crc = ~crc32Folded(~crc, p, m);
        p += m;
        n -= m;
    }
#endif
    while (n) {
        const uInt part = uInt(std::min<uint64_t>(n, 1u << 30));
        crc = uint32_t(crc32(crc, p, part));
        p += part;
        n -= part;
    }
    return crc;
}

void put16(std::string& s, uint16_t v)
{
    s.append(reinterpret_cast<const char*>(&v), 2);
}
void put32(std::string& s, uint32_t v)
{
    s.append(reinterpret_cast<const char*>(&v), 4);
}
void put64(std::string& s, uint64_t v)
{
    s.append(reinterpret_cast<const char*>(&v), 8);
}

// Pickle protocol 2 with only the opcodes and globals torch's weights_only unpickler accepts.
class Pickler
{
public:
    std::string bytes;

    void proto() { bytes += "\x80\x02"; }
    void mark() { bytes += '('; }
    void op(char c) { bytes += c; }
    void global(const char* module, const char* name)
    {
        bytes += 'c';
        bytes += module;
        bytes += '\n';
        bytes += name;
        bytes += '\n';
    }
    void str(const std::string& s)
    {
        bytes += 'X';
        put32(bytes, uint32_t(s.size()));
        bytes += s;
    }
    void integer(int64_t v)
    {
        if (v >= 0 && v < 256) {
            bytes += 'K';
            bytes += char(v);
        } else if (v >= 0 && v < 65536) {
            bytes += 'M';
            put16(bytes, uint16_t(v));
        } else if (v >= INT32_MIN && v <= INT32_MAX) {
            bytes += 'J';
            put32(bytes, uint32_t(int32_t(v)));
        } else { // LONG1 with exactly 8 bytes, as libtorch requires
            bytes += "\x8a\x08";
            put64(bytes, uint64_t(v));
        }
    }
    void ints(const std::vector<int64_t>& v)
    {
        if (v.empty()) {
            bytes += ')';
            return;
        }
        mark();
        for (int64_t x : v)
            integer(x);
        bytes += 't';
    }
};

struct Record
{
    std::string name;
    uint64_t offset = 0, size = 0;
    uint32_t crc = 0;
};

class ZipStream
{
public:
    ZipStream(io::AtomicFile& out, std::string prefix) : m_out(out), m_prefix(std::move(prefix)) {}

    // Starts a record of known size; returns after the local header and padding are written.
    void begin(const std::string& name, uint64_t size)
    {
        Record r;
        r.name = m_prefix + "/" + name;
        r.offset = m_pos;
        r.size = size;
        const bool zip64 = size >= 0xFFFFFFFFu || r.offset >= 0xFFFFFFFFu;
        std::string h;
        put32(h, 0x04034b50);
        put16(h, zip64 ? 45 : 0);
        put16(h, size ? 0x0808 : 0x0800); // sizes in a data descriptor; UTF-8 names
        put16(h, 0);                      // stored
        put16(h, 0);                      // 00:00
        put16(h, 0x21);                   // 1980-01-01: deterministic output
        put32(h, 0);
        put32(h, zip64 ? 0xFFFFFFFFu : 0);
        put32(h, zip64 ? 0xFFFFFFFFu : 0);
        put16(h, uint16_t(r.name.size()));
        std::string extra;
        if (zip64) {
            put16(extra, 0x0001);
            put16(extra, 16);
            put64(extra, 0);
            put64(extra, 0);
        }
        const uint64_t start = r.offset + 30 + r.name.size() + extra.size() + 4;
        const uint64_t pad = (kAlign - start % kAlign) % kAlign;
        put16(extra, 0x4246); // 'FB': PyTorch's alignment padding field
        put16(extra, uint16_t(pad));
        extra.append(pad, 'Z');
        put16(h, uint16_t(extra.size()));
        h += r.name;
        h += extra;
        write(h.data(), h.size());
        m_crc = crc32(0L, Z_NULL, 0);
        m_records.push_back(std::move(r));
    }
    void data(const uint8_t* p, uint64_t n)
    {
        m_crc = crc32Fast(uint32_t(m_crc), p, n);
        write(p, n);
    }
    void end()
    {
        Record& r = m_records.back();
        r.crc = uint32_t(m_crc);
        if (!r.size) return;
        const bool zip64 = r.size >= 0xFFFFFFFFu || r.offset >= 0xFFFFFFFFu;
        std::string d;
        put32(d, 0x08074b50);
        put32(d, r.crc);
        if (zip64) {
            put64(d, r.size);
            put64(d, r.size);
        } else {
            put32(d, uint32_t(r.size));
            put32(d, uint32_t(r.size));
        }
        write(d.data(), d.size());
    }
    void record(const std::string& name, const std::string& content)
    {
        begin(name, content.size());
        data(reinterpret_cast<const uint8_t*>(content.data()), content.size());
        end();
    }
    void finish()
    {
        const uint64_t cdStart = m_pos;
        std::string cd;
        for (const Record& r : m_records) {
            const bool bigSize = r.size >= 0xFFFFFFFFu, bigOffset = r.offset >= 0xFFFFFFFFu;
            std::string extra;
            if (bigSize || bigOffset) {
                put16(extra, 0x0001);
                put16(extra, uint16_t((bigSize ? 16 : 0) + (bigOffset ? 8 : 0)));
                if (bigSize) put64(extra, r.size), put64(extra, r.size);
                if (bigOffset) put64(extra, r.offset);
            }
            put32(cd, 0x02014b50);
            put16(cd, 0);
            put16(cd, (bigSize || bigOffset) ? 45 : 0);
            put16(cd, r.size ? 0x0808 : 0x0800);
            put16(cd, 0);
            put16(cd, 0);
            put16(cd, 0x21);
            put32(cd, r.crc);
            put32(cd, bigSize ? 0xFFFFFFFFu : uint32_t(r.size));
            put32(cd, bigSize ? 0xFFFFFFFFu : uint32_t(r.size));
            put16(cd, uint16_t(r.name.size()));
            put16(cd, uint16_t(extra.size()));
            put16(cd, 0);
            put16(cd, 0);
            put16(cd, 0);
            put32(cd, 0);
            put32(cd, bigOffset ? 0xFFFFFFFFu : uint32_t(r.offset));
            cd += r.name;
            cd += extra;
        }
        write(cd.data(), cd.size());
        const uint64_t eocd64 = m_pos, n = m_records.size();
        std::string e;
        put32(e, 0x06064b50);
        put64(e, 44);
        put16(e, 0x031E);
        put16(e, 45);
        put32(e, 0);
        put32(e, 0);
        put64(e, n);
        put64(e, n);
        put64(e, cd.size());
        put64(e, cdStart);
        put32(e, 0x07064b50);
        put32(e, 0);
        put64(e, eocd64);
        put32(e, 1);
        put32(e, 0x06054b50);
        put16(e, 0);
        put16(e, 0);
        put16(e, uint16_t(std::min<uint64_t>(n, 0xFFFF)));
        put16(e, uint16_t(std::min<uint64_t>(n, 0xFFFF)));
        put32(e, uint32_t(std::min<uint64_t>(cd.size(), 0xFFFFFFFFu)));
        put32(e, uint32_t(std::min<uint64_t>(cdStart, 0xFFFFFFFFu)));
        put16(e, 0);
        write(e.data(), e.size());
    }

private:
    void write(const void* p, uint64_t n)
    {
        m_out.write(p, n);
        m_pos += n;
    }

    io::AtomicFile& m_out;
    std::string m_prefix;
    uint64_t m_pos = 0;
    uLong m_crc = 0;
    std::vector<Record> m_records;
};

} // namespace

std::vector<uint64_t> writeTorchZip(io::AtomicFile& out, const std::vector<OutTensor>& tensors,
                                    const std::vector<Alias>& aliases, const std::string& archiveName,
                                    const std::function<void(uint64_t)>& onBytes,
                                    const io::CancelToken& cancel)
{
    std::map<std::string, size_t> keyOf;
    Pickler p;
    p.proto();
    p.op('}');
    p.mark();
    auto emit = [&](const std::string& name, const OutTensor& t, size_t key) {
        const auto& inf = info(t.dtype);
        if (inf.storageClass.empty())
            throw Error("cannot write " + std::string(inf.name) + " tensors to a .bin file", out.finalPath());
        p.str(name);
        p.global("torch._utils", "_rebuild_tensor_v2");
        p.mark();
        p.mark();
        p.str("storage");
        p.global("torch", std::string(inf.storageClass).c_str());
        p.str(std::to_string(key));
        p.str("cpu");
        p.integer(int64_t(t.nbytes / inf.size));
        p.op('t');
        p.op('Q');
        p.integer(0);
        p.ints(t.shape);
        std::vector<int64_t> stride(t.shape.size(), 1);
        for (size_t i = t.shape.size(); i-- > 1;)
            stride[i - 1] = stride[i] * std::max<int64_t>(t.shape[i], 1);
        p.ints(stride);
        p.op('\x89'); // requires_grad False
        p.global("collections", "OrderedDict");
        p.op(')');
        p.op('R');
        p.op('t');
        p.op('R');
    };
    for (size_t i = 0; i < tensors.size(); ++i) {
        keyOf[tensors[i].name] = i;
        emit(tensors[i].name, tensors[i], i);
    }
    for (const Alias& a : aliases) {
        auto it = keyOf.find(a.target);
        if (it == keyOf.end())
            throw Error("alias '" + a.name + "' names a missing tensor '" + a.target + "'");
        emit(a.name, tensors[it->second], it->second);
    }
    p.op('u');
    p.op('.');

    std::vector<OutTensor> storages = tensors;
    for (size_t i = 0; i < storages.size(); ++i)
        storages[i].name = std::to_string(i);
    return writeTorchZipRecords(out, archiveName, p.bytes, storages, onBytes, cancel);
}

std::vector<uint64_t> writeTorchZipRecords(io::AtomicFile& out, const std::string& archiveName,
                                           const std::string& pickle, const std::vector<OutTensor>& storages,
                                           const std::function<void(uint64_t)>& onBytes,
                                           const io::CancelToken& cancel)
{
    ZipStream zip(out, archiveName);
    zip.record("data.pkl", pickle);
    zip.record("byteorder", "little");
    // One record per storage, opened when its first chunk arrives (empty ones have none).
    io::TensorHasher hasher(storages.size());
    size_t begun = 0;
    auto beginThrough = [&](size_t last) {
        for (; begun <= last && begun < storages.size(); ++begun) {
            if (begun) zip.end();
            zip.begin("data/" + storages[begun].name, storages[begun].nbytes);
        }
    };
    streamChunks(
        storages,
        [&](size_t i, const uint8_t* data, uint64_t size) {
            beginThrough(i);
            zip.data(data, size);
            if (onBytes) onBytes(size);
        },
        cancel, &hasher);
    if (!storages.empty()) {
        beginThrough(storages.size() - 1);
        zip.end();
    }
    zip.record("version", "3\n");
    zip.finish();
    return hasher.digests();
}

} // namespace ckpt::torch
