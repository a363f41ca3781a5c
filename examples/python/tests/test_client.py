"""The Python client against a real record API.

Run by the Go test TestPythonClient (go test ./sidecar/client -run
TestPythonClient), which starts a real sidecar over loopback TCP with a
token and over a Unix socket, installs this package with pip, and runs
these tests with COVMIRROR_TEST_URL, COVMIRROR_TEST_SOCKET and
COVMIRROR_TEST_TOKEN_FILE set. The server declares the source "files"
stored and "orders-kafka" broker-managed.
"""

import http.client
import http.server
import itertools
import os
import random
import socket
import struct
import threading
import unittest

import covmirror_client as cm

URL = os.environ.get("COVMIRROR_TEST_URL")
SOCKET = os.environ.get("COVMIRROR_TEST_SOCKET")
TOKEN_FILE = os.environ.get("COVMIRROR_TEST_TOKEN_FILE")
_topics = itertools.count()


def setUpModule():
    if not (URL and SOCKET and TOKEN_FILE):
        raise RuntimeError("COVMIRROR_TEST_URL, COVMIRROR_TEST_SOCKET and COVMIRROR_TEST_TOKEN_FILE are not set: "
                           "run these tests through `go test ./sidecar/client -run TestPythonClient`")
    installed = os.environ.get("COVMIRROR_TEST_INSTALLED")
    if installed and not os.path.abspath(cm.__file__).startswith(os.path.abspath(installed)):
        raise RuntimeError("covmirror_client was imported from %s, not from the installed package in %s" % (cm.__file__, installed))


def fresh_topic(name):
    return "py-%s-%d-%d" % (name, os.getpid(), next(_topics))


def fast(client_kwargs):
    """Short retry waits: tests need the attempts, not the time."""
    return dict(client_kwargs, min_wait=0.001, max_wait=0.02)


def clients():
    return [("tcp", cm.Client(URL, **fast({"token_file": TOKEN_FILE}))), ("socket", cm.Client(socket=SOCKET, **fast({})))]


def union(ranges):
    """The union of half-open ranges, merged where they touch."""
    out = []
    for s, e in sorted(ranges):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [tuple(r) for r in out]


def committed(c, topic):
    c.checkpoint()
    got = {}
    for row in c.committed(topic=topic):
        got.setdefault((row["sink"], row["partition"]), []).append((row["start"], row["end"]))
    return got


def random_entries(r, topic, n):
    out = []
    for _ in range(n):
        start = r.randrange(10000)
        out.append({"sink": r.choice(["raw", "lake", "search"]), "topic": topic, "partition": r.randrange(4),
                    "start": start, "end": start + 1 + r.randrange(50)})
    return out


class RecordTest(unittest.TestCase):
    def setUp(self):
        self.seed = int(os.environ.get("COVMIRROR_SEED") or random.randrange(1 << 62))
        self.r = random.Random(self.seed)

    def msg(self):
        return "seed %d (replay: COVMIRROR_SEED=%d)" % (self.seed, self.seed)

    def test_records_land_against_a_model(self):
        """Random batches over both transports, one in four with an invalid
        entry at a random index: a refused batch names that entry and
        records nothing; the committed coverage is the model's union."""
        topic = fresh_topic("model")
        model = {}
        bad = [({"partition": -1}, "partition"), ({"start": 5, "end": 5}, "invalid-range"),
               ({"sink": ""}, "invalid-destination"), ({"end": 1 << 63}, "max-batch-end"),
               ({"sink": "lake\udcff"}, "invalid-utf8"), ({"topic": "t\nforged/orders/0"}, "invalid-destination"),
               ({"sink": "lake\x7f"}, "invalid-destination"), ({"topic": "t\u009b2J"}, "invalid-destination")]
        conns = clients()
        for _ in range(40):
            name, c = self.r.choice(conns)
            batch = random_entries(self.r, topic, self.r.randrange(1, 60))
            at = None
            if self.r.randrange(4) == 0:
                at = self.r.randrange(len(batch))
                change, rule = self.r.choice(bad)
                batch[at] = dict(batch[at], **change)
            if at is None:
                self.assertEqual(c.record(batch) if self.r.randrange(2) else c.record_ndjson(batch), len(batch), self.msg())
                for e in batch:
                    model.setdefault((e["sink"], e["partition"]), []).append((e["start"], e["end"]))
                continue
            with self.assertRaises(cm.Rejected, msg=self.msg()) as cx:
                c.record(batch)
            self.assertEqual((cx.exception.entry, cx.exception.rule), (at, rule), "%s over %s" % (self.msg(), name))
            self.assertIn(cx.exception.status, (400, None))
        got = committed(conns[0][1], topic)
        self.assertEqual({k: union(v) for k, v in got.items()}, {k: union(v) for k, v in model.items()}, self.msg())
        for _, c in conns:
            c.close()

    def test_wrong_token_is_unauthorized(self):
        secret = "not-the-token-but-long-enough"
        for token in (secret, None):
            c = cm.Client(URL, token=token, **fast({}))
            with self.assertRaises(cm.Unauthorized) as cx:
                c.record([{"sink": "lake", "topic": fresh_topic("token"), "partition": 0, "start": 0, "end": 1}])
            self.assertEqual((cx.exception.status, cx.exception.rule), (401, "token"))
            self.assertNotIn(secret, str(cx.exception))
            c.close()

    def test_refusals_are_typed(self):
        c = cm.Client(socket=SOCKET)
        with self.assertRaises(cm.Rejected) as cx:
            c.put_position("orders-kafka", 0, "x", 1)
        self.assertEqual((cx.exception.status, cx.exception.rule), (409, "broker-managed"))
        with self.assertRaises(cm.Rejected) as cx:
            c.put_position("files", 0, "bad\udcff", 1)
        self.assertEqual((cx.exception.status, cx.exception.rule), (None, "invalid-utf8"))
        with self.assertRaises(cm.BadAnswer) as cx:
            c._request("GET", "/v1/positions/..?partition=0")
        self.assertTrue(300 <= cx.exception.status < 400, cx.exception)
        c.close()

    def test_options(self):
        for kwargs in ({}, {"url": URL, "socket": SOCKET}, {"url": "ftp://x"}, {"url": "http://u:pw-secret@127.0.0.1:1"},
                       {"url": URL, "token": "two words"}, {"url": URL, "max_attempts": 0}):
            with self.assertRaises(ValueError) as cx:
                cm.Client(**kwargs)
            self.assertNotIn("pw-secret", str(cx.exception))


class FaultyProxy(http.server.ThreadingHTTPServer):
    """Stands before the real server on a loopback port: fails the first
    requests as told (503, 429, a reset before the request is served, or a
    reset after the server recorded it), forwards the rest."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.faults, self.requests, self.lock = [], 0, threading.Lock()
        u = cm.urllib.parse.urlsplit(URL)
        self.upstream = (u.hostname, u.port)

    def next_fault(self):
        with self.lock:
            self.requests += 1
            return self.faults.pop(0) if self.faults else None


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _reset(self):
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _forward(self, body):
        up = http.client.HTTPConnection(*self.server.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "content-length")}
        try:
            up.request(self.command, self.path, body=body, headers=headers)
            resp = up.getresponse()
            return resp.status, resp.getheaders(), resp.read()
        finally:
            up.close()

    def _serve(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        fault = self.server.next_fault()
        if fault == "reset":
            return self._reset()
        if fault in ("503", "429"):
            data = b'{"error":"shutting down","rule":"shutting-down"}' if fault == "503" else b""
            self.send_response(int(fault))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        status, headers, data = self._forward(body)
        if fault == "recorded-then-reset":
            if status != 200:
                raise AssertionError("the recorded request answered %d" % status)
            return self._reset()
        self.send_response(status)
        for k, v in headers:
            if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = _serve


class SinksTest(unittest.TestCase):
    def test_named_sink_without_rows_has_gaps(self):
        """A sink with no rows of a topic (down since the start) has gaps
        and replay tasks only when named: gaps and plan take sinks."""
        topic = fresh_topic("sinks")
        c = cm.Client(URL, **fast({"token_file": TOKEN_FILE}))
        c.record([{"sink": "raw", "topic": topic, "partition": 0, "start": 0, "end": 10}])
        c.checkpoint()
        mine = lambda rows: [(r["sink"], r["start"], r["end"]) for r in rows if r["topic"] == topic]
        self.assertEqual(mine(c.gaps(topic=topic)), [])
        self.assertEqual(mine(c.gaps(topic=topic, sinks=["lake"])), [("lake", 0, 10)])
        self.assertEqual(mine(c.plan(sinks=["lake"])), [("lake", 0, 10)])
        c.close()

    def test_topic_sinks(self):
        """lake is written one topic only: named for every topic it misses
        all of the other; named for its own topic alone, nothing."""
        mine, other = fresh_topic("mine"), fresh_topic("other")
        c = cm.Client(URL, **fast({"token_file": TOKEN_FILE}))
        c.record([{"sink": s, "topic": t, "partition": 0, "start": 0, "end": 10}
                  for s, t in (("raw", mine), ("raw", other), ("pg", mine), ("pg", other), ("lake", mine))])
        c.checkpoint()
        ours = lambda rows: [(r["sink"], r["topic"]) for r in rows if r["topic"] in (mine, other)]
        self.assertEqual(ours(c.gaps(sinks=["pg", "lake"])), [("lake", other)])
        self.assertEqual(ours(c.gaps(sinks=["pg"], topic_sinks={mine: ["pg", "lake"]})), [])
        self.assertEqual(ours(c.plan(sinks=["pg"], topic_sinks={mine: ["pg", "lake"]})), [])
        self.assertEqual(ours(c.plan(topic_sinks={mine: [], other: ["warehouse"]})), [("warehouse", other)])
        for bad in ({"a=b": ["pg"]}, {mine: ["lake,eu"]}, {mine: "lake"}):
            with self.assertRaises(ValueError):
                c.gaps(topic_sinks=bad)
        c.close()


class _Echo(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        data = (('{"error": "you sent %s", "rule": "%s"}' % (auth, auth)) if "json" in self.path else "you sent " + auth).encode()
        self.send_response(503 if "503" in self.path else 400)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class EchoTest(unittest.TestCase):
    def test_an_echoed_token_stays_out(self):
        """An address that is not the pod echoes the Authorization header:
        neither the error nor the retry log carries the token."""
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        token = "s3cr3t-t0ken-value"
        try:
            for kind in ("plain-400", "json-400", "plain-503", "json-503"):
                c = cm.Client("http://127.0.0.1:%d" % srv.server_address[1], token=token, max_attempts=2, min_wait=0, max_wait=0)
                with self.assertLogs("covmirror_client", level="DEBUG") as logs:
                    cm._log.debug("start")
                    with self.assertRaises(cm.CovmirrorError) as cx:
                        c._request("GET", "/v1/gaps?kind=" + kind)
                for text in [str(cx.exception), repr(cx.exception.body)] + logs.output:
                    self.assertNotIn(token, text, kind)
                c.close()
        finally:
            srv.shutdown()
            srv.server_close()


class RetryTest(unittest.TestCase):
    def setUp(self):
        self.proxy = FaultyProxy()
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        self.addCleanup(self.proxy.server_close)
        self.addCleanup(self.proxy.shutdown)
        self.url = "http://127.0.0.1:%d" % self.proxy.server_address[1]
        self.seed = int(os.environ.get("COVMIRROR_SEED") or random.randrange(1 << 62))
        self.r = random.Random(self.seed)

    def test_faults_are_retried_and_coverage_is_right(self):
        """Each call meets up to five faults before its answer: it is
        retried until answered, every fault costs one request, and the
        committed coverage is the union of what was recorded."""
        topic = fresh_topic("retry")
        c = cm.Client(self.url, max_attempts=20, **fast({"token_file": TOKEN_FILE}))
        model = {}
        kinds = ["503", "429", "reset", "recorded-then-reset"]
        for _ in range(10):
            faults = [self.r.choice(kinds) for _ in range(self.r.randrange(6))]
            with self.proxy.lock:
                self.proxy.faults, self.proxy.requests = list(faults), 0
            batch = random_entries(self.r, topic, self.r.randrange(1, 50))
            self.assertEqual(c.record(batch), len(batch), "seed %d, faults %s" % (self.seed, faults))
            self.assertEqual(self.proxy.requests, len(faults) + 1, "seed %d, faults %s" % (self.seed, faults))
            for e in batch:
                model.setdefault((e["sink"], e["partition"]), []).append((e["start"], e["end"]))
        got = committed(c, topic)
        self.assertEqual({k: union(v) for k, v in got.items()}, {k: union(v) for k, v in model.items()}, "seed %d" % self.seed)
        c.close()

    def test_out_of_attempts_is_unavailable(self):
        c = cm.Client(self.url, max_attempts=3, **fast({"token_file": TOKEN_FILE}))
        with self.proxy.lock:
            self.proxy.faults, self.proxy.requests = ["503"] * 5, 0
        with self.assertRaises(cm.Unavailable) as cx:
            c.record([{"sink": "lake", "topic": fresh_topic("out"), "partition": 0, "start": 0, "end": 1}])
        self.assertEqual((cx.exception.status, cx.exception.rule, self.proxy.requests), (503, "shutting-down", 3))
        self.assertIn("may or may not", str(cx.exception))
        c.close()

    def test_refusal_is_not_retried(self):
        c = cm.Client(self.url, max_attempts=5, **fast({"token_file": TOKEN_FILE}))
        with self.proxy.lock:
            self.proxy.requests = 0
        with self.assertRaises(cm.Rejected):
            c.record([{"sink": "lake", "topic": "t", "partition": -1, "start": 0, "end": 1}])
        self.assertEqual(self.proxy.requests, 1)
        c.close()


if __name__ == "__main__":
    unittest.main()
