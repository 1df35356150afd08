#include "io/remote/s3_xml.h"

#include "io/error.h"

#include <charconv>
#include <expat.h>
#include <functional>
#include <memory>
#include <utility>

namespace ckpt::io::remote {

namespace {

// Collects the text of elements by their path from the root ("ListBucketResult/Contents/Key"),
// calling back at the end of each element; the documents are small and flat, so this is all
// the structure the two parsers need.
class PathCollector
{
public:
    using OnEnd = std::function<void(const std::string& path, const std::string& text)>;
    explicit PathCollector(OnEnd onEnd) : m_onEnd(std::move(onEnd)) {}

    // False when the text is not well-formed XML (or uses a DTD, which no S3 answer has).
    bool parse(std::string_view xml)
    {
        std::unique_ptr<XML_ParserStruct, decltype(&XML_ParserFree)> p(XML_ParserCreate("UTF-8"),
                                                                       XML_ParserFree);
        if (!p) return false;
        XML_SetUserData(p.get(), this);
        XML_SetElementHandler(p.get(), &PathCollector::start, &PathCollector::end);
        XML_SetCharacterDataHandler(p.get(), &PathCollector::text);
        XML_SetStartDoctypeDeclHandler(p.get(), &PathCollector::doctype);
        const bool ok = XML_Parse(p.get(), xml.data(), int(xml.size()), XML_TRUE) == XML_STATUS_OK;
        return ok && !m_sawDoctype;
    }

private:
    static void start(void* self, const XML_Char* name, const XML_Char**)
    {
        auto* c = static_cast<PathCollector*>(self);
        c->m_stack.push_back(c->m_path.size());
        if (!c->m_path.empty()) c->m_path += '/';
        c->m_path += localName(name);
        c->m_text.clear();
    }
    static void end(void* self, const XML_Char*)
    {
        auto* c = static_cast<PathCollector*>(self);
        c->m_onEnd(c->m_path, c->m_text);
        c->m_text.clear();
        c->m_path.resize(c->m_stack.back());
        c->m_stack.pop_back();
    }
    static void text(void* self, const XML_Char* s, int len)
    {
        auto* c = static_cast<PathCollector*>(self);
        if (c->m_text.size() < (1u << 20)) c->m_text.append(s, size_t(len)); // one key is ≤ 1 KiB
    }
    static void doctype(void* self, const XML_Char*, const XML_Char*, const XML_Char*, int)
    {
        static_cast<PathCollector*>(self)->m_sawDoctype = true;
    }
    // S3 answers in a default namespace; a prefixed one ("s3:Key") is the same element.
    static std::string localName(const XML_Char* name)
    {
        const std::string n(name);
        const auto colon = n.rfind(':');
        return colon == std::string::npos ? n : n.substr(colon + 1);
    }

    OnEnd m_onEnd;
    std::string m_path;
    std::vector<size_t> m_stack;
    std::string m_text;
    bool m_sawDoctype = false;
};

uint64_t sizeField(const std::string& text, const std::string& url)
{
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw Error("listing gives a size that is not a number: '" + text.substr(0, 40) + "'", url);
    return v;
}

} // namespace

ListPage parseListPage(std::string_view xml, const std::string& url)
{
    ListPage page;
    ListedObject current;
    bool sawRoot = false;
    std::string badSize;
    PathCollector collector([&](const std::string& path, const std::string& text) {
        if (path == "ListBucketResult")
            sawRoot = true;
        else if (path == "ListBucketResult/Contents/Key")
            current.key = text;
        else if (path == "ListBucketResult/Contents/Size") {
            try {
                current.size = sizeField(text, url);
            } catch (const Error&) {
                badSize = text;
            }
        } else if (path == "ListBucketResult/Contents/ETag")
            current.etag = text;
        else if (path == "ListBucketResult/Contents")
            page.objects.push_back(std::exchange(current, {}));
        else if (path == "ListBucketResult/CommonPrefixes/Prefix")
            page.prefixes.push_back(text);
        else if (path == "ListBucketResult/IsTruncated")
            page.truncated = text == "true";
        else if (path == "ListBucketResult/NextContinuationToken")
            page.continuationToken = text;
    });
    if (!collector.parse(xml)) throw Error("the server's listing is not well-formed XML", url);
    if (!sawRoot) throw Error("the server's answer is not a ListBucketResult", url);
    if (!badSize.empty()) sizeField(badSize, url); // throws, now outside expat's callbacks
    if (page.truncated && page.continuationToken.empty())
        throw Error("the listing says it is truncated but gives no continuation token", url);
    return page;
}

S3ErrorBody parseErrorBody(std::string_view xml)
{
    S3ErrorBody e;
    PathCollector collector([&](const std::string& path, const std::string& text) {
        if (path == "Error/Code")
            e.code = text.substr(0, 200);
        else if (path == "Error/Message")
            e.message = text.substr(0, 500);
    });
    if (!collector.parse(xml)) return {};
    return e;
}

} // namespace ckpt::io::remote
