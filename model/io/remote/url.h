// A remote object's address as the user typed it (s3://, gs://, http(s)://, hf://): which
// scheme, and its bucket or host and key. Parsing only; no network.
#pragma once

#include <optional>
#include <string>

namespace ckpt::io::remote {

enum class Scheme { Http, Https, S3, Gcs, HuggingFace };

struct Url
{
    Scheme scheme = Scheme::Http;
    std::string text;      // what the user gave, for messages
    std::string authority; // host[:port] for http(s); the bucket for s3:// and gs://; ORG/REPO for hf://
    std::string key;       // the object key or URL path, without the leading '/'
    std::string revision;  // hf:// only (@REV); empty means "main"

    // The URL of `name` beside this one (a file in the same folder) or under it (key ends in '/').
    Url sibling(const std::string& name) const;
    // The folder part of the key ("a/b/" for "a/b/c"), or "" at the top.
    std::string folder() const;
};

// True when `text` names a remote object rather than a local path.
bool isRemote(const std::string& text);
// Throws ckpt::Error naming `text` when it is not a well-formed remote URL.
Url parseUrl(const std::string& text);
// What `text` was meant to be when it is a URL typed wrong ("s3:/b/k", "S3://b/k", "hf:org/r"):
// the URL with the scheme's "://" and lower case; empty when it is no such thing (a local path,
// a URL already). Local paths are never taken for URLs: only the schemes this engine reads.
std::string meantUrl(const std::string& text);
// RFC 3986 percent-encoding of everything but unreserved characters (and '/', when kept), as
// SigV4 canonical URIs and query strings need it.
std::string uriEncode(const std::string& s, bool keepSlash);

} // namespace ckpt::io::remote
