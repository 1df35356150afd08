// The stores beyond plain HTTP and AWS's S3: Google Cloud Storage (its XML API, which speaks S3's
// protocol: HMAC keys sign with SigV4, an OAuth token rides as a bearer) and the Hugging Face Hub
// (files by their resolve URL, folders through the tree API). What each reads from the
// environment, and the Hub's tree listing parser (fuzzed by fuzz_hub_json).
#pragma once

#include "io/remote/aws_config.h"
#include "io/remote/remote_object.h"

#include <memory>
#include <string>
#include <string_view>

namespace ckpt::io::remote {

// S3 and S3-compatible stores (remote_object.cpp).
std::shared_ptr<const Store> makeS3Store(S3Settings settings);
// Every page of a ListObjectsV2 listing through `store` (S3, and GCS's XML API): objects whose
// key starts with prefix's key; with oneLevel, only those directly under it and the folders
// below as prefixes.
ListPage listObjectsV2(const Store& store, const Url& prefix, bool oneLevel, const CancelToken* cancel);
// What every listing does with a page: an answer that is not a whole 200 is one Error naming
// `url` (and the store's credentials); a page's objects and folders join the listing, which may
// not pass a million entries.
void checkListingAnswer(const HttpResponse& r, const std::string& url, const Store& store);
void appendPage(ListPage& all, ListPage& page, const std::string& url);

// gs://BUCKET/KEY. Endpoint: CKPT_GCS_ENDPOINT (an emulator, or an S3-compatible test server),
// else https://storage.googleapis.com, always path-style. Credentials, first found: HMAC keys
// GS_ACCESS_KEY_ID + GS_SECRET_ACCESS_KEY (SigV4, region "auto"), an OAuth 2 access token
// GOOGLE_OAUTH_ACCESS_TOKEN (`gcloud auth print-access-token`), a credentials file named by
// GOOGLE_APPLICATION_CREDENTIALS (service account or authorized user, google_auth.h), gcloud's
// application_default_credentials.json ($CLOUDSDK_CONFIG, else ~/.config/gcloud), else anonymous
// (public buckets). A broken credentials file is an Error naming it.
std::shared_ptr<const Store> gcsStore(const EnvLookup& env = processEnv);

// hf://ORG/REPO[@REV]/PATH, a model repository. Endpoint: HF_ENDPOINT, else
// https://huggingface.co. Token, first found: HF_TOKEN, HUGGING_FACE_HUB_TOKEN, the file
// $HF_TOKEN_PATH or $HF_HOME/token (~/.cache/huggingface/token), else anonymous.
std::shared_ptr<const Store> hubStore(const EnvLookup& env = processEnv);

// One page of the Hub's tree API (a JSON array of {"type": "file"|"directory", "path", "size",
// "lfs": {"size"}}): files as objects, directories as prefixes ending in '/'. Throws Error naming
// `url` for anything else.
ListPage parseHubTree(std::string_view json, const std::string& url);
// The next page's URL from a Link header (`<URL>; rel="next"`), or "".
std::string nextLink(const std::string& linkHeader);

} // namespace ckpt::io::remote
