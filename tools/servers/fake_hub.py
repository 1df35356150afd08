#!/usr/bin/env python3
"""A small stand-in for the Hugging Face Hub, for tests on 127.0.0.1 (plain Python, no packages).

Serves one folder as the model repository ORG/REPO, the way the Hub answers huggingface_hub:
  GET /ORG/REPO/resolve/REV/PATH   a file; one larger than 1 KiB is redirected (302) to
                                   /cdn/ORG/REPO/PATH, as the Hub sends LFS files to its CDN
  GET /cdn/ORG/REPO/PATH           the file, with single byte ranges (206 + Content-Range), an
                                   ETag, and If-Match (412 when it does not match)
  GET /api/models/ORG/REPO/tree/REV[/PATH]?recursive=true|false
                                   the tree API: a JSON array of {type, path, size, oid[, lfs]},
                                   PAGE entries a page, the next page in a Link header
With --token T, every request but the CDN's needs "Authorization: Bearer T" (else 401, as the
Hub answers a private repository). REV must be "main". Each answer is logged as one JSON line
(method, path, status, bytes) to --log.

Usage: fake_hub.py PORT REPO_DIR ORG/REPO LOG [--token T] [--page N]
"""
import hashlib
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, ROOT, REPO, LOG = int(sys.argv[1]), os.path.realpath(sys.argv[2]), sys.argv[3], sys.argv[4]
ARGS = sys.argv[5:]
TOKEN = ARGS[ARGS.index("--token") + 1] if "--token" in ARGS else None
PAGE = int(ARGS[ARGS.index("--page") + 1]) if "--page" in ARGS else 1000
LOCK = threading.Lock()


def local(rel):
    """The file or folder under ROOT that a repository path names, or None outside it."""
    path = os.path.realpath(os.path.join(ROOT, rel))
    return path if path == ROOT or path.startswith(ROOT + os.sep) else None


def etag(path):
    st = os.stat(path)
    return '"%s"' % hashlib.sha1(("%d-%d" % (st.st_size, st.st_mtime_ns)).encode()).hexdigest()


def entries(folder, recursive):
    out = []
    base = local(folder)
    for name in sorted(os.listdir(base)):
        rel = (folder + "/" + name) if folder else name
        full = os.path.join(base, name)
        if os.path.isdir(full):
            out.append({"type": "directory", "oid": "0" * 40, "path": rel})
            if recursive:
                out.extend(entries(rel, True))
        else:
            size = os.path.getsize(full)
            e = {"type": "file", "oid": etag(full).strip('"'), "size": size, "path": rel}
            if size > 1024:
                e["lfs"] = {"oid": "sha256:" + "0" * 64, "size": size, "pointerSize": 134}
            out.append(e)
    return out


class Hub(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        with LOCK, open(LOG, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path, "status": status,
                                "bytes": len(body) if self.command != "HEAD" else 0}) + "\n")

    def error(self, status, code, message):
        self.answer(status, json.dumps({"error": message}).encode(),
                    [("Content-Type", "application/json"), ("X-Error-Code", code)])

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if path.startswith("/cdn/" + REPO + "/"):
            return self.file(path[len("/cdn/" + REPO + "/"):])
        if TOKEN is not None and self.headers.get("Authorization") != "Bearer " + TOKEN:
            return self.error(401, "RepoNotFound", "Invalid credentials in Authorization header")
        resolve = "/" + REPO + "/resolve/"
        tree = "/api/models/" + REPO + "/tree/"
        if path.startswith(resolve):
            rev, _, rel = path[len(resolve):].partition("/")
            if rev != "main":
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            full = local(rel)
            if not full or not os.path.isfile(full):
                return self.error(404, "EntryNotFound", "Entry not found")
            if os.path.getsize(full) > 1024:
                return self.answer(302, b"", [("Location", "/cdn/" + REPO + "/" + urllib.parse.quote(rel))])
            return self.file(rel)
        if path.startswith(tree):
            rev, _, rel = path[len(tree):].partition("/")
            rel = rel.strip("/")
            if rev != "main":
                return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
            full = local(rel)
            if not full or not os.path.isdir(full):
                return self.error(404, "EntryNotFound", "Entry not found")
            query = urllib.parse.parse_qs(url.query)
            listed = entries(rel, query.get("recursive", ["false"])[0] == "true")
            start = int(query.get("cursor", ["0"])[0])
            headers = [("Content-Type", "application/json")]
            if start + PAGE < len(listed):
                q = dict((k, v[0]) for k, v in query.items())
                q["cursor"] = str(start + PAGE)
                nxt = "http://127.0.0.1:%d%s?%s" % (PORT, url.path, urllib.parse.urlencode(q))
                headers.append(("Link", '<%s>; rel="next"' % nxt))
            return self.answer(200, json.dumps(listed[start:start + PAGE]).encode(), headers)
        return self.error(404, "RepoNotFound", "Repository not found")

    def file(self, rel):
        full = local(rel)
        if not full or not os.path.isfile(full):
            return self.error(404, "EntryNotFound", "Entry not found")
        tag = etag(full)
        if self.headers.get("If-Match") not in (None, tag):
            return self.answer(412, b"")
        with open(full, "rb") as f:
            data = f.read()
        headers = [("ETag", tag), ("Accept-Ranges", "bytes")]
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and "," not in rng:
            first, _, last = rng[6:].partition("-")
            first = int(first)
            last = min(int(last), len(data) - 1) if last else len(data) - 1
            if first >= len(data):
                return self.answer(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            headers.append(("Content-Range", "bytes %d-%d/%d" % (first, last, len(data))))
            return self.answer(206, data[first:last + 1], headers)
        return self.answer(200, data, headers)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer.request_queue_size = 128
ThreadingHTTPServer(("127.0.0.1", PORT), Hub).serve_forever()
