// One object behind a URL (s3://, http(s)://): its size and validator, pinned by the first
// request, and ranged reads that refuse anything but exactly the bytes asked of that version.
// Also the S3 listing. What reaches it is told by the scheme's Store (url, signing).
#pragma once

#include "io/error.h"
#include "io/job.h"
#include "io/remote/s3_xml.h"
#include "io/remote/transport.h"
#include "io/remote/url.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::io::remote {

struct ByteRange
{
    uint64_t offset = 0;
    uint64_t size = 0;
};

// How requests for one scheme are addressed and signed, and who the credentials are.
class Store
{
public:
    virtual ~Store() = default;
    // A GET (or HEAD) of `url`'s object, signed where the scheme signs; `query` for listings.
    virtual HttpRequest request(const Url& url, const HeaderList& query = {}) const = 0;
    // Said after "the server answered …" so a 403 names the credentials that were used.
    virtual std::string credentialNote() const { return {}; }
    // Objects whose key starts with url's key, every page of them; with oneLevel, only those
    // directly under it, and the "folders" below as prefixes (delimiter '/'). Throws Error for
    // schemes that cannot list (plain HTTP: the format gives the names).
    virtual ListPage list(const Url& prefix, bool oneLevel, const CancelToken* cancel) const;

    // The store for a URL's scheme; s3:// reads its settings from the environment once.
    static std::shared_ptr<const Store> forUrl(const Url& url);
};

class RemoteObject;

struct OpenPlan
{
    std::string url;
    uint64_t knownSize = 0; // from a listing; 0 when unknown
};

struct OpenedObject
{
    std::shared_ptr<RemoteObject> object;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> pieces; // bytes that came with the open, by offset
    std::optional<Error> error; // the object could not be opened; nothing else is set
};

class RemoteObject
{
public:
    // Opens objects together, in one wave of concurrent requests: each one's head, and its last
    // `tail` bytes (a zip's directory) when its known size is larger than both; a small object
    // whole. Each object fails on its own (OpenedObject::error); the call throws only Cancelled.
    static std::vector<OpenedObject> openMany(const std::vector<OpenPlan>& plans, uint64_t head,
                                              uint64_t tail, const CancelToken* cancel = nullptr);
    // Reads the first `head` bytes (fewer when the object is smaller) with one GET, which also
    // gives the size and the ETag (or Last-Modified) every later read must match.
    static std::shared_ptr<RemoteObject> open(const std::string& url, uint64_t head,
                                              std::vector<uint8_t>& headBytes,
                                              const CancelToken* cancel = nullptr);

    const std::string& url() const { return m_url.text; }
    uint64_t size() const { return m_size; }
    const std::string& validator() const { return m_etag.empty() ? m_lastModified : m_etag; }
    // Fills dest[i] with exactly ranges[i]'s bytes, all ranges in flight together. Throws Error
    // naming the URL for anything else: an object changed since open, a server that ignores
    // ranges or sends more than asked, an error status, a connection that never answered.
    void read(const std::vector<ByteRange>& ranges, const std::vector<uint8_t*>& dest,
              const CancelToken* cancel = nullptr) const;

    uint64_t bytesFetched() const { return m_fetched; }
    uint64_t requests() const { return m_requests; }

private:
    RemoteObject() = default;
    HttpRequest rangeRequest(ByteRange r, uint8_t* dest) const;
    void adoptFirst(const HttpResponse& r, uint64_t asked);
    void check(const HttpResponse& resp, ByteRange r) const;

    Url m_url;
    std::shared_ptr<const Store> m_store;
    uint64_t m_size = 0;
    std::string m_etag;
    std::string m_lastModified;
    mutable std::atomic<uint64_t> m_fetched{0};
    mutable std::atomic<uint64_t> m_requests{0};
};

// "the server answered 404 Not Found (NoSuchKey: The specified key does not exist.)"
std::string describeAnswer(const HttpResponse& r);
// Throws the Error for an answer that is not a success, naming url and the credentials used.
[[noreturn]] void failWith(const HttpResponse& r, const std::string& url, const Store& store);

} // namespace ckpt::io::remote
