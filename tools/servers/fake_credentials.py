"""A fake of the services that hand out cloud credentials, for tests/tst_credentials.cpp: EC2
instance metadata (IMDSv2, or IMDSv1 only), ECS container credentials, and a Google OAuth 2
token endpoint that checks what it is sent as Google does (a service account's RS256 JWT, or an
authorized user's refresh token). Standard library only: the JWT's signature is checked with
`openssl dgst -sha256 -verify`. Each request is logged as one JSON line.

Usage: python3 fake_credentials.py PORT LOG --public-key PEM --client-email EMAIL
       [--ecs-token TOKEN] [--client-id ID --client-secret SECRET --refresh-token TOKEN]
GET /__set__?imds=v2|v1only changes how the metadata service answers.
"""
import argparse
import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROLE = "ckpt-test-role"
IMDS_TOKEN = "imds-session-token"


def credentials(key):
    expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=6)
    return json.dumps({"Code": "Success", "AccessKeyId": key, "SecretAccessKey": key + "-secret",
                       "Token": key + "-session", "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ")})


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify_jwt(jwt, args, audience):
    """Returns None when Google would accept the assertion, else what is wrong with it."""
    parts = jwt.split(".")
    if len(parts) != 3:
        return "not a JWT"
    header, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
    if header.get("alg") != "RS256" or header.get("typ") != "JWT":
        return "header %r" % header
    if claims.get("iss") != args.client_email:
        return "iss %r" % claims.get("iss")
    if claims.get("aud") != audience:
        return "aud %r is not %r" % (claims.get("aud"), audience)
    scopes = claims.get("scope", "").split()
    if not any(s.endswith(("/devstorage.read_only", "/cloud-platform", "/devstorage.full_control")) for s in scopes):
        return "scope %r" % claims.get("scope")
    now = time.time()
    iat, exp = claims.get("iat", 0), claims.get("exp", 0)
    if not (now - 300 <= iat <= now + 60 and iat < exp <= iat + 3600):
        return "iat %r exp %r" % (iat, exp)
    with tempfile.TemporaryDirectory() as d:
        data, sig = os.path.join(d, "data"), os.path.join(d, "sig")
        with open(data, "wb") as f:
            f.write((parts[0] + "." + parts[1]).encode())
        with open(sig, "wb") as f:
            f.write(b64url_decode(parts[2]))
        r = subprocess.run(["openssl", "dgst", "-sha256", "-verify", args.public_key, "-signature", sig, data],
                           capture_output=True)
        if r.returncode != 0:
            return "signature does not verify"
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state = {"imds": "v2"}

    def log_message(self, *a):
        pass

    def reply(self, status, body, ctype="text/plain"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def record(self, extra=None):
        entry = {"method": self.command, "path": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()}}
        entry.update(extra or {})
        with open(self.server.args.log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def do_PUT(self):
        self.record()
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/latest/api/token":
            return self.reply(404, "not found")
        if self.state["imds"] == "v1only":
            return self.reply(403, "IMDSv2 is off here")
        ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
        if not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
            return self.reply(400, "missing or bad X-aws-ec2-metadata-token-ttl-seconds")
        self.reply(200, IMDS_TOKEN)

    def do_GET(self):
        self.record()
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/__set__":
            self.state.update(dict(urllib.parse.parse_qsl(url.query)))
            return self.reply(200, "ok")
        if url.path.startswith("/latest/meta-data/"):
            if self.state["imds"] == "v2" and self.headers.get("X-aws-ec2-metadata-token") != IMDS_TOKEN:
                return self.reply(401, "no session token")
            if url.path == "/latest/meta-data/iam/security-credentials/":
                return self.reply(200, ROLE)
            if url.path == "/latest/meta-data/iam/security-credentials/" + ROLE:
                return self.reply(200, credentials("ASIAIMDS" + self.state["imds"].upper()), "application/json")
            return self.reply(404, "not found")
        if url.path == "/ecs/credentials":
            if self.headers.get("Authorization") != self.server.args.ecs_token:
                return self.reply(401, json.dumps({"message": "bad authorization token"}))
            return self.reply(200, credentials("ASIAECS"), "application/json")
        self.reply(404, "not found")

    def do_POST(self):
        form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()))
        self.record({"form": sorted(form)})
        if self.path != "/token":
            return self.reply(404, "not found")
        a = self.server.args
        grant = form.get("grant_type")
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            audience = "http://127.0.0.1:%d/token" % self.server.server_port
            why = verify_jwt(form.get("assertion", ""), a, audience)
            token = "ya29.service-account"
        elif grant == "refresh_token":
            ok = (form.get("client_id"), form.get("client_secret"), form.get("refresh_token")) == (
                a.client_id, a.client_secret, a.refresh_token)
            why = None if ok else "Bad client credentials or refresh token"
            token = "ya29.authorized-user"
        else:
            why = "unsupported grant_type %r" % grant
        if why:
            return self.reply(400, json.dumps({"error": "invalid_grant", "error_description": why}),
                              "application/json")
        self.reply(200, json.dumps({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}),
                   "application/json")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("log")
    p.add_argument("--public-key", required=True)
    p.add_argument("--client-email", required=True)
    p.add_argument("--ecs-token", default="ecs-secret-token")
    p.add_argument("--client-id", default="ckpt-client")
    p.add_argument("--client-secret", default="ckpt-client-secret")
    p.add_argument("--refresh-token", default="ckpt-refresh-token")
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.args = args
    sys.stdout.write("listening on %d\n" % args.port)
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
