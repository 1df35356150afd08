#!/usr/bin/env python3
"""A fault-injecting HTTP proxy for tst_remote: forwards every request to one upstream server
(nginx or moto on 127.0.0.1) and misbehaves the way real servers and networks do, on demand.

Usage: fault_proxy.py --port P --upstream http://127.0.0.1:Q --log FILE
Faults are set (and every counter reset) with GET /__fault__?name=value&...:
  delay_ms=N        wait N ms before answering each request (logging it when it arrives, "held": true)
  fail_first=K      answer the next K requests with `status` (default 503, S3 SlowDown body)
  status=S          ... and, with retry_after=SECONDS, a Retry-After header
  drop_after=N      send the head and N body bytes of the next response, then close the socket
  stall_s=S         send the head of the next response, then nothing for S seconds (logging it
                    when the stall starts, "stalled": true)
  times=T           drop_after and stall_s act on the next T responses, not one
  ignore_range=1    strip Range: the upstream answers 200 with the whole object
  extra_bytes=N     append N bytes to every body (Content-Length grows, Content-Range does not)
  shift_range=1     answer a Content-Range that starts one byte later than the one asked for
  gzip=1            label every body Content-Encoding: gzip
Every request is logged as one JSON line: method, path, range, if_match, status, bytes (body
bytes sent), once answered; a client gone before its answer went out (it cancelled while a
delay held the answer back) is logged then too, with "gone": true. Only the standard library
is used, so the test needs nothing installed for it.
"""
import argparse
import http.client
import http.server
import json
import threading
import time
import urllib.parse

LOCK = threading.Lock()
STATE = {}


def reset(settings):
    # drop_after and stall_s act on the next `times` responses (default one), then stop.
    if "drop_after" in settings:
        settings["drop_once"] = settings.get("times", "1")
    if "stall_s" in settings:
        settings["stall_s_once"] = settings.get("times", "1")
    with LOCK:
        STATE.clear()
        STATE.update(settings)


def take(name):
    """Decrements a one-shot counter; true while it was positive."""
    with LOCK:
        n = int(STATE.get(name, 0))
        if n > 0:
            STATE[name] = n - 1
        return n > 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Head and body go out in separate writes: with Nagle on, the body waits for the client's
    # delayed ACK of the head (~40 ms a response), which would swamp the delays we inject.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def record(self, status, nbytes, gone=False, held=False, stalled=False):
        self.recorded = True
        line = {"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                "if_match": self.headers.get("If-Match"), "status": status, "bytes": nbytes,
                "t": round(self.arrived, 4)}  # when the request came in: waves of round trips
        if gone:
            line["gone"] = True
        if held:
            line["held"] = True
        if stalled:
            line["stalled"] = True
        with LOCK, open(self.server.log_path, "a") as f:
            f.write(json.dumps(line) + "\n")

    def control(self):
        query = urllib.parse.urlparse(self.path).query
        reset({k: v[-1] for k, v in urllib.parse.parse_qs(query).items()})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def fail(self, status):
        body = b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate." \
               b"</Message></Error>"
        self.send_response(status)
        if STATE.get("retry_after"):
            self.send_header("Retry-After", STATE["retry_after"])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.record(status, len(body))
        self.wfile.write(body)

    def forward(self):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
        if STATE.get("ignore_range") == "1":
            headers.pop("Range", None)
        up = urllib.parse.urlparse(self.server.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        conn.request(self.command, self.path, headers=headers)
        resp = conn.getresponse()
        return resp, resp.read(), conn

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.arrived = time.monotonic()
        if self.path.startswith("/__fault__"):
            return self.control()
        self.recorded = False
        try:
            self.answer()
        except (BrokenPipeError, ConnectionResetError):
            if not self.recorded:
                self.record(0, 0, gone=True)
            self.close_connection = True

    def answer(self):
        if int(STATE.get("delay_ms", 0)):
            # A test cancelling a transfer in flight knows from this line that it reached us.
            self.record(None, 0, held=True)
            self.recorded = False
            time.sleep(int(STATE["delay_ms"]) / 1000)
        if take("fail_first"):
            return self.fail(int(STATE.get("status", 503)))
        resp, body, conn = self.forward()
        conn.close()
        body += b"\0" * int(STATE.get("extra_bytes", 0))
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            lk = k.lower()
            if lk in ("content-length", "connection", "transfer-encoding", "date", "server"):
                continue
            if lk == "content-range" and STATE.get("shift_range") == "1":
                unit, _, rest = v.partition(" ")
                span, _, total = rest.partition("/")
                first, _, last = span.partition("-")
                v = f"{unit} {int(first) + 1}-{last}/{total}"
            self.send_header(k, v)
        if STATE.get("gzip") == "1":
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD":
            return self.record(resp.status, 0)
        if take("stall_s_once"):
            # Logged as the stall starts: a test tells from it that this answer was held back
            # (and, by what follows, whether the client waited it out or asked again).
            self.record(resp.status, 0, stalled=True)
            self.recorded = False
            time.sleep(float(STATE.get("stall_s", 0)))
        # Logged before the body goes out, so a client that has its answer finds it in the log.
        if take("drop_once"):
            n = int(STATE.get("drop_after", 0))
            self.record(resp.status, n)
            self.wfile.write(body[:n])
            self.wfile.flush()
            self.close_connection = True
            return
        self.record(resp.status, len(body))
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    # A client opens many connections at once: with socketserver's backlog of 5 the rest of the
    # SYNs are dropped and retried a second later, a stall no real server adds.
    http.server.ThreadingHTTPServer.request_queue_size = 128
    server = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    server.daemon_threads = True
    server.upstream = a.upstream
    server.log_path = a.log
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
